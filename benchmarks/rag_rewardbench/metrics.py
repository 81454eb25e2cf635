"""What the reducer tracks per pair, and metrics.json in the Table 2 layout (micro-averages,
docs/protocols.md 1)."""
from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

from benchmarks.formatting import mean
from benchmarks.keyed_values import pooled as pooled_values
from benchmarks.rag_rewardbench.load import BENCHMARK, category, is_synthetic
from benchmarks.rag_rewardbench.requests import ORDERS
from benchmarks.row_types import Row
from benchmarks.stats import bootstrap_ci

# Table 2 columns: the subset prefix of each, in the paper's order.
HELPFUL_COLUMNS = ("helpful", "reason", "citation")
HARMLESS_COLUMNS = ("harmless", "abstain", "conflict")
COLUMN_TITLES = {
    "helpful": "Helpful/General", "reason": "Reason", "citation": "Citation", "helpful_avg": "Helpful Avg.",
    "harmless": "Harmless/General", "abstain": "Abstain", "conflict": "Conflict",
    "harmless_avg": "Harmless Avg.", "overall": "Overall",
}
POSITION = (("accuracy_chosen_first", "correct_cr"), ("accuracy_chosen_second", "correct_rc"),
            ("consistency", "consistent"), ("first_position_rate", "first_position"),
            ("text_parse_failure_rate", "text_parse_failure"), ("accuracy_other_verdict_path", "correct_alt"))

JUDGE_COLUMNS = ("pick", "text_pick", "text", "logprobs")  # per order: only a generative judge's rows have them


def measures(row: Row) -> dict[str, float | None]:
    """What the reducers track per subset for one item row (None: this item does not count for it)."""
    out: dict[str, float | None] = {
        "correct": row.get("correct"),
        "error": 1.0 if row.get("error") else 0.0,
        "truncated": 1.0 if row.get("truncated") else 0.0,
    }
    # A judge's row, by its values: a classifier's row read from a table beside a judge's has the judge's
    # columns too, all None (pandas, pyarrow.dataset, jobs.store.unify), and is no judge's for that.
    if any(row.get(f"{column}_{order}") is not None for column in JUDGE_COLUMNS for order in ORDERS):
        out["correct_cr"] = row.get("correct_cr")
        out["correct_rc"] = row.get("correct_rc")
        out["correct_alt"] = row.get("correct_alt")
        consistent = row.get("consistent")
        out["consistent"] = None if consistent is None else float(consistent)
        out["first_position"] = row.get("first_position_rate")
        texts = [row.get(f"text_pick_{o}") for o in ORDERS]
        out["text_parse_failure"] = None if row.get("error") else sum(p is None for p in texts) / len(texts)
    return out


def summarize(groups: dict[str, dict[str, list[tuple[str, float]]]], resamples: int = 1000) -> dict[str, Any]:
    """metrics.json in the Table 2 layout from reduced groups: {measure: {subset: [(item_id, value), ...]}}.

    Every average is a micro-average over pairs (docs/protocols.md 1): columns pool their subsets' pairs.
    """
    def pooled(measure: str, subsets: Iterable[str]) -> array:
        return pooled_values(groups.get(measure, {}), subsets)

    correct = groups.get("correct", {})
    all_subsets = sorted(set().union(*(g.keys() for g in groups.values())) if groups else set())
    metrics: dict[str, Any] = {"benchmark": BENCHMARK}
    scored = pooled("correct", all_subsets)
    metrics["n"] = len(scored)
    metrics["n_errors"] = int(sum(pooled("error", all_subsets)))
    metrics["subsets"] = {}
    for subset in all_subsets:
        values = pooled("correct", [subset])
        entry = {"accuracy": mean(values), "n": len(values),
                 "ci95": bootstrap_ci(values, f"{BENCHMARK}/{subset}", resamples)}
        for extra in ("error", "truncated"):
            entry[f"{extra}_rate"] = mean(pooled(extra, [subset]))
        metrics["subsets"][subset] = entry

    column_subsets = {c: [s for s in correct if category(s) == c] for c in HELPFUL_COLUMNS + HARMLESS_COLUMNS}
    column_subsets["helpful_avg"] = [s for c in HELPFUL_COLUMNS for s in column_subsets[c]]
    column_subsets["harmless_avg"] = [s for c in HARMLESS_COLUMNS for s in column_subsets[c]]
    column_subsets["overall"] = [s for s in correct if not is_synthetic(s)]
    metrics["columns"], metrics["columns_n"], metrics["columns_ci95"] = {}, {}, {}
    for column in COLUMN_TITLES:
        values = pooled("correct", column_subsets[column])
        metrics["columns"][column] = mean(values)
        metrics["columns_n"][column] = len(values)
        metrics["columns_ci95"][column] = bootstrap_ci(values, f"{BENCHMARK}/{column}", resamples)
    unknown = sorted(s for s in correct if category(s) not in HELPFUL_COLUMNS + HARMLESS_COLUMNS
                     and not is_synthetic(s))
    if unknown:
        metrics["unknown_subsets"] = unknown  # counted in overall only; named so nothing vanishes silently

    synthetic = [s for s in all_subsets if is_synthetic(s)]
    if synthetic:
        metrics["synthetic_subsets"] = synthetic  # stand-in pairs: per subset only, in no column, no result
    if "correct_cr" in groups:
        real = [s for s in all_subsets if not is_synthetic(s)]
        metrics["position"] = {name: mean(pooled(measure, real)) for name, measure in POSITION}
    return metrics
