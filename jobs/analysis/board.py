"""leaderboard.json's whole content for a set of benchmark views: scores, intervals and paired tests
(jobs.analysis.leaderboard), ensembles marked as such, each cell's failed and bad rows (its metrics.json), the
bias columns (jobs.analysis.bias) and the items summary (jobs.analysis.items). `ragjudge report` builds the views
from a run, `ragjudge aggregate` from a file of several models' rows (leaderboard_from_rows), so both write the
same layout and numbers; leaderboard.csv is the same models, one row per (benchmark, model)."""
from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from benchmarks.boundary_types import JsonObject
from jobs.analysis.bias import add_bias
from jobs.analysis.cell_rows import add_rows
from jobs.analysis.items import board_items, items_summary
from jobs.analysis.leaderboard import by_model, leaderboard
from jobs.analysis.report_view import BenchmarkView
from jobs.analysis.response_pairs import response_pairs
from jobs.loading.families import load_families


def leaderboard_of(views: list[BenchmarkView], paths: Mapping[str, str] | None = None,
                   tokenizer: str | None = None) -> JsonObject:
    """leaderboard.json for these views; `paths`: each model's path (a second name for its family);
    `tokenizer`: what counted the responses' tokens, if anything did."""
    board = leaderboard({v.name: v.outcomes for v in views}, {v.name: v.resamples for v in views})
    families = load_families()
    for view in views:
        bench = board["benchmarks"].get(view.name)
        if bench:
            for entry in bench["models"]:
                entry.update(row_counts(view, entry["model"]))
                if entry["model"] in view.ensembles:
                    entry.update(ensemble=True, **view.ensembles[entry["model"]])
                if entry["model"] in view.over_budget:
                    entry["error_budget"] = view.over_budget[entry["model"]]
            add_bias(bench, view, families, paths, tokenizer)
            bench["items"] = items_summary(board_items(view, bench), [m["model"] for m in bench["models"]])
    incomplete = [{"benchmark": v.name, "model": model, "problem": why, **row_counts(v, model)} for v in views
                  for model, why in v.incomplete.items()]
    if incomplete:  # cells the manifest says are scored and whose rows are not whole: named, not dropped
        board["incomplete"] = incomplete
    return board


def leaderboard_from_rows(benchmark: str, rows: Iterable[Mapping[str, Any]], tokenizer: str | None = None,
                          count_tokens: Callable[[str], int] | None = None) -> JsonObject:
    """leaderboard.json for one benchmark from prediction rows of several models (a `model` column);
    `count_tokens` (named `tokenizer`) also measures the responses in tokens."""
    rows = list(rows)
    view = BenchmarkView(benchmark, benchmark, pairs=response_pairs(rows, count_tokens))
    for model, group in by_model(rows).items():
        add_rows(view, model, group)
    return leaderboard_of([view], tokenizer=tokenizer)


ROW_COUNTS = ("n_errors", "n_bad_rows")  # metrics.json's rows that failed and input rows that could not be read
CSV_COLUMNS = ("benchmark", "model", "status", "score", "ci95_low", "ci95_high", "rank", "group", "n", "missing",
               *ROW_COUNTS, "problem")


def row_counts(view: BenchmarkView, model: str) -> JsonObject:
    """The model's n_errors and n_bad_rows from its cell's metrics.json, those it has ({} for an ensemble)."""
    metrics = next((m for m in view.metrics if m.get("model") == model), {})
    return {key: metrics[key] for key in ROW_COUNTS if metrics.get(key) is not None}


def leaderboard_csv(board: JsonObject) -> str:
    """leaderboard.json's models as CSV, one row per (benchmark, model), best first: `status` is scored, over
    error budget (failed_errors: scored, marked) or not scored (its stored rows are not whole: no score, the
    `problem` says why); a number the board lacks is empty."""
    unscored = board.get("incomplete", [])
    rows = []
    for benchmark in dict.fromkeys([*board["benchmarks"], *(e["benchmark"] for e in unscored)]):
        for m in board["benchmarks"].get(benchmark, {}).get("models", []):
            low, high = m["ci95"] or (None, None)
            rows.append({**m, "benchmark": benchmark, "ci95_low": low, "ci95_high": high,
                         "missing": m.get("missing", 0), "problem": m.get("error_budget"),
                         "status": "over error budget" if "error_budget" in m else "scored"})
        rows += [{**e, "status": "not scored"} for e in unscored if e["benchmark"] == benchmark]
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
