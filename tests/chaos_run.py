"""One run of the chaos harness (tests/chaos.py): the world up (tests/chaos_world.py), the driver started, the
seed's faults injected by time and by progress while it runs, plain reruns until it exits 0, the invariants
checked (tests/chaos_checks.py), everything stopped, even on failure."""
from __future__ import annotations

import os
import random
import shutil
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import chaos_checks as checks
import chaos_world as world
from chaos import DRIVER_TIMEOUT_S, PLAIN_RERUNS, POLL_S, STALL_S, Driver, Fault, draw_schedule, kinds_of

GARBAGE = 512  # bytes a corrupted part is overwritten with


def failed(cell: dict[str, Any], signal: str | None, driver_started: float) -> bool:
    """Whether a cell's manifest entry, read when a main driver ended, is a failure its driver should have
    given a reason for: not done or skipped, not stopped by a SIGTERM it recorded, and not left running where
    the driver could not say (killed with SIGKILL; or stopped before it started the cell at all, the entry an
    earlier driver's: full seed 21's driver, SIGTERMed 1.6 s after its start, before its signal handlers)."""
    status = cell.get("status")
    if status in ("done", "skipped") or (status == "interrupted" and signal == "SIGTERM"):
        return False
    return not (status == "running" and (signal == "SIGKILL" or float(cell.get("started_at") or 0) < driver_started))


def part_to_corrupt(keys: list[str], running: set[str], corrupted: set[str], pick: float) -> str | None:
    """The requests part a part_corrupt fault overwrites: one of a running cell's, not one an earlier fault of
    the seed overwrote (full seed 38 drew two, and the second picked the first's part, still garbage outside
    quarantine/: counting its rows ended the harness); None when there is none."""
    parts = sorted(k for k in keys if checks.cell_of(k) in running and k not in corrupted)
    return parts[int(pick * len(parts))] if parts else None


