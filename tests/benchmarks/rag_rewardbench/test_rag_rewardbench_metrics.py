"""RAG-RewardBench's measures and metrics.json layout (benchmarks.rag_rewardbench.metrics) by hand: each
measure on its own key, and the per-subset, per-column and unknown-subset figures of a small set of groups."""
from __future__ import annotations

from benchmarks import rag_rewardbench as rb


def test_a_judges_measures_are_each_its_own_column():
    """Every order's correctness on its own key, and text parse failures counted, not their successes: a row
    whose texts both parsed fails 0 of 2, one with an error counts for none."""
    row = {"correct": 0.5, "correct_cr": 1.0, "correct_rc": 0.0, "correct_alt": 0.25, "consistent": False,
           "first_position_rate": 1.0, "text_pick_cr": 1, "text_pick_rc": 2, "pick_cr": 1}
    assert rb.measures(row) == {"correct": 0.5, "error": 0.0, "truncated": 0.0, "correct_cr": 1.0,
                                "correct_rc": 0.0, "correct_alt": 0.25, "consistent": 0.0, "first_position": 1.0,
                                "text_parse_failure": 0.0}
    assert rb.measures({**row, "error": "api: timeout"})["text_parse_failure"] is None


def test_summarize_by_hand_per_subset_column_and_unknown_subset():
    """Three pairs right of five in three subsets, one pair with an error, one subset of no Table 2 column."""
    groups = {"correct": {"helpful-a": [("1", 1.0), ("2", 0.0)], "reason-b": [("3", 1.0)],
                          "odd-c": [("4", 1.0), ("5", 0.0)]},
              "error": {"helpful-a": [("1", 0.0), ("2", 1.0)], "reason-b": [("3", 0.0)],
                        "odd-c": [("4", 0.0), ("5", 0.0)]},
              "truncated": {"helpful-a": [("1", 0.0), ("2", 0.0)], "reason-b": [("3", 1.0)],
                            "odd-c": [("4", 0.0), ("5", 0.0)]}}
    metrics = rb.summarize(groups, resamples=0)
    assert metrics["benchmark"] == "rag_rewardbench" and (metrics["n"], metrics["n_errors"]) == (5, 1)
    assert metrics["subsets"] == {
        "helpful-a": {"accuracy": 0.5, "n": 2, "ci95": None, "error_rate": 0.5, "truncated_rate": 0.0},
        "odd-c": {"accuracy": 0.5, "n": 2, "ci95": None, "error_rate": 0.0, "truncated_rate": 0.0},
        "reason-b": {"accuracy": 1.0, "n": 1, "ci95": None, "error_rate": 0.0, "truncated_rate": 1.0}}
    assert metrics["columns"] == {"helpful": 0.5, "reason": 1.0, "citation": None, "helpful_avg": 2 / 3,
                                  "harmless": None, "abstain": None, "conflict": None, "harmless_avg": None,
                                  "overall": 3 / 5}
    assert metrics["unknown_subsets"] == ["odd-c"] and "position" not in metrics
    # resamples 0 reaches the columns' intervals too (the default 1,000 would give [0, 1]-like lists here)
    assert metrics["columns_ci95"] == {column: None for column in metrics["columns"]}
    default, thousand = rb.summarize(groups), rb.summarize(groups, resamples=1000)
    assert default["columns_ci95"] == thousand["columns_ci95"] and default["subsets"] == thousand["subsets"]
    assert rb.summarize({}, resamples=0)["n"] == 0
