"""The sweep's engines: one per distinct engine, started by its first batch, kept for every benchmark and round
of the models that use it, released when the last cell that needs it is done.

Each engine is named by its Engine's `server_name`: a vLLM engine by what it is (its weights, its runner and
every setting that builds it), so model files that would start the same engine (an implicit RM and a judge of
the same weights and settings) share one; a transformers engine stays the model file's own.

Engines are Ray actors named for the sweep (jobs.engines.vllm.server,
jobs.engines.transformers.scorers.ScorerServer); a cell's Ray Data tasks find them by name and send them
batches. Ray restarts an engine that dies and retries the batches it held, so a killed engine costs a start
(counted in the ledger), never an answer. API models (http) and Serve-shared judges have no engine here; what
each API model was asked (its requests, HTTP calls, retries by cause and tokens, and their dollars at list price)
is added up here, from its answers as they come back, in a ledger of the driver's own.
"""
from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from actors.engine_ledger import MODELS_JOINED_BY, EngineEntry, EngineLedger, RequestUsage
from actors.worker_model import WorkerModel
from jobs.config import ENGINE_START_S, ModelConfig
from jobs.console.step_progress import EVERY_S
from jobs.engines.base import engine_of
from jobs.engines.prefetch import Prefetch
from jobs.engines.waiting import WaitTimeout, actor_state, cluster_free, nodes_free, placed, shortfall

RESTART_POLL_S = 1.0  # how often an engine's state is read while it runs
WATCHERS_JOIN_S = 15.0  # close(): the engine watchers' last Ray calls (an actor table read, a 10 s wait) end
RESTARTS = 3  # engine deaths survived per engine; each costs a model load, counted as a start
SHUTDOWN_S = 60.0  # a vLLM engine's own shutdown (it stops its engine-core process) before the actor is killed
# (model path, prompt tokens, generated tokens) -> dollars at list price, None where no price is known
Price = Callable[[str, int, int], float | None]


