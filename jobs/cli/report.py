"""`ragjudge report ROOT/RUN`: the run's leaderboard printed, and its HTML report and leaderboard.json written;
exit 1 when a cell the manifest says is scored has stored rows that are missing, unreadable or short."""
from __future__ import annotations

import argparse
import shlex
import sys
import webbrowser
from pathlib import Path
from typing import Any

from jobs.analysis import Report, write_report
from jobs.store import MANIFEST, RunRoot, open_run
from jobs.store.layout import REPORT, REPORT_LEADERBOARD, REPORT_LEADERBOARD_CSV, REPORT_PAGE


def add(commands: Any) -> None:
    parser = commands.add_parser("report", help="print the leaderboard of a run and write its HTML report")
    parser.add_argument("run", help="the run folder, ROOT/RUN")
    parser.add_argument("--tokenizer", help="also measure the responses' lengths in this tokenizer's tokens "
                                            "(a folder, hub id or built-in, e.g. builtin:tiny-random-classifier: "
                                            "SmolLM2's)")
    parser.add_argument("--open", action="store_true", help="open the report in this machine's web browser")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = open_run(args.run)
    report = write_report(root, tokenizer=args.tokenizer)
    if report is None:
        print(f"{root.uri(MANIFEST)}: not found; is {args.run} a run folder?", file=sys.stderr)
        return 2
    print(f"Report: {root.uri(REPORT_PAGE)}\nLeaderboard: {root.uri(REPORT_LEADERBOARD)}, "
          f"{root.uri(REPORT_LEADERBOARD_CSV)}")
    if args.open:
        open_in_browser(root)
    return said_incomplete(report)


def open_in_browser(root: RunRoot) -> None:
    """The report page in the browser Python's webbrowser finds; a run in object storage, or a machine without
    a browser (a cluster's head node), gets a line saying what to do instead."""
    if not root.on_this_machine:
        folder = root.uri(REPORT)
        print(f"ragjudge report: the report is in object storage; copy it here to open it: aws s3 cp --recursive "
              f"{shlex.quote(folder)} {shlex.quote(Path(folder).name)}", file=sys.stderr)
        return
    url = Path(root.path(REPORT_PAGE)).as_uri()
    if not webbrowser.open(url):
        print(f"ragjudge report: no web browser found here; open {url}", file=sys.stderr)


def said_incomplete(report: Report) -> int:
    """Each cell the report could not score although the manifest says it is scored, one line on stderr; the
    exit status: 1 when there is one (a result missing a part), else 0."""
    for problem in report.problems:
        print(f"ragjudge report: {problem}", file=sys.stderr)
    return 1 if report.problems else 0
