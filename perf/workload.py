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


# Whose a process is: the engines (our engine actors, vLLM's engine-core and worker processes, and the offline
# `LLM` baseline's own process, which holds what our actor holds: the front end and its tokenizer), the driver
# (this process), Ray Data's tasks (the workers that run them, idle between them), and Ray's own processes
# (raylet, GCS and its system actors; not the log monitor, as in the figures measured before CPU was). The
# raylet and the GCS go by their program's name: the raylet's arguments name `default_worker.py`, the command
# it starts workers with, and were read as a task worker's before. A named actor's title puts its name first
# (`ray::NAME:VllmServer.__init__`), so the engine actor was one of Ray's until its first call.
ENGINE_PROCESSES = ("VllmServer", "ScorerServer", "EngineCore", "VLLM", "--only llm")
TASK_TITLES = ("ray::IDLE", "ray::Map", "ray::FlatMap", "ray::Read", "default_worker")
SYSTEM_PROGRAMS = ("raylet", "gcs_server")
PARTS = ("driver", "engines", "tasks", "ray")


def _part(pid: int, argv: list[str]) -> str | None:
    if pid == os.getpid():
        return "driver"
    if argv and os.path.basename(argv[0]) in SYSTEM_PROGRAMS:
        return "ray"
    cmd = " ".join(argv)
    for part, names in (("engines", ENGINE_PROCESSES), ("tasks", TASK_TITLES), ("ray", ("ray::",))):
        if any(name in cmd for name in names):
            return part
    return None


def _title(argv: list[str]) -> str:
    """A process as `ps` would name it, short: its program and first argument, without their folders."""
    return " ".join(os.path.basename(arg.strip()) for arg in argv[:2]).strip()


def private_rss() -> int:
    """This process's resident bytes other than shared memory (/proc's RssAnon + RssFile)."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssFile"):
                fields[key] = int(value.split()[0]) * 1024
    return sum(fields.values())


class PeakMemory:
    """Peaks of summed RSS across this process and every Ray or vLLM process (they are not our children):
    `peak` of all of them together, `peaks` per part (PARTS, and the total), each sampled at its own peak;
    `driver_private`, the driver's RSS less the shared-memory pages it maps (the object store's pages that
    `ray.data.from_items` wrote requests into: the store's memory, capped by its size, not the driver's heap);
    `total_pss`, the processes' proportional set sizes summed, where a shared page (the object store's, a
    library's) counts once however many processes map it, as summed RSS counts it again in each (sampled every
    5 s: reading smaps costs more than RSS); and the CPU seconds each part has used, as a series of (time,
    {part: seconds}) for `cpu_between`; `at_peak`, the processes a part's peak was made of (title, MiB), to say
    what a part held when its figure looks wrong. A worker that starts untitled and becomes an engine counts as
    one from then on.

    The sampler is a thread of the driver, so it reads the driver's own memory from /proc/self; its CPU counts
    as the driver's. It runs at the lowest priority, so that on a machine whose cores the engine keeps busy it
    takes what is left rather than stalling the engine: at normal priority, every 5th sample reading PSS, it
    was half the driver's CPU in a 1,469-pair run (py-spy: 434 of its 833 samples in psutil's smaps reader)."""

    PSS_EVERY = 25  # samples: PSS every 5 s

    def __init__(self):
        self.peaks = dict.fromkeys(("driver", "driver_private", "engines", "tasks", "ray", "total", "total_pss"), 0)
        self.cpu: list[tuple[float, dict[str, float]]] = []
        self.at_peak: dict[str, list[tuple[str, int]]] = {}
        # Keyed by (pid, start time): a pid the kernel gives again to a new process is another process.
        self._parts: dict[tuple[int, float], str] = {}
        self._cpu: dict[tuple[int, float], float] = {}  # each process's CPU seconds when last seen
        self._used = dict.fromkeys(PARTS, 0.0)  # each part's CPU seconds so far
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # Linux: this thread's niceness alone
        tick = 0
        while not self._stop.is_set():
            with_pss = tick % self.PSS_EVERY == 0
            now = {**dict.fromkeys(self.peaks, 0), "driver_private": private_rss()}
            members: dict[str, list[tuple[str, int]]] = {part: [] for part in PARTS}
            for proc in psutil.process_iter(["pid", "cmdline", "create_time"]):
                argv = proc.info["cmdline"] or []
                key = (proc.pid, proc.info["create_time"])
                part = _part(proc.pid, argv)
                if part is None:
                    continue
                if self._parts.get(key) == "engines":
                    part = "engines"
                self._parts[key] = part
                try:
                    times = proc.cpu_times()
                    seconds = times.user + times.system
                    # To the part the process is in now: a worker retitled later (an idle one taking a system
                    # actor) keeps the seconds it used before in its old part, so no part's series falls.
                    self._used[part] += seconds - self._cpu.get(key, 0.0)
                    self._cpu[key] = seconds
                    rss = proc.memory_info().rss
                    pss = proc.memory_full_info().pss if with_pss else 0
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                now["total"] += rss
                now["total_pss"] += pss
                now[part] += rss
                members[part].append((_title(argv), rss >> 20))
            for part in PARTS:
                if now[part] > self.peaks[part]:
                    self.at_peak[part] = sorted(members[part], key=lambda member: -member[1])
            self.peaks = {part: max(self.peaks[part], now[part]) for part in now}
            self.cpu.append((time.time(), dict(self._used)))
            tick += 1
            self._stop.wait(0.2)

    def cpu_between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds each part used from `start` to `end` (Unix times), to the nearest sample."""
        def at(t: float) -> dict[str, float]:
            return min(self.cpu, key=lambda sample: abs(sample[0] - t))[1]

        first, last = at(start), at(end)
        return {part: round(last[part] - first[part], 1) for part in PARTS}

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
        start = time.time()
        connect_ray(sweep)
        started = time.time()
        outcome = run_sweep(sweep, log=lambda *_: None)[0]
        done = time.time()
    manifest = json.loads((folder / "results" / "perf" / "manifest.json").read_text())
    rows = RunRoot(str(folder / "results"), "perf").read_rows("predictions", "rag_rewardbench", name)
    return {"pairs": outcome.metrics["n"], "seconds_total": done - start, "seconds_cell": done - started,
            "engines": manifest.get("engines", []), "peak_rss_mib": memory.peak / 2**20,
            "peak_rss_mib_by_part": {part: round(rss / 2**20) for part, rss in memory.peaks.items()},
            "processes_at_peak": memory.at_peak,
            "cpu_s": _engine_windows(manifest.get("engines", []), memory, start),
            "correct": {r["item_id"]: r["correct"] for r in rows}}


def _engine_windows(engines: list[dict], memory: PeakMemory, start: float) -> dict[str, dict[str, float]]:
    """CPU seconds per part before the engine was ready (its start, and what ran beside it) and while it
    answered (ready to released), from the first engine's ledger entry."""
    if not engines:
        return {}
    ready = engines[0]["start_times"][0]["ready"]
    return {"until_engine_ready": memory.cpu_between(start, ready),
            "engine_ready_to_released": memory.cpu_between(ready, engines[0]["released_at"]),
            "seconds_ready_to_released": round(engines[0]["released_at"] - ready, 1)}
