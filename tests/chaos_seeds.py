"""Run chaos seeds one after another (tests/chaos.py: a sweep on a multi-node Ray cluster with its run root on
S3, faults drawn from each seed) and print the chaos table of docs/reliability.md:

    python tests/chaos_seeds.py OUT.json --seeds 50 [--first 1] [--sweep full|quick]

OUT.json gets every seed's result as it finishes (schedule, faults injected by class, invariant problems,
recovery times, duplicates, wall time), so a stopped sweep keeps the seeds it ran; the clean run each seed is
compared with is made once, in OUT.json's folder (clean-SWEEP.json), and reused.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "tests")) if p not in sys.path]

from chaos import KINDS, run_seed


def seed_line(said: dict[str, Any]) -> str:
    """One seed in one line: its faults, outcome, longest recovery, duplicates and wall time."""
    faults = ", ".join(f"{kind} x{n}" for kind, n in sorted((said.get("injected") or {}).items())) or "none"
    recoveries = [s for s in (said.get("recovery_s") or {}).values() if s is not None]
    duplicates = sum(max(0, c["duplicates"]) for c in (said.get("duplicates") or {}).values())
    problems = said.get("problems") or []
    outcome = "passed" if not problems else f"FAILED ({len(problems)}): " + "; ".join(problems[:3])
    return (f"seed {said.get('seed')}: {outcome}; faults: {faults}; reruns {said.get('reruns', 0)}; longest "
            f"recovery {max(recoveries, default=0):.1f} s; duplicates {duplicates}; wall {said.get('wall_s')} s")


def table(results: list[dict[str, Any]]) -> str:
    """The chaos table: per fault class, how often it was injected, in how many seeds, how many of those passed,
    its longest recovery; then seeds run, passed, duplicates and wall times."""
    injected: Counter = Counter()
    seeds: Counter = Counter()
    passed: Counter = Counter()
    longest: dict[str, float] = {}
    for said in results:
        ok = not said.get("problems")
        for kind, n in (said.get("injected") or {}).items():
            injected[kind] += n
            seeds[kind] += 1
            passed[kind] += ok
        for key, seconds in (said.get("recovery_s") or {}).items():
            kind = key.split(":", 1)[1]
            if seconds is not None:
                longest[kind] = max(longest.get(kind, 0.0), seconds)
    lines = ["| fault class | injected | seeds with it | of those passed | longest recovery |",
             "|---|---|---|---|---|"]
    for kind in KINDS:
        recovery = f"{longest[kind]:.1f} s" if kind in longest else "-"
        lines.append(f"| {kind} | {injected[kind]} | {seeds[kind]} | {passed[kind]} | {recovery} |")
    duplicates = [sum(max(0, c["duplicates"]) for c in (s.get("duplicates") or {}).values()) for s in results]
    walls = [float(s.get("wall_s") or 0) for s in results]
    lines += ["", (f"seeds run {len(results)}, passed {sum(not s.get('problems') for s in results)}; duplicates "
              f"(requests answered by an engine and not stored) {sum(duplicates)} in all, at most "
              f"{max(duplicates, default=0)} in a seed; wall time per seed {min(walls, default=0):.0f} to "
              f"{max(walls, default=0):.0f} s")]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--first", type=int, default=1)
    parser.add_argument("--sweep", choices=["full", "quick"], default="full")
    args = parser.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    started = time.monotonic()
    for seed in range(args.first, args.first + args.seeds):
        said = run_seed(seed, out.parent / "chaos-runs", args.sweep)
        results.append(said)
        print(seed_line(said), flush=True)
        out.write_text(json.dumps({"sweep": args.sweep, "seeds": results,
                                   "wall_s": round(time.monotonic() - started, 1)}, indent=2, default=str))
    print()
    print(table(results))
    return 0 if all(not s.get("problems") for s in results) else 1


if __name__ == "__main__":
    sys.exit(main())