class Chaos:
    """The state of one seed's run: its world, its drivers, what the harness has seen of the run, its faults."""

    def __init__(self, work: Path, seed: int | None, span_s: float) -> None:
        import ray

        self.work, self.seed, self.span_s = work, seed, span_s
        self.sweep = world.write_sweep(work)
        self.store = world.Store()
        self.api = world.start_api()
        world.set_environment(self.store.gate.endpoint, self.api.base_url)
        self.cluster = world.start_cluster()
        ray.init(address=self.cluster.address, log_to_driver=False, namespace="chaos-harness")
        self.prefix = f"seed-{seed}" if seed is not None else "clean"
        self.run_prefix = f"{self.prefix}/{world.RUN}/"
        self.overrides = [f"cluster.address={self.cluster.address}", f"storage.root=s3://{world.BUCKET}/{self.prefix}",
                          f"storage.endpoint_url={self.store.gate.endpoint}"]
        sweep = "full" if "tiny_classifier" in world.MODEL_NAMES else "quick"
        self.schedule = draw_schedule(seed, kinds_of(sweep)) if seed is not None else []
        self.rng = random.Random(f"chaos-{seed}")
        self.drivers: list[Driver] = []
        self.main: Driver | None = None
        self.t0 = time.time()
        self.ledgers: dict[str, dict[str, Any]] = {}  # ledger actor name -> its last read entries
        self.ledger_driver: dict[str, int] = {}  # ledger actor name -> index of the main driver it belongs to
        self.engine_requests: dict[int, dict[str, int]] = {}  # main driver index -> model -> requests (manifest)
        self.parts: dict[str, float] = {}  # stored requests part key -> when first seen
        self.quarantined: dict[str, float] = {}
        self.failures: list[str] = []  # cells seen failed, with their one-line reason
        self.corrupted: set[str] = set()  # parts a part_corrupt fault overwrote
        self.manifest: dict[str, Any] = {}
        self.reruns = 0
        self.stalled = ""

    # ---- drivers ----
    def start(self, role: str) -> Driver:
        driver = Driver(self.sweep, self.overrides, self.work / f"driver-{len(self.drivers)}-{role}.log", role)
        self.drivers.append(driver)
        if role != "second":
            self.main = driver
        return driver

    def main_index(self) -> int:
        return self.drivers.index(self.main)

    def driver_ended(self, driver: Driver) -> None:
        """A main driver ended by itself: its engines' requests from manifest.json (its ledger is gone)."""
        manifest = self.store.json(self.run_prefix + "manifest.json") or {}
        self.manifest = manifest
        if driver.process.returncode in (0, 1) and manifest.get("engines") is not None:
            counts: Counter = Counter()
            for entry in manifest["engines"]:
                counts[entry["model"]] += int(entry.get("requests", 0))
            self.engine_requests[self.drivers.index(driver)] = dict(counts)
        for key, cell in (manifest.get("cells") or {}).items():
            if failed(cell, driver.signal, driver.started):
                reason = cell.get("error") or cell.get("message") or ""
                self.failures.append(f"{key}: {cell.get('status')} after driver {self.drivers.index(driver)} "
                                     f"(exit {driver.process.returncode}): {reason}")

    # ---- what the harness sees ----
    def elapsed(self) -> float:
        return time.time() - self.t0

    def observe(self) -> None:
        import ray

        now = self.elapsed()
        try:
            named = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].endswith("-ledger")]
        except Exception:  # noqa: BLE001 - the GCS busy or restarting: next poll
            named = []
        for actor in named:
            try:
                entries = ray.get(ray.get_actor(actor["name"], namespace=actor["namespace"]).read.remote(), timeout=5)
            except Exception:  # noqa: BLE001, S112 - its driver just ended
                continue
            self.ledgers[actor["name"]] = entries
            self.ledger_driver.setdefault(actor["name"], self.main_index())
        for key in self.store.keys(self.run_prefix + "requests/"):
            self.parts.setdefault(key, now)
        for key in self.store.keys(self.run_prefix + "quarantine/"):
            self.quarantined.setdefault(key, now)

    def model_requests(self, model: str) -> int:
        """Requests the engines of `model` answered, every driver together, as far as seen."""
        total = 0
        for index in {i for i in self.ledger_driver.values()} | set(self.engine_requests):
            if index in self.engine_requests:
                total += self.engine_requests[index].get(model, 0)
                continue
            total += sum(e["requests"] for name, entries in self.ledgers.items() if self.ledger_driver[name] == index
                         for e in entries.values() if e["model"] == model)
        return total

    def engine_actors(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(actor name, namespace, ledger entry) of the running main driver's engines that have answered."""
        import ray

        entries = {key: e for name, got in self.ledgers.items() if self.ledger_driver[name] == self.main_index()
                   for key, e in got.items()}
        return [(a["name"], a["namespace"], entries[a["name"]])
                for a in ray.util.list_named_actors(all_namespaces=True)
                if a["name"] in entries and entries[a["name"]]["requests"] > 0]

    def cells(self) -> dict[str, Any]:
        return (self.store.json(self.run_prefix + "manifest.json") or {}).get("cells") or {}

    # ---- the run ----
    def run_schedule(self) -> None:
        self.t0 = time.time()
        self.start("main")
        pending = list(self.schedule)
        last_move: list[Any] = [None, 0.0]  # the progress seen last, and when it changed
        while True:
            self.observe()
            self.check_recoveries()
            code = self.main.poll()
            if code is not None:
                self.driver_ended(self.main)
                if code == 0 or self.reruns >= PLAIN_RERUNS:
                    break
                self.reruns += 1  # a cell failed (or the driver did): a plain rerun, the schedule goes on
                self.start("rerun")
                continue
            for fault in [f for f in pending if f.at * self.span_s <= self.elapsed()]:
                if self.inject(fault):
                    pending.remove(fault)
            moved = (len(self.parts), world.count_steps(self.api)["ok"], sum(self.progress()["engines"].values()))
            if moved != last_move[0]:
                last_move[:] = [moved, self.elapsed()]
            if self.elapsed() - last_move[1] > STALL_S:
                self.main.wait(0)
                self.stalled = (f"the run made no progress for {STALL_S:.0f} s (at {self.elapsed():.0f} s): driver "
                                f"{self.main_index()} killed; its last line: {' | '.join(self.main.tail(1))}")
                break
            time.sleep(POLL_S)
        for fault in pending:
            fault.detail["not_injected"] = "the run ended before its time or its condition"
        self.api.bursts.clear()
        self.store.gate.open()

    def plain_reruns(self) -> None:
        """After the schedule: the driver run plainly until it exits 0 (at most PLAIN_RERUNS more)."""
        while self.main.process.returncode != 0 and self.reruns < PLAIN_RERUNS and not self.stalled:
            self.reruns += 1
            driver = self.start("rerun")
            driver.wait(DRIVER_TIMEOUT_S)
            self.driver_ended(driver)

    def close(self) -> None:
        import ray

        for driver in self.drivers:
            if driver.process.poll() is None:
                driver.process.kill()
                driver.wait(30)
        for step in (ray.shutdown, self.cluster.shutdown, lambda: self.api.__exit__(None, None, None),
                     self.store.close):
            try:
                step()
            except Exception as e:  # noqa: BLE001 - stop the rest all the same
                print(f"chaos: closing: {type(e).__name__}: {e}")

    # ---- faults ----
    def inject(self, fault: Fault) -> bool:
        """Inject `fault` if its condition holds now; whether it was."""
        at = self.elapsed()  # a driver's stop waits for its exit: the fault's time is the signal's
        injected = getattr(self, f"_{fault.kind}")(fault)
        if injected:
            fault.fired_at_s = round(at, 1)
            fault.detail["progress"] = self.progress()
        return bool(injected)

    def progress(self) -> dict[str, Any]:
        return {"parts": len(self.parts), "api_ok": world.count_steps(self.api)["ok"],
                "engines": {m: self.model_requests(m) for m in world.MODEL_NAMES if m != "api_judge"}}

    def _engine_kill(self, fault: Fault) -> bool:
        import ray

        engines = self.engine_actors()
        if not engines:
            return False
        name, namespace, entry = engines[int(fault.pick * len(engines))]
        ray.kill(ray.get_actor(name, namespace=namespace), no_restart=False)
        fault.detail.update(engine=name, model=entry["model"], answered=entry["requests"])
        return True

    def _engine_core_kill(self, fault: Fault) -> bool:
        import psutil
        import ray

        engines = [e for e in self.engine_actors() if e[2]["engine"] == "vllm"]
        if not engines:
            return False
        name, namespace, entry = engines[0]
        try:
            pid = ray.get(ray.get_actor(name, namespace=namespace).__ray_call__.remote(lambda self: os.getpid()),
                          timeout=10)
            cores = [p for p in psutil.Process(pid).children(recursive=True) if "EngineCore" in " ".join(p.cmdline())]
        except Exception:  # noqa: BLE001 - restarting or gone: later
            return False
        if not cores:
            return False
        os.kill(cores[0].pid, signal.SIGKILL)
        fault.detail.update(engine=name, model=entry["model"], answered=entry["requests"], core_pid=cores[0].pid)
        return True

    def _node_remove(self, fault: Fault) -> bool:
        workers = list(self.cluster.worker_nodes)
        if len(workers) < 2:
            return False
        under = {e["nodes"][-1].get("node_id") for _, _, e in self.engine_actors() if e["nodes"]}
        engine_nodes = [n for n in workers if n.node_id in under]
        choices = engine_nodes if engine_nodes and fault.pick < 0.7 else workers
        node = choices[int(fault.pick * len(choices))]
        fault.detail.update(node=node.node_id, engines_on_it=node.node_id in under)
        self.cluster.remove_node(node)
        return True

    def _node_add(self, fault: Fault) -> bool:
        node = self.cluster.add_node(num_cpus=world.WORKER_CPUS, object_store_memory=world.OBJECT_STORE)
        fault.detail["node"] = node.node_id
        return True

    def _s3_outage(self, fault: Fault) -> bool:
        if not self.store.gate.is_open:
            return False
        self.store.gate.down_for(fault.duration_s)
        return True

    def _part_corrupt(self, fault: Fault) -> bool:
        running = {key for key, cell in self.cells().items() if cell.get("status") == "running"}
        key = part_to_corrupt(self.store.keys(self.run_prefix + "requests/"), running, self.corrupted, fault.pick)
        if key is None:
            return False
        self.corrupted.add(key)
        rows = world.rows_in(self.store.get(key))
        self.store.put(key, self.rng.randbytes(GARBAGE))
        fault.detail.update(part=key.removeprefix(self.run_prefix), rows=rows, at_unix=time.time())
        return True

    def _driver_kill(self, fault: Fault) -> bool:
        return self._stop_driver(fault, signal.SIGKILL)

    def _driver_term(self, fault: Fault) -> bool:
        return self._stop_driver(fault, signal.SIGTERM)

    def _stop_driver(self, fault: Fault, signum: int) -> bool:
        if self.main.poll() is not None or not self.parts:
            return False
        self.observe()  # the ledger as late as possible: a killed driver's is gone with it
        self.main.send(signum)
        code = self.main.wait(world.GRACE_S + 60)
        fault.detail.update(driver=self.main_index(), exit=code)
        if signum != signal.SIGKILL:
            self.driver_ended(self.main)
        self.start("after-" + fault.kind)
        return True

    def _second_driver(self, fault: Fault) -> bool:
        lease = self.store.json(self.run_prefix + "lease.json")
        if self.main.poll() is not None or not lease or lease.get("pid") != self.main.process.pid:
            return False
        second = self.start("second")
        fault.detail.update(driver=self.drivers.index(second))
        return True

    def _api_burst(self, fault: Fault) -> bool:
        self.api.burst(fault.code, fault.count)
        return True

    # ---- recovery times ----
    def check_recoveries(self) -> None:
        now = self.elapsed()
        for fault in self.schedule:
            if fault.fired_at_s is None or fault.recovery_s is not None:
                continue
            if (got := self.recovered(fault)) is not None:
                fault.recovery_s = round(max(got, now) - fault.fired_at_s, 1)

    def recovered(self, fault: Fault) -> float | None:
        """When the run went on after `fault` (None: not yet): the next answered batch of the engine it hit, the
        next stored part after an outage or a driver's stop, the quarantined copy of a corrupted part, the API's
        next answer after a burst, a second driver's exit."""
        before = fault.detail.get("progress", {})
        now = self.elapsed()
        if fault.kind in ("engine_kill", "engine_core_kill"):
            return now if self.model_requests(fault.detail["model"]) > before["engines"].get(fault.detail["model"], 0) else None
        if fault.kind == "node_remove":
            return now if sum(self.progress()["engines"].values()) > sum(before["engines"].values()) else None
        if fault.kind in ("s3_outage", "driver_kill", "driver_term"):
            return now if len(self.parts) > before["parts"] else None
        if fault.kind == "part_corrupt":
            part = fault.detail["part"]
            return now if any(k.endswith(part) for k in self.quarantined) else None
        if fault.kind == "api_burst":
            return now if not self.api.bursts and world.count_steps(self.api)["ok"] > before["api_ok"] else None
        if fault.kind == "second_driver":
            driver = self.drivers[fault.detail["driver"]]
            return driver.ended - self.t0 if driver.poll() is not None else None
        return None

    def said(self) -> dict[str, Any]:
        for driver in self.drivers:
            driver.poll()
        kinds = Counter(f.kind for f in self.schedule if f.fired_at_s is not None)
        return {"seed": self.seed, "schedule": [f.__dict__ for f in self.schedule], "injected": dict(kinds),
                "drivers": [d.record(self.t0) for d in self.drivers], "reruns": self.reruns,
                "failures": self.failures, "stalled": self.stalled, "api_steps": dict(world.count_steps(self.api)),
                "recovery_s": {f"{i}:{f.kind}": f.recovery_s for i, f in enumerate(self.schedule)
                               if f.fired_at_s is not None}}


def run(work: Path, seed: int | None, clean: dict[str, Any] | None, span_s: float | None = None) -> dict[str, Any]:
    """One seed (None: the clean run) in `work` (emptied first): what it says, invariant problems included."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    started = time.monotonic()
    span = span_s or (clean or {}).get("driver_s") or 60.0
    chaos = Chaos(work, seed, span)
    try:
        chaos.run_schedule()
        chaos.plain_reruns()
        said = chaos.said()
        said["driver_s"] = round(chaos.elapsed(), 1)
        stored = checks.read_run(chaos.store, chaos.run_prefix)
        said["metrics"] = stored["metrics"]
        said["duplicates"] = checks.duplicates(chaos, stored)
        if clean is None:
            said["ids"] = {cell: sorted(ids) for cell, ids in checks.stored_ids(stored).items()}
            said["problems"] = checks.clean_problems(chaos, stored)
        else:
            said["problems"] = checks.problems(chaos, stored, clean)
    finally:
        chaos.close()
    said["wall_s"] = round(time.monotonic() - started, 1)
    return said
