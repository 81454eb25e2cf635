"""What a model's engines and a cell hold on the cluster, in CPUs and GPUs: read by the sweep's admission of cells
(jobs.sweep.admission) and by `ragjudge models` (jobs.engines.readiness)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from jobs.config import ModelConfig
from jobs.engines.base import Demand, engine_of
from jobs.engines.host import engine_names

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
    if model.serve.shared:
        return {"CPU": 0.0, "GPU": 0.0}
    engine = engine_of(model)
    ranks, rank = engine.ranks(model), engine.rank_demand(model)
    return {r: model.min_actors * ranks * rank[r] for r in RESOURCES}


def cell_need(models: Sequence[ModelConfig]) -> Need:
    """A cell whose requests go to `models` (its own model, then the judges it routes to); models without an
    engine of the sweep's (API, Serve-shared) are counted by name."""
    return Need(engines={next(iter(engine_names(model)), model.name): engine_demand(model) for model in models})


def total(needs: Sequence[Need]) -> Demand:
    """Every cell's stages, and every engine once however many of the cells share it."""
    engines = {name: demand for need in needs for name, demand in need.engines.items()}
    return {r: sum(need.stage.get(r, 0.0) for need in needs) + sum(d.get(r, 0.0) for d in engines.values())
            for r in RESOURCES}
