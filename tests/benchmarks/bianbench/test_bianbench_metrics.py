"""Bi'anBench metrics: macro averages per run, then mean and spread over runs, checked against the paper's
Tables 2, 17 and 18; the same numbers from `ragjudge aggregate` on the minimal columns."""
import json
import math

import pytest
from bianbench_cases import BIAN, DEFAULT, answer, write_jsonl

from benchmarks.bianbench import PAPER_SUBSETS, TABLE2_TASKS, TASKS
from jobs.flow.reducers import aggregate


def test_measures_need_only_correct():
    assert BIAN.measures({"item_id": "bianbench/en/1", "correct": 1.0}) == {
        "correct": 1.0, "failed": 0.0, "unparsed": None, "pass_recall": None, "fail_recall": None,
        "text_correct": None, "logprob_correct": None}
    assert BIAN.group_key({"item_id": "bianbench/zh/7", "task": "Machine Translation", "subset": "PDC"}) == (
        "zh|zh|translation|PDC")
    assert BIAN.group_key({"item_id": "x", "split": "cf", "task": "qa", "subset": "s", "label": "失败"}) == "cf|zh|qa|s"


def test_mean_and_sample_std_over_runs_hand_computed():
    # EN subsets A, B (QA) and C (Summarization), three runs each.
    runs = {("qa", "A"): [[1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]],  # 0.5, 0.75, 1.0
            ("qa", "B"): [[1, 0], [0, 0], [1, 1]],  # 0.5, 0.0, 1.0
            ("summarization", "C"): [[1], [0], [1]]}  # 1.0, 0.0, 1.0
    rows = [{"item_id": f"bianbench/en/{subset}{i}", "split": "en", "task": task, "subset": subset, "run": run,
             "correct": float(v)}
            for (task, subset), per_run in runs.items() for run, values in enumerate(per_run)
            for i, v in enumerate(values)]
    m = aggregate(BIAN, rows, resamples=200)
    en = m["splits"]["en"]
    # per run: Avg = (A + B + C) / 3 = 2/3, 1/4, 1 -> mean 23/36, sample std sqrt(366/1296/2)
    assert en["avg_by_run"] == pytest.approx({"run0": 2 / 3, "run1": 0.25, "run2": 1.0})
    assert en["avg"] == pytest.approx(23 / 36) and en["avg_std"] == pytest.approx(math.sqrt(183 / 1296))
    # QA per run = (A + B) / 2 = 0.5, 0.375, 1.0 -> mean 0.625, std sqrt(0.21875 / 2)
    assert en["tasks"]["qa"] == pytest.approx(0.625) and en["tasks_std"]["qa"] == pytest.approx(math.sqrt(0.109375))
    assert en["tasks"]["summarization"] == pytest.approx(2 / 3)
    a = en["subsets"]["A"]
    assert (a["accuracy"], a["std"], a["n"], a["n_rows"]) == (pytest.approx(0.75), pytest.approx(0.25), 4, 12)
    assert a["ci95"][0] <= 0.75 <= a["ci95"][1]
    assert m["n"] == 21 and m["n_items"] == 7 and m["runs"] == [0, 1, 2] and m["n_errors"] == 0
    assert m == aggregate(BIAN, list(reversed(rows)), resamples=200)  # order-independent, seeded


