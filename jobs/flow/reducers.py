"""Mergeable streaming reducers over item rows (init / accumulate / merge / finalize).

The pipeline feeds item rows in as they complete, `ragjudge aggregate` feeds stored predictions, and partial
states from shards merge, so every path computes the same numbers. A benchmark says what to track per item
(`measures`) and how to lay the result out (`summarize`); the reducer only groups values by measure and
group. The group is the benchmark's `group_key(row)` (the row's `subset` unless it says otherwise, e.g.
split/task/subset); the key that identifies one value is its `row_key(row)` (the `item_id`, or e.g. item and
run when each item is judged several times). Keys are kept beside the values because the
bootstrap resamples items and must see them in a canonical order, whatever order the shards finished in.

The state is compact (a shard's keys in an Arrow string array, 9 bytes a measure: GroupRows), since a cell's
driver keeps it for every row while it holds only one shard's rows (jobs.flow.flows).
"""
from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.boundary_types import JsonObject
from benchmarks.keyed_values import Pairs
from benchmarks.protocol import Benchmark
from benchmarks.row_types import Row


class GroupRows:
    """One group's rows as accumulated: each row's key once, and for each measure the row's value and whether it
    has one. A shard's keys become one Arrow string array once it is reduced (`compact`), so a row costs its
    key's bytes, 4 more, and 9 bytes a measure, where a Python str a key and a float a value took several
    times that (docs/measurements.md, "Figures moved from the code's comments")."""

    __slots__ = ("chunks", "present", "recent", "rows", "values")

    def __init__(self) -> None:
        self.recent: list[str] = []  # keys added since the last compact
        self.chunks: list[pa.Array] = []
        self.rows = 0
        self.values: dict[str, array] = {}  # measure -> a value per row (0.0 where the row has none)
        self.present: dict[str, bytearray] = {}  # measure -> 1 where the row has a value

    def add(self, key: str, measures: dict[str, float | None]) -> None:
        for name, value in measures.items():
            if value is not None and name not in self.values:  # the first value: the rows before have none
                self.values[name], self.present[name] = _none_yet(self.rows)
        for name, values in self.values.items():
            value = measures.get(name)
            values.append(0.0 if value is None else float(value))
            self.present[name].append(value is not None)
        self.recent.append(key)
        self.rows += 1

    def compact(self) -> GroupRows:
        if self.recent:
            self.chunks.append(pa.array(self.recent, pa.string()))
            self.recent = []
        return self

    def measure(self, name: str) -> tuple[array, bytearray]:
        """A measure's values and presence, all absent where no row of the group has one."""
        return (self.values[name], self.present[name]) if name in self.values else _none_yet(self.rows)

    def extend(self, other: GroupRows) -> None:
        """`other`'s rows after these."""
        for name in other.values.keys() - self.values.keys():
            self.values[name], self.present[name] = _none_yet(self.rows)
        for name, values in self.values.items():
            theirs, present = other.measure(name)
            values.extend(theirs)
            self.present[name].extend(present)
        self.compact()
        self.chunks.extend(other.compact().chunks)
        self.rows += other.rows

    def pairs(self, name: str, keys: pa.Array) -> Pairs:
        """A measure's (key, value) pairs, sorted by key, one per key: the last value added (a resumed run that
        saw an item twice counts it once). `keys` are the rows' keys (`all_keys`), shared by the measures.
        Arrow orders strings by their UTF-8 bytes, which is Python's order of str."""
        rows = np.flatnonzero(np.frombuffer(self.present[name], dtype=np.uint8))
        last = pa.table({"key": keys.take(rows), "at": rows}).group_by("key", use_threads=False).aggregate(
            [("at", "max")])
        order = pc.sort_indices(last["key"])
        at = pc.take(last["at_max"], order).to_numpy()
        return Pairs(pc.take(last["key"], order).combine_chunks(),
                     array("d", np.frombuffer(self.values[name], dtype=np.float64)[at].tobytes()))

    def all_keys(self) -> pa.Array:
        self.compact()
        return pa.concat_arrays(self.chunks) if self.chunks else pa.array([], pa.string())


def _none_yet(rows: int) -> tuple[array, bytearray]:
    """A measure's values and presence for `rows` rows that have none of it."""
    return array("d", bytes(8 * rows)), bytearray(rows)


@dataclass
class State:
    """A reducer's rows so far: each group's, and the order measures and their groups were first seen in (the
    order `summarize` gets them)."""

    groups: dict[str, GroupRows] = field(default_factory=dict)
    order: dict[str, dict[str, None]] = field(default_factory=dict)  # measure -> its groups, first seen first


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
        return State()

    def accumulate(self, state: State, row: Row) -> State:
        group, measures = self.group_key(row), self.measures(row)
        state.groups.setdefault(group, GroupRows()).add(self.row_key(row), measures)
        for name, value in measures.items():
            if value is not None:
                state.order.setdefault(name, {}).setdefault(group)
        return state

    def merge(self, left: State, right: State) -> State:
        """`right`'s rows after `left`'s (a later shard's: the last value of a key wins)."""
        for group, rows in right.groups.items():
            left.groups.setdefault(group, GroupRows()).extend(rows)
        for name, groups in right.order.items():
            left.order.setdefault(name, {}).update(groups)
        return left

    def finalize(self, state: State) -> Groups:
        """Each group's pairs sorted by key, one per key; the state's groups are let go as they are read."""
        groups: Groups = {name: {} for name in state.order}
        for group in list(state.groups):
            rows = state.groups.pop(group)
            keys = rows.all_keys()
            for name in rows.values:  # a measure is in a group's values only once one of its rows has one
                groups[name][group] = rows.pairs(name, keys)
        return {name: {group: groups[name][group] for group in order} for name, order in state.order.items()}

    def reduced(self, rows: Iterable[Row]) -> State:
        """The state of these rows alone (a shard's, to merge), compacted."""
        state = self.init()
        for row in rows:
            self.accumulate(state, row)
        for group in state.groups.values():
            group.compact()
        return state

    def reduce(self, rows: Iterable[Row]) -> Groups:
        return self.finalize(self.reduced(rows))


def reducer_of(spec: Benchmark) -> SubsetReducer:
    """The reducer of a benchmark's item rows: its measures, groups and row keys."""
    return SubsetReducer(spec.measures, spec.group_key, spec.row_key)


def aggregate(spec: Benchmark, rows: Iterable[Row], resamples: int = 1000) -> JsonObject:
    """Metrics from item rows: the same reducer and layout online (pipeline) and offline (`ragjudge aggregate`)."""
    return spec.summarize(reducer_of(spec).reduce(rows), resamples=resamples)


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
