"""A judged cell's metrics, folded shard by shard and summarized once, away from the driver where it can be.

Each shard's item rows are reduced to a compact state where they are read (jobs.flow.reducers), and the states
are merged, finalized and summarized once, at the end. Kept in the driver, the states grow with the cell and
finalize and summarize need more again for a moment (each measure's sorted pairs, the bootstrap's draws):
docs/measurements.md, "The driver at a million requests". So while the driver is connected to Ray, a shard's state
goes to Ray's object store as soon as it is
made (the driver keeps a reference a shard) and one light task merges and summarizes them. A cell whose engine
is asked shard by shard (the stand-in, http, the batch APIs: `streams` is None) does the same in the driver's
own memory: its tests run without a Ray cluster, and a process's leftover Ray state must not decide where.
"""
from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

from benchmarks.boundary_types import JsonObject
from benchmarks.protocol import Benchmark
from benchmarks.row_types import Row
from jobs.engines.rows import LIGHT
from jobs.flow.reducers import State, reducer_of


class CellMetrics:
    """The reducer states of a cell's shards, and the metrics they summarize to, merged in shard order (a later
    shard's value of a key wins) whatever order they came in."""

    def __init__(self, spec: Benchmark, remote: bool):
        self.spec = spec
        self.remote = remote  # states to the object store and a task (the driver is connected to Ray)
        self.states: dict[int, Any] = {}  # shard -> its State, or its object ref

    def add(self, shard: int, rows: Iterable[Row]) -> None:
        """A shard's item rows."""
        import ray

        state = reducer_of(self.spec).reduced(rows)
        self.states[shard] = ray.put(state) if self.remote else state

    def add_reduced(self, shard: int, state_ref: Any) -> None:
        """A shard's state, reduced where the shard was walked (a Ray task: jobs.flow.shard_tasks)."""
        self.states[shard] = state_ref

    def summarize(self, resamples: int) -> JsonObject:
        """The benchmark's metrics of every shard's rows (`resamples` bootstrap resamples)."""
        import ray

        states = [self.states[shard] for shard in sorted(self.states)]
        if not self.remote:
            return summarized(self.spec, resamples, *states)
        # The refs as arguments: Ray hands the task their values, fetched to its node.
        return ray.get(_summarize_task().remote(self.spec, resamples, *states))


def summarized(spec: Benchmark, resamples: int, *states: State) -> JsonObject:
    """Shard states merged in order, finalized and laid out by the benchmark's summarize."""
    reducer = reducer_of(spec)
    merged = reducer.init()
    for state in states:
        reducer.merge(merged, state)
    return spec.summarize(reducer.finalize(merged), resamples=resamples)


@cache
def _summarize_task() -> Any:
    import ray

    return ray.remote(summarized).options(**LIGHT)
