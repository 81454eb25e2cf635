"""What the perf/ scripts share: Table-4-shaped pairs, the sweep that runs one model on them, and memory
measured across Ray's processes. Not a benchmark result: the pairs are synthetic and labelled so."""
from __future__ import annotations

import argparse
import json
import os
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "rag_rewardbench_appendix_d.jsonl"
SWEEP = """
name: perf
benchmarks:
  - {{name: rag_rewardbench, module: rag_rewardbench, data: ["{data}"]}}
models:
  - {model}
storage: {{root: "{root}", run: perf, flush_every: 256}}
"""


def add_workload_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scale", type=float, default=0.25, help="Table 4 lengths x this factor")
    parser.add_argument("--max-pairs", type=int, default=2, help="synthetic pairs per Table 4 subset")
    parser.add_argument("--copies", type=int, help="instead: copies of the six Appendix D pairs (distinct ids)")


def describe(args: argparse.Namespace) -> str:
    return (f"Appendix D x {args.copies}" if args.copies else
            f"synthetic Table 4 shape, lengths x {args.scale}, {args.max_pairs} pairs per subset")


def make_pairs(folder: Path, args: argparse.Namespace) -> Path:
    """Table-4-shaped synthetic pairs (benchmarks/rag_rewardbench/synthetic.py), or Appendix D copies."""
    from benchmarks.rag_rewardbench import synthetic

    if args.copies:
        rows = [json.loads(line) for line in SAMPLE.open()]
        rows = [{**r, "id": f"{r['id']}-copy{k}"} for k in range(args.copies) for r in rows]
    else:
        rows = list(synthetic.generate(scale=args.scale, max_pairs=args.max_pairs))
    path = folder / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def token_ids(data: Path, kind: str, path: str) -> list[tuple[list[int], int]]:
    """Each request's token ids as our engines receive them (actors.templating), with the response start."""
    from actors.templating import templater
    from benchmarks import rag_rewardbench as rb

    tpl = templater(path, None, None, False)
    out = []
    for item in rb.load_items(str(data)):
        for request in rb.expand(item, kind):
            out.append(tpl.response(request["messages"]) if kind == "implicit" else (tpl.closed(request["messages"]), 0))
    return out


# Whose memory a process is: the engines (our engine actors and vLLM's engine-core processes), the driver
# (this process), and everything of Ray's (the rest of the total).
ENGINE_PROCESSES = ("ray::VllmServer", "ray::ScorerServer", "EngineCore", "VLLM")


class PeakMemory:
    """Peaks of summed RSS across this process and every Ray or vLLM process (they are not our children):
    `peak` of all of them together, `peaks` per part (driver, engines, total), each sampled at its own peak."""

    def __init__(self):
        self.peaks = {"driver": 0, "engines": 0, "total": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        while not self._stop.is_set():
            now = {"driver": 0, "engines": 0, "total": 0}
            for proc in psutil.process_iter(["pid", "cmdline"]):
                try:
                    cmd = " ".join(proc.info["cmdline"] or [])
                    if proc.pid == os.getpid() or "ray::" in cmd or "EngineCore" in cmd or "raylet" in cmd \
                            or "gcs_server" in cmd or "default_worker" in cmd or "VLLM" in cmd:
                        rss = proc.memory_info().rss
                        now["total"] += rss
                        if proc.pid == os.getpid():
                            now["driver"] += rss
                        elif any(name in cmd for name in ENGINE_PROCESSES):
                            now["engines"] += rss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            self.peaks = {part: max(self.peaks[part], now[part]) for part in now}
            self._stop.wait(0.2)

    @property
    def peak(self) -> int:
        return self.peaks["total"]

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def run_pipeline(data: Path, folder: Path, model_yaml: str) -> dict:
    """One sweep of one model over the pairs, through `ragjudge run`'s own code; per-pair correctness back."""
    from jobs.loading import load_sweep
    from jobs.store.run_root import RunRoot
    from jobs.sweep import connect_ray, run_sweep

    sweep_file = folder / "conf" / "sweeps" / "perf.yaml"
    sweep_file.parent.mkdir(parents=True, exist_ok=True)
    sweep_file.write_text(SWEEP.format(data=data, root=folder / "results", model=model_yaml))
    sweep = load_sweep(sweep_file)
    name = next(iter(sweep.models))
    with PeakMemory() as memory:
        start = time.perf_counter()
        connect_ray(sweep)
        started = time.perf_counter()
        outcome = run_sweep(sweep, log=lambda *_: None)[0]
        done = time.perf_counter()
    manifest = json.loads((folder / "results" / "perf" / "manifest.json").read_text())
    rows = RunRoot(str(folder / "results"), "perf").read_rows("predictions", "rag_rewardbench", name)
    return {"pairs": outcome.metrics["n"], "seconds_total": done - start, "seconds_cell": done - started,
            "engines": manifest.get("engines", []), "peak_rss_mib": memory.peak / 2**20,
            "peak_rss_mib_by_part": {part: round(rss / 2**20) for part, rss in memory.peaks.items()},
            "correct": {r["item_id"]: r["correct"] for r in rows}}
