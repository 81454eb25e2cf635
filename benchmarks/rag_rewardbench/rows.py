"""Answers back into one item row per pair: verdicts read from log-probs or text, `correct` in [0, 1], beside the
pair's two responses and the models that wrote them (length and self-preference bias are read from the rows)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from benchmarks.rag_rewardbench.load import BENCHMARK
from benchmarks.rag_rewardbench.requests import KINDS, ORDERS
from benchmarks.row_types import Answer, Item, Row

PAIR_FIELDS = ("chosen", "reject", "chosen_model", "reject_model")  # copied from the item into its row
_CHOICE = re.compile(r"choose\W{0,3}(?:response\s*)?([12])\b", re.IGNORECASE)


def parse_choice(text: str | None) -> int | None:
    """The judge's pick from its text: the last 'Choose 1' / 'Choose 2' (quotes, '**' and 'Response' allowed)."""
    matches = _CHOICE.findall(text or "")
    return int(matches[-1]) if matches else None


def logprob_choice(logprob_1: float | None, logprob_2: float | None) -> int | None:
    """The pick from next-token log-probs after 'Choose '. A token outside the engine's top-k (None) loses to
    one inside it; both missing or equal gives no verdict."""
    if logprob_1 is None and logprob_2 is None:
        return None
    if logprob_2 is None or (logprob_1 is not None and logprob_1 > logprob_2):
        return 1
    if logprob_1 is None or logprob_2 > logprob_1:
        return 2
    return None


def pick_score(pick: int | None, chosen_position: int) -> float:
    """One order's accuracy: 1 for picking the chosen response, 0 for the rejected one, 0.5 without a verdict."""
    if pick is None:
        return 0.5
    return 1.0 if pick == chosen_position else 0.0


def implicit_reward(answer: Answer) -> float:
    """DPO-style reward: summed log-prob minus the reference's when there is one, else the mean per token."""
    if answer.get("ref_logp_sum") is not None:
        return float(answer["logp_sum"]) - float(answer["ref_logp_sum"])
    return float(answer["logp_mean"])


def preference_margin(first: list[float], scale: list[float], second: list[float]) -> float:
    """A general preference model's (GPM) preference of `first` over `second`, positive when first wins: the
    sum over 2-d blocks k of scale[k] * (first[2k] * second[2k+1] - first[2k+1] * second[2k]). Skew-symmetric,
    so the margin of (b, a) is minus that of (a, b); `scale` is the prompt's, the same for both responses."""
    return sum(w * (first[2 * k] * second[2 * k + 1] - first[2 * k + 1] * second[2 * k])
               for k, w in enumerate(scale))


def combine(item: Item, requests: Iterable[Answer], kind: str, verdict: str = "logprob") -> Row:
    """One item row from its answered requests. A failed request (e.g. context overflow) fails the item."""
    by_variant = {r["variant"]: r for r in requests}
    row: dict[str, Any] = {
        "item_id": item["item_id"], "benchmark": BENCHMARK, "subset": item["subset"],
        # the pair as judged: its texts and the models that wrote them, for bias columns read from predictions
        **{field: item.get(field) for field in PAIR_FIELDS},
        "truncated": any(bool(r.get("truncated")) for r in by_variant.values()),
        "n_tokens": max((int(r.get("n_tokens") or 0) for r in by_variant.values()), default=0),
    }
    errors = sorted({f"{variant}: {r['error']}" for variant, r in by_variant.items() if r.get("error")})
    expected = tuple(ORDERS) if kind == "generative" else ("chosen", "reject")
    missing = [variant for variant in expected if variant not in by_variant]
    if missing:
        errors.append(f"no answer for request(s) {', '.join(missing)}")
    row["error"] = "; ".join(errors) or None
    if row["error"]:
        row["correct"] = None
        return row
    if kind == "discriminative":
        chosen, reject = by_variant["chosen"], by_variant["reject"]
        if chosen.get("preference") is not None:  # a pairwise preference model: one margin for the pair
            margin = preference_margin(chosen["preference"], chosen["preference_scale"], reject["preference"])
            row["score_chosen"], row["score_reject"] = margin, -margin
        else:
            row["score_chosen"], row["score_reject"] = float(chosen["score"]), float(reject["score"])
        row["correct"] = 1.0 if row["score_chosen"] > row["score_reject"] else 0.0  # a tie is wrong
    elif kind == "implicit":
        row["reward_chosen"] = implicit_reward(by_variant["chosen"])
        row["reward_reject"] = implicit_reward(by_variant["reject"])
        row["correct"] = 1.0 if row["reward_chosen"] > row["reward_reject"] else 0.0
    elif kind == "generative":
        row.update(_judge_columns(by_variant, verdict))
    else:
        raise ValueError(f"unknown reward-model kind {kind!r}; expected one of {KINDS}")
    return row


def _judge_columns(by_variant: dict[str, Answer], verdict: str) -> dict[str, Any]:
    """Both orders' picks (log-prob and text), the scoring reading's accuracy and the other one's beside it, and
    the scoring reading's consistency and share of first-position picks."""
    row: dict[str, Any] = {}
    for order in ORDERS:
        answer = by_variant[order]
        logprobs = list(answer.get("candidate_logprobs") or [None, None])
        row[f"pick_{order}"] = logprob_choice(logprobs[0], logprobs[1])
        row[f"logprobs_{order}"] = logprobs
        row[f"text_pick_{order}"] = parse_choice(answer.get("text"))
        row[f"text_{order}"] = answer.get("text")
    path = "pick" if verdict == "logprob" else "text_pick"
    other = "text_pick" if verdict == "logprob" else "pick"
    for order, chosen_position in ORDERS.items():
        row[f"correct_{order}"] = pick_score(row[f"{path}_{order}"], chosen_position)
    row["correct"] = (row["correct_cr"] + row["correct_rc"]) / 2
    row["correct_alt"] = sum(pick_score(row[f"{other}_{o}"], p) for o, p in ORDERS.items()) / 2
    picks = (row[f"{path}_cr"], row[f"{path}_rc"])
    # Consistent: the same *response* wins in both orders, i.e. the picked positions differ.
    row["consistent"] = None if None in picks else picks[0] != picks[1]
    # Of the scoring reading's picks, as consistency: a text verdict's (an API judge's) has no log-prob pick.
    made = [p for p in picks if p is not None]
    row["first_position_rate"] = sum(p == 1 for p in made) / len(made) if made else None
    return row
