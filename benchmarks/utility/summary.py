"""From rows to metrics.json: what each row adds to the reducer, and the macro averages over questions per
condition and dataset, with 95% bootstrap intervals and the by-position scores of Figure 5."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks.formatting import mean
from benchmarks.protocol import Groups
from benchmarks.stats import bootstrap_ci
from benchmarks.utility import gtu
from benchmarks.utility.options import BENCHMARK
from benchmarks.utility.prompts import SET_FORMS

SET_METRICS = ("precision", "recall", "f1")
RANK_METRICS = ("ndcg_1", "ndcg_5", "mrr_5")


def group_key(row: Mapping[str, Any]) -> str:
    """Values are grouped by condition and dataset: each group is one cell of Tables 2-3 / Figures 4-6."""
    return f"{row.get('condition') or ''}|{row.get('subset') or ''}"


def row_key(row: Mapping[str, Any]) -> str:
    """One value per question within a group (a group is one condition), so averages are macro over
    questions."""
    return row["item_id"]


def measures(row: Mapping[str, Any]) -> dict[str, float | None]:
    """What the reducers track per row. `gt<p>` is the mean score of the row's shuffles whose first
    ground-truth passage stood at prompt position p (F1 for listwise-set, NDCG@5 for listwise-rank). QA rows
    track their answer scores (gtu.qa_measures)."""
    if row.get("form") == "qa":
        return gtu.qa_measures(row)
    error = bool(row.get("error"))
    out: dict[str, float | None] = {
        "correct": row.get("correct"), "error": float(error), "truncated": float(bool(row.get("truncated"))),
        "parse_failure_rate": None if error or not row.get("n_requests")
        else (row.get("parse_failures") or 0) / row["n_requests"],
    }
    for name in (*SET_METRICS, *RANK_METRICS, "consistency", "first_position_rate"):
        if row.get(name) is not None:
            out[name] = row[name]
    if not error:
        by_position: dict[int, list[float]] = {}
        for position, score in zip(row.get("shuffle_gt_positions") or [], row.get("shuffle_scores") or []):
            if position is not None:
                by_position.setdefault(int(position), []).append(float(score))
        out.update({f"gt{p}": sum(v) / len(v) for p, v in by_position.items()})
    return out


def summarize(groups: Groups, resamples: int = 1000) -> dict[str, Any]:
    """metrics.json: per condition, per dataset and pooled ("all"), the macro average over questions of each
    metric with its 95% bootstrap interval, the parse-failure and error rates, and the by-position scores;
    under "qa" (GTU items only), per evidence source and dataset, the answer scores (gtu.summarize_qa)."""
    subsets_of: dict[str, set[str]] = {}
    for cell in {cell for by_cell in groups.values() for cell in by_cell}:
        condition, _, subset = cell.partition("|")
        if condition:  # rows without a condition are bad input rows: counted in n_errors only
            subsets_of.setdefault(condition, set()).add(subset)
    scored = [key for pairs in groups.get("correct", {}).values() for key, _ in pairs]
    errors = sum(v for pairs in groups.get("error", {}).values() for _, v in pairs)
    metrics: dict[str, Any] = {"benchmark": BENCHMARK, "n": len(scored), "n_errors": int(errors),
                               "n_items": len(set(scored)), "conditions": {}}
    qa = {c: subsets_of.pop(c) for c in list(subsets_of) if c.startswith(gtu.CONDITION)}
    for condition, subsets in sorted(subsets_of.items()):
        form = condition.split("/", 1)[0]
        out: dict[str, Any] = {"form": form, "metric": "f1" if form in SET_FORMS else "ndcg_5", "subsets": {}}
        for subset in sorted(subsets):
            key = f"{condition}|{subset}"
            out["subsets"][subset] = cell_metrics(groups, [key], key, resamples)
        out["all"] = cell_metrics(groups, [f"{condition}|{s}" for s in subsets], f"{condition}|all",
                                  resamples)
        metrics["conditions"][condition] = out
    if qa:
        metrics["qa"] = gtu.summarize_qa(groups, qa, f"{BENCHMARK}/qa", resamples)
    return metrics


def cell_metrics(groups: Groups, cells: list[str], seed_key: str, resamples: int) -> dict[str, Any]:
    """One table cell: macro means with intervals over the questions pooled from `cells`."""
    def values(measure: str) -> list[float]:
        pairs = sorted((cell, key, v) for cell in cells for key, v in groups.get(measure, {}).get(cell, []))
        return [v for _, _, v in pairs]

    correct = values("correct")
    out: dict[str, Any] = {
        "n": len(correct), "correct": mean(correct),
        "correct_ci95": bootstrap_ci(correct, f"{BENCHMARK}/{seed_key}/correct", resamples)}
    for name in (*SET_METRICS, *RANK_METRICS):
        scores = values(name)
        if scores:
            out[name] = mean(scores)
            out[f"{name}_ci95"] = bootstrap_ci(scores, f"{BENCHMARK}/{seed_key}/{name}", resamples)
    for name in ("error", "truncated", "parse_failure"):
        out[f"{name}_rate"] = mean(values(name if name != "parse_failure" else "parse_failure_rate"))
    for name in ("consistency", "first_position_rate"):
        if values(name):
            out[name] = mean(values(name))
    positions = sorted(int(m[2:]) for m in groups if m.startswith("gt") and m[2:].isdigit()
                       and any(groups[m].get(cell) for cell in cells))
    if positions:
        out["by_gt_position"] = {
            str(p): {"value": mean(values(f"gt{p}")), "n": len(values(f"gt{p}")),
                     "ci95": bootstrap_ci(values(f"gt{p}"), f"{BENCHMARK}/{seed_key}/gt{p}", resamples)}
            for p in positions}
    return out
