"""`ragjudge aggregate`: metrics from stored item predictions (Parquet or JSONL), no model needed; several models'
rows also give a leaderboard, the one `ragjudge report` writes (with the bias columns where the rows carry the
response texts and their authors); a retrieval run is scored against qrels."""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.boundary_types import ArrowRow, JsonObject
from benchmarks.records import read_records
from jobs.analysis import leaderboard_from_rows, pair_problem, token_counter
from jobs.analysis.board import leaderboard_csv
from jobs.flow import RankedFlow, flow_of
from jobs.flow.reducers import aggregate, row_problem
from jobs.store import MANIFEST, SCORED, open_run, partition_value, predictions_stored
from jobs.store.layout import partition_keys


def add(commands: Any) -> None:
    parser = commands.add_parser("aggregate", help="recompute metrics from stored item predictions")
    parser.add_argument("--benchmark", required=True)
    parser.add_argument("--predictions", required=True, help="Parquet or JSONL file, or a folder of them")
    parser.add_argument("--out", help="folder for metrics.json (and leaderboard.json for several models)")
    parser.add_argument("--qrels", action="append", help="a retrieval benchmark's qrels TSV; give it once per file")
    parser.add_argument("--tokenizer", help="also measure the responses' lengths in this tokenizer's tokens "
                                            "(e.g. builtin:tiny-random-classifier: SmolLM2's)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    flow = flow_of(args.benchmark)
    if isinstance(flow, RankedFlow):  # a run of rankings scored against qrels, not judge verdicts
        return _retrieval(flow.spec, args)
    spec = flow.spec
    rows: list[ArrowRow] = []
    unread = 0
    for record in read_records(args.predictions):
        # A run's part names its cell by its folders alone (jobs.store.layout); an older part's own columns win.
        data = None if record.data is None else {**partition_keys(record.source), **record.data}
        problem = record.problem if data is None else row_problem(spec, data) or pair_problem(data)
        if problem:  # named and left out; the good rows are still scored
            print(f"skipped {record.source}: row {record.row}: {problem}", file=sys.stderr)
            unread += data is None  # a part or line that could not be read at all: the result lacks it
        else:
            rows.append(data)
    lacking = _short_of_manifest(args.predictions, spec.name, rows)
    for problem in lacking:
        print(f"ragjudge aggregate: {problem}", file=sys.stderr)
    status = 1 if unread or lacking else 0
    models = sorted({row.get("model") for row in rows} - {None})
    if len(models) <= 1:
        _write_metrics(aggregate(spec, rows), args.out)
        return status
    # Several models: each its own metrics.json (DIR/model=M/, as a run stores them), then who beats whom.
    for model in models:
        out = args.out and str(Path(args.out, f"model={partition_value(model)}"))
        _write_metrics(aggregate(spec, [row for row in rows if row.get("model") == model]), out)
    count_tokens = token_counter(args.tokenizer) if args.tokenizer else None
    board = leaderboard_from_rows(args.benchmark, rows, args.tokenizer, count_tokens)
    if args.out:
        path = Path(args.out, "leaderboard.json")
        path.write_text(json.dumps(board, indent=2) + "\n", encoding="utf-8")
        path.with_suffix(".csv").write_text(leaderboard_csv(board), encoding="utf-8")
        print(f"Leaderboard: {path}, {path.with_suffix('.csv')}", file=sys.stderr)
    return status


def _short_of_manifest(predictions: str, module: str, rows: list[ArrowRow]) -> list[str]:
    """Where `predictions` lies in a run folder (its predictions table, or a benchmark's or a cell's partition
    under it): one line per cell of this benchmark the run's manifest.json says is scored that has fewer rows
    here than it recorded (or none). Outside a run: nothing to check against."""
    folder = Path(predictions).resolve()
    run = next((p for p in [folder, *folder.parents][:4] if (p / MANIFEST).is_file()), None)
    if run is None:
        return []
    root = open_run(str(run))
    manifest = root.read_json(MANIFEST) or {}
    benchmarks = (manifest.get("config") or {}).get("benchmarks") or {}
    counts = Counter(row.get("model") for row in rows)
    lacking = []
    for key, cell in sorted((manifest.get("cells") or {}).items()):
        bench, _, model = key.partition("/")
        cell_folder = run / root.partition("predictions", bench, model)
        under = cell_folder.is_relative_to(folder)
        if cell.get("status") not in SCORED or (benchmarks.get(bench) or {}).get("module", bench) != module \
                or not under:
            continue
        expected = predictions_stored(cell)
        if counts[model] < expected:
            lacking.append(f"{cell_folder}: {counts[model]} readable rows of "
                           f"model {model}; manifest.json says the cell is {cell['status']} with {expected}")
    return lacking


def _write_metrics(metrics: JsonObject, out: str | None) -> None:
    text = json.dumps(metrics, indent=2, ensure_ascii=False)
    if out:
        os.makedirs(out, exist_ok=True)
        Path(out, "metrics.json").write_text(text + "\n", encoding="utf-8")
    print(text)


def _retrieval(spec: Any, args: argparse.Namespace) -> int:
    if not args.qrels:
        print(f"ragjudge aggregate: --benchmark {args.benchmark} needs --qrels QRELS.tsv (once per file)",
              file=sys.stderr)
        return 2
    metrics = spec.aggregate_files(args.predictions, args.qrels, args.out)
    for problem in metrics["problems"]:
        print(f"ragjudge aggregate: {problem}", file=sys.stderr)
    print(json.dumps({k: v for k, v in metrics.items() if k != "problems"}, indent=2))
    return 0
