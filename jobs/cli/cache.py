"""`ragjudge cache ls|prune ROOT`: the answer store that the runs under a storage root share (jobs.store.answers)."""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from typing import Any

from jobs.store.answers import AnswerStore, PartInfo
from jobs.store.layout import flat_value
from jobs.store.run_root import RunRoot

DAY_S = 86400.0


def add(commands: Any) -> None:
    parser = commands.add_parser("cache", help="list or prune the answers kept across runs (ROOT/_answers)")
    actions = parser.add_subparsers(dest="action", required=True)
    ls = actions.add_parser("ls", help="answers kept per model: parts, answers, oldest and newest")
    prune = actions.add_parser("prune", help="remove kept answers by model, by age, or both")
    for action in (ls, prune):
        action.add_argument("root", help="the storage root the runs are under (storage.root: a folder or s3://)")
        action.add_argument("--endpoint-url", help="S3-compatible endpoint (else AWS_ENDPOINT_URL)")
    prune.add_argument("--model", action="append", default=[],
                       help="a model's path as `cache ls` lists it (repeatable)")
    prune.add_argument("--older-than", type=float, metavar="DAYS", help="parts written more than DAYS ago")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # RunRoot wants a run folder: the store is its sibling, so any name does.
    store = AnswerStore(RunRoot(args.root, "_", endpoint_url=args.endpoint_url))
    parts = store.parts()
    if args.action == "ls":
        return _ls(store, parts)
    if not args.model and args.older_than is None:
        print("ragjudge: cache prune needs --model or --older-than (or both); nothing removed", file=sys.stderr)
        return 2
    models = {flat_value(m) for m in args.model}
    cutoff = None if args.older_than is None else time.time() - args.older_than * DAY_S
    chosen = [p for p in parts if (not models or p.model in models) and (cutoff is None or p.created < cutoff)]
    removed = sum(store.rows(p) for p in chosen)
    for part in chosen:
        store.remove(part)
    print(f"removed {len(chosen)} parts ({removed} answers) of {len(parts)} from {store.uri}")
    return 0


def _ls(store: AnswerStore, parts: list[PartInfo]) -> int:
    if not parts:
        print(f"{store.uri}: no answers kept")
        return 0
    by_model: dict[str, list[PartInfo]] = defaultdict(list)
    for part in parts:
        by_model[part.model].append(part)
    print(f"{store.uri}")
    print(f"{'model':<48} {'parts':>6} {'answers':>8}  oldest               newest")
    for model, mine in sorted(by_model.items()):
        created = sorted(p.created for p in mine)
        print(f"{model:<48} {len(mine):>6} {sum(store.rows(p) for p in mine):>8}  "
              f"{_when(created[0])}  {_when(created[-1])}")
    return 0


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
