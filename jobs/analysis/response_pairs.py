"""The two responses of a pairwise item as prediction rows carry them (`chosen` and `reject` texts, the
`chosen_model` and `reject_model` that wrote them): their lengths and authors, read once per item. Any
benchmark whose rows carry these columns gets the bias columns (jobs.analysis.bias); this module names none."""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

TEXTS = ("chosen", "reject")
AUTHORS = ("chosen_model", "reject_model")
COLUMNS = TEXTS + AUTHORS


@dataclass(frozen=True, slots=True)  # one per item of a report: no __dict__ each
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


CHARS = ("_chosen_chars", "_reject_chars")  # what measured() leaves of the texts
TOKENS = ("_chosen_tokens", "_reject_tokens")
MEASURES = CHARS + TOKENS


def measured(count_tokens: Callable[[str], int] | None = None) -> Callable[[pa.Table], pa.Table]:
    """A transform of a prediction part (jobs.store.RunRoot.read_rows) that replaces its response texts by
    their lengths (MEASURES: null where response_pairs would skip the row), so a report never holds the texts
    as Python objects; measured_pairs reads the pairs back from its rows."""
    def measure(part: pa.Table) -> pa.Table:
        names = part.column_names
        valid = pa.array([all(name in names and _is_text(part.column(name).type) for name in TEXTS)]
                         * part.num_rows, pa.bool_())
        for name in COLUMNS:
            if name in names:
                column = part.column(name)
                valid = pc.and_(valid, pc.is_valid(column) if name in TEXTS else
                                pa.array([True] * part.num_rows) if _is_text(column.type) else pc.is_null(column))
        measures = [pc.if_else(valid, pc.utf8_length(part.column(name)), None) if name in names and
                    _is_text(part.column(name).type) else pa.nulls(part.num_rows, pa.int64()) for name in TEXTS]
        if count_tokens is not None:
            measures += [pa.array([count_tokens(text) if ok else None for text, ok in
                                   zip(part.column(name).to_pylist(), valid.to_pylist())], pa.int64())
                         if name in names and _is_text(part.column(name).type)
                         else pa.nulls(part.num_rows, pa.int64()) for name in TEXTS]
        part = part.drop_columns([name for name in TEXTS if name in names])
        for name, values in zip(MEASURES, measures):
            part = part.append_column(name, values)
        return part

    return measure


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def measured_pairs(rows: Iterable[Mapping[str, Any]]) -> dict[str, ResponsePair]:
    """response_pairs of rows that measured() read: item id -> its pair, the first measured row of an item
    wins."""
    pairs: dict[str, ResponsePair] = {}
    for row in rows:
        item = row.get("item_id")
        if item in pairs or row.get(CHARS[0]) is None:
            continue
        pairs[sys.intern(item) if isinstance(item, str) else item] = ResponsePair(row[CHARS[0]], row[CHARS[1]], row.get("chosen_model") or "",
                                   row.get("reject_model") or "", row.get(TOKENS[0]), row.get(TOKENS[1]))
    return pairs
