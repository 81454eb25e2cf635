"""The prediction row of each judgment condition of an item: its answers parsed, mapped back to the original
passages, voted, and scored (sets: precision, recall, F1, correct = F1; rankings: NDCG@1, NDCG@5, MRR@5,
correct = NDCG@5). A failed or missing request fails its row (correct None); an unparseable judgment is
counted in parse_failures and scores as an empty answer (selects or ranks nothing; a comparison nobody
wins)."""
from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from benchmarks.row_types import Answer, Item, Row
from benchmarks.stats import stable_seed
from benchmarks.utility.metrics import (
    k_sampling_evidence,
    mrr_at_k,
    ndcg_at_k,
    rank_by_wins,
    set_prf,
    vote_ranks,
    vote_sets,
)
from benchmarks.utility.options import BENCHMARK, Condition, Options, Plan
from benchmarks.utility.parsing import parse_choice, parse_judgment, parse_rank, parse_selection
from benchmarks.utility.prompts import LISTWISE, SET_FORMS
from benchmarks.utility.requests import condition_problem, units

ROW_FIELDS = ("precision", "recall", "f1", "ndcg_1", "ndcg_5", "mrr_5", "selected", "ranking", "consistency",
              "first_position_rate", "k_sampling_evidence")


def judgment_rows(item: Item, by_variant: Mapping[str, Answer], options: Options, plan: Plan) -> list[Row]:
    """The row of each judgment condition: its voted selection or ranking and their metrics."""
    rows = []
    for condition in plan.conditions:
        shown = [] if condition_problem(item, condition) else units(item, condition, options)
        got = [(unit, permutation, by_variant.get(f"{condition.key}/{unit}")) for unit, permutation in shown]
        row: dict[str, Any] = {
            "item_id": item["item_id"], "benchmark": BENCHMARK, "subset": item["subset"],
            "condition": condition.key, "form": condition.form, "wording": condition.wording,
            "order": condition.order, "requirement": condition.requirement,
            "gt_position": condition.gt_position,
            "n_requests": len(shown), "parse_failures": None, "correct": None,
            "truncated": any(bool(a and a.get("truncated")) for _, _, a in got),
            "n_tokens": sum(int((a or {}).get("n_tokens") or 0) for _, _, a in got),
            **{field: None for field in ROW_FIELDS},
            "shuffle_gt_positions": [], "shuffle_scores": [],
            "texts": [(a or {}).get("text") for _, _, a in got],
        }
        errors = sorted(f"{unit}: {a['error']}" for unit, _, a in got if a and a.get("error"))
        missing = [unit for unit, _, a in got if a is None]
        if missing:
            errors.append(f"no answer for request(s) {', '.join(missing)}")
        row["error"] = condition_problem(item, condition) or "; ".join(errors) or None
        if row["error"] is None:
            row.update(score(item, condition, [(p, a.get("text")) for _, p, a in got]))
            row["correct"] = row["f1"] if condition.form in SET_FORMS else row["ndcg_5"]
        rows.append(row)
    return rows


def score(item: Mapping[str, Any], condition: Condition, judged: list[tuple[list[int], str | None]]
          ) -> dict[str, Any]:
    """The voted answer of one condition in original passage indices, and its metrics."""
    labels, n, form = item["labels"], len(item["labels"]), condition.form
    out: dict[str, Any] = {}
    if form == "pointwise":
        verdicts = [parse_judgment(text) for _, text in judged]
        out["selected"] = [p[0] for (p, _), v in zip(judged, verdicts) if v == 1]
    elif form == "pairwise":
        verdicts = [parse_choice(text) for _, text in judged]
        wins = [(p[v], p[1 - v]) for (p, _), v in zip(judged, verdicts) if v is not None]
        out["ranking"] = rank_by_wins(wins, tie_order=tie_order(item))
        out.update(pairwise_position(judged, verdicts))
    elif form == "listwise_set":
        verdicts = [parse_selection(text, n) for _, text in judged]
        selections = [[p[i] for i in v] if v is not None else [] for (p, _), v in zip(judged, verdicts)]
        out["selected"] = vote_sets(selections)
        out["k_sampling_evidence"] = k_sampling_evidence(selections)
        out["shuffle_scores"] = [set_prf(s, labels)[2] for s in selections]
    else:
        verdicts = [parse_rank(text, n) for _, text in judged]
        rankings = [[p[i] for i in v] if v is not None else [] for (p, _), v in zip(judged, verdicts)]
        out["ranking"] = vote_ranks(rankings)
        out["shuffle_scores"] = [ndcg_at_k(r, labels, 5) for r in rankings]
    if form in LISTWISE:
        out["shuffle_gt_positions"] = [next((pos for pos, i in enumerate(p) if labels[i]), None)
                                       for p, _ in judged]
    out["parse_failures"] = sum(v is None for v in verdicts)
    if form in SET_FORMS:
        out["precision"], out["recall"], out["f1"] = set_prf(out["selected"], labels)
    else:
        ranking = out["ranking"]
        out["ndcg_1"], out["ndcg_5"] = ndcg_at_k(ranking, labels, 1), ndcg_at_k(ranking, labels, 5)
        out["mrr_5"] = mrr_at_k(ranking, labels, 5)
    return out


def tie_order(item: Mapping[str, Any]) -> list[int]:
    """A seeded order of the item's passages that breaks ties in win counts without favouring a position."""
    order = list(range(len(item["passages"])))
    random.Random(stable_seed(item["item_id"], "ties")).shuffle(order)
    return order


def pairwise_position(judged: list[tuple[list[int], str | None]], verdicts: list[int | None]
                      ) -> dict[str, Any]:
    """docs/protocols.md 5 for pairwise judges: how often the same passage wins both orders of a pair, and how
    often the judge picks whichever passage is shown first."""
    winner = {tuple(p): p[v] for (p, _), v in zip(judged, verdicts) if v is not None}
    both = [(i, j) for i, j in winner if i < j and (j, i) in winner]
    parsed = [v for v in verdicts if v is not None]
    agreed = sum(winner[(i, j)] == winner[(j, i)] for i, j in both)
    return {"consistency": agreed / len(both) if both else None,
            "first_position_rate": sum(v == 0 for v in parsed) / len(parsed) if parsed else None}
