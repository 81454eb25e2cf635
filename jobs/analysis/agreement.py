"""How far two scorings of the same items agree, and which models `ragjudge validate` holds back from a sweep.

Pure functions over verdict rows: one per item, its `verdict` and the `scores` it is read from as the item's
benchmark reads them off its own row (the protocol's `validation_verdict`; `verdict_rows`), so every rule here
is checked by hand in unit tests. Two scorings agree on an item when its verdicts are equal (e.g. which of
two responses a model prefers). validate.json, which this module also reads back for `ragjudge run`, holds one
entry per model of the sweep.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.boundary_types import ArrowRow, JsonObject
from benchmarks.tables import aligned
from jobs.config import KINDS, ConfigError


@dataclass(frozen=True)
class Thresholds:
    """When a model is held: verdicts agreeing on fewer than `min_agreement` of the compared pairs, in any
    comparison; or, when `max_score_diff` is set, a score moving by more than it (scores' scales differ by
    kind: a classifier's logit, a mean log-prob, a log-prob of a verdict token, so it is off by default)."""

    min_agreement: float = 0.95
    max_score_diff: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_agreement <= 1.0:
            raise ConfigError(f"min_agreement must lie in [0, 1], not {self.min_agreement}")
        if self.max_score_diff is not None and self.max_score_diff < 0:
            raise ConfigError(f"max_score_diff must not be negative, not {self.max_score_diff}")


Read = Callable[[Mapping[str, Any]], tuple[Any, Sequence[float | None]]]  # a row -> (verdict, scores)


def verdict_rows(rows: Iterable[Mapping[str, Any]], read: Read, key: Callable[[Mapping[str, Any]], str]
                 ) -> list[ArrowRow]:
    """Benchmark rows as `compare` reads them: each row's key (as `item_id`), error and truncation, and for a
    row that did not fail the (verdict, scores) `read` gives."""
    out = []
    for row in rows:
        verdict, scores = (None, []) if row.get("error") else read(row)
        out.append({"item_id": key(row), "error": row.get("error"), "truncated": row.get("truncated"),
                    "verdict": verdict, "scores": list(scores)})
    return out


def compare(rows_a: Sequence[Mapping[str, Any]], rows_b: Sequence[Mapping[str, Any]]) -> JsonObject:
    """Two paths' verdict rows, matched by item id: how many items both scored, the share whose verdicts agree,
    the largest absolute score difference (a score one path has and the other lacks counts as infinite) and
    the ids of the items whose verdicts differ."""
    b_by_id = {row["item_id"]: row for row in rows_b if not row.get("error")}
    both = [(a, b_by_id[a["item_id"]]) for a in rows_a if not a.get("error") and a["item_id"] in b_by_id]
    flipped = [a["item_id"] for a, b in both if a["verdict"] != b["verdict"]]
    diffs = [math.inf if (x is None) != (y is None) else abs(x - y)
             for a, b in both for x, y in zip(a["scores"], b["scores"])
             if x is not None or y is not None]
    return {"pairs": len(both), "verdict_agreement": 1 - len(flipped) / len(both) if both else None,
            "max_score_diff": max(diffs, default=None), "flipped": flipped}


def verdict(comparisons: Mapping[str, Mapping[str, Any]], thresholds: Thresholds) -> tuple[str, str | None]:
    """("ok", None) or ("held", why) from a model's comparisons (name -> compare's result)."""
    reasons = []
    for name, c in comparisons.items():
        if not c["pairs"]:
            reasons.append(f"{name}: no pair scored on both paths")
            continue
        if c["verdict_agreement"] < thresholds.min_agreement:
            reasons.append(f"{name}: verdicts agree on {c['verdict_agreement']:.0%} of {c['pairs']} pairs "
                           f"(< {thresholds.min_agreement:.0%})")
        if thresholds.max_score_diff is not None and c["max_score_diff"] > thresholds.max_score_diff:
            reasons.append(f"{name}: a score moved by {c['max_score_diff']:.4g} (> {thresholds.max_score_diff:g})")
    return ("held", "; ".join(reasons)) if reasons else ("ok", None)


def pad_problem(tokenizer: Mapping[str, Any], kind: str) -> str | None:
    """Why a model is held for its padding, or None. A sequence classifier scores the last token that is not
    its config's pad id; a tokenizer that pads with another id makes every padded batch (RewardBench's scripts,
    anyone's batched loader) score a pad position, which moved scores with the batch size in reward-bench#137.
    Only classifiers pool that way: a causal LM's log-probs are masked by the attention mask, whatever it pads
    with. A config without a pad id cannot pad at all (transformers refuses a batch), so nothing is wrong."""
    ours, config = tokenizer.get("pad_token_id"), tokenizer.get("config_pad_token_id")
    if not KINDS[kind].pools or ours is None or config is None or ours == config:
        return None
    return (f"the tokenizer pads with id {ours} ({tokenizer.get('pad_token')}) but config.pad_token_id is {config}: "
            "a padded batch scores a pad token")


def truncation_rate(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The share of pairs whose prompt did not fit the model's context (none is ever cut: they fail)."""
    return sum(bool(row.get("truncated")) for row in rows) / len(rows) if rows else None


def held_models(report: Mapping[str, Any] | None) -> dict[str, str]:
    """Model name -> why validate held it, from a validate.json (None: none was written)."""
    models = (report or {}).get("models", {})
    return {name: entry.get("reason") or "held" for name, entry in models.items() if entry.get("status") == "held"}


def _number(value: float | None, digits: str = ".4g") -> str:
    return "" if value is None else format(value, digits)


def _pad_ids(tokens: Mapping[str, Any]) -> str:
    if "pad_token_id" not in tokens:  # a validate.json written before pad ids were recorded
        return ""
    return "/".join("-" if tokens.get(key) is None else str(tokens[key]) for key in ("pad_token_id", "config_pad_token_id"))


def format_table(models: Mapping[str, Mapping[str, Any]]) -> str:
    """validate.json's models as a plain-text table: per model, its status, the worst agreement and the largest
    score difference over its comparisons, its truncation rate, EOS token, padding side, the tokenizer's and
    the config's pad ids, the first 12 hex digits of its chat template's and tokenizer's sha256, and why it was
    held or skipped."""
    header = ("model", "status", "agreement", "max |diff|", "truncated", "eos", "padding", "pad tok/cfg",
              "template", "tokenizer", "reason")
    rows = []
    for name, m in models.items():
        comparisons = list((m.get("comparisons") or {}).values())
        agreements = [c["verdict_agreement"] for c in comparisons if c["verdict_agreement"] is not None]
        diffs = [c["max_score_diff"] for c in comparisons if c["max_score_diff"] is not None]
        tokens = m.get("tokenizer") or {}
        rows.append([name, m["status"], _number(min(agreements, default=None), ".2%"),
                     _number(max(diffs, default=None)), _number(m.get("truncation_rate"), ".0%"),
                     str(tokens.get("eos_token") or ""), str(tokens.get("padding_side") or ""),
                     _pad_ids(tokens),
                     (tokens.get("chat_template_sha256") or "")[:12], (tokens.get("tokenizer_sha256") or "")[:12],
                     m.get("reason") or ""])
    return aligned([list(header), *rows], left=len(header))
