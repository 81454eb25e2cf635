"""Ensembles of reward models on RAG-RewardBench, as rows of a virtual model scored like any model's:

- mean: the mean over members of each pair's margin (chosen minus rejected score: a discriminative RM's
  score_*, an implicit RM's reward_*); right when it is above 0 (a tie is wrong, as for one scorer);
- zscore: the same with each member's scores first standardised over all its responses (chosen and rejected
  of every pair it scored), so members on different scales weigh alike: margin / its standard deviation;
- majority: each member votes for the response it got right more often than not (correct above 0.5: chosen,
  below: rejected; exactly 0.5, a judge split between its two orders, abstains); the ensemble is right with
  more votes for the chosen response, wrong with more for the rejected one, and scores 0.5 on a tie or without
  a vote, as a judge without a verdict does. Any kind of model can vote.
A member's failed row (error, no score) does not count for its pair; a pair no member scored is an error row.
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from benchmarks.rag_rewardbench.load import BENCHMARK
from benchmarks.row_types import Row

RULES = ("mean", "zscore", "majority")
SCORE_COLUMNS = (("score_chosen", "score_reject"), ("reward_chosen", "reward_reject"))  # discriminative, implicit


def member_scores(model: str, rows: list[Row]) -> dict[str, tuple[float, float]]:
    """item -> (chosen score, rejected score) of one member's scored rows; a member with no score columns at all
    (a generative judge) raises ValueError naming it."""
    columns = next((c for c in SCORE_COLUMNS if any(row.get(c[0]) is not None for row in rows)), None)
    if columns is None:
        raise ValueError(f"member '{model}' has no scores to average ({' or '.join('/'.join(c) for c in SCORE_COLUMNS)}"
                         "): a judge can join a majority ensemble only")
    return {row["item_id"]: (float(row[columns[0]]), float(row[columns[1]])) for row in rows
            if not row.get("error") and row.get(columns[0]) is not None and row.get(columns[1]) is not None}


def _margins(model: str, rows: list[Row], rule: str) -> dict[str, float]:
    scores = member_scores(model, rows)
    scale = 1.0
    if rule == "zscore" and scores:
        scale = statistics.pstdev([s for pair in scores.values() for s in pair]) or 1.0  # all equal: margins 0
    return {item: (chosen - reject) / scale for item, (chosen, reject) in scores.items()}


def _votes(rows: list[Row]) -> dict[str, int]:
    return {row["item_id"]: (row["correct"] > 0.5) - (row["correct"] < 0.5) for row in rows
            if not row.get("error") and row.get("correct") is not None}


def ensemble(rows_by_model: Mapping[str, list[Row]], rule: str) -> list[Row]:
    """One row per pair any member has a row for, in the prediction schema (item_id, benchmark, subset,
    correct, error), with the ensemble's `margin` (mean, zscore) or its `votes` (majority: "a=chosen; b=-")."""
    if rule not in RULES:
        raise ValueError(f"unknown ensemble rule '{rule}' (known: {', '.join(RULES)})")
    subsets: dict[str, str] = {}
    for rows in rows_by_model.values():
        for row in rows:
            subsets.setdefault(row["item_id"], row.get("subset") or "")
    if rule == "majority":
        per_member = {m: _votes(rows) for m, rows in rows_by_model.items()}
    else:
        per_member = {m: _margins(m, rows, rule) for m, rows in rows_by_model.items()}
    out = []
    for item in sorted(subsets):
        values = {m: v[item] for m, v in per_member.items() if item in v}
        row: dict[str, Any] = {"item_id": item, "benchmark": BENCHMARK, "subset": subsets[item], "correct": None,
                               "error": None if values else "no member scored this pair"}
        if rule == "majority":
            names = {1: "chosen", -1: "reject", 0: "-"}
            row["votes"] = "; ".join(f"{m}={names[values[m]] if m in values else 'none'}" for m in rows_by_model)
            total = sum(values.values())
            row["correct"] = None if not values else 1.0 if total > 0 else 0.0 if total < 0 else 0.5
        elif values:
            row["margin"] = sum(values.values()) / len(values)
            row["correct"] = 1.0 if row["margin"] > 0 else 0.0
        out.append(row)
    return out
