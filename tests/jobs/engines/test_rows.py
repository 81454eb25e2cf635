"""An engine's split request merged back into one answer (jobs.engines.rows.merge_parts), hand-written parts."""
from __future__ import annotations

from jobs.engines.rows import merge_parts


def test_parts_merge_into_one_answer_and_a_zero_is_not_taken_for_a_missing_value():
    text = {"request_id": "r", "part": "text", "n_parts": 2, "text": "Choose 1", "thinking_tokens": 0,
            "candidate_logprobs": None, "n_tokens": 5, "truncated": False, "score": 0.0}
    verdict = {"request_id": "r", "part": "verdict", "n_parts": 2, "text": None, "thinking_tokens": None,
               "candidate_logprobs": [-0.1, -2.0], "n_tokens": 6, "truncated": True, "score": None}
    other = {"request_id": "s", "text": "alone", "n_tokens": 3}
    assert list(merge_parts([text, other, verdict])) == [
        {"request_id": "s", "text": "alone", "n_tokens": 3},
        {"request_id": "r", "text": "Choose 1", "thinking_tokens": 0, "candidate_logprobs": [-0.1, -2.0],
         "n_tokens": 6, "truncated": True, "score": 0.0}]  # 0 and 0.0 kept: `0 in (None, False)` would drop them
