"""Mergeable streaming reducers over item rows (init / accumulate / merge / finalize).

The pipeline feeds item rows in as they complete, `ragjudge aggregate` feeds stored predictions, and partial
states from shards merge, so every path computes the same numbers. A benchmark says what to track per item
(`measures`) and how to lay the result out (`summarize`); the reducer only groups values by measure and
group. The group is the benchmark's `group_key(row)` (the row's `subset` unless it says otherwise, e.g.
split/task/subset); the key that identifies one value is its `row_key(row)` (the `item_id`, or e.g. item and
run when each item is judged several times). Keys are kept beside the values because the
bootstrap resamples items and must see them in a canonical order, whatever order the shards finished in.

The state is compact (a key string per row, shared by its measures, and 16 bytes a value), since a cell's
driver keeps it for every row while it holds only one shard's rows (jobs.flow.flows).
"""
from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, overload

from benchmarks.protocol import Benchmark
from benchmarks.row_types import Row


class Column:
    """One measure's values in one group, as accumulated: each row's key (the same string object for every
    measure of the row) and its value in a float array, about 16 bytes a value beside the key, where a list of
    (key, value) tuples took about 80."""

    __slots__ = ("keys", "values")

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.values = array("d")

    def add(self, key: str, value: float) -> None:
        self.keys.append(key)
        self.values.append(value)

    def extend(self, other: Column) -> None:
        self.keys.extend(other.keys)
        self.values.extend(other.values)

    def pairs(self) -> Pairs:
        """Sorted by key, one value per key, the last one added (a resumed run that saw an item twice counts
        it once)."""
        last = {key: i for i, key in enumerate(self.keys)}
        order = sorted(last)
        return Pairs(order, array("d", (self.values[last[key]] for key in order)))


class Pairs(Sequence[tuple[str, float]]):
    """A group's (key, value) pairs, sorted by key, as the benchmarks' `summarize` reads them, made one at a
    time from two arrays (a list of a million tuples would hold them all at once)."""

    def __init__(self, keys: list[str], values: array) -> None:
        self.keys, self.values = keys, values

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, index: int) -> tuple[str, float]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[str, float]]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return list(zip(self.keys[index], self.values[index]))
        return self.keys[index], self.values[index]

    def __iter__(self) -> Iterator[tuple[str, float]]:
        return zip(self.keys, self.values)

    def __repr__(self) -> str:
        return f"Pairs({list(self)!r})"


State = dict[str, dict[str, Column]]  # measure -> group -> its values
Groups = dict[str, dict[str, Sequence[tuple[str, float]]]]  # measure -> group -> [(key, value)], sorted by key


class SubsetReducer:
    """Groups each row's measures by group, keyed by the row's key; mergeable, so shards fold their own states
    and the cell merges them once."""

    def __init__(self, measures: Callable[[Row], dict[str, float | None]],
                 group_key: Callable[[Row], str] | None = None,
                 row_key: Callable[[Row], str] | None = None):
        self.measures = measures
        self.group_key = group_key or (lambda row: row.get("subset") or "")
        self.row_key = row_key or (lambda row: row["item_id"])

    def init(self) -> State:
        return {}

    def accumulate(self, state: State, row: Row) -> State:
        group, key = self.group_key(row), self.row_key(row)
        for name, value in self.measures(row).items():
            if value is not None:
                column = state.setdefault(name, {}).get(group)
                if column is None:
                    column = state[name][group] = Column()
                column.add(key, float(value))
        return state

    def merge(self, left: State, right: State) -> State:
        """`right`'s values after `left`'s (a later shard's: the last value of a key wins)."""
        for name, groups in right.items():
            for group, column in groups.items():
                left.setdefault(name, {}).setdefault(group, Column()).extend(column)
        return left

    def finalize(self, state: State) -> Groups:
        """Each group's pairs sorted by key, one per key; the state's columns are let go as they are read."""
        groups: Groups = {}
        for name in list(state):
            columns = state.pop(name)
            groups[name] = {group: columns.pop(group).pairs() for group in list(columns)}
        return groups

    def reduced(self, rows: Iterable[Row]) -> State:
        """The state of these rows alone (a shard's, to merge)."""
        state = self.init()
        for row in rows:
            self.accumulate(state, row)
        return state

    def reduce(self, rows: Iterable[Row]) -> Groups:
        return self.finalize(self.reduced(rows))


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
