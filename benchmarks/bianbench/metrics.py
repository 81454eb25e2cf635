"""Bi'anBench metrics (checked against Tables 2, 17 and 18).

Within one run, a subset's accuracy is the share of its rows judged right; a task's score is the mean of its
subsets' accuracies; a split's "Avg." is the mean over *all* subsets of the split, not over tasks (GPT-4o-0806
EN: mean of the 14 subsets of Table 17 = 84.8 as printed, mean of the four task scores = 83.5). Every figure is
then averaged over runs, with its spread.
"""
from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any

from benchmarks.bianbench.fields import (
    BENCHMARK,
    LANGUAGES,
    SPLITS,
    TASKS,
    label_of,
    language_of,
    split_of,
    task_name,
)
from benchmarks.formatting import mean, ordered
from benchmarks.row_types import Row
from benchmarks.stats import bootstrap_ci


def group_key(row: Row) -> str:
    """split|language|task|subset: everything the tables average over (language tells CF EN from CF ZH)."""
    task = task_name(row.get("task")) or str(row.get("task") or "")
    return "|".join((split_of(row), language_of(row), task, str(row.get("subset") or "")))


def row_key(row: Row) -> str:
    """item id and run: each run of an item is its own value."""
    return f"{row['item_id']}#{int(row.get('run') or 0)}"


def measures(row: Row) -> dict[str, float | None]:
    """What the reducer tracks per row; None: the row does not count for it. Only `correct` is needed."""
    failed = bool(row.get("error"))
    correct = None if failed else row.get("correct")
    label = label_of(row)
    prediction = row.get("prediction")
    return {
        "correct": correct,
        "failed": 1.0 if failed else 0.0,
        "unparsed": None if failed or prediction is None else float(prediction == "ERROR"),
        "pass_recall": correct if label == "PASS" else None,
        "fail_recall": correct if label == "FAIL" else None,
        "text_correct": None if failed else row.get("text_correct"),
        "logprob_correct": None if failed else row.get("logprob_correct"),
    }


# metrics.json names of the secondary measures, averaged like accuracy.
RATES = {"pass_recall": "pass_recall", "fail_recall": "fail_recall", "unparsed": "error_rate",
         "text_correct": "text_accuracy", "logprob_correct": "logprob_accuracy", "failed": "failed_rate"}

Runs = dict[int, dict[str, float]]  # run -> item id -> value


def summarize(groups: dict[str, dict[str, list[tuple[str, float]]]], resamples: int = 1000) -> dict[str, Any]:
    """metrics.json: per split, subset and task accuracies and the split's Avg., each the mean over runs.

    Per run: subset accuracy = mean over its rows; task = mean of its subsets; split avg = mean of all the
    split's subsets (languages.<lang>: the same over one language's subsets, Table 3). Then mean and sample
    standard deviation over runs (None with one run). The other rates (PASS/FAIL recall, ERROR rate, text
    and log-prob accuracy, failed rows) are averaged the same way. ci95: items resampled, each item's value
    being its mean over runs.
    """
    values: dict[str, dict[tuple[str, ...], Runs]] = {}
    for measure, by_group in groups.items():
        for key, pairs in by_group.items():
            runs = values.setdefault(measure, {}).setdefault(tuple(key.split("|", 3)), {})
            for item_run, value in pairs:
                item_id, _, run = item_run.rpartition("#")
                runs.setdefault(int(run), {})[item_id] = value
    correct = values.get("correct", {})
    keys = sorted(set().union(*(v.keys() for v in values.values())) if values else set())
    all_runs = sorted({run for runs in correct.values() for run in runs})
    metrics: dict[str, Any] = {
        "benchmark": BENCHMARK,
        "n": sum(len(items) for runs in correct.values() for items in runs.values()),
        "n_items": len({item for runs in correct.values() for items in runs.values() for item in items}),
        "n_errors": int(sum(v for runs in values.get("failed", {}).values() for items in runs.values()
                            for v in items.values())),
        "runs": all_runs,
        "averaging": "per run: task = mean of its subsets' accuracies, avg = mean of all the split's subsets; "
                     "then mean and sample std over runs",
        "splits": {},
    }
    for split in ordered(SPLITS, {k[0] for k in keys}):
        split_keys = [k for k in keys if k[0] == split]
        metrics["splits"][split] = _split_metrics(split, split_keys, values, resamples)
    return metrics


def _split_metrics(split: str, keys: list[tuple[str, ...]], values: dict[str, dict[tuple[str, ...], Runs]],
                   resamples: int) -> dict[str, Any]:
    correct = values.get("correct", {})
    avg = _macro(correct, keys)
    out: dict[str, Any] = {"avg": avg["mean"], "avg_std": avg["std"], "avg_by_run": avg["by_run"],
                           "tasks": {}, "tasks_std": {}, "languages": {}, "subsets": {}}
    for task in ordered(TASKS, {k[2] for k in keys}):
        result = _macro(correct, [k for k in keys if k[2] == task])
        out["tasks"][task], out["tasks_std"][task] = result["mean"], result["std"]
    for language in ordered(LANGUAGES, {k[1] for k in keys}):
        result = _macro(correct, [k for k in keys if k[1] == language])
        out["languages"][language or "?"] = {"avg": result["mean"], "std": result["std"]}
    for measure, name in RATES.items():
        out[name] = _macro(values.get(measure, {}), keys)["mean"]
    out["n"] = sum(len(items) for k in keys for items in correct.get(k, {}).values())
    out["n_errors"] = int(sum(v for k in keys for items in values.get("failed", {}).get(k, {}).values()
                              for v in items.values()))
    names = Counter(k[3] for k in keys)
    for key in keys:
        _, language, task, subset = key
        runs = correct.get(key, {})
        result = _macro(correct, [key])
        per_item: dict[str, list[float]] = defaultdict(list)
        for items in runs.values():
            for item_id, value in items.items():
                per_item[item_id].append(value)
        item_means = [sum(v) / len(v) for _, v in sorted(per_item.items())]
        entry = {"task": task, "language": language, "accuracy": result["mean"], "std": result["std"],
                 "by_run": result["by_run"], "n": len(per_item), "n_rows": sum(len(i) for i in runs.values()),
                 "ci95": bootstrap_ci(item_means, f"{BENCHMARK}/{'/'.join(key)}", resamples)}
        entry.update({name: _macro(values.get(measure, {}), [key])["mean"] for measure, name in RATES.items()})
        out["subsets"][subset if names[subset] == 1 else f"{subset} ({language} {task})"] = entry
    return out


def _macro(runs_by_key: dict[tuple[str, ...], Runs], keys: list[tuple[str, ...]]) -> dict[str, Any]:
    """Per run, the mean over `keys` of each key's mean; then mean and sample std of those over runs."""
    by_run: dict[str, float] = {}
    for run in sorted({run for key in keys for run in runs_by_key.get(key, {})}):
        means = [mean(list(runs_by_key[key][run].values())) for key in keys
                 if run in runs_by_key.get(key, {}) and runs_by_key[key][run]]
        if means:
            by_run[f"run{run}"] = sum(means) / len(means)
    per_run = list(by_run.values())
    return {"mean": mean(per_run), "std": statistics.stdev(per_run) if len(per_run) > 1 else None,
            "by_run": by_run}
