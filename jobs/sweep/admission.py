"""Which cells of a sweep run at the same time: as many as the cluster's free CPUs and GPUs hold.

Each cell is its own Ray Data pipeline, started from a driver thread; Ray Data runs several executions side
by side. The engines are the sweep's (jobs.engines.host: one per distinct engine, kept from its first cell to
its last), so cells share their engines: admission counts each running engine once, however many cells use
it, plus each cell's own light stages. Ray itself would queue an engine actor that does not fit, but a cell
admitted too early then sits holding its small stages while its engine waits, so admission counts what the
engines need against the cluster's resources, re-read at every decision (a cell's end, and every RECHECK_S
while cells wait) so a cluster that grows, a node joined or an autoscaler's, admits more as soon as it has. A cell that fits nowhere still runs when nothing else does: the autoscaler (or the user's error)
then has a pending demand to act on, instead of a sweep that waits forever.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from jobs.engines.demand import RESOURCES, Demand, Need, total

Cell = TypeVar("Cell")
RECHECK_S = 5.0  # while cells wait for room: how often the cluster's resources are read again


def fits(need: Need, running: Sequence[Need], capacity: Demand) -> bool:
    """Whether `need` fits beside the running cells' needs in the cluster's capacity."""
    held = total([*running, need])
    return all(held[r] <= capacity.get(r, 0.0) + 1e-9 for r in RESOURCES)


def next_cell(pending: Sequence[Need], running: Sequence[Need], capacity: Demand) -> int | None:
    """The first pending cell (by position) that fits now; the first one outright when nothing runs."""
    if not pending:
        return None
    if not running:
        return 0
    return next((i for i, need in enumerate(pending) if fits(need, running, capacity)), None)


def run_concurrently(cells: Sequence[Cell], demand: Callable[[Cell], Need], run: Callable[[Cell], Any],
                     capacity: Callable[[], Demand], max_concurrent: int = 0) -> list[Any]:
    """`run(cell)` for every cell, in admission order, at most `max_concurrent` at once (0: as resources allow).

    Returns the results in the order of `cells`. `run` must not raise (a cell's failure is its result).
    A cell's demand is fixed: it is asked once per cell, not at every admission (naming a cell's engines
    builds their settings).
    """
    needs = [demand(cell) for cell in cells]
    pending = list(range(len(cells)))
    results: list[Any] = [None] * len(cells)
    running: dict[Future, int] = {}
    limit = max_concurrent or len(cells) or 1
    with ThreadPoolExecutor(max_workers=limit, thread_name_prefix="cell") as pool:
        while pending or running:
            while pending and len(running) < limit:
                pick = next_cell([needs[i] for i in pending], [needs[i] for i in running.values()], capacity())
                if pick is None:
                    break
                index = pending.pop(pick)
                running[pool.submit(run, cells[index])] = index
            done, _ = wait(list(running), timeout=RECHECK_S if pending else None, return_when=FIRST_COMPLETED)
            for future in done:
                results[running.pop(future)] = future.result()
    return results
