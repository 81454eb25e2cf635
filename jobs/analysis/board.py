"""leaderboard.json's whole content for a set of benchmark views: scores, intervals and paired tests
(jobs.analysis.leaderboard), ensembles marked as such, the bias columns (jobs.analysis.bias) and the items
summary (jobs.analysis.items). `ragjudge report` builds the views from a run, `ragjudge aggregate` from a file of
several models' rows (leaderboard_from_rows), so both write the same layout and numbers."""
from __future__ import annotations

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
                if entry["model"] in view.ensembles:
                    entry.update(ensemble=True, **view.ensembles[entry["model"]])
                if entry["model"] in view.over_budget:
                    entry["error_budget"] = view.over_budget[entry["model"]]
            add_bias(bench, view, families, paths, tokenizer)
            bench["items"] = items_summary(board_items(view, bench), [m["model"] for m in bench["models"]])
    incomplete = [{"benchmark": v.name, "model": model, "problem": why} for v in views
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
