"""metrics.json and the tables of utility judgments: macro averages over questions per condition and dataset,
intervals, scores by ground-truth position; the CLI's aggregate."""
import json
import re

import pytest
from test_utility_rows import toy_rows
from utility_cases import BENCH, write_jsonl

from jobs.flow.reducers import aggregate


def hand_rows():
    """Two NQ questions and one HotpotQA question under two conditions, plus one failed row."""
    rows = []
    for item, subset, f1, p, r, positions, scores in (
            ("a", "NQ", 1.0, 1.0, 1.0, [0, 3, 0], [1.0, 0.5, 0.0]),
            ("b", "NQ", 0.5, 0.5, 0.5, [3, 3, None], [1.0, 0.0, 1.0]),
            ("c", "HQ", 0.0, 0.0, 0.0, [1, 1, 1], [0.0, 0.0, 0.0])):
        rows.append({"item_id": item, "subset": subset, "condition": "listwise_set/utility/q_first/none",
                     "form": "listwise_set", "correct": f1, "precision": p, "recall": r, "f1": f1,
                     "n_requests": 3, "parse_failures": 1 if item == "a" else 0, "shuffle_gt_positions": positions,
                     "shuffle_scores": scores, "error": None})
        rows.append({"item_id": item, "subset": subset, "condition": "pairwise/utility/q_first/none",
                     "form": "pairwise", "correct": 0.25, "ndcg_1": 0.0, "ndcg_5": 0.25, "mrr_5": 0.5,
                     "consistency": 1.0 if item == "a" else 0.5, "n_requests": 90, "parse_failures": 0,
                     "error": None})
    rows.append({"item_id": "d", "subset": "NQ", "condition": "pairwise/utility/q_first/none", "form": "pairwise",
                 "correct": None, "error": "p0v1: context overflow", "truncated": True, "n_requests": 90})
    return rows


def test_summarize_macro_over_questions_per_condition_and_dataset_with_positions():
    m = aggregate(BENCH, hand_rows(), resamples=200)
    assert (m["benchmark"], m["n"], m["n_errors"], m["n_items"]) == ("utility", 6, 1, 3)
    lset = m["conditions"]["listwise_set/utility/q_first/none"]
    assert lset["metric"] == "f1" and sorted(lset["subsets"]) == ["HQ", "NQ"]
    nq = lset["subsets"]["NQ"]
    assert nq["n"] == 2 and nq["f1"] == 0.75 and nq["precision"] == 0.75 and nq["correct"] == 0.75
    assert nq["parse_failure_rate"] == pytest.approx(1 / 6) and "ndcg_5" not in nq
    lo, hi = nq["f1_ci95"]
    assert 0.5 <= lo <= 0.75 <= hi <= 1.0
    assert lset["all"]["n"] == 3 and lset["all"]["f1"] == pytest.approx(0.5)
    # item a: position 0 -> mean(1.0, 0.0), position 3 -> 0.5; item b: position 3 -> mean(1.0, 0.0)
    by = nq["by_gt_position"]
    assert sorted(by, key=int) == ["0", "3"]
    assert by["0"]["value"] == 0.5 and by["0"]["n"] == 1
    assert by["3"]["value"] == 0.5 and by["3"]["n"] == 2
    assert lset["subsets"]["HQ"]["by_gt_position"]["1"]["value"] == 0.0
    pair = m["conditions"]["pairwise/utility/q_first/none"]
    assert pair["metric"] == "ndcg_5" and pair["subsets"]["NQ"]["n"] == 2
    assert pair["subsets"]["NQ"]["error_rate"] == pytest.approx(1 / 3)
    assert pair["subsets"]["NQ"]["truncated_rate"] == pytest.approx(1 / 3)
    assert pair["all"]["mrr_5"] == 0.5 and pair["all"]["consistency"] == pytest.approx(2 / 3)
    assert "by_gt_position" not in pair["all"]
    assert m == aggregate(BENCH, list(reversed(hand_rows())), resamples=200)  # order-independent, seeded


def test_combined_rows_aggregate_and_table_text():
    rows = list(toy_rows().values())
    m = aggregate(BENCH, rows, resamples=100)
    assert m["n"] == 4 and m["n_errors"] == 0
    assert m["conditions"]["listwise_set/utility/q_first/answer_first"]["all"]["f1"] == pytest.approx(2 / 3)
    text = BENCH.table_text([{**m, "model": "toy-judge", "kind": "generative", "note": "hand-made answers"},
                          {**aggregate(BENCH, hand_rows(), resamples=100), "model": "other", "kind": "api", "note": ""}])
    lines = text.splitlines()
    assert lines[0] == "Utility judgments: Evidence sets (pointwise, listwise-set), % macro over questions [95% CI]"
    assert re.split(r"\s{2,}", lines[1]) == ["Model", "Condition", "HQ P", "HQ R", "HQ F1", "NQ P", "NQ R", "NQ F1",
                                             "n", "parse fail"]
    toy_set = next(line for line in lines if line.startswith("toy-judge") and "listwise_set" in line)
    assert "66.7 [66.7, 66.7]" in toy_set and toy_set.split()[-2:] == ["1", "33.3"]
    assert any(line.startswith("Utility judgments: Evidence rankings") for line in lines)
    assert any("NDCG@1" in line and "MRR@5" in line for line in lines)
    assert "Score by position of the ground-truth passage in the listwise input (Figure 5), %" in lines
    other = next(line for line in lines if line.startswith("other") and "listwise_set" in line and "NQ" in line)
    assert re.split(r"\s{2,}", other)[:5] == ["other", "listwise_set/utility/q_first/none", "NQ", "F1", "50.0"]
    assert "  other: 1 condition rows not scored (failed requests); see errors/" in lines
    assert "  toy-judge: hand-made answers" in lines


def test_cli_aggregate(tmp_path, capsys):
    from jobs.cli import main

    path = write_jsonl(tmp_path / "pred.jsonl", hand_rows())
    assert main(["aggregate", "--benchmark", "utility", "--predictions", path, "--out", str(tmp_path / "out")]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["n"] == 6 and m["n_errors"] == 1
    assert m["conditions"]["listwise_set/utility/q_first/none"]["subsets"]["NQ"]["f1"] == 0.75
    assert json.loads(capsys.readouterr().out) == m
