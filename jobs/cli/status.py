"""`ragjudge status ROOT/RUN`: a running sweep's progress, from its status.json (local or S3)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from jobs.store import open_run
from jobs.sweep import format_status
from jobs.sweep.progress import STATUS


def add(commands: Any) -> None:
    parser = commands.add_parser("status", help="print a run's live progress (its status.json)")
    parser.add_argument("run", help="the run folder, ROOT/RUN (local or s3://)")
    parser.add_argument("--json", action="store_true", help="print status.json as it is")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = open_run(args.run)
    if root.on_this_machine and os.path.isfile(args.run):  # a sweep file, say: reading into it is a traceback
        print(f"ragjudge status: {args.run} is a file, not a run folder; give the run's folder, ROOT/RUN (its "
              "sweep's storage.root and storage.run, e.g. results/demo)", file=sys.stderr)
        return 2
    status = root.read_json(STATUS)
    if status is None:
        print(f"{root.uri(STATUS)}: not found (the run has not started, or predates live progress)",
              file=sys.stderr)
        return 2
    print(json.dumps(status, indent=2) if args.json else format_status(status))
    return 0
