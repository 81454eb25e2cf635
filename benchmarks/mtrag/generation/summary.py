"""Reducing mtRAG generation rows to metrics.json: every breakdown of the paper is a group key, and each
metric's mean, n and 95% bootstrap interval are computed over the groups a table cell covers."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from benchmarks.formatting import ordered
from benchmarks.mtrag.generation.load import NA
from benchmarks.mtrag.generation.options import BENCHMARK, SETTINGS
from benchmarks.mtrag.generation.scores import ANSWERABILITY
from benchmarks.row_types import Row
from benchmarks.stats import bootstrap_ci

GROUP_FIELDS = ("setting", "answerability", "turn_group", "collection", "question_type", "multi_turn")
# The paper's tables cover these; CONVERSATIONAL tasks were left out of its experiments (section 6.3.3) and
# UNDERSPECIFIED is MTRAG-UN's: both are reported per answerability only.
PAPER_CLASSES = ("ANSWERABLE", "PARTIAL", "UNANSWERABLE")
BREAKDOWN_ORDER = {"by_answerability": ANSWERABILITY, "by_turn": ("first", "later"),  # the paper's order
                   "by_domain": ("clapnq", "fiqa", "govt", "cloud")}


def group_key(row: Row) -> str:
    """setting|answerability|turn group|domain|question types|multi-turn type: every breakdown of the paper."""
    return "|".join(str(row.get(f) or NA) for f in GROUP_FIELDS)


Parsed = dict[str, list[tuple[tuple[str, ...], list[tuple[str, float]]]]]  # measure -> [(group key, values)]
METRICS = ("answerability_acc", "rb_alg", "rb_alg_idk", "rb_llm", "rb_llm_idk", "rl_f", "rl_f_idk", "rouge_l")
COUNTS = ("failed", "rl_f_nan", "idk_unknown", "judge_failed")


def measures(row: Row) -> dict[str, float | None]:
    """Per-task values; None: the task does not count for that measure (a NaN RL_F counts in rl_f_nan only)."""
    if row.get("error"):
        return {"failed": 1.0}
    status = row.get("rl_f_status")
    values: dict[str, float | None] = {"failed": 0.0, "answerability_acc": row.get("correct")}
    for name in METRICS[1:]:
        value = row.get(name)
        values[name] = None if value is None or math.isnan(value) else float(value)
    values["rl_f_nan"] = (1.0 if status in ("no_statements", "statements_unparsed", "verdicts_unparsed")
                          else 0.0 if status == "scored" else None)
    values["idk_unknown"] = None if row.get("idk_word") is None else float(row.get("idk") is None)
    values["judge_failed"] = float(bool(row.get("judge_errors")))
    return values


def summarize(groups: dict[str, dict[str, list[tuple[str, float]]]], resamples: int = 1000) -> dict[str, Any]:
    """metrics.json: per setting, Table 5's numbers over the paper's classes (ANSWERABLE, PARTIAL,
    UNANSWERABLE), and the breakdowns of Figure 3 / Appendix I: by answerability (every class, UNDERSPECIFIED
    and CONVERSATIONAL included, on their own), and over the paper's classes by first/later turn, domain,
    question type (a task counts under each of its types) and multi-turn type. Each metric: mean, n and a
    95% bootstrap interval; NaN RL_F values are left out of RL_F and counted (rl_f_nan)."""
    parsed: Parsed = {
        measure: [(tuple(key.split("|")), pairs) for key, pairs in by_group.items()]
        for measure, by_group in groups.items()}
    keys = {key for entries in parsed.values() for key, _ in entries}
    failed = [v for _, pairs in parsed.get("failed", []) for _, v in pairs]
    metrics: dict[str, Any] = {"benchmark": BENCHMARK, "n": sum(1 for v in failed if v == 0),
                               "n_errors": int(sum(failed)), "paper_classes": list(PAPER_CLASSES), "settings": {}}
    for setting in ordered(SETTINGS, {k[0] for k in keys}):
        metrics["settings"][setting] = _setting_metrics(parsed, setting, {k for k in keys if k[0] == setting},
                                                        resamples)
    return metrics


def _setting_metrics(parsed: Parsed, setting: str, keys: set[tuple[str, ...]], resamples: int) -> dict[str, Any]:
    def paper(k: tuple[str, ...]) -> bool:
        return k[1] in PAPER_CLASSES

    def cell(name: str, keep: Callable[[tuple[str, ...]], bool]) -> dict[str, Any]:
        return _cell(parsed, lambda k: k[0] == setting and keep(k), f"{BENCHMARK}/{setting}/{name}", resamples)

    out: dict[str, Any] = {"overall": cell("overall", paper), "by_answerability": {
        a: cell(f"by_answerability/{a}", lambda k, a=a: k[1] == a)
        for a in ordered(ANSWERABILITY, {k[1] for k in keys})}}
    for name, index in (("by_turn", 2), ("by_domain", 3), ("by_multi_turn", 5)):
        out[name] = {v: cell(f"{name}/{v}", lambda k, i=index, v=v: paper(k) and k[i] == v)
                     for v in ordered(BREAKDOWN_ORDER.get(name, ()), {k[index] for k in keys if paper(k)})}
    types = {t for k in keys if paper(k) for t in k[4].split("+")}
    out["by_question_type"] = {t: cell(f"by_question_type/{t}", lambda k, t=t: paper(k) and t in k[4].split("+"))
                               for t in sorted(types)}
    return out


def _cell(parsed: Parsed, keep: Callable[[tuple[str, ...]], bool], seed: str, resamples: int) -> dict[str, Any]:
    """Mean, n and ci95 of each metric over the groups `keep` accepts, items in id order; counts of the rest."""
    def values(measure: str) -> list[float]:
        pairs = sorted(p for key, ps in parsed.get(measure, []) if keep(key) for p in ps)
        return [v for _, v in pairs]

    failed = values("failed")
    out: dict[str, Any] = {"n": sum(1 for v in failed if v == 0), "n_errors": int(sum(failed))}
    for measure in METRICS:
        vs = values(measure)
        out[measure] = {"mean": sum(vs) / len(vs) if vs else None, "n": len(vs),
                        "ci95": bootstrap_ci(vs, f"{seed}/{measure}", resamples)}
    out.update({measure: int(sum(values(measure))) for measure in COUNTS[1:]})
    return out
