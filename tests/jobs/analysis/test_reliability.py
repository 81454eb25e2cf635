"""Reliability columns from prediction rows: each computed from the columns the rows carry, by hand here."""
import pytest

from jobs.analysis.reliability import needed_column, position_bias, reliability


def test_both_order_judge_rows():
    """rag_rewardbench's generative rows: pick_cr/pick_rc (position picked), text_pick_*, consistent."""
    rows = [
        {"item_id": "1", "pick_cr": 1, "pick_rc": 2, "text_pick_cr": 1, "text_pick_rc": 2, "consistent": True,
         "correct_cr": 1.0, "correct_rc": 1.0, "truncated": False, "error": None},
        {"item_id": "2", "pick_cr": 1, "pick_rc": 1, "text_pick_cr": None, "text_pick_rc": 1,
         "consistent": False, "correct_cr": 1.0, "correct_rc": 0.0, "truncated": True, "error": None},
        {"item_id": "3", "pick_cr": None, "pick_rc": 1, "text_pick_cr": None, "text_pick_rc": None,
         "consistent": None, "correct_cr": 0.5, "correct_rc": 0.0, "truncated": False, "error": None},
        {"item_id": "4", "truncated": False, "error": "rc: context overflow", "correct": None},
    ]
    got = reliability(rows)
    assert got == pytest.approx({
        "consistency": 1 / 2,  # item 3 has no verdict in one order: not counted
        "first_position_rate": 4 / 5,  # picks 1,2,1,1,1
        "parse_failure_rate": 3 / 6,  # text picks of the 3 rows without an error: 3 of 6 missing
        "truncation_rate": 1 / 4,
        "error_rate": 1 / 4,
    })
    assert position_bias(rows) == pytest.approx({"accuracy_first": 2.5 / 3, "accuracy_second": 1 / 3, "n": 3})


def test_a_judge_rated_per_row_is_rated_by_its_rows_not_by_its_empty_log_prob_picks():
    """rag_rewardbench's rows of an API judge: no log-prob picks, text picks 'Choose 1' in both orders, and the
    row's own first_position_rate of the picks it was scored by."""
    rows = [{"item_id": str(i), "pick_cr": None, "pick_rc": None, "text_pick_cr": 1, "text_pick_rc": 1,
             "first_position_rate": 1.0, "consistent": False, "correct_cr": 1.0, "correct_rc": 0.0,
             "truncated": False, "error": None} for i in range(3)]
    rows.append({"item_id": "3", "truncated": False, "error": "cr: api: HTTP 400 (model 'x', 1 try)", "correct": None})
    got = reliability(rows)
    assert got["first_position_rate"] == 1.0 and got["consistency"] == 0.0 and got["parse_failure_rate"] == 0.0


def test_scorer_rows_have_no_judge_columns():
    rows = [{"item_id": "1", "score_chosen": 1.0, "score_reject": 0.0, "truncated": False, "error": None},
            {"item_id": "2", "score_chosen": 0.0, "score_reject": 1.0, "truncated": True, "error": None}]
    assert reliability(rows) == {"truncation_rate": 0.5, "error_rate": 0.0}
    assert position_bias(rows) is None


def test_runs_and_error_verdicts():
    """Bi'anBench: one row per run; ERROR is an unparseable verdict; agreement over items with 2+ runs."""
    rows = [
        {"item_id": "a", "run": 0, "prediction": "PASS", "error": None},
        {"item_id": "a", "run": 1, "prediction": "PASS", "error": None},
        {"item_id": "a", "run": 2, "prediction": "PASS", "error": None},
        {"item_id": "b", "run": 0, "prediction": "PASS", "error": None},
        {"item_id": "b", "run": 1, "prediction": "ERROR", "error": None},
        {"item_id": "b", "run": 2, "prediction": None, "error": "no answer for request run2"},
        {"item_id": "c", "run": 0, "prediction": "FAIL", "error": None},
    ]
    got = reliability(rows)
    assert got["run_agreement"] == pytest.approx(1 / 2)  # a agrees, b does not, c has one run
    assert got["parse_failure_rate"] == pytest.approx(1 / 6)
    assert got["error_rate"] == pytest.approx(1 / 7)
    assert "consistency" not in got and "shuffle_agreement" not in got


def test_utility_rows():
    """utility: parse_failures / n_requests, pairwise consistency and first_position_rate as rates per row,
    listwise shuffle_scores."""
    rows = [
        {"item_id": "q1", "form": "pairwise", "n_requests": 4, "parse_failures": 1, "consistency": 0.5,
         "first_position_rate": 0.75, "shuffle_scores": [], "error": None},
        {"item_id": "q1", "form": "listwise_set", "n_requests": 3, "parse_failures": 0, "consistency": None,
         "first_position_rate": None, "shuffle_scores": [0.5, 0.5, 0.5], "error": None},
        {"item_id": "q2", "form": "listwise_set", "n_requests": 3, "parse_failures": 2, "consistency": None,
         "first_position_rate": None, "shuffle_scores": [1.0, 0.5, 1.0], "error": None},
    ]
    got = reliability(rows)
    assert got == pytest.approx({"consistency": 0.5, "first_position_rate": 0.75,
                                 "parse_failure_rate": 3 / 10, "error_rate": 0.0, "shuffle_agreement": 0.5})


def test_report_reads_the_verdict_columns_and_not_the_texts():
    assert all(needed_column(c) for c in ("correct", "pick_cr", "text_pick_rc", "run", "shuffle_scores"))
    assert not any(needed_column(c) for c in ("text_cr", "text", "reasoning", "texts", "logprobs_cr"))
