"""`ragjudge ensemble ROOT/RUN --members a,b,c --rule mean|zscore|majority`: a virtual model made of the run's
stored rows (jobs.analysis.ensembles), kept in ROOT/RUN/ensembles.json (one of the same name is replaced) and
added to the report's leaderboards like any model, marked as an ensemble. Asks no model anything."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from jobs.analysis import ENSEMBLES, ensemble_config, ensemble_rows, load_report, write_report
from jobs.config import ENSEMBLE_RULES, EnsembleConfig, ensemble_name
from jobs.store import open_run


def add(commands: Any) -> None:
    parser = commands.add_parser("ensemble", help="add an ensemble of a run's models to its leaderboards")
    parser.add_argument("run", help="the run folder, ROOT/RUN")
    parser.add_argument("--members", required=True, help="two or more models of the run, comma-separated")
    parser.add_argument("--rule", required=True, choices=ENSEMBLE_RULES,
                        help="mean or zscore: of the members' score margins; majority: of their votes")
    parser.add_argument("--name", help="its name in the leaderboard; default RULE(a,b,c)")
    parser.add_argument("--benchmark", action="append", default=[],
                        help="only this benchmark (repeatable); default every one the members share")
    parser.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"ragjudge ensemble: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    root = open_run(args.run)
    members = [m.strip() for m in args.members.split(",") if m.strip()]
    if len(members) < 2 or len(set(members)) < len(members):
        return _fail(f"--members: two or more distinct models, got {args.members!r}")
    ensemble = EnsembleConfig(members=members, rule=args.rule, name=args.name, benchmarks=args.benchmark)
    name = ensemble_name(ensemble)
    report = load_report(root)
    if report is None:
        return _fail(f"{root.uri('manifest.json')}: not found; is {args.run} a run folder?")
    views = {v.name: v for v in report.views}
    if any(name in v.outcomes and name not in v.ensembles for v in views.values()):
        return _fail(f"'{name}' is already a model of the run; give the ensemble another --name")
    rows, problems = ensemble_rows(root, views, ensemble)
    if not rows and not problems:
        none = f"no benchmark of {args.run} has finished cells of all of {', '.join(members)} and a '{args.rule}' rule"
        problems = [none]
    if problems:
        print("\n".join(f"ragjudge ensemble: {p}" for p in problems), file=sys.stderr)
        return 2
    kept = [e for e in root.read_json(ENSEMBLES) or [] if ensemble_name(ensemble_config(e)) != name]
    root.write_json(ENSEMBLES, [*kept, {"name": name, "members": members, "rule": args.rule,
                                        "benchmarks": args.benchmark}])
    write_report(root)
    print(f"Ensemble {name} ({args.rule} of {', '.join(members)}) on {', '.join(rows)}: {root.uri(ENSEMBLES)}\n"
          f"Report: {root.uri('report/index.html')}\nLeaderboard: {root.uri('report/leaderboard.json')}")
    return 0
