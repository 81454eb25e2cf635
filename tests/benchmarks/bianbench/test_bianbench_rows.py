"""Bi'anBench rows: one per run from the judge's answers, and the majority-vote ensemble of several judges."""
import pyarrow as pa
import pytest
from bianbench_cases import BIAN, DEFAULT, SAMPLE, answer, options

from benchmarks.bianbench import ensemble
from jobs.flow.reducers import aggregate


def test_combine_one_row_per_run_with_text_and_logprob_verdicts():
    item = next(BIAN.load_items(SAMPLE))  # DROP, gold FAIL
    rows = BIAN.combine(item, [
        answer(0, '{"REASONING": ["German 22.5% > Irish 13.1%"], "SCORE": "FAIL"}', [-2.0, -0.1]),
        answer(1, "I cannot decide.", [-0.2, -1.0]),
        answer(2, error="context overflow: 9000 tokens > max_model_len 8192"),
    ], "generative", DEFAULT)
    assert [(r["run"], r["prediction"], r["logprob_prediction"], r["correct"], r["logprob_correct"]) for r in rows] == [
        (0, "FAIL", "FAIL", 1.0, 1.0), (1, "ERROR", "PASS", 0.0, 0.0), (2, None, None, None, None)]
    assert rows[0]["reasoning"] == "German 22.5% > Irish 13.1%" and rows[1]["reasoning"] is None
    assert {r["verdict"] for r in rows} == {"text"}  # verdict=None: the benchmark's own, the paper's text parse
    assert rows[2]["error"] == "context overflow: 9000 tokens > max_model_len 8192" and rows[2]["truncated"]
    assert {(r["item_id"], r["split"], r["task"], r["subset"], r["language"], r["label"]) for r in rows} == {
        ("bianbench/en/13", "en", "qa", "DROP", "en", "FAIL")}
    assert [BIAN.row_key(r) for r in rows] == ["bianbench/en/13#0", "bianbench/en/13#1", "bianbench/en/13#2"]
    assert BIAN.group_key(rows[0]) == "en|en|qa|DROP"
    # the log-prob path scores `correct` when asked; the text verdict stays in `prediction`
    by_logprob = BIAN.combine(item, [answer(0, "x FAIL", [-0.2, -1.0]), answer(1, "FAIL", None),
                                     answer(2, "FAIL", [-3.0, -0.3])], "generative", DEFAULT,
                              verdict="logprob")
    assert [(r["prediction"], r["correct"], r["text_correct"]) for r in by_logprob] == [
        ("FAIL", 0.0, 1.0), ("FAIL", 0.0, 1.0), ("FAIL", 1.0, 1.0)]
    missing = BIAN.combine(item, [answer(0, '{"SCORE": "FAIL"}')], "generative", options(runs=2))
    assert [r["error"] for r in missing] == [None, "no answer for request run1"]
    table = pa.Table.from_pylist(rows + by_logprob + missing)  # stored as Parquet: one type per column
    assert table.schema.field("logprob_correct").type == pa.float64() and table.num_rows == 8


# ---- ensemble ----

def judge_rows(item_id, label, verdicts):
    """One judge's rows for an item: a verdict per run, or an exception-like error string prefixed 'error:'."""
    return [{"item_id": item_id, "split": "en", "task": "qa", "subset": "S", "language": "en", "run": run,
             "label": label, "prediction": None if v.startswith("error:") else v,
             "error": v[6:] if v.startswith("error:") else None}
            for run, v in enumerate(verdicts)]


def test_ensemble_majority_of_judges_each_the_majority_of_its_runs():
    a = judge_rows("x", "PASS", ["PASS", "PASS", "FAIL"]) + judge_rows("y", "FAIL", ["PASS", "FAIL"]) + (
        judge_rows("z", "FAIL", ["ERROR", "ERROR", "ERROR"]) + judge_rows("w", "PASS", ["error:overflow"]))
    b = judge_rows("x", "PASS", ["FAIL", "FAIL", "ERROR"]) + judge_rows("y", "FAIL", ["FAIL", "FAIL", "FAIL"]) + (
        judge_rows("z", "FAIL", ["error:overflow"]) + judge_rows("w", "PASS", ["error:overflow"]))
    c = judge_rows("x", "PASS", ["PASS", "ERROR", "ERROR"]) + judge_rows("y", "FAIL", ["PASS", "PASS", "PASS"])
    rows = {r["item_id"]: r for r in ensemble({"gpt4o": a, "qwen72b": b, "mini": c})}
    assert {r["model"] for r in rows.values()} == {"ensemble(gpt4o,qwen72b,mini)"}
    # x: PASS, FAIL, PASS -> PASS (right)
    assert (rows["x"]["prediction"], rows["x"]["correct"]) == ("PASS", 1.0)
    assert rows["x"]["votes"] == "gpt4o=PASS; qwen72b=FAIL; mini=PASS"
    # y: gpt4o ties 1-1 and abstains; qwen72b FAIL vs mini PASS ties -> the first judge that voted (qwen72b)
    assert (rows["y"]["prediction"], rows["y"]["correct"], rows["y"]["votes"]) == (
        "FAIL", 1.0, "gpt4o=-; qwen72b=FAIL; mini=PASS")
    # z: no judge gave a verdict -> ERROR, counted wrong; w: every row failed -> an error row
    assert (rows["z"]["prediction"], rows["z"]["correct"]) == ("ERROR", 0.0)
    assert rows["w"]["correct"] is None and rows["w"]["error"] == "every judge's rows for this item failed"
    m = aggregate(BIAN, list(rows.values()), resamples=20)
    assert m["n"] == 3 and m["n_errors"] == 1 and m["splits"]["en"]["avg"] == pytest.approx(2 / 3)


def test_ensemble_of_combined_rows_keeps_the_prediction_schema():
    item = next(BIAN.load_items(SAMPLE))
    judges = {name: BIAN.combine(item, [answer(k, f'{{"SCORE": "{v}"}}') for k, v in enumerate(verdicts)],
                                 "generative", DEFAULT)
              for name, verdicts in {"a": ["FAIL"] * 3, "b": ["PASS", "PASS", "FAIL"], "c": ["FAIL", "PASS", "FAIL"]
                                     }.items()}
    (row,) = ensemble(judges)
    assert (row["prediction"], row["correct"], row["label"], row["run"]) == ("FAIL", 1.0, "FAIL", 0)
    assert set(judges["a"][0]) - set(row) == {"truncated", "n_tokens"}
    assert BIAN.group_key(row) == "en|en|qa|DROP"


def test_combine_rejects_an_unknown_verdict_reading():
    item = next(BIAN.load_items(SAMPLE))
    with pytest.raises(ValueError, match="verdict must be 'text' or 'logprob', not 'vibes'"):
        BIAN.combine(item, [], "generative", DEFAULT, verdict="vibes")
