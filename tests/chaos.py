"""The chaos harness (issue 44): a sweep of 3 models x 3 benchmarks on a multi-node Ray cluster on this machine,
its run root on S3 (moto behind a gate, tests/chaos_world.py), and a schedule of faults drawn from a seed,
injected at random times while the sweep runs; then the invariants every seed must keep
(tests/chaos_checks.py). Run as a script, so its Ray cluster is its process's only one:

    python tests/chaos.py OUT.json --seed N [--clean CLEAN.json]
    python tests/chaos.py CLEAN.json --clean-run

A seed's run writes OUT.json: its schedule, each fault as injected (when, what it hit, its recovery time), the
drivers started and how each ended, duplicates, every invariant problem (one line each) and the wall time. The
clean run (no faults) writes each cell's metrics, which every seed's are compared with; `run_seed` makes it
once in the output folder where it is missing. tests/chaos_seeds.py runs many seeds; tests/jobs/sweep/test_chaos.py 3.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "tests")) if p not in sys.path]

import chaos_world as world

KINDS = ("engine_kill", "engine_core_kill", "node_remove", "node_add", "s3_outage", "part_corrupt",
         "driver_kill", "driver_term", "second_driver", "api_burst")
PLAIN_RERUNS = 3  # after the schedule: plain reruns of the driver until one exits 0
DRIVER_TIMEOUT_S = 600.0  # one driver's run, at most
POLL_S = 0.25
STALL_S = 240.0  # a run with no new answer and no stored part for this long is stuck: a problem, stopped
SEED_TIMEOUT_S = 1500  # a seed's whole process, at most (tests/chaos_seeds.py, the test)


@dataclass
class Fault:
    kind: str
    at: float  # when, as a share of the clean run's time after the first driver started; it fires then, or
    # once its condition holds after that
    duration_s: float = 0.0  # s3_outage: seconds the gate stays closed
    count: int = 0  # api_burst: requests answered with `code`
    code: str = ""  # api_burst: "429" or "500"
    pick: float = 0.0  # which target, where there is a choice (an engine, a node, a part): its rank in [0, 1)
    # filled when it runs
    fired_at_s: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    recovery_s: float | None = None


def draw_schedule(seed: int, kinds: tuple[str, ...] = KINDS) -> list[Fault]:
    """3 to 6 faults of KINDS at random times (5% to 90% of a clean run's time), from `seed` alone. Driver
    faults (kill, SIGTERM) are at most 2 a seed: each costs the engines a start. Some overlap: an outage and a
    burst last a while, and every third seed puts two faults within 3% of the run of each other."""
    rng = random.Random(seed)
    n = rng.randint(3, 6)
    faults: list[Fault] = []
    while len(faults) < n:
        kind = rng.choice(kinds)
        if kind in ("driver_kill", "driver_term") and sum(f.kind in ("driver_kill", "driver_term") for f in faults) >= 2:
            continue
        # a pick is a rank in [0, 1): rounded, 0.9995 and above would be 1.0, past the last target (seed 15)
        fault = Fault(kind, at=round(rng.uniform(0.05, 0.9), 3), pick=min(round(rng.random(), 3), 0.999))
        if kind == "s3_outage":
            fault.duration_s = round(rng.uniform(3.0, 20.0), 1)
        if kind == "api_burst":
            fault.count, fault.code = rng.randint(1, world.BURST_MAX), rng.choice(["429", "500"])
        faults.append(fault)
    if seed % 3 == 0 and len(faults) > 1:  # two faults at (almost) the same moment
        faults[1].at = round(faults[0].at + rng.uniform(0.0, 0.03), 3)
    return sorted(faults, key=lambda f: f.at)


class Driver:
    """One `ragjudge run` of the sweep in a process of its own, its output in a log file."""

    def __init__(self, sweep: Path, overrides: list[str], log: Path, role: str) -> None:
        self.role, self.log = role, log
        self.started = time.time()
        self.ended: float | None = None
        self.signal: str | None = None
        self.handle = log.open("w")
        self.process = subprocess.Popen([sys.executable, "-m", "jobs", "run", str(sweep), *overrides], cwd=ROOT,
                                        stdout=self.handle, stderr=subprocess.STDOUT)

    def poll(self) -> int | None:
        code = self.process.poll()
        if code is not None and self.ended is None:
            self.ended = time.time()
            self.handle.close()
        return code

    def send(self, signum: int) -> None:
        self.signal = signal.Signals(signum).name
        self.process.send_signal(signum)

    def wait(self, timeout: float) -> int:
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return self.poll()  # type: ignore[return-value]

    def tail(self, lines: int = 5) -> list[str]:
        return self.log.read_text(errors="replace").splitlines()[-lines:]

    def record(self, t0: float) -> dict[str, Any]:
        return {"role": self.role, "pid": self.process.pid, "started_s": round(self.started - t0, 1),
                "ended_s": None if self.ended is None else round(self.ended - t0, 1),
                "exit": self.process.returncode, "signal": self.signal, "log": str(self.log)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--clean-run", action="store_true", help="the sweep without faults")
    parser.add_argument("--clean", help="the clean run's OUT.json to compare with")
    parser.add_argument("--sweep", choices=sorted(world.SWEEPS), default="full")
    args = parser.parse_args()
    world.use(args.sweep)
    from chaos_run import run

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # the cluster, drivers and servers are stopped on the way out

    signal.signal(signal.SIGTERM, stop)

    out = Path(args.out)
    said = run(out.parent / (out.stem + "-work"), None if args.clean_run else args.seed,
               json.loads(Path(args.clean).read_text()) if args.clean else None)
    out.write_text(json.dumps(said, indent=2, default=str))


def kinds_of(sweep: str) -> tuple[str, ...]:
    """The fault kinds a sweep can take: the quick one has no vLLM engine, so no EngineCore to kill."""
    return KINDS if sweep == "full" else tuple(k for k in KINDS if k != "engine_core_kill")


def run_seed(seed: int | None, folder: Path, sweep: str = "full", timeout_s: float = SEED_TIMEOUT_S
             ) -> dict[str, Any]:
    """One seed (None: the clean run) of `sweep` in a process of its own; the clean run first where `folder`
    has none. The harness runs in the checkout's root, so every path it is given is absolute."""
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    clean = folder / f"clean-{sweep}.json"
    if seed is not None and not clean.exists():
        said = run_seed(None, folder, sweep, timeout_s)
        if said.get("problems"):
            return {**said, "seed": seed, "problems": ["the clean run: " + p for p in said["problems"]]}
    out = clean if seed is None else folder / f"seed-{seed}-{sweep}.json"
    command = [sys.executable, __file__, str(out), "--sweep", sweep]
    command += ["--clean-run"] if seed is None else ["--seed", str(seed), "--clean", str(clean)]
    started = time.monotonic()
    harness = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"})
    try:
        output, _ = harness.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        harness.terminate()  # its SIGTERM handler stops the cluster and the drivers
        output, _ = harness.communicate(timeout=120)
    done = subprocess.CompletedProcess(command, harness.returncode, output, "")
    if done.returncode != 0 or not out.exists():
        return {"seed": seed, "problems": [f"the harness exited {done.returncode}: "
                                           + " | ".join((done.stdout + done.stderr).strip().splitlines()[-8:])],
                "wall_s": round(time.monotonic() - started, 1)}
    return json.loads(out.read_text())


if __name__ == "__main__":
    main()
