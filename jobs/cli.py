"""The `ragjudge` command: run a sweep, re-aggregate stored predictions, write a report."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from benchmarks.records import read_records


def _run(args: argparse.Namespace) -> int:
    from jobs.config import load_sweep
    from jobs.pipeline import connect_ray, run_sweep
    from jobs.report import table2_html, table2_text
    from jobs.storage import RunRoot

    sweep = load_sweep(args.sweep, args.overrides)
    connect_ray(sweep)
    outcomes = run_sweep(sweep)
    root = RunRoot(sweep.storage.root, sweep.storage.run, endpoint_url=sweep.storage.endpoint_url)
    finished = [o.metrics for o in outcomes if o.metrics]
    if finished:
        print()
        print(table2_text(finished))
        root.write_text("report/index.html", table2_html(finished))
    print(f"\nResults: {root.uri('')}\nReport:  {root.uri('report/index.html')}")
    failed = [o for o in outcomes if o.status == "failed"]
    for o in failed:
        print(f"FAILED {o.benchmark} x {o.model}{o.message}", file=sys.stderr)
    return 1 if failed else 0


def _aggregate(args: argparse.Namespace) -> int:
    from benchmarks import benchmark_module
    from jobs.reducers import aggregate

    module = benchmark_module(args.benchmark)
    rows: list[dict[str, Any]] = []
    for record in read_records(args.predictions):
        if record.data is None:
            print(f"skipped {record.source}: row {record.row}: {record.problem}", file=sys.stderr)
        else:
            rows.append(record.data)
    metrics = aggregate(module, rows)
    text = json.dumps(metrics, indent=2, ensure_ascii=False)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        Path(args.out, "metrics.json").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


def _report(args: argparse.Namespace) -> int:
    from jobs.report import table2_html, table2_text
    from jobs.storage import RunRoot

    parent, _, run = args.run.rstrip("/").rpartition("/")
    root = RunRoot(parent or ".", run)
    manifest = root.read_json("manifest.json")
    if manifest is None:
        print(f"{root.uri('manifest.json')}: not found; is {args.run} a run folder?", file=sys.stderr)
        return 2
    metrics = []
    for key, cell in sorted(manifest["cells"].items()):
        benchmark, model = key.split("/", 1)
        if cell.get("status") == "done":
            metrics.append(root.read_json(root.metrics_path(benchmark, model)))
    print(table2_text(metrics))
    root.write_text("report/index.html", table2_html(metrics))
    print(f"\nReport: {root.uri('report/index.html')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ragjudge", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run every (benchmark, model) cell of a sweep")
    run.add_argument("sweep", help="a sweep YAML, e.g. conf/sweeps/demo.yaml")
    run.add_argument("overrides", nargs="*", help="key=value overrides, e.g. storage.root=s3://bucket/runs")
    run.set_defaults(func=_run)
    agg = commands.add_parser("aggregate", help="recompute metrics from stored item predictions")
    agg.add_argument("--benchmark", required=True)
    agg.add_argument("--predictions", required=True, help="Parquet or JSONL file, or a folder of them")
    agg.add_argument("--out", help="folder for metrics.json")
    agg.set_defaults(func=_aggregate)
    rep = commands.add_parser("report", help="print the leaderboard of a run and write its HTML report")
    rep.add_argument("run", help="the run folder, ROOT/RUN")
    rep.set_defaults(func=_report)
    args = parser.parse_args(argv)
    from jobs.config import ConfigError

    try:
        return args.func(args)
    except (ConfigError, FileNotFoundError) as e:
        print(f"ragjudge: {e}", file=sys.stderr)
        return 2
