"""`ragjudge items ROOT/RUN --benchmark B`: every model's outcome on every item of a benchmark, each item's
difficulty and the label-noise candidates, printed and written as JSONL (jobs.analysis.items)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from jobs.analysis import board_items, format_items, items_jsonl, load_report
from jobs.store import open_run


def add(commands: Any) -> None:
    parser = commands.add_parser("items", help="a benchmark's items across the run's models: difficulty, "
                                               "label-noise candidates, the models x items matrix (JSONL)")
    parser.add_argument("run", help="the run folder, ROOT/RUN")
    parser.add_argument("--benchmark", required=True, help="a benchmark of the run, as its cells name it")
    parser.add_argument("--out", help="JSONL file, one row per item; default items-RUN-BENCHMARK.jsonl here")
    parser.add_argument("--hardest", type=int, default=10, help="how many of the hardest items to print")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = open_run(args.run)
    report = load_report(root)
    if report is None:
        print(f"{root.uri('manifest.json')}: not found; is {args.run} a run folder?", file=sys.stderr)
        return 2
    view = next((v for v in report.views if v.name == args.benchmark), None)
    board = report.leaderboard["benchmarks"].get(args.benchmark)
    if view is None or board is None:
        known = ", ".join(b for b in report.leaderboard["benchmarks"]) or "none"
        print(f"ragjudge items: no scored benchmark '{args.benchmark}' in {args.run} (scored: {known})",
              file=sys.stderr)
        return 2
    rows = board_items(view, board)
    print(format_items(rows, [m["model"] for m in board["models"]], args.hardest))
    out = args.out or f"items-{report.run}-{args.benchmark}.jsonl"
    Path(out).write_text(items_jsonl(rows), encoding="utf-8")
    print(f"All {len(rows)} items: {out}")
    return 0
