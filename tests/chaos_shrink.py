"""The chaos harness's shrink fault (issue 64): the cluster shrunk below a waiting engine's needs, then grown back
inside `cluster.engine_start_s` (the engine starts, its cell finishes) or not (its cell fails in time, naming
what the engine needs and what the cluster has free; the sweep's other cell is whole; the same command, rerun
once the node is back, resumes). Run as a script, so its Ray cluster is its process's only one:

    python tests/chaos_shrink.py OUT.json --seeds 10 [--first 1] [--bound 60]

One cluster for every seed (ray.cluster_utils.Cluster): a head with no CPUs, a worker of 2 CPUs, and the
worker of 3 that the sweep's second engine needs (3 CPUs) removed before each seed's driver starts. The sweep:
two tiny transformers classifiers on the Appendix D pairs, `small` (1 CPU) and `big` (3 CPUs), without the
answer store (their weights are the same, and `big` would take `small`'s answers). Each seed draws its class
(`back`: a 3-CPU node joins; `too_small`: a 1-CPU node joins, so the cluster's free CPUs add up to the need
but no node has them; `never`) by seed % 3, and when the node joins (10% to 40% of the bound after the
engine was asked for) from the seed. A clean run (both nodes) is made first; every seed's metrics must equal it.
OUT.json gets each seed's checks, times and problems, and the wall time.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "tests")) if p not in sys.path]

from sweeps import write_sweep

from scripts.multinode import OBJECT_STORE, TINY, start_cluster, stored_request_ids

CLASSES = ("back", "never", "too_small")
BIG_CPUS, SMALL_CPUS = 3, 2
SLACK_S = 15.0  # a failure past the bound by at most this: the wait's check every 10 s, the cell's write
DRIVER_TIMEOUT_S = 600.0


def shrink_sweep(folder: Path) -> Path:
    models = [TINY.replace("tiny_tf", "small").replace("batch_size: 4", "batch_size: 4, num_cpus: 1"),
              TINY.replace("tiny_tf", "big").replace("batch_size: 4", f"batch_size: 4, num_cpus: {BIG_CPUS}")]
    return write_sweep(folder, "shrink", models, f'root: "{folder / "results"}", answer_cache: false')


class Driver:
    """`ragjudge run` of the sweep in a process of its own; its lines, each with when the harness saw it."""

    def __init__(self, command: list[str], log: Path):
        self.log, self.handle = log, log.open("w")
        self.started = time.monotonic()
        self.process = subprocess.Popen(command, cwd=ROOT, stdout=self.handle, stderr=subprocess.STDOUT)
        self.seen: list[tuple[float, str]] = []

    def lines(self) -> list[tuple[float, str]]:
        """Every whole line so far, with the seconds after the start when the harness first saw it."""
        now = time.monotonic() - self.started
        whole = self.log.read_text(errors="replace").split("\n")[:-1]  # the last: a line still being written
        self.seen += [(now, line) for line in whole[len(self.seen):]]
        return self.seen

    def first(self, pattern: str) -> tuple[float, str] | None:
        return next(((t, line) for t, line in self.lines() if re.search(pattern, line)), None)

    def wait(self) -> int:
        try:
            code = self.process.wait(timeout=DRIVER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.handle.close()
        self.lines()
        return code


class World:
    def __init__(self, work: Path, bound: float):
        import ray

        self.work, self.bound = work, bound
        self.sweep = shrink_sweep(work)
        self.cluster = start_cluster([0, SMALL_CPUS])
        self.small = next(iter(self.cluster.worker_nodes))
        ray.init(address=self.cluster.address, log_to_driver=False, namespace="chaos-shrink")

    def command(self, run: str) -> list[str]:
        return [sys.executable, "-m", "jobs", "run", str(self.sweep), f"cluster.address={self.cluster.address}",
                f"cluster.engine_start_s={self.bound}", f"storage.run={run}"]

    def shrink(self) -> None:
        """Back to the shrunk cluster: every worker but the first removed."""
        for node in list(self.cluster.worker_nodes):
            if node is not self.small:
                self.cluster.remove_node(node)
        self.wait_cpus(SMALL_CPUS)

    def grow(self, cpus: int) -> str:
        node = self.cluster.add_node(num_cpus=cpus, object_store_memory=OBJECT_STORE)
        return node.node_id

    def wait_cpus(self, cpus: float, timeout: float = 60.0) -> None:
        import ray

        deadline = time.monotonic() + timeout
        while ray.cluster_resources().get("CPU", 0.0) != cpus and time.monotonic() < deadline:
            time.sleep(0.5)

    def results(self, run: str) -> dict[str, Any]:
        folder = self.work / "results" / run
        manifest = json.loads((folder / "manifest.json").read_text())
        metrics = {}
        for cell in sorted(folder.glob("metrics/benchmark=*/model=*/metrics.json")):
            data = json.loads(cell.read_text())
            metrics[cell.parent.name] = {k: v for k, v in data.items() if not k.endswith(("_s", "_at"))}
        return {"manifest": manifest, "metrics": metrics, "stored": stored_request_ids(folder)}

    def close(self) -> None:
        import ray

        ray.shutdown()
        self.cluster.shutdown()


def clean_run(world: World) -> dict[str, Any]:
    world.grow(BIG_CPUS)
    world.wait_cpus(SMALL_CPUS + BIG_CPUS)
    driver = Driver(world.command("clean"), world.work / "clean.log")
    code = driver.wait()
    said = world.results("clean")
    world.shrink()
    return {"exit": code, "metrics": said["metrics"], "stored": said["stored"],
            "problems": [] if code == 0 else [f"the clean run exited {code}: {driver.lines()[-3:]}"]}


def run_seed(world: World, seed: int, clean: dict[str, Any]) -> dict[str, Any]:
    rng = random.Random(f"shrink-{seed}")
    kind = CLASSES[seed % len(CLASSES)]
    join_after = round(rng.uniform(0.1, 0.4) * world.bound, 1)
    run, problems = f"seed-{seed}", []
    said: dict[str, Any] = {"seed": seed, "class": kind, "join_after_s": None if kind == "never" else join_after}
    started = time.monotonic()
    driver = Driver(world.command(run), world.work / f"{run}.log")
    asked = None
    while driver.process.poll() is None:
        asked = asked or driver.first(r"engine big-score: starting for big")
        if asked and kind != "never" and "joined_s" not in said and \
                time.monotonic() - driver.started >= asked[0] + join_after:
            said["joined_node"] = world.grow(BIG_CPUS if kind == "back" else 1)
            said["joined_s"] = round(time.monotonic() - driver.started, 1)
        time.sleep(0.25)
    code = driver.wait()
    asked = asked or driver.first(r"engine big-score: starting for big")
    waiting = driver.first(r"engine big-score waiting for room: ")
    said.update(exit=code, waiting_line=waiting and waiting[1])
    if waiting is None or f"needs {BIG_CPUS} CPU; the cluster has " not in waiting[1]:
        problems.append(f"no 'waiting for room' line naming the need: {waiting}")
    cells = world.results(run)["manifest"].get("cells") or {}
    big = next((c for k, c in cells.items() if k.endswith("/big")), {})
    small = next((c for k, c in cells.items() if k.endswith("/small")), {})
    if small.get("status") != "done":
        problems.append(f"the other cell is {small.get('status')}: {small.get('error')}")
    if kind == "back":
        ready = driver.first(r"engine big-score: ready in ")
        said["ready_s"] = ready and round(ready[0] - asked[0], 1)
        if code != 0 or big.get("status") != "done":
            problems.append(f"grown back in the bound, yet exit {code}, big {big.get('status')}: {big.get('error')}")
    else:
        error = driver.first(r"ERROR engine big-score for big did not start in ")
        said["failed_after_s"] = error and asked and round(error[0] - asked[0], 1)
        said["error"] = big.get("error")
        want = (f"WaitTimeout: engine big-score for big did not start in {world.bound:.0f} s "
                f"(cluster.engine_start_s): Ray could not place it; needs {BIG_CPUS} CPU; the cluster has ")
        if code != 1 or big.get("status") != "failed" or not str(big.get("error", "")).startswith(want):
            problems.append(f"not grown back, yet exit {code}, big {big.get('status')}: {big.get('error')}")
        if kind == "too_small" and ", at most 2 CPU on one node" not in str(big.get("error")):
            problems.append(f"the error does not say no node has room: {big.get('error')}")
        if not error or not world.bound <= said["failed_after_s"] <= world.bound + SLACK_S:
            problems.append(f"failed after {said['failed_after_s']} s, not within {world.bound:.0f} + {SLACK_S:.0f} s")
        before = world.results(run)["stored"]
        world.grow(BIG_CPUS)  # the same command again, the node back: it resumes
        rerun = Driver(world.command(run), world.work / f"{run}-rerun.log")
        said["rerun_exit"] = rerun.wait()
        after = world.results(run)
        if said["rerun_exit"] != 0:
            problems.append(f"the rerun exited {said['rerun_exit']}: {rerun.lines()[-3:]}")
        if rerun.first(r"engine small-score: starting") or before.get(
                next(k for k in before if k.endswith("small"))) != after["stored"].get(
                next(k for k in before if k.endswith("small"))):
            problems.append("the rerun asked the finished cell again")
    final = world.results(run)
    if final["metrics"] != clean["metrics"]:
        problems.append(f"metrics differ from the clean run's: {sorted(final['metrics'])}")
    if final["stored"] != clean["stored"]:
        problems.append(f"stored requests differ from the clean run's: {final['stored']} vs {clean['stored']}")
    world.shrink()
    said.update(problems=problems, wall_s=round(time.monotonic() - started, 1))
    return said


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first", type=int, default=1)
    parser.add_argument("--bound", type=float, default=60.0, help="cluster.engine_start_s")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    work = out.parent / (out.stem + "-work")
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    world = World(work, args.bound)
    results: dict[str, Any] = {"bound_s": args.bound, "seeds": []}
    try:
        results["clean"] = clean_run(world)
        if results["clean"]["problems"]:
            print(results["clean"]["problems"], flush=True)
            return 1
        for seed in range(args.first, args.first + args.seeds):
            said = run_seed(world, seed, results["clean"])
            results["seeds"].append(said)
            print(f"seed {seed} ({said['class']}): {'passed' if not said['problems'] else said['problems']}; "
                  f"wall {said['wall_s']} s", flush=True)
            results["wall_s"] = round(time.monotonic() - started, 1)
            out.write_text(json.dumps(results, indent=2, default=str))
    finally:
        world.close()
    results["wall_s"] = round(time.monotonic() - started, 1)
    out.write_text(json.dumps(results, indent=2, default=str))
    return 0 if all(not s["problems"] for s in results["seeds"]) else 1


if __name__ == "__main__":
    sys.exit(main())
