"""Can the judge be trusted? Reliability columns of one model on one benchmark, read from its prediction rows.

Each column is computed only when the rows carry the prediction columns it needs, so a benchmark gets the
columns its protocol has without this module naming benchmarks (benchmark modules are free to change; a
column they stop writing simply disappears from the report):

    consistency          `consistent` (bool per pair: the same response wins in both orders) or
                         `consistency` (a rate per row, e.g. utility's pairwise form): the mean
    first_position_rate  `first_position_rate` (a rate per row, of the picks it was scored by: a text verdict's
                         where the judge has no log-probs): the mean; else, for rows stored before their
                         benchmark wrote it, `pick_<order>` (1-based position picked, per order): share of picks
                         of position 1. 0.5 is no position bias
    parse_failure_rate   `text_pick_<order>` (None: no verdict in the text) over rows without an error;
                         else `prediction` == "ERROR" (an unparseable verdict); else `parse_failures` /
                         `n_requests` summed over rows
    truncation_rate      `truncated`: share of rows whose prompt did not fit
    error_rate           `error`: share of rows that could not be scored
    run_agreement        `run` and `prediction`: share of items judged in 2+ runs whose runs all agree
    shuffle_agreement    `shuffle_scores` (one score per shuffled order): share of rows with 2+ shuffles
                         whose shuffles all scored the same (the rows keep scores, not the selections)
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from typing import Any

COLUMNS: dict[str, str] = {  # report column -> what it says, for the page's legend
    "consistency": "same winner in both orders",
    "first_position_rate": "picks the first position (0.5: no bias)",
    "parse_failure_rate": "no verdict in the text",
    "truncation_rate": "prompt cut at the context length",
    "error_rate": "rows that could not be scored",
    "run_agreement": "items whose sampled runs all agree",
    "shuffle_agreement": "rows whose shuffled orders all score the same",
}
_READ = {"item_id", "subset", "model", "correct", "error", "truncated", "consistent", "consistency",
         "first_position_rate", "prediction", "run", "parse_failures", "n_requests", "shuffle_scores",
         "correct_cr", "correct_rc"}


def needed_column(name: str) -> bool:
    """Whether the report reads this prediction column (it skips the long texts a judge wrote)."""
    return name in _READ or name.startswith(("pick_", "text_pick_"))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _orders(names: set[str], prefix: str) -> list[str]:
    return sorted(n for n in names if n.startswith(prefix))


def _parse_failure_rate(rows: Collection[Mapping[str, Any]], names: set[str]) -> float | None:
    ok = (r for r in rows if not r.get("error"))  # one pass, whichever rule applies: no list of the rows
    text_picks = _orders(names, "text_pick_")
    if text_picks:
        return _mean([float(r.get(c) is None) for r in ok for c in text_picks])
    if "prediction" in names:
        return _mean([float(r["prediction"] == "ERROR") for r in ok if r.get("prediction") is not None])
    if "parse_failures" in names and "n_requests" in names:
        total = failures = 0
        for r in ok:
            if r.get("n_requests"):
                total += int(r["n_requests"])
                failures += int(r.get("parse_failures") or 0)
        return failures / total if total else None
    return None


def _run_agreement(rows: Collection[Mapping[str, Any]]) -> float | None:
    runs: dict[str, list[Any]] = defaultdict(list)
    for r in rows:
        if not r.get("error") and r.get("prediction") is not None:
            runs[r["item_id"]].append(r["prediction"])
    return _mean([float(len(set(v)) == 1) for v in runs.values() if len(v) >= 2])


def reliability(rows: Iterable[Mapping[str, Any]]) -> dict[str, float | None]:
    """The reliability columns the rows have data for (see the module docstring), each a rate in [0, 1]. Rows
    that are a Collection are iterated once per column, not copied (jobs.analysis.cell_rows.PartRows makes
    them a batch at a time)."""
    rows = rows if isinstance(rows, Collection) else list(rows)
    names: set[str] = set()
    for r in rows:  # a row at a time: unpacking every row's keys at once would hold every row
        names.update(r)
    out: dict[str, float | None] = {}
    if "consistent" in names or "consistency" in names:
        both_orders = [float(r["consistent"]) for r in rows if r.get("consistent") is not None]
        rates = [float(r["consistency"]) for r in rows if r.get("consistency") is not None]
        out["consistency"] = _mean(both_orders + rates)
    picks = _orders(names, "pick_")
    if "first_position_rate" in names:
        out["first_position_rate"] = _mean([float(r["first_position_rate"]) for r in rows
                                            if r.get("first_position_rate") is not None])
    elif picks:
        chosen = [r[c] for r in rows for c in picks if r.get(c) is not None]
        out["first_position_rate"] = _mean([float(p == 1) for p in chosen])
    rate = _parse_failure_rate(rows, names)
    if rate is not None:
        out["parse_failure_rate"] = rate
    if "truncated" in names:
        out["truncation_rate"] = _mean([float(bool(r.get("truncated"))) for r in rows])
    if "error" in names:
        out["error_rate"] = _mean([float(bool(r.get("error"))) for r in rows])
    if "run" in names and "prediction" in names:
        out["run_agreement"] = _run_agreement(rows)
    if "shuffle_scores" in names:
        shuffled = [list(r["shuffle_scores"]) for r in rows if len(r.get("shuffle_scores") or []) >= 2]
        out["shuffle_agreement"] = _mean([float(max(s) - min(s) < 1e-9) for s in shuffled])
    return {k: v for k, v in out.items() if v is not None}


def position_bias(rows: Iterable[Mapping[str, Any]]) -> dict[str, float] | None:
    """A pairwise judge's accuracy with the right answer shown first (`correct_cr`) and second
    (`correct_rc`), or None for rows without both orders (a scorer, a single-order judge)."""
    first, second = [], []
    for r in rows:
        if r.get("correct_cr") is not None and r.get("correct_rc") is not None and not r.get("error"):
            first.append(float(r["correct_cr"]))
            second.append(float(r["correct_rc"]))
    if not first:
        return None
    return {"accuracy_first": sum(first) / len(first), "accuracy_second": sum(second) / len(second),
            "n": len(first)}
