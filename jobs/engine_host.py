"""The sweep's engines: one per model (and per weights and task), started by its first batch, kept for every
benchmark and round of that model, released when the last cell that needs it is done.

Engines are Ray actors named for the sweep (actors.vllm_server, actors.scorers.ScorerServer); a cell's Ray
Data tasks find them by name and send them batches. Ray restarts an engine that dies and retries the batches
it held, so a killed engine costs a start (counted in the ledger), never an answer. API models (http) and
Serve-shared judges have no engine here.
"""
from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from jobs.config import ModelConfig

RESTARTS = 3  # engine deaths survived per engine; each costs a model load, counted as a start
SHUTDOWN_S = 60.0  # a vLLM engine's own shutdown (it stops its engine-core process) before the actor is killed


class EngineHost:
    """Starts, shares, counts and releases the engines of one sweep (or of one standalone call)."""

    def __init__(self, log: Callable[[str], None] = print):
        self.log, self.prefix = log, f"ragjudge-{uuid.uuid4().hex[:8]}"
        self._lock = threading.Lock()
        self._servers: dict[str, tuple[str, Any, Any]] = {}  # actor name -> (model name, handle, placement group)
        self._users: Counter[str] = Counter()  # model name -> cells that will still send it requests
        self._ledger: Any = None

    @property
    def ledger(self) -> str:
        """The ledger actor's name, started with the first engine."""
        import ray

        from actors.engine_ledger import EngineLedger

        if self._ledger is None:
            self._ledger = ray.remote(num_cpus=0)(EngineLedger).options(name=f"{self.prefix}-ledger").remote()
        return f"{self.prefix}-ledger"

    def server(self, model: ModelConfig, settings: dict[str, Any], path: str, task: str) -> str:
        """The name of the engine of (model, weights at `path`, task), started if it is not running yet."""
        import ray

        name = f"{self.prefix}-{model.name}-{task}" + ("-reference" if path != settings["path"] else "")
        with self._lock:
            if name in self._servers:
                return name
            if model.engine == "vllm":
                from actors.vllm_server import VllmServer as cls
                args = (settings, path, task, name, self.ledger)
            else:
                from actors.scorers import ScorerServer as cls
                args = (settings, name, self.ledger)
            options, group = _placement(model, settings)
            handle = ray.remote(cls).options(name=name, max_restarts=RESTARTS, max_task_retries=RESTARTS,
                                             **options).remote(*args)
            self._servers[name] = (model.name, handle, group)
            self.log(f"engine {name.removeprefix(self.prefix + '-')}: starting")
        return name

    def expect(self, models: Iterable[str]) -> None:
        """A cell that will send requests to these models is on its way."""
        with self._lock:
            self._users.update(models)

    def finished(self, models: Iterable[str]) -> None:
        """A cell is done with these models; a model no cell still needs has its engines released."""
        with self._lock:
            self._users.subtract(models)
            idle = {name for name, count in self._users.items() if count <= 0}
        for model in idle:
            self.release(model)

    def release(self, model: str) -> None:
        """Stop the engines of `model` (a later request would start them again, and count a start)."""
        import ray

        with self._lock:
            names = [name for name, (owner, _, _) in self._servers.items() if owner == model]
            servers = [self._servers.pop(name) for name in names]
        for name, (_, handle, group) in zip(names, servers):
            try:
                ray.get(handle.shutdown.remote(), timeout=SHUTDOWN_S)
            except Exception as e:  # noqa: BLE001 - a dead or stuck engine is killed all the same
                self.log(f"engine {name}: shutdown: {type(e).__name__}: {e}")
            ray.kill(handle, no_restart=True)
            if group is not None:
                ray.util.remove_placement_group(group)

    def accounting(self) -> list[dict[str, Any]]:
        """One entry per engine: model, engine, starts, start_s, busy_s, requests and token counts."""
        import ray

        if self._ledger is None:
            return []
        entries = ray.get(self._ledger.read.remote())
        return [entries[name] for name in sorted(entries)]

    def close(self) -> list[dict[str, Any]]:
        """Release every engine; the accounting as it stood."""
        import ray

        entries = self.accounting()
        for model in {owner for owner, _, _ in list(self._servers.values())}:
            self.release(model)
        if self._ledger is not None:
            ray.kill(self._ledger)
            self._ledger = None
        return entries


def _placement(model: ModelConfig, settings: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """Actor options and the placement group they use, if any: CPUs (and vLLM's CPU settings) on CPU; a GPU;
    or, tensor-parallel, one GPU bundle per rank on one node, whose workers vLLM starts on Ray inside it."""
    from actors.vllm_stage import engine_settings

    if model.engine != "vllm":
        return {"num_cpus": model.num_cpus, "num_gpus": model.num_gpus}, None
    if not model.num_gpus:
        _, runtime_env, _ = engine_settings(settings, settings["path"], "judge")
        return {"num_cpus": model.num_cpus, "runtime_env": runtime_env}, None
    if model.tensor_parallel_size == 1:
        return {"num_cpus": model.num_cpus, "num_gpus": 1}, None
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    group = placement_group([{"GPU": 1, "CPU": model.num_cpus}] * model.tensor_parallel_size, strategy="STRICT_PACK")
    return {"num_cpus": 0, "num_gpus": 0, "scheduling_strategy": PlacementGroupSchedulingStrategy(
        placement_group=group, placement_group_capture_child_tasks=True)}, group
