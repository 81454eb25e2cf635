"""`ragjudge compare RUN_A RUN_B`: per benchmark and model, what changed between two runs."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from jobs.analysis import compare_runs, format_comparison, write_flips
from jobs.store import MANIFEST, open_run


def add(commands: Any) -> None:
    parser = commands.add_parser("compare", help="per benchmark and model: what changed between two runs")
    parser.add_argument("run_a", help="the earlier run folder, ROOT/RUN")
    parser.add_argument("run_b", help="the later run folder, ROOT/RUN")
    parser.add_argument("--model", help="compare this model's cells only")
    parser.add_argument("--out", help="file for all flipped items (JSONL); default compare-A-vs-B.jsonl here")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    run_a, run_b = open_run(args.run_a), open_run(args.run_b)
    for root, name in ((run_a, args.run_a), (run_b, args.run_b)):
        if root.read_json(MANIFEST) is None:
            print(f"{root.uri('manifest.json')}: not found; is {name} a run folder?", file=sys.stderr)
            return 2
    diffs, notes = compare_runs(run_a, run_b, args.model)
    print(format_comparison(diffs, notes, run_a.run, run_b.run))
    out = args.out or f"compare-{run_a.run}-vs-{run_b.run}.jsonl"
    print(f"All {write_flips(diffs, out)} flipped items: {out}")
    return 0
