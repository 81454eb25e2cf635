"""A group's reduced (row key, value) pairs as the benchmarks' `summarize` reads them, held compactly, and
`pooled`, the values of several groups in key order.

A cell's driver keeps every row's key and values until its metrics are summarized (jobs.flow.reducers), so a
million rows must not be a million tuples: the keys are one Arrow string array (about 4 bytes beside each key's
own bytes, where a Python str adds 49) and the values one float array. Tuples are made a chunk at a time as
they are read.
"""
from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import overload

import pyarrow as pa

CHUNK = 1 << 16  # pairs made into tuples at once while iterating


class Pairs(Sequence[tuple[str, float]]):
    """(key, value) pairs sorted by key, one per key."""

    def __init__(self, keys: pa.Array, values: array) -> None:
        self.keys, self.values = keys, values

    def __len__(self) -> int:
        return len(self.values)

    @overload
    def __getitem__(self, index: int) -> tuple[str, float]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[str, float]]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            keys = self.keys.slice(start, max(0, stop - start)).to_pylist()[::step]
            return list(zip(keys, self.values[index]))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.keys[index].as_py(), self.values[index]

    def __iter__(self) -> Iterator[tuple[str, float]]:
        for start in range(0, len(self), CHUNK):
            yield from zip(self.keys.slice(start, CHUNK).to_pylist(), self.values[start:start + CHUNK])

    def __repr__(self) -> str:
        return f"Pairs({list(self)!r})"


def pooled(by_group: Mapping[str, Sequence[tuple[str, float]]], groups: Iterable[str]) -> array:
    """The values of these groups' pairs, in the order `sorted` puts the pairs together (by key, then value):
    the canonical order of a bootstrap over pooled groups. Pairs are already sorted, so they are merged
    (heapq.merge) without a list of all the tuples; a plain sequence is sorted first."""
    parts = [by_group[g] for g in groups if g in by_group]
    ordered = [part if isinstance(part, Pairs) else sorted(part) for part in parts]
    return array("d", (value for _, value in heapq.merge(*ordered)))
