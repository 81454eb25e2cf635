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


# Issue 64: the whole text, laid out by hand, of two models' metrics (one without a name, under a custom config):
# the set block (conditions sorted, a missing cell "-", intervals only where there are), the rank block, the
# positions in numeric order (10 after 2), Table 4, and the note lines.
TABLE_INPUT = [
    {"model": "judge-a", "kind": "generative", "n_errors": 2, "note": "first run", "conditions": {
        "pointwise/utility/q_first/none": {
            "form": "pointwise", "metric": "f1", "all": {"n": 3, "parse_failure_rate": 0.0},
            "subsets": {"NQ": {"precision": 0.5, "precision_ci95": [0.25, 0.75], "recall": 1.0, "f1": 0.6667,
                               "f1_ci95": [0.5, 0.8]}, "HQ": {"precision": 0.0, "recall": None, "f1": 0.0}}},
        "listwise_set/utility/q_first/none": {
            "form": "listwise_set", "metric": "f1", "all": {"n": 2},
            "subsets": {"NQ": {"f1": 0.5, "by_gt_position": {"0": {"value": 0.5}, "10": {"value": 1.0},
                                                              "2": {"value": None}}}}},
        "pairwise/utility/q_first/none": {
            "form": "pairwise", "metric": "ndcg_5", "all": {"n": 4, "parse_failure_rate": 0.25},
            "subsets": {"NQ": {"ndcg_1": 0.25, "ndcg_5": 0.5, "ndcg_5_ci95": [0.4, 0.6], "mrr_5": 0.75}}}}},
    {"kind": "api", "config": "my_util", "note": "", "n_errors": 0, "conditions": {
        "listwise_rank/utility/q_first/none": {
            "form": "listwise_rank", "metric": "ndcg_5", "all": {"n": 1, "parse_failure_rate": None},
            "subsets": {"HQ": {"ndcg_5": 1.0, "by_gt_position": {"1": {"value": 0.125}}}}}},
     "qa": {"dense": {"subsets": {"NQ": {"em": 0.5, "em_ci95": [0.0, 1.0], "f1": 0.75, "evidence_size": 5.0}}}}},
]

TABLE_EXPECTED = """\
my_util, utility (Utility judgments): Evidence sets (pointwise, listwise-set), % macro over questions [95% CI]
Model    Condition                          HQ P  HQ R  HQ F1               NQ P   NQ R              NQ F1  n  \
parse fail
judge-a  listwise_set/utility/q_first/none     -     -      -                  -      -               50.0  2  \
         -
judge-a  pointwise/utility/q_first/none      0.0     -    0.0  50.0 [25.0, 75.0]  100.0  66.7 [50.0, 80.0]  3  \
       0.0

my_util, utility (Utility judgments): Evidence rankings (pairwise, listwise-rank), % macro over questions [95% CI]
Model    Condition                           HQ NDCG@1  HQ NDCG@5  HQ MRR@5  NQ NDCG@1          NQ NDCG@5  \
NQ MRR@5  n  parse fail
judge-a  pairwise/utility/q_first/none               -          -         -       25.0  50.0 [40.0, 60.0]  \
    75.0  4        25.0
?        listwise_rank/utility/q_first/none          -      100.0         -          -                  -  \
       -  1           -

Score by position of the ground-truth passage in the listwise input (Figure 5), %
Model    Condition                           Dataset  Metric    @0    @1  @2    @10
judge-a  listwise_set/utility/q_first/none   NQ       F1      50.0     -   -  100.0
?        listwise_rank/utility/q_first/none  HQ       NDCG@5     -  12.5   -      -

GTU answers on each evidence source (Table 4), % macro over questions [95% CI]; passages: mean number handed over
Model  Evidence              NQ EM  NQ F1  NQ passages
?      dense     50.0 [0.0, 100.0]   75.0          5.0

Notes:
  judge-a: 2 condition rows not scored (failed requests); see errors/
  judge-a: first run"""


def test_the_whole_table_text_of_two_models_matches_the_hand_laid_out_text():
    assert BENCH.table_text(TABLE_INPUT) == TABLE_EXPECTED


def test_a_model_without_conditions_qa_or_notes_prints_no_block():
    assert BENCH.table_text([{"model": "m", "conditions": {}}]) == ""


def test_rankings_alone_still_print_their_block_and_a_nameless_models_errors_are_under_question_mark():
    metrics = [{"kind": "api", "n_errors": 3, "conditions": {"pairwise/utility/q_first/none": {
                   "form": "pairwise", "metric": "ndcg_5", "all": {"n": 2, "parse_failure_rate": 0.5},
                   "subsets": {"NQ": {"ndcg_1": 1.0, "ndcg_5": 0.5, "mrr_5": 0.25}}}}},
               {"model": "no-conditions"}]
    assert BENCH.table_text(metrics) == """\
Utility judgments: Evidence rankings (pairwise, listwise-rank), % macro over questions [95% CI]
Model  Condition                      NQ NDCG@1  NQ NDCG@5  NQ MRR@5  n  parse fail
?      pairwise/utility/q_first/none      100.0       50.0      25.0  2        50.0

Notes:
  ?: 3 condition rows not scored (failed requests); see errors/"""
