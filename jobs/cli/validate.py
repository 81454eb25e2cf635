"""`ragjudge validate SWEEP`: score pairs on each model's engine and a reference path; hold models whose verdicts
differ."""
from __future__ import annotations

import argparse
from typing import Any

from benchmarks.protocol import benchmark
from jobs.analysis import Thresholds
from jobs.analysis.agreement import format_table
from jobs.console import LibraryLogs, verbose_from_env
from jobs.loading import load_sweep
from jobs.store import RunRoot
from jobs.store.layout import VALIDATE
from jobs.validate import validate_sweep, validation_benchmarks


def add(commands: Any) -> None:
    parser = commands.add_parser("validate", help="score pairs on each model's engine and a reference path; hold "
                                 "models whose verdicts differ")
    parser.add_argument("sweep", help="a sweep YAML, e.g. conf/sweeps/demo.yaml")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, as for run")
    parser.add_argument("--pairs", type=int, default=32,
                        help="the first N validation pairs of each benchmark of the sweep that has them, from its "
                        "data")
    parser.add_argument("--min-agreement", type=float, default=0.95,
                        help="hold a model whose verdicts agree on fewer pairs than this, in any comparison")
    parser.add_argument("--max-score-diff", type=float,
                        help="also hold a model whose scores differ by more than this (default: no limit)")
    parser.add_argument("--models", help="comma-separated: validate these models of the sweep only")
    parser.add_argument("--verbose", action="store_true",
                        help="Ray's, Ray Data's and the model libraries' own lines (and their warnings) on the console "
                             "too (RAGJUDGE_LOG=debug does the same); they are always in ROOT/RUN/logs/")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    thresholds = Thresholds(args.min_agreement, args.max_score_diff)
    sweep = load_sweep(args.sweep, args.overrides)
    root = RunRoot.of(sweep.storage)
    with LibraryLogs(root, verbose=args.verbose or verbose_from_env()) as logs:  # `ragjudge run`'s console
        report = validate_sweep(sweep, args.pairs, thresholds, args.models and args.models.split(","), logs.say)
    names = " and ".join(benchmark(module).name for module in validation_benchmarks(sweep))
    print(f"\n{report['pairs']} {names} pairs of {', '.join(report['data'])}; held below "
          f"{thresholds.min_agreement:.0%} verdict agreement"
          + (f" or a score difference over {thresholds.max_score_diff:g}" if thresholds.max_score_diff is not None
             else ""))
    print(format_table(report["models"]))
    print(f"\nValidation: {root.uri(VALIDATE)} (`ragjudge run` skips held models unless --include-held)")
    return 1 if any(m["status"] == "held" for m in report["models"].values()) else 0
