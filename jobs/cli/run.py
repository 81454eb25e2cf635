"""`ragjudge run SWEEP`: every (benchmark, model) cell of a sweep, holding the run's lease, then the report."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from jobs.analysis import write_report
from jobs.cli.report import said_incomplete
from jobs.console import LibraryLogs, verbose_from_env
from jobs.console.run_end import end_lines, unfinished_lines
from jobs.engines.host import Price
from jobs.loading import load_sweep, require_data, unread_column_lines
from jobs.plan.prices import load_prices
from jobs.store import Lease, LeaseHeld, LeaseRecord, RunRoot
from jobs.sweep import connect_ray, run_sweep, stop_on_signals

RUN_ROOT_BUSY = 3  # exit status: another driver holds the run's lease, or took it from this one


def add(commands: Any) -> None:
    parser = commands.add_parser("run", help="run every (benchmark, model) cell of a sweep")
    parser.add_argument("sweep", help="a sweep YAML, e.g. conf/sweeps/demo.yaml")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. storage.root=s3://bucket/runs")
    parser.add_argument("--include-held", action="store_true", help="also run models `ragjudge validate` held")
    parser.add_argument("--no-cache", action="store_true",
                        help="ask every model again: neither read nor keep answers in ROOT/_answers")
    parser.add_argument("--retry-errors", action="store_true",
                        help="ask stored requests that failed retryably (timeouts, 5xx, 429, broken connections, "
                             "replies that are no chat completion) again, reopening finished cells that have them")
    parser.add_argument("--verbose", action="store_true",
                        help="Ray's, vLLM's and the model libraries' own lines on the console too (RAGJUDGE_LOG=debug "
                             "does the same); they are always in ROOT/RUN/logs/")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    sweep = load_sweep(args.sweep, [*args.overrides, *(["storage.answer_cache=false"] if args.no_cache else [])])
    require_data(sweep.benchmarks)  # before the lease and Ray: a missing path fails in a second
    for line in unread_column_lines(sweep.benchmarks):
        print(line)
    try:  # before Ray starts: a second driver on the run is refused at once
        lease = Lease(RunRoot.of(sweep.storage), sweep.storage.lease_timeout_s, on_lost=_stop_on_lost_lease)
        lease.acquire()
    except LeaseHeld as e:
        print(f"ragjudge: {e}", file=sys.stderr)
        return RUN_ROOT_BUSY
    root = RunRoot.of(sweep.storage, before_write=lease.fence)
    report = None
    try:
        with LibraryLogs(root, verbose=args.verbose or verbose_from_env()) as logs:
            print(connect_ray(sweep))  # Ray installs its own SIGTERM handler here: ours go in after it
            with stop_on_signals(sweep.storage.grace_s, lease.release) as stop:
                outcomes = run_sweep(sweep, log=logs.say, include_held=args.include_held, before_write=lease.fence,
                                     stop=stop, retry_errors=args.retry_errors, price=list_price())
                if any(o.status != "skipped" for o in outcomes) and not stop.is_set():  # failed cells say why there
                    print()
                    report = write_report(root)
    finally:
        lease.release()
    print()
    for line in end_lines(outcomes, root, report is not None):
        print(line)
    unfinished = unfinished_lines(outcomes, root)
    for line in unfinished:
        print(line, file=sys.stderr)
    if stop.is_set():
        print(f"ragjudge: stopped by {stop.signal_name}; the same command resumes the run", file=sys.stderr)
        return stop.exit_code
    incomplete = said_incomplete(report) if report else 0
    return 1 if unfinished or incomplete else 0


def list_price() -> Price:
    """An API model's dollars at list price (engine http: one call per request) from conf/prices.yaml's rate for
    its path; None for a path the table has no price for."""
    prices = load_prices().prices

    def dollars(path: str, prompt_tokens: int, generated_tokens: int) -> float | None:
        price = prices.get(path)
        return None if price is None else price.dollars(prompt_tokens, generated_tokens, batch=False)

    return dollars


def _stop_on_lost_lease(holder: LeaseRecord) -> None:
    """Another driver took the lease (this one looked gone): stop now, as a crash would, so two drivers never
    write one run; what this one stored stays, and the holder resumes from it."""
    print(f"ragjudge: another driver took over this run (host {holder.get('host')}, pid {holder.get('pid')}); "
          "stopping", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(RUN_ROOT_BUSY)
