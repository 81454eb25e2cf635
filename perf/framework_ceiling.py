"""The framework's ceiling (issue 45): how many requests a second a judged cell moves, and the driver's memory,
when the engine costs nothing, at 10k, 100k and 1M requests; beside Ray Data's own ceiling on the same rows.

    python perf/framework_ceiling.py OUT.json [--sizes 10000,100000,1000000] [--paths cell,ray_data,resumed]
                                              [--tree DIR] [--batch-size 16]

Workload: synthetic RAG-RewardBench pairs at 0.05 of Table 4's lengths (perf/workload.py's generator, labelled
synthetic), repeated under new ids up to the size; a discriminative RM asks two requests a pair.

Paths, each size in a fresh process (so its peak memory is its own; the data is made before, in another):
- `cell`: jobs.sweep.cell.run_cell, as a sweep runs a cell (on a local cluster started as `ragjudge run`
  starts one, its flow, recorder, answer parts on a local run root, the checkout's storage defaults), with an
  engine that answers at once but sits behind vLLM's Ray path: the engine host's named actor,
  called by the cell's `ask` Ray Data tasks (jobs/engines/vllm/engine.py, jobs/engines/vllm/stage.py), the
  same batch size and tasks in flight.
- `resumed`: the `cell` path run to its end in a process of its own, its manifest entry then set back to
  `interrupted` (a run killed after its last answer was stored), and run again in the measured process: its
  survey reads every shard's stored answers, nothing is asked, the walk combines them.
- `ray_data`: Ray Data alone, the ceiling of this machine: the same requests read by `ray.data.read_json`, a
  `map_batches` with the same batch size and tasks in flight calling a no-op actor that holds the same CPUs,
  each answer row read back by the driver and dropped.

`--tree DIR` runs the `cell` path on another checkout's code (its `jobs`, `actors`, `benchmarks` first on the
path), e.g. the commit before the streaming cell, as far as it fits in memory.

Per run: requests, seconds (the cell's, without Ray's start), requests per second, the driver's peak RSS
(`ru_maxrss`) and its peak private RSS (without the object store's shared pages it maps), sampled every 0.5 s.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Self

from workload import private_rss

ROOT = Path(__file__).resolve().parents[1]
SCALE = 0.05  # of Table 4's mean lengths: short pairs, so the framework and not the bytes is measured


class PrivatePeak:
    """The peak of private_rss, sampled every 0.5 s on a thread."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, private_rss())
            self._stop.wait(0.5)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, private_rss())


def make_data(folder: Path, pairs: int) -> tuple[Path, Path]:
    """(pairs.jsonl, requests.jsonl) of `pairs` synthetic pairs: Table 4's at SCALE, repeated under new ids (by
    the code of the tree on PYTHONPATH: main puts the measured checkout there)."""
    from benchmarks.protocol import benchmark
    from benchmarks.rag_rewardbench import synthetic

    base = list(synthetic.generate(scale=SCALE))
    spec = benchmark("rag_rewardbench")
    data, requests = folder / "pairs.jsonl", folder / "requests.jsonl"
    with data.open("w") as out:
        for n in range(pairs):
            pair = base[n % len(base)]
            out.write(json.dumps({**pair, "id": f"{pair['id']}-c{n // len(base)}"}) + "\n")
    with requests.open("w") as out:
        for item in spec.load_items(str(data)):
            if not item.get("error"):
                for request in spec.expand(item, "discriminative", spec.Options()):
                    out.write(json.dumps(request) + "\n")
    return data, requests


class InstantServer:
    """A host engine (jobs.engines.vllm.server's interface) that answers every request at once: a score from its id."""

    def __init__(self, model, path, task, key, ledger=None):
        self.key = key

    async def answer(self, requests, task, model, path, columns=(), prefix="", keep_messages=False):
        return [{"request_id": r["request_id"], "item_id": r["item_id"], "subset": r["subset"],
                 "variant": r["variant"], "error": None, "truncated": False, "n_tokens": 0,
                 "score": int(hashlib.blake2b(r["request_id"].encode(), digest_size=2).hexdigest(), 16) / 65536}
                for r in requests]

    def shutdown(self) -> None:
        pass


