"""leaderboard.json: every model of a benchmark with its score, interval, rank and letter group, and every
pair of models with its paired test. Computed from item predictions, so `ragjudge report` (a run) and
`ragjudge aggregate` (a file of several models' rows) give the same numbers for the same rows.

The headline score is the mean over items of each item's mean `correct` (rows whose `correct` is null, i.e.
failed rows, do not count, and an item without any scored row is not the model's). With one row per item
(e.g. RAG-RewardBench's pairs) that is the paper's micro-average over items and, with the same resamples, its
interval is metrics.json's. Where an item's rows are its runs, the score is the accuracy averaged over runs
item by item (metrics.json's tables may average per subset instead); where they are its judgment conditions,
they are pooled. Pairs use the items both models scored. A model whose rows failed on items others scored
(errors/, e.g. requests that failed past the engine's retries) is scored on fewer items: its entry says how
many it lacks (`missing`), and its pairs are tested on the shared items only (each pair's `n`).
"""
from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from benchmarks.boundary_types import JsonObject
from benchmarks.stats import bootstrap_ci
from jobs.analysis.significance import holm, letter_groups, paired_test

ALPHA = 0.05  # family-wise level of the letter groups, after Holm over all pairs of a benchmark

Outcomes = dict[str, float]  # item id -> the item's mean `correct` for one model


def item_outcomes(rows: Iterable[Mapping[str, Any]]) -> tuple[Outcomes, dict[str, str]]:
    """(item id -> mean of the item's non-null `correct`, item id -> subset) for one model's rows."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    subsets: dict[str, str] = {}
    names: dict[str, str] = {}  # one string per subset, and item ids interned: a report keeps them per item
    for row in rows:
        item = row.get("item_id")
        if item is None:
            continue
        item = sys.intern(item) if isinstance(item, str) else item
        if item not in subsets:
            subset = str(row.get("subset") or "")
            subsets[item] = names.setdefault(subset, subset)
        if row.get("correct") is not None:
            entry = sums[item]
            entry[0] += float(row["correct"])
            entry[1] += 1
    return {item: total / count for item, (total, count) in sums.items()}, subsets


def by_model(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Rows grouped by their `model` column (rows without one are left out), in first-seen order."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if row.get("model") is not None:
            groups.setdefault(str(row["model"]), []).append(row)
    return groups


def benchmark_leaderboard(benchmark: str, outcomes: Mapping[str, Outcomes], resamples: int = 1000,
                          alpha: float = ALPHA) -> JsonObject:
    """{"models": [...], "pairs": [...]} for one benchmark, models best first, in the contract's layout.

    rank: 1 + the number of models with a strictly higher score; missing (only where not 0): items another
    model scored and this one did not. Each unordered pair appears once, `a` the better-ranked model; a_only:
    items where a's outcome beats b's (for 0/1 outcomes: a right, b wrong).
    """
    scored = {m: o for m, o in outcomes.items() if o}
    items = sorted(set().union(*scored.values())) if scored else []
    index = {item: i for i, item in enumerate(items)}
    matrix = np.full((len(scored), len(items)), np.nan)
    entries = []
    for row, (model, values) in enumerate(scored.items()):
        keys = sorted(values)
        data = [values[k] for k in keys]
        matrix[row, [index[k] for k in keys]] = data
        ci = bootstrap_ci(data, f"{benchmark}/overall", resamples)
        entries.append({"model": model, "score": float(np.mean(data)), "ci95": ci, "n": len(data),
                        "row": row})
    entries.sort(key=lambda e: (-e["score"], e["model"]))
    for e in entries:
        e["rank"] = 1 + sum(other["score"] > e["score"] for other in entries)
    pairs = []
    for i, first in enumerate(entries):
        for second in entries[i + 1:]:
            a, b = matrix[first["row"]], matrix[second["row"]]
            both = ~np.isnan(a) & ~np.isnan(b)
            test = paired_test(a[both], b[both],
                               seed_key=f"{benchmark}/{first['model']}/{second['model']}")
            pairs.append({"a": first["model"], "b": second["model"], "n": test.n, "a_only": test.a_only,
                          "b_only": test.b_only, "test": test.test, "p_value": test.p_value})
    for pair, adjusted in zip(pairs, holm([p["p_value"] for p in pairs])):
        pair["p_holm"] = adjusted
    different = {frozenset((p["a"], p["b"])) for p in pairs if p["p_holm"] < alpha}
    groups = letter_groups([e["model"] for e in entries], different)
    models = [{"model": e["model"], "score": e["score"], "ci95": e["ci95"], "n": e["n"], "rank": e["rank"],
               "group": groups[e["model"]], **({"missing": len(items) - e["n"]} if e["n"] < len(items) else {})}
              for e in entries]
    return {"models": models, "pairs": pairs}


def leaderboard(outcomes: Mapping[str, Mapping[str, Outcomes]], resamples: Mapping[str, int] | int = 1000,
                alpha: float = ALPHA) -> JsonObject:
    """The whole leaderboard.json from benchmark -> model -> outcomes; benchmarks with no scored item (a
    retrieval run, whose rows carry no `correct`) are left out."""
    out: JsonObject = {}
    for benchmark, models in outcomes.items():
        if any(models.values()):
            count = resamples if isinstance(resamples, int) else resamples.get(benchmark, 1000)
            out[benchmark] = benchmark_leaderboard(benchmark, models, count, alpha)
    return {"benchmarks": out}
