"""Which cells of a sweep run at the same time: as many as the cluster's free CPUs and GPUs hold.

Each cell is its own Ray Data pipeline, started from a driver thread; Ray Data runs several executions side
by side. The engines are the sweep's (jobs.engine_host: one per distinct engine, kept from its first cell to
its last), so cells share their engines: admission counts each running engine once, however many cells use
it, plus each cell's own light stages. Ray itself would queue an engine actor that does not fit, but a cell
admitted too early then sits holding its small stages while its engine waits, so admission counts what the
engines need against the cluster's resources, re-read at every decision so an autoscaling cluster that grows
admits more. A cell that fits nowhere still runs when nothing else does: the autoscaler (or the user's error)
then has a pending demand to act on, instead of a sweep that waits forever.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jobs.config import ModelConfig
from jobs.engine_host import engine_names

Demand = dict[str, float]
Cell = TypeVar("Cell")
STAGE_CPUS = 0.5  # a cell's own light stages (expand, filter, pre- and post-processing: 0.25 CPU each)
RESOURCES = ("CPU", "GPU")


@dataclass(frozen=True)
class Need:
    """What a running cell holds: its own stages, and the engines (by engine name) it sends requests to."""

    stage: Demand = field(default_factory=lambda: {"CPU": STAGE_CPUS, "GPU": 0.0})
    engines: dict[str, Demand] = field(default_factory=dict)


def engine_demand(model: ModelConfig) -> Demand:
    """CPUs and GPUs a model's engines hold (`min_actors` replicas); a shared judge is Serve's, an API model
    holds its client actors only while a cell runs."""
    if model.shared:
        return {"CPU": 0.0, "GPU": 0.0}
    ranks = model.tensor_parallel_size if model.engine == "vllm" else 1  # a placement bundle per rank
    per_rank_gpus = max(model.num_gpus, 1.0) if model.num_gpus and model.engine == "vllm" else model.num_gpus
    return {"CPU": model.min_actors * ranks * model.num_cpus, "GPU": model.min_actors * ranks * per_rank_gpus}


def cell_need(models: Sequence[ModelConfig]) -> Need:
    """A cell whose requests go to `models` (its own model, then the judges it routes to); models without an
    engine of the sweep's (API, Serve-shared) are counted by name."""
    return Need(engines={next(iter(engine_names(model)), model.name): engine_demand(model) for model in models})


def total(needs: Sequence[Need]) -> Demand:
    """Every cell's stages, and every engine once however many of the cells share it."""
    engines = {name: demand for need in needs for name, demand in need.engines.items()}
    return {r: sum(need.stage.get(r, 0.0) for need in needs) + sum(d.get(r, 0.0) for d in engines.values())
            for r in RESOURCES}


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
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                results[running.pop(future)] = future.result()
    return results