class NoOp:
    """Ray Data's ceiling: an actor that hands each batch's rows back."""

    def answer(self, rows):
        return [{"request_id": r["request_id"], "score": 0.5} for r in rows]


def run_cell_path(data: Path, batch_size: int, folder: Path | None = None) -> dict:
    from jobs.config import BenchmarkConfig, ModelConfig, StorageConfig, SweepConfig
    from jobs.engines.base import engines, register
    from jobs.engines.host import EngineHost
    from jobs.engines.vllm.engine import Vllm
    from jobs.store.manifest import Manifest
    from jobs.store.run_root import RunRoot
    from jobs.sweep.cell import Cell, run_cell
    from jobs.sweep.cluster import connect_ray

    class Instant(Vllm):
        name = "instant"

        def preflight(self, model):
            return []

        def readiness(self, model, machine, gpus):
            return []

        def server_actor(self, settings, path, task, name, ledger):
            return InstantServer, (settings, path, task, name, ledger)

    if "instant" not in engines():
        register(Instant())
    folder = folder or Path(tempfile.mkdtemp(prefix="ceiling-"))
    settings = StorageConfig(run="ceiling", root=str(folder))
    sweep = SweepConfig(name="ceiling", storage=settings)
    connect_ray(sweep)  # a local cluster as `ragjudge run` starts it (each checkout's own settings)
    root = RunRoot.of(settings)
    manifest = Manifest(root, sweep)
    bench = BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(data)],
                            bootstrap_resamples=100)
    model = ModelConfig(name="instant", path="instant", kind="discriminative", engine="instant",
                        batch_size=batch_size)
    host = EngineHost(lambda line: None)
    # Each checkout's own storage defaults (flush_s is newer than --tree's base)
    flush = {"flush_s": settings.flush_s} if hasattr(settings, "flush_s") else {}
    cell = Cell(root, manifest, bench, model, flush_every=settings.flush_every, log=lambda line: None,
                engines=host, **flush)
    start = time.perf_counter()
    outcome = run_cell(cell)
    seconds = time.perf_counter() - start
    host.close()
    if outcome.status != "done":
        raise SystemExit(f"the cell ended {outcome.status}{outcome.message}")
    return {"seconds": seconds, "requests": outcome.metrics["request_errors"]["requests"], "n": outcome.metrics["n"]}


def run_ray_data_path(requests: Path, batch_size: int) -> dict:
    import ray

    from jobs.config import ModelConfig
    from jobs.engines.rows import LIGHT
    from jobs.engines.vllm.engine import tasks_in_flight

    model = ModelConfig(name="noop", path="noop", kind="discriminative", engine="vllm", batch_size=batch_size)
    ray.init(address="local", include_dashboard=False, log_to_driver=False, configure_logging=False)
    actor = ray.remote(NoOp).options(name="noop", num_cpus=model.num_cpus).remote()
    ray.get(actor.answer.remote([]))

    def ask(batch):
        import pyarrow as pa

        answers = ray.get(ray.get_actor("noop").answer.remote(batch.to_pylist()))
        return pa.Table.from_pylist(answers)

    start = time.perf_counter()
    ds = ray.data.read_json(str(requests)).map_batches(
        ask, batch_size=batch_size, batch_format="pyarrow", compute=ray.data.TaskPoolStrategy(
            size=tasks_in_flight(model)), **LIGHT)
    n = sum(1 for _ in ds.iter_rows())
    return {"seconds": time.perf_counter() - start, "requests": n}


