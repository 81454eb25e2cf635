"""Mergeable streaming reducers over item rows (init / accumulate / merge / finalize).

The pipeline feeds item rows in as they complete, `ragjudge aggregate` feeds stored predictions, and partial
states from shards merge, so every path computes the same numbers. A benchmark says what to track per item
(`measures`) and how to lay the result out (`summarize`); the reducer only groups values by measure and
group. The group is the benchmark's `group_key(row)` (the row's `subset` unless it says otherwise, e.g.
split/task/subset); the key that identifies one value is its `row_key(row)` (the `item_id`, or e.g. item and
run when each item is judged several times). Keys are kept beside the values because the
bootstrap resamples items and must see them in a canonical order, whatever order the shards finished in.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from benchmarks.protocol import Benchmark
from benchmarks.row_types import Row

State = dict[str, dict[str, list[tuple[str, float]]]]  # measure -> subset -> [(item_id, value)]


class SubsetReducer:
    """Groups each item's measures by subset; keeps the last value when an item is seen twice."""

    def __init__(self, measures: Callable[[Row], dict[str, float | None]],
                 group_key: Callable[[Row], str] | None = None,
                 row_key: Callable[[Row], str] | None = None):
        self.measures = measures
        self.group_key = group_key or (lambda row: row.get("subset") or "")
        self.row_key = row_key or (lambda row: row["item_id"])

    def init(self) -> State:
        return {}

    def accumulate(self, state: State, row: Row) -> State:
        for name, value in self.measures(row).items():
            if value is not None:
                state.setdefault(name, {}).setdefault(self.group_key(row), []).append((self.row_key(row), float(value)))
        return state

    def merge(self, left: State, right: State) -> State:
        for name, subsets in right.items():
            for subset, values in subsets.items():
                left.setdefault(name, {}).setdefault(subset, []).extend(values)
        return left

    def finalize(self, state: State) -> State:
        """Sorted by item id, one value per item: a resumed run that saw an item twice counts it once."""
        return {
            name: {subset: sorted(dict(values).items()) for subset, values in subsets.items()}
            for name, subsets in state.items()
        }

    def reduce(self, rows: Iterable[Row]) -> State:
        state = self.init()
        for row in rows:
            self.accumulate(state, row)
        return self.finalize(state)


def aggregate(spec: Benchmark, rows: Iterable[Row], resamples: int = 1000) -> dict[str, Any]:
    """Metrics from item rows: the same reducer and layout online (pipeline) and offline (`ragjudge aggregate`)."""
    reducer = SubsetReducer(spec.measures, spec.group_key, spec.row_key)
    return spec.summarize(reducer.reduce(rows), resamples=resamples)


def row_problem(spec: Benchmark, row: Row) -> str | None:
    """Why a stored prediction row cannot be reduced (a missing item_id, `correct` outside [0, 1], a measure
    that is no number), naming the key; None for a good row."""
    if not isinstance(row.get("item_id"), str):
        return "key 'item_id': missing or not text"
    correct = row.get("correct")
    if correct is not None and (isinstance(correct, bool) or not isinstance(correct, (int, float))
                                or not 0.0 <= correct <= 1.0):
        return f"key 'correct': {correct!r} is not a number in [0, 1]"
    try:
        values = spec.measures(row)
    except (TypeError, ValueError, KeyError) as e:
        return f"not a {spec.name} prediction row ({type(e).__name__}: {e})"
    for name, value in values.items():
        try:
            value is None or float(value)
        except (TypeError, ValueError):
            return f"key '{name}': {value!r} is not a number"
    return None
