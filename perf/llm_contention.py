"""How much vLLM's CPU engine slows down when other work takes a share of its cores (issue 28, item 5).

    python perf/llm_contention.py OUT.json [--duty 0,0.3] [--scale 1.0]

The pipeline's driver, Ray's processes, Ray Data's tasks and the engine actor's tokenizing run on the cores
whose every one vLLM's OpenMP threads are bound to. This measures what such work costs the engine, without
Ray: vLLM's offline `LLM` (perf/rag_rewardbench_throughput.py's baseline) scores the tiny classifier's
Table-4-shaped pairs that fit 8,192 tokens (1,469 at full length), once per duty: a process beside it busy
for that fraction of every 10 ms. If the engine used what the other work leaves, its scoring would take
`seconds_scoring_fair`: its CPU-seconds at duty 0 over the cores it had left. A synchronous OpenMP region
waits for its slowest thread, so a thread that loses its core holds up the others.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

from growth_curve import fitting, llm_baseline
from workload import make_pairs

PERIOD_S = 0.01


def burn(duty: float, stop) -> None:
    """Busy for `duty` of every PERIOD_S, asleep for the rest, until `stop` is set."""
    while not stop.is_set():
        start = time.perf_counter()
        while time.perf_counter() - start < duty * PERIOD_S:
            pass
        time.sleep((1 - duty) * PERIOD_S)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--duty", default="0,0.3", help="fractions of one core taken beside the engine; 0 first")
    parser.add_argument("--scale", type=float, default=1.0, help="Table 4 lengths x this factor")
    args = parser.parse_args()
    from actors.built_in_models import resolve_model

    path, runs = resolve_model("builtin:tiny-random-classifier"), []
    with tempfile.TemporaryDirectory() as tmp:
        pairs = make_pairs(Path(tmp), argparse.Namespace(scale=args.scale, max_pairs=None, copies=None))
        data = fitting(pairs, "discriminative", path)
        n_pairs = data.read_text().count("\n")
        for duty in (float(d) for d in args.duty.split(",")):
            stop = multiprocessing.Event()
            burner = multiprocessing.Process(target=burn, args=(duty, stop), daemon=True)
            if duty:
                burner.start()
            llm = llm_baseline(data, "discriminative", path)
            stop.set()
            if duty:
                burner.join()
            runs.append({"duty": duty, "seconds_scoring": llm["seconds_scoring"],
                         "engine_cpu_s": llm["engine_cpu_s_scoring"]})
            print(json.dumps(runs[-1]), flush=True)
    quiet = runs[0]
    cores = os.cpu_count() or 1
    used = quiet["engine_cpu_s"] / quiet["seconds_scoring"]  # the cores the quiet engine kept busy
    for run in runs:
        # the CPU-seconds the quiet engine needed, on the cores it used then less what the burner takes
        run["seconds_scoring_fair"] = round(quiet["engine_cpu_s"] / min(used, cores - run["duty"]), 1)
        run["slowdown"] = round(run["seconds_scoring"] / quiet["seconds_scoring"], 3)
        run["fair_slowdown"] = round(run["seconds_scoring_fair"] / quiet["seconds_scoring"], 3)
    report = {"pairs": n_pairs, "scale": args.scale, "cores": cores, "runs": runs}
    print(json.dumps(report, indent=2))
    Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
