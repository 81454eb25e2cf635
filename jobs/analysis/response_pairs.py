"""The two responses of a pairwise item as prediction rows carry them (`chosen` and `reject` texts, the
`chosen_model` and `reject_model` that wrote them): their lengths and authors, read once per item. Any
benchmark whose rows carry these columns gets the bias columns (jobs.analysis.bias); this module names none."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TEXTS = ("chosen", "reject")
AUTHORS = ("chosen_model", "reject_model")
COLUMNS = TEXTS + AUTHORS


@dataclass(frozen=True)
class ResponsePair:
    """One item's two responses: lengths in characters (and in tokens where a tokenizer counted them) and the
    models that wrote them ("" when the data does not say)."""

    chosen_chars: int
    reject_chars: int
    chosen_model: str = ""
    reject_model: str = ""
    chosen_tokens: int | None = None
    reject_tokens: int | None = None


def pair_problem(row: Mapping[str, Any]) -> str | None:
    """Why a row's response columns cannot be read (present but not text), naming the key; None if they can."""
    for key in COLUMNS:
        value = row.get(key)
        if value is not None and not isinstance(value, str):
            return f"key '{key}': {value!r} is not text"
    return None


def response_pairs(rows: Iterable[Mapping[str, Any]],
                   count_tokens: Callable[[str], int] | None = None) -> dict[str, ResponsePair]:
    """item id -> its pair, from the rows that carry both texts (the first such row of an item wins: every
    model's row of an item holds the same pair). `count_tokens` also counts tokens."""
    pairs: dict[str, ResponsePair] = {}
    for row in rows:
        item, chosen, reject = row.get("item_id"), row.get("chosen"), row.get("reject")
        if item in pairs or not isinstance(chosen, str) or not isinstance(reject, str) or pair_problem(row):
            continue
        tokens = (count_tokens(chosen), count_tokens(reject)) if count_tokens else (None, None)
        pairs[item] = ResponsePair(len(chosen), len(reject), row.get("chosen_model") or "",
                                   row.get("reject_model") or "", *tokens)
    return pairs