class EngineHost:
    """Starts, shares, counts and releases the engines of one sweep (or of one standalone call)."""

    def __init__(self, log: Callable[[str], None] = print, weights: Prefetch | None = None,
                 last_starts: Mapping[tuple[str, str], float] | None = None, price: Price | None = None,
                 start_s: float = ENGINE_START_S):
        self.log, self.prefix = log, f"ragjudge-{uuid.uuid4().hex[:8]}"
        self.weights = weights  # the sweep's hub weights, fetched ahead of the engines that load them
        self.last_starts = last_starts or {}  # (engine, model) -> seconds its start took in the run's last attempt
        self.price = price  # an API model's dollars (conf/prices.yaml, read by the CLI); None: not priced
        self._asked = EngineLedger()  # what API models were asked, by model name
        self._paths: dict[str, str] = {}  # API model name -> its path, the price table's key
        self._lock = threading.Lock()
        self._servers: dict[str, tuple[Any, Any]] = {}  # actor name -> (handle, placement group)
        self._users: Counter[str] = Counter()  # actor name -> cells that will still send it requests
        self._times: dict[str, dict[str, float]] = {}  # actor name -> requested_at, released_at (Unix seconds)
        self._ledger: Any = None
        self.start_s, self.every = start_s, EVERY_S  # an engine's start bound; seconds between its wait's lines
        self._started: dict[str, threading.Event] = {}  # actor name -> set once its start wait is over
        self._unstarted: dict[str, str] = {}  # actor name -> why it did not start in start_s (the cells' error)
        # the threads that watch each engine's start and restarts; ended and joined by close(), before the
        # driver's Ray is shut down (a thread asking Ray after that ends the process)
        self._closed, self._watchers = threading.Event(), []

    @property
    def ledger(self) -> str:
        """The ledger actor's name, started with the first engine."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if self._ledger is None:
            # On the driver's node: a worker node lost with the ledger on it would take every engine's record.
            here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
            self._ledger = ray.remote(num_cpus=0)(EngineLedger).options(
                name=f"{self.prefix}-ledger", scheduling_strategy=here).remote()
        return f"{self.prefix}-ledger"

    def _names(self, models: Iterable[ModelConfig]) -> list[str]:
        return [f"{self.prefix}-{name}" for model in models for name in engine_of(model).server_names(model)]

    def server(self, model: ModelConfig, worker: WorkerModel, path: str, task: str) -> str:
        """The name of the engine for (model, weights at `path`, task), started if it is not running yet, once
        it is up. An engine not up within `start_s` (Ray could not place it, or its start took longer) raises
        WaitTimeout, the one line that says why, in every cell waiting for it and in any later one."""
        import ray

        engine = engine_of(model)
        name = f"{self.prefix}-{engine.server_name(model, reference=path != worker.path)}"
        with self._lock:
            if name in self._unstarted:
                raise WaitTimeout(self._unstarted[name])
            if name not in self._servers:
                cls, args = engine.server_actor(worker, path, task, name, self.ledger)
                options, group = engine.placement(model, worker)
                handle = ray.remote(cls).options(name=name, max_restarts=RESTARTS, max_task_retries=RESTARTS,
                                                 **options).remote(*args)
                self._servers[name] = (handle, group)
                self._started[name] = threading.Event()
                self._times[name] = {"requested_at": round(time.time(), 3)}
                self.log(f"engine {name.removeprefix(self.prefix + '-')}: starting for {model.name}")
                need = {key: value * engine.ranks(model) for key, value in engine.rank_demand(model).items()}
                last = self.last_starts.get((engine.name, model.name))
                watcher = threading.Thread(target=self._say_when_ready, args=(name, handle, last, need, model.name),
                                           name="ragjudge-engine-start", daemon=True)
                self._watchers.append(watcher)
                watcher.start()
            started = self._started[name]
        started.wait()
        if name in self._unstarted:
            raise WaitTimeout(self._unstarted[name])
        return name

    def _say_when_ready(self, name: str, handle: Any, last_start: float | None, need: Mapping[str, float],
                        model: str) -> None:
        """A line every `every` s until its actor is up: 'engine X waiting for room: 40 s of 1800 s; needs 4
        GPU, 1 CPU; the cluster has 2 GPU, 6 CPU free' while Ray cannot place it, then 'engine X starting: 20 s
        (61 s last time)' while it loads (weights, memory profiling: long enough to want a line),
        against its start in the run's last attempt when there was one; then 'engine X: ready in 61 s'. Past
        `start_s` the engine is killed and its cells fail with the line that says why."""
        import ray

        short, start = name.removeprefix(self.prefix + "-"), time.monotonic()
        against = "" if last_start is None else f" ({last_start:.0f} s last time)"
        ready = handle.__ray_ready__.remote()  # every Ray actor's: done once its constructor has returned
        try:
            while not ray.wait([ready], timeout=max(0.0, min(self.every, self.start_s - (time.monotonic() - start)))
                               )[0]:
                if self._closed.is_set():
                    return
                waited, where = time.monotonic() - start, placed(handle)
                room = "" if where else f"; {shortfall(need, cluster_free(), nodes_free())}"
                if waited >= self.start_s:
                    state = ("Ray could not place it" if where is False else
                             "it was placed, its start (loading the model) not over" if where else
                             "Ray did not say whether it was placed")
                    self._give_up(name, f"engine {short} for {model} did not start in {self.start_s:.0f} s "
                                        f"(cluster.engine_start_s): {state}{room}")
                    return
                self.log(f"engine {short} starting: {waited:.0f} s{against}" if where else
                         f"engine {short} waiting for room: {waited:.0f} s of {self.start_s:.0f} s{room}")
            try:
                ray.get(ready)
            except Exception as e:  # noqa: BLE001 - the cells that ask it say why; this line only ends the wait
                self.log(f"engine {short}: did not start ({type(e).__name__})")
                return
            self.log(f"engine {short}: ready in {time.monotonic() - start:.0f} s")
        finally:
            self._started[name].set()
        if not self._closed.is_set():
            self._say_while_restarting(name, handle, need, model)

    def _say_while_restarting(self, name: str, handle: Any, need: Mapping[str, float], model: str) -> None:
        """Until the engine is released: while Ray restarts it (its process or node lost), a line every `every`
        s saying so and what it needs, and one when it is back; the cells' calls to it wait meanwhile
        (actors.engine_calls). Restarting past `start_s`, it is given up as an engine that never started is.
        Ray's actor table is read every second, so a restart shorter than `every` still has its line."""
        short, since, said = name.removeprefix(self.prefix + "-"), None, 0.0
        while not self._closed.wait(RESTART_POLL_S):
            with self._lock:
                if self._servers.get(name, (None,))[0] is not handle:
                    return
            state = actor_state(handle)
            if state in ("RESTARTING", "PENDING_CREATION"):
                since = since or time.monotonic()
                waited = time.monotonic() - since
                if waited >= self.start_s:
                    self._give_up(name, f"engine {short} for {model} did not start again in {self.start_s:.0f} s "
                                        f"(cluster.engine_start_s) after its process or node was lost; "
                                        f"{shortfall(need, cluster_free(), nodes_free())}")
                    return
                if waited - said >= self.every:
                    said = waited
                    self.log(f"engine {short} restarting (its process or node was lost): {waited:.0f} s of "
                             f"{self.start_s:.0f} s; its cells' calls wait for it; "
                             f"{shortfall(need, cluster_free(), nodes_free())}")
            elif state == "ALIVE" and since is not None:
                self.log(f"engine {short}: back after {time.monotonic() - since:.0f} s of restarting")
                since, said = None, 0.0
            elif state == "DEAD":
                return

    def _give_up(self, name: str, why: str) -> None:
        """An engine past its start bound: killed (an unplaced one must not take the room a node brings later)
        and remembered, so its cells, and any later cell of this run, fail with `why`; a rerun tries again."""
        import ray

        self.log(f"ERROR {why}")
        with self._lock:
            self._unstarted[name] = why
            handle, group = self._servers.pop(name, (None, None))
        if handle is not None:
            ray.kill(handle, no_restart=True)
        if group is not None:
            ray.util.remove_placement_group(group)
        self._times[name]["released_at"] = round(time.time(), 3)

    def local(self, model: ModelConfig, worker: WorkerModel, path: str) -> tuple[WorkerModel, str]:
        """The settings and weights path an engine and its cells' tasks load: hub specs replaced by their local
        snapshots once the sweep's prefetch has them (waited for here, in the cell's thread, so other engines
        start meanwhile); unchanged without a prefetch."""
        if self.weights is None:
            return worker, path
        return self.weights.localized(model, worker, path)

    def asked(self, model: ModelConfig, usage: RequestUsage) -> None:
        """One request an API model answered (jobs.engines.http): its HTTP calls and tokens, for its entry."""
        with self._lock:
            self._asked.asked(model.name, model.name, model.engine, usage)
            self._paths[model.name] = model.path

    def expect(self, models: Iterable[ModelConfig]) -> None:
        """A cell that will send requests to these models is on its way."""
        with self._lock:
            self._users.update(self._names(models))

    def finished(self, models: Iterable[ModelConfig]) -> None:
        """A cell is done with these models; an engine no cell still needs, whichever models share it, is
        released."""
        with self._lock:
            self._users.subtract(self._names(models))
            idle = [name for name, count in self._users.items() if count <= 0]
        for name in idle:
            self._stop(name)

    def release(self, model: ModelConfig) -> None:
        """Stop the engines `model` uses, shared or not (a later request would start them again, and count a
        start)."""
        for name in self._names([model]):
            self._stop(name)

    def _stop(self, name: str) -> None:
        import ray

        with self._lock:
            if name not in self._servers:
                return
            handle, group = self._servers.pop(name)
        try:
            ray.get(handle.shutdown.remote(), timeout=SHUTDOWN_S)
        except Exception as e:  # noqa: BLE001 - a dead or stuck engine is killed all the same
            self.log(f"engine {name}: shutdown: {type(e).__name__}: {e}")
        ray.kill(handle, no_restart=True)
        if group is not None:
            ray.util.remove_placement_group(group)
        self._times[name]["released_at"] = round(time.time(), 3)

    def accounting(self) -> list[EngineEntry]:
        """One entry per engine: model(s), engine, starts, the node and times of each start, start_s, busy_s,
        requests and token counts; `lost_nodes`: the nodes it ran on that have died since (Ray restarted it
        elsewhere); `requested_at` and `released_at`: when the host asked Ray for its actor and when it killed it,
        so its whole cost of a start (Ray placing it, the process, imports, the load) and when it stopped holding
        its resources can be read. Then one per API model: requests, HTTP calls, retries by cause, tokens and,
        with a price table, dollars."""
        return self._engines() + self._api_models()

    def _engines(self) -> list[EngineEntry]:
        import ray

        if self._ledger is None:
            return []
        entries = ray.get(self._ledger.read.remote())
        alive = {node["NodeID"] for node in ray.nodes() if node["Alive"]}
        for name, entry in entries.items():
            entry.update(self._times.get(name, {}))
            entry["lost_nodes"] = list(dict.fromkeys(node["node_id"] for node in entry["nodes"]
                                                     if node.get("node_id") and node["node_id"] not in alive))
        return [entries[name] for name in sorted(entries)]

    def _api_models(self) -> list[EngineEntry]:
        with self._lock:
            entries, paths = self._asked.read(), dict(self._paths)
        if self.price is not None:
            for name, entry in entries.items():
                entry["dollars"] = self.price(paths[name], entry["prompt_tokens"], entry["generated_tokens"])
        return [entries[name] for name in sorted(entries)]

    def close(self) -> list[EngineEntry]:
        """Release every engine; the accounting, with every release time. A closed host accounts for nothing."""
        import ray

        self._closed.set()
        deadline = time.monotonic() + WATCHERS_JOIN_S
        for watcher in self._watchers:
            watcher.join(timeout=max(0.0, deadline - time.monotonic()))
        for name in list(self._servers):
            self._stop(name)
        entries = self.accounting()
        if self._ledger is not None:
            ray.kill(self._ledger)
            self._ledger = None
        with self._lock:
            self._asked = EngineLedger()
        return entries


def last_starts(engines: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], float]:
    """(engine, model) -> the seconds its first start took, from the host asking Ray for the actor to the
    engine being ready (what 'engine X starting' counts), from a run's recorded engines (manifest.json's
    `engines`, the accounting above); a shared engine's start counts for each of its models."""
    out: dict[tuple[str, str], float] = {}
    for entry in engines:
        ready = (entry.get("start_times") or [{}])[0].get("ready")
        if ready is not None and entry.get("requested_at") is not None:
            for model in str(entry.get("model", "")).split(MODELS_JOINED_BY):
                out[(entry["engine"], model)] = ready - entry["requested_at"]
    return out


def engine_name(model: ModelConfig, reference: bool = False) -> str:
    """The name (after the sweep's prefix) of the host's engine for `model`, or for its reference weights."""
    return engine_of(model).server_name(model, reference)


def engine_names(model: ModelConfig) -> list[str]:
    """The host's engines `model`'s requests go to: its own and an implicit RM's reference; none for a
    Serve-shared judge or an engine outside the host (API, stand-in)."""
    return engine_of(model).server_names(model)
