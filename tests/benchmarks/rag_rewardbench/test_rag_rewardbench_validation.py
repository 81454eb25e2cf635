"""RAG-RewardBench's validation hooks (what `ragjudge validate` scores a model on) with hand-computed
expectations: the first N well-formed pairs, the bundled sample, and a row's verdict and scores, compared by
jobs.analysis.agreement as before the hooks moved here. Pure Python, milliseconds."""
import json
import math
from pathlib import Path

import pytest

from benchmarks import protocol
from jobs.analysis.agreement import compare, verdict_rows

ROOT = Path(__file__).resolve().parents[3]
RB = protocol.benchmark("rag_rewardbench")


def good(name):
    return {"item_id": f"rag_rewardbench/{name}", "subset": "helpful-x", "error": None}


def bad(name):
    return {"item_id": f"rag_rewardbench/{name}", "subset": "", "error": f"{name}.jsonl: row 2: field 'chosen' missing"}


def test_the_first_n_well_formed_pairs_and_the_bad_rows_skipped_before_them():
    items = [good("a"), bad("b"), good("c"), bad("d"), good("e")]
    assert RB.validation_items(items, 2) == ([good("a"), good("c")], 1)  # d lies past the second pair
    assert RB.validation_items(items, 3) == ([good("a"), good("c"), good("e")], 2)
    assert RB.validation_items(items, 10) == ([good("a"), good("c"), good("e")], 2)  # fewer than asked
    assert RB.validation_items([bad("x")], 4) == ([], 1)
    assert RB.validation_items([], 4) == ([], 0)  # not None: this benchmark has validation pairs


def test_validation_items_read_no_further_than_they_need():
    def rows():
        yield good("a")
        yield good("b")
        raise AssertionError("read past the pairs asked for")

    assert RB.validation_items(rows(), 2) == ([good("a"), good("b")], 0)
    assert RB.validation_items(rows(), 0) == ([], 0)


def test_the_bundled_sample_is_the_six_appendix_d_pairs_and_a_bad_row_in_a_file_is_counted(tmp_path):
    sample = RB.validation_sample()
    assert sample == str(ROOT / "data" / "rag_rewardbench_appendix_d.jsonl")
    items, skipped = RB.validation_items(RB.load_items(sample), 32)
    rows = [json.loads(line) for line in Path(sample).read_text().splitlines()]
    first = [row["id"] for row in rows]
    assert ([item["item_id"] for item in items], skipped) == ([f"rag_rewardbench/{i}" for i in first], 0)
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in [rows[0], {**rows[1], "chosen": ""}, rows[2]]))
    items, skipped = RB.validation_items(RB.load_items(str(path)), 2)
    assert ([item["item_id"] for item in items], skipped) == ([f"rag_rewardbench/{first[0]}",
                                                              f"rag_rewardbench/{first[2]}"], 1)


def test_a_rows_verdict_and_scores_by_kind():
    scorer = {"item_id": "p", "score_chosen": 1.0, "score_reject": 0.5, "correct": 1.0}
    assert RB.validation_verdict(scorer, "discriminative") == (True, [1.0, 0.5])
    implicit = {"item_id": "p", "reward_chosen": -2.0, "reward_reject": -1.0, "correct": 0.0}
    assert RB.validation_verdict(implicit, "implicit") == (False, [-2.0, -1.0])
    judge = {"item_id": "p", "pick_cr": 1, "pick_rc": None, "logprobs_cr": [-0.5, -1.0], "logprobs_rc": None}
    assert RB.validation_verdict(judge, "generative") == ((1, None), [-0.5, -1.0, None, None])
    with pytest.raises(ValueError, match="no pair scores for 'retriever' models"):
        RB.validation_verdict(scorer, "retriever")


def _scorer(item_id, chosen, reject, **extra):
    return {"item_id": item_id, "score_chosen": chosen, "score_reject": reject,
            "correct": 1.0 if chosen > reject else 0.0, "error": None, **extra}


def _compare(a, b, kind):
    def rows(r):
        return verdict_rows(r, lambda row: RB.validation_verdict(row, kind), RB.row_key)

    return compare(rows(a), rows(b))


def test_compare_scorer_rows_by_hand():
    a = [_scorer("p1", 1.0, 0.5), _scorer("p2", 0.25, 0.5), {"item_id": "p3", "error": "context overflow"}]
    b = [_scorer("p1", 1.125, 0.5), _scorer("p2", 0.75, 0.5), _scorer("p3", 2.0, 1.0)]
    out = _compare(a, b, "discriminative")
    # p3 failed on one path: not compared. p1 agrees (|diff| 0.125), p2 flips (|diff| 0.5).
    assert out == {"pairs": 2, "verdict_agreement": 0.5, "max_score_diff": 0.5, "flipped": ["p2"]}
    assert _compare(a, a, "discriminative")["verdict_agreement"] == 1.0


def test_compare_implicit_and_judge_rows_by_hand():
    a = [{"item_id": "p1", "reward_chosen": -1.0, "reward_reject": -2.0, "correct": 1.0}]
    b = [{"item_id": "p1", "reward_chosen": -1.5, "reward_reject": -1.25, "correct": 0.0}]
    assert _compare(a, b, "implicit") == {"pairs": 1, "verdict_agreement": 0.0, "max_score_diff": 0.75,
                                          "flipped": ["p1"]}
    judge = {"item_id": "p1", "pick_cr": 1, "pick_rc": 2, "logprobs_cr": [-0.5, -1.0], "logprobs_rc": [-1.0, -0.5]}
    same_picks = {**judge, "logprobs_cr": [-0.25, -1.0]}
    assert _compare([judge], [same_picks], "generative") == {"pairs": 1, "verdict_agreement": 1.0,
                                                            "max_score_diff": 0.25, "flipped": []}
    # A candidate's log-prob one path has and the other lacks is an infinite difference; the picks differ too.
    missing = {**judge, "pick_rc": 1, "logprobs_rc": [-1.0, None]}
    out = _compare([judge], [missing], "generative")
    assert out["max_score_diff"] == math.inf and out["verdict_agreement"] == 0.0