def interrupted(folder: Path) -> None:
    """The finished cell's manifest entry set back to `interrupted`, its stored answers kept."""
    from jobs.config import StorageConfig, SweepConfig
    from jobs.store.manifest import Manifest
    from jobs.store.run_root import RunRoot

    settings = StorageConfig(run="ceiling", root=str(folder))
    manifest = Manifest(RunRoot.of(settings), SweepConfig(name="ceiling", storage=settings))
    manifest.set_cell("rag_rewardbench/instant", {**manifest.cell("rag_rewardbench/instant"), "status": "interrupted"})


def first_run(data: Path, size: int, batch_size: int) -> Path:
    """The `resumed` path's first run, in a process of its own (so the measured one is a fresh driver)."""
    folder = Path(tempfile.mkdtemp(prefix="ceiling-"))
    done = subprocess.run([sys.executable, __file__, "--child", "cell", str(size), "--batch-size", str(batch_size),
                           "--data", str(data), "--root", str(folder)], capture_output=True, text=True, check=False)
    if "RESULT " not in done.stdout:
        raise SystemExit(f"the first run failed: {(done.stderr or done.stdout)[-2000:]}")
    interrupted(folder)
    return folder


def child(path: str, size: int, batch_size: int, data: Path, root: Path | None = None) -> None:
    root = first_run(data, size, batch_size) if path == "resumed" else root
    with PrivatePeak() as private:
        result = (run_ray_data_path(data.parent / "requests.jsonl", batch_size) if path == "ray_data"
                  else run_cell_path(data, batch_size, root))
    result.update(path=path, size=size, requests_per_s=round(result["requests"] / result["seconds"], 1),
                  driver_peak_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                  driver_peak_private_mib=round(private.peak / 2**20, 1), seconds=round(result["seconds"], 1),
                  tree=str(Path(sys.modules["jobs"].__file__).parents[1]))  # the checkout whose code ran
    print("RESULT " + json.dumps(result), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?")
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--paths", default="cell,ray_data")
    parser.add_argument("--tree", help="run the cell path on this checkout's code")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--child", nargs=2, metavar=("PATH", "SIZE"), help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)  # a child's pairs.jsonl
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)  # the resumed path's first run: its folder
    parser.add_argument("--make", nargs=2, metavar=("SIZE", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make:
        make_data(Path(args.make[1]), int(args.make[0]) // 2)
        return
    if args.child:
        child(args.child[0], int(args.child[1]), args.batch_size, args.data, args.root)
        return
    tree = str(Path(args.tree).resolve()) if args.tree else str(ROOT)
    runs = []
    for size in [int(s) for s in args.sizes.split(",")]:
        # The data is made in a process of its own, once a size for every path: made in the measured process,
        # the generator's imports and freed memory were 29 MiB of its driver's RSS.
        folder = Path(tempfile.mkdtemp(prefix="ceiling-data-"))
        subprocess.run([sys.executable, __file__, "--make", str(size), str(folder)], check=True,
                       env={**os.environ, "PYTHONPATH": tree})
        for path in args.paths.split(","):
            env = {**os.environ, "PYTHONPATH": str(ROOT) if path == "ray_data" else tree}
            done = subprocess.run([sys.executable, __file__, "--child", path, str(size), "--batch-size",
                                   str(args.batch_size), "--data", str(folder / "pairs.jsonl")],
                                  cwd=ROOT if path == "ray_data" else tree, env=env,
                                  capture_output=True, text=True, check=False)
            line = next((l for l in done.stdout.splitlines() if l.startswith("RESULT ")), None)
            if line is None:
                run = {"path": path, "size": size, "failed": (done.stderr or done.stdout)[-2000:]}
            else:
                run = json.loads(line[len("RESULT "):])
            run.setdefault("tree", tree)
            runs.append(run)
            print(json.dumps(run)[:300], flush=True)
        shutil.rmtree(folder)  # 1.2 GB at a million requests
    result = {"command": " ".join(sys.argv), "machine": platform.processor() or platform.machine(),
              "cpus": os.cpu_count(), "batch_size": args.batch_size, "scale": SCALE, "runs": runs,
              "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