def test_recall_error_rate_and_logprob_accuracy():
    item = {"item_id": "bianbench/en/1", "split": "en", "task": "qa", "subset": "S", "language": "en",
            "label": "PASS"}
    fail_item = {**item, "item_id": "bianbench/en/2", "label": "FAIL"}
    rows = (BIAN.combine(item, [answer(0, '{"SCORE": "PASS"}', [-0.1, -2.0]), answer(1, "no idea", [-0.1, -2.0]),
                                answer(2, '{"SCORE": "FAIL"}', [-3.0, -0.1])], "generative", DEFAULT)
            + BIAN.combine(fail_item, [answer(0, '{"SCORE": "FAIL"}', [-0.1, -2.0]), answer(1, '{"SCORE": "FAIL"}'),
                                       answer(2, error="boom")], "generative", DEFAULT))
    s = aggregate(BIAN, rows, resamples=50)["splits"]["en"]
    sub = s["subsets"]["S"]
    # runs: 0 -> PASS right, FAIL right; 1 -> PASS item ERROR (wrong), FAIL right; 2 -> PASS item wrong, FAIL failed
    assert sub["by_run"] == pytest.approx({"run0": 1.0, "run1": 0.5, "run2": 0.0})
    assert sub["pass_recall"] == pytest.approx(1 / 3) and sub["fail_recall"] == pytest.approx(1.0)
    assert sub["error_rate"] == pytest.approx((0 + 0.5 + 0) / 3)
    # log-prob verdicts: run0 PASS (right), PASS (wrong); run1 PASS (right), none; run2 FAIL (wrong), failed
    assert sub["logprob_accuracy"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert sub["failed_rate"] == pytest.approx((0 + 0 + 0.5) / 3)
    assert s["error_rate"] == sub["error_rate"] and s["n_errors"] == 1


# Table 17 (EN) and Table 18 (ZH) subset accuracies, and the same models' Table 2 task scores and Avg.
TABLE17 = {  # HaluEval_qa .. IfQA (QA), FIB, HaluEval_sum, WebNLG, RAGTruth_d2t, PDC, WMT21
    "GPT-4o-0806": [86.9, 84.0, 85.7, 83.1, 95.0, 83.9, 87.1, 86.7, 74.4, 76.6, 91.1, 80.0, 80.9, 91.8],
    "GPT-4o-mini": [87.2, 80.2, 80.7, 79.8, 86.5, 84.2, 80.2, 84.3, 60.1, 57.6, 86.6, 78.0, 70.2, 88.9],
    "Llama3.1-8B-Instruct": [82.6, 70.1, 61.6, 56.7, 79.3, 79.4, 73.4, 75.3, 60.4, 60.0, 84.5, 40.6, 57.0, 79.6],
    "Llama3.1-70B-Instruct": [86.0, 85.7, 75.1, 78.1, 89.1, 87.5, 77.7, 86.2, 72.8, 77.6, 90.5, 71.2, 59.2, 87.3],
    "Qwen2-7B-Instruct": [86.4, 58.9, 59.5, 55.6, 64.4, 64.4, 55.6, 69.1, 52.4, 61.2, 78.8, 54.0, 66.2, 83.3],
    "Qwen2-72B-Instruct": [86.6, 83.2, 74.2, 69.6, 87.7, 88.9, 88.1, 83.6, 71.5, 75.6, 91.8, 62.2, 74.8, 89.3],
    "Lynx-8B-v1.1": [86.2, 79.4, 76.5, 72.7, 96.3, 88.4, 82.0, 83.7, 62.1, 70.0, 83.7, 47.8, 65.6, 82.4],
    "Qwen2.5-7B-Instruct": [85.3, 74.6, 59.3, 54.0, 82.5, 75.3, 64.9, 76.8, 64.4, 67.8, 85.4, 60.2, 74.1, 87.6],
    "Qwen2.5-14B-Instruct": [83.4, 78.4, 73.2, 71.2, 90.7, 81.8, 78.7, 81.1, 70.4, 75.8, 88.1, 71.0, 83.3, 91.0],
    "Qwen2.5-72B-Instruct": [86.2, 83.7, 78.4, 81.3, 92.8, 88.9, 88.5, 85.8, 72.3, 77.0, 91.0, 66.4, 81.8, 91.4],
    "Bi'an-qwen-7B": [82.3, 76.8, 75.1, 71.7, 93.4, 85.9, 79.5, 81.2, 70.6, 61.4, 87.4, 77.4, 91.3, 89.3],
    "Bi'an-qwen-14B": [85.7, 80.7, 79.3, 78.5, 93.3, 87.5, 86.1, 84.5, 69.7, 69.4, 86.0, 81.4, 94.5, 90.5],
}
TABLE2_EN = {  # QA, Summarization, Data-to-Text, Machine Translation, Avg.
    "GPT-4o-0806": [86.6, 75.5, 85.6, 86.4, 84.8], "GPT-4o-mini": [82.9, 58.9, 82.3, 79.6, 78.9],
    "Llama3.1-8B-Instruct": [72.3, 60.2, 62.6, 68.3, 68.6], "Llama3.1-70B-Instruct": [83.2, 75.2, 80.9, 73.3, 80.3],
    "Qwen2-7B-Instruct": [64.2, 56.8, 66.4, 74.8, 64.9], "Qwen2-72B-Instruct": [82.7, 73.6, 77.0, 82.1, 80.5],
    "Lynx-8B-v1.1": [83.2, 66.1, 65.8, 74.0, 76.9], "Qwen2.5-7B-Instruct": [71.6, 66.1, 72.8, 80.9, 72.3],
    "Qwen2.5-14B-Instruct": [79.8, 73.1, 79.6, 87.2, 79.8], "Qwen2.5-72B-Instruct": [85.7, 74.7, 78.7, 86.6, 83.3],
    "Bi'an-qwen-7B": [80.7, 66.0, 82.4, 90.3, 80.2], "Bi'an-qwen-14B": [84.5, 69.6, 83.7, 92.5, 83.4],
}
TABLE18 = {  # CRUD_MDQA, WebQA1.0, LawBench_RC, WebCPM-LFQA (QA), CSDS, CRUD_sum, LawBench_sum, PDC, WMT21
    "GPT-4o-0806": [91.0, 90.3, 95.2, 81.9, 85.9, 95.3, 92.4, 92.4, 92.2],
    "GPT-4o-mini": [86.8, 87.6, 91.6, 70.9, 76.1, 92.1, 91.0, 77.0, 90.4],
    "Llama3-8B-chinese": [63.8, 58.5, 70.0, 35.8, 63.0, 73.7, 78.8, 44.8, 66.1],
    "Llama3-70B-chinese": [82.1, 85.8, 89.6, 44.1, 72.7, 83.1, 91.2, 55.4, 82.2],
    "Qwen2-7B-Instruct": [71.2, 79.5, 73.0, 41.9, 63.7, 78.1, 80.6, 63.5, 81.1],
    "Qwen2-72B-Instruct": [89.0, 89.6, 90.8, 58.7, 81.3, 90.6, 93.6, 75.0, 89.5],
    "Qwen2.5-7B-Instruct": [86.7, 82.4, 87.9, 56.7, 71.6, 89.6, 78.4, 67.0, 85.4],
    "Qwen2.5-14B-Instruct": [89.9, 85.5, 90.2, 72.2, 84.0, 93.6, 89.5, 79.1, 91.2],
    "Qwen2.5-72B-Instruct": [90.8, 90.5, 92.9, 72.5, 84.1, 94.1, 94.3, 85.8, 91.7],
    "Bi'an-qwen-7B": [90.2, 87.7, 92.7, 72.8, 83.8, 96.4, 85.1, 90.6, 90.0],
    "Bi'an-qwen-14B": [93.4, 90.3, 94.1, 75.8, 86.9, 96.1, 89.8, 93.4, 91.8],
}
TABLE2_ZH = {  # QA, Summarization, Machine Translation, Avg.
    "GPT-4o-0806": [89.6, 91.2, 92.3, 90.7], "GPT-4o-mini": [84.2, 86.4, 83.7, 84.8],
    "Llama3-8B-chinese": [57.0, 71.8, 55.5, 61.6], "Llama3-70B-chinese": [75.4, 82.3, 68.8, 76.2],
    "Qwen2-7B-Instruct": [66.4, 74.1, 72.3, 70.3], "Qwen2-72B-Instruct": [82.0, 88.5, 82.3, 84.2],
    "Qwen2.5-7B-Instruct": [78.4, 79.9, 76.2, 78.4], "Qwen2.5-14B-Instruct": [84.5, 89.0, 85.2, 86.1],
    "Qwen2.5-72B-Instruct": [86.7, 90.8, 88.8, 88.5], "Bi'an-qwen-7B": [85.9, 88.4, 90.3, 87.7],
    "Bi'an-qwen-14B": [88.4, 90.9, 92.6, 90.1],
}
SUBSETS = {"en": [(task, s) for task, names in PAPER_SUBSETS["en"].items() for s in names],
           "zh": [(task, s) for task, names in PAPER_SUBSETS["zh"].items() for s in names]}
TABLE4_SIZES = [1000, 893, 1000, 995, 970, 1000, 1000, 995, 848, 1000, 1100, 500, 1000, 1000]  # EN subset sizes


def rows_with_accuracies(split, accuracies, per_subset=1000):
    """1000 rows per subset, the first round(10 * accuracy) of them right: subset accuracy = the printed value."""
    return [{"item_id": f"bianbench/{split}/{subset}-{i}", "split": split, "task": task, "subset": subset,
             "correct": 1.0 if i < round(10 * accuracy) else 0.0}
            for (task, subset), accuracy in zip(SUBSETS[split], accuracies) for i in range(per_subset)]


def test_gpt4o_table17_subsets_give_its_table2_row():
    en = aggregate(BIAN, rows_with_accuracies("en", TABLE17["GPT-4o-0806"]), resamples=10)["splits"]["en"]
    assert en["subsets"]["DROP"]["accuracy"] == pytest.approx(0.831) and en["subsets"]["DROP"]["n"] == 1000
    # hand-computed: QA = 692.4 / 8 = 86.55, the others pairs' means; Avg. = 1187.2 / 14 = 84.8
    assert [100 * en["tasks"][t] for t in TASKS] == pytest.approx([86.55, 75.5, 85.55, 86.35])
    assert 100 * en["avg"] == pytest.approx(1187.2 / 14) and round(100 * en["avg"], 1) == 84.8
    assert en["avg_std"] is None  # one run


@pytest.mark.parametrize("split, subsets, printed", [
    ("en", TABLE17, TABLE2_EN), ("zh", TABLE18, TABLE2_ZH)])
def test_every_table2_row_is_the_macro_average_of_its_table17_18_subsets(split, subsets, printed):
    # Printed subset values are rounded to 0.1, so their mean may be off by 0.05, plus 0.05 for the printed
    # score's own rounding: 0.1 is "within rounding".
    for model, accuracies in subsets.items():
        s = aggregate(BIAN, rows_with_accuracies(split, accuracies), resamples=1)["splits"][split]
        ours = [100 * s["tasks"][t] for t in TABLE2_TASKS[split]] + [100 * s["avg"]]
        assert ours == pytest.approx(printed[model], abs=0.1 + 1e-9), model


def test_the_printed_avg_rules_out_a_mean_over_tasks_or_over_rows():
    """Why the split Avg. is the mean over subsets: the other two readings miss Table 2 by far."""
    values, sizes = TABLE17["GPT-4o-0806"], TABLE4_SIZES
    over_tasks = (sum(values[:8]) / 8 + sum(values[8:10]) / 2 + sum(values[10:12]) / 2 + sum(values[12:]) / 2) / 4
    over_rows = sum(v * n for v, n in zip(values, sizes)) / sum(sizes)
    assert abs(over_tasks - 84.8) > 1.0 and abs(over_rows - 84.8) > 0.3
    assert abs(sum(values) / len(values) - 84.8) < 0.05


# ---- the aggregate contract ----

def test_cli_aggregate_contract_with_only_the_minimal_columns(tmp_path, capsys):
    from jobs.cli import main

    rows = [
        {"item_id": "bianbench/en/1", "split": "en", "task": "qa", "subset": "S1", "correct": 1},
        {"item_id": "bianbench/en/2", "split": "en", "task": "Question Answering", "subset": "S1", "correct": 0},
        {"item_id": "bianbench/en/3", "split": "en", "task": "qa", "subset": "S2", "correct": 1},
        {"item_id": "bianbench/en/4", "split": "en", "task": "translation", "subset": "T", "correct": 0},
        {"item_id": "bianbench/en/5", "split": "en", "task": "translation", "subset": "T", "correct": 1},
        {"item_id": "bianbench/zh/6", "split": "zh", "task": "qa", "subset": "Z", "correct": 1, "run": 0},
        {"item_id": "bianbench/zh/6", "split": "zh", "task": "qa", "subset": "Z", "correct": 0, "run": 1},
        {"item_id": "bianbench/zh/7", "split": "zh", "task": "qa", "subset": "Z", "correct": 1, "run": 0},
        {"item_id": "bianbench/zh/7", "split": "zh", "task": "qa", "subset": "Z", "correct": 1, "run": 1},
    ]
    path = write_jsonl(tmp_path / "pred.jsonl", rows)
    assert main(["aggregate", "--benchmark", "bianbench", "--predictions", path, "--out", str(tmp_path / "out")]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    assert (m["benchmark"], m["n"], m["n_errors"]) == ("bianbench", 9, 0)
    en, zh = m["splits"]["en"], m["splits"]["zh"]
    assert en["tasks"] == {"qa": 0.75, "translation": 0.5}  # QA = (0.5 + 1.0) / 2
    assert en["avg"] == pytest.approx(2 / 3)  # (0.5 + 1.0 + 0.5) / 3; over tasks 0.625, over rows 0.6
    assert en["subsets"]["S1"]["n"] == 2 and len(en["subsets"]["S1"]["ci95"]) == 2
    assert zh["avg"] == 0.75 and zh["avg_std"] == pytest.approx(math.sqrt(0.125))  # runs 1.0 and 0.5
    assert en["error_rate"] is None and en["logprob_accuracy"] is None


def test_a_split_by_language_task_and_subset_hand_computed_whole():
    """One run of split cf: subset A in English (1 of 2 right) and in Chinese (1 of 1), B Chinese only (1 of 2);
    one failed row of 5. A name two languages share is told apart by its language and task."""
    from benchmarks.bianbench.metrics import summarize
    groups = {"correct": {"cf|en|qa|A": [("a1#0", 1.0), ("a2#0", 0.0)], "cf|zh|qa|A": [("b1#0", 1.0)],
                          "cf|zh|summarization|B": [("c1#0", 0.0), ("c2#0", 1.0)]},
              "failed": {"cf|en|qa|A": [("a1#0", 0.0), ("a2#0", 1.0)], "cf|zh|qa|A": [("b1#0", 0.0)],
                         "cf|zh|summarization|B": [("c1#0", 0.0), ("c2#0", 0.0)]}}
    rates = {"pass_recall": None, "fail_recall": None, "error_rate": None, "text_accuracy": None,
             "logprob_accuracy": None}

    def subset(task, language, accuracy, n, failed):
        return {"task": task, "language": language, "accuracy": accuracy, "std": None,
                "by_run": {"run0": accuracy}, "n": n, "n_rows": n, "ci95": None, **rates, "failed_rate": failed}
    assert summarize(groups, resamples=0)["splits"] == {"cf": {
        "avg": pytest.approx(2 / 3), "avg_std": None, "avg_by_run": {"run0": pytest.approx(2 / 3)},  # (.5+1+.5)/3
        "tasks": {"qa": 0.75, "summarization": 0.5}, "tasks_std": {"qa": None, "summarization": None},
        "languages": {"en": {"avg": 0.5, "std": None}, "zh": {"avg": 0.75, "std": None}},
        "subsets": {"A (en qa)": subset("qa", "en", 0.5, 2, 0.5), "A (zh qa)": subset("qa", "zh", 1.0, 1, 0.0),
                    "B": subset("summarization", "zh", 0.5, 2, 0.0)},
        **rates, "failed_rate": pytest.approx(1 / 6), "n": 5, "n_errors": 1}}


def test_a_subset_with_no_language_or_only_failed_rows_is_still_counted():
    """Subset C has no language (named '?') and no failed column; D only failed rows (no accuracy, n 0)."""
    from benchmarks.bianbench.metrics import summarize
    cf = summarize({"correct": {"cf||qa|C": [("d1#0", 1.0)]}, "failed": {"cf|en|qa|D": [("e1#0", 1.0)]}},
                   resamples=0)["splits"]["cf"]
    assert cf["languages"] == {"en": {"avg": None, "std": None}, "?": {"avg": 1.0, "std": None}}
    assert (cf["avg"], cf["n"], cf["n_errors"], cf["failed_rate"]) == (1.0, 1, 1, 1.0)
    assert {name: (s["language"], s["accuracy"], s["n"], s["n_rows"], s["failed_rate"])
            for name, s in cf["subsets"].items()} == {"C": ("", 1.0, 1, 1, None), "D": ("en", None, 0, 0, 1.0)}
    # no failed column at all, or no correct one: counted as none, not an error
    only_correct = summarize({"correct": {"cf|en|qa|A": [("a#0", 1.0)]}}, resamples=0)["splits"]["cf"]
    assert (only_correct["avg"], only_correct["n"], only_correct["n_errors"]) == (1.0, 1, 0)
    only_failed = summarize({"failed": {"cf|en|qa|A": [("a#0", 1.0)]}}, resamples=0)["splits"]["cf"]
    assert (only_failed["avg"], only_failed["n"], only_failed["n_errors"], only_failed["failed_rate"]) == (
        None, 0, 1, 1.0)
