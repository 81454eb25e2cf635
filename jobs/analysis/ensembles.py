"""Ensembles as virtual models of the report (issue 30, item 3): the stored rows of several models combined by
their benchmark's rule (benchmarks.protocol `ensemble`: mean or z-scored mean of score margins, or a majority
of votes), then folded into the report like any model's rows, so the ensemble is scored, tested and grouped
like one and marked `ensemble: true` in leaderboard.json. Nothing new is asked of any model.

The ensembles of a run are the sweep's `ensembles:` (manifest.json's config) and those `ragjudge ensemble`
added (ROOT/RUN/ensembles.json); one of the same name added later replaces the earlier one.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks.protocol import Row, benchmark
from jobs.analysis.cell_rows import add_rows
from jobs.analysis.report_view import BenchmarkView
from jobs.config import EnsembleConfig, ensemble_name
from jobs.store import RunRoot
from jobs.store.layout import ENSEMBLES


def ensemble_config(entry: Mapping[str, Any]) -> EnsembleConfig:
    """An ensemble as manifest.json or ensembles.json stores it."""
    return EnsembleConfig(members=list(entry["members"]), rule=str(entry.get("rule") or "majority"),
                          name=entry.get("name"), benchmarks=list(entry.get("benchmarks") or []))


def run_ensembles(root: RunRoot, manifest: Mapping[str, Any]) -> list[EnsembleConfig]:
    """The run's ensembles, the sweep's first, one per name (a later one of a name replaces the earlier)."""
    entries = list((manifest.get("config") or {}).get("ensembles") or []) + list(root.read_json(ENSEMBLES) or [])
    by_name = {ensemble_name(e): e for e in map(ensemble_config, entries)}
    return list(by_name.values())


def _problem(ensemble: EnsembleConfig, view: BenchmarkView) -> str | None:
    """Why the ensemble cannot be formed on this benchmark, or None."""
    missing = [m for m in ensemble.members if m not in view.outcomes or m in view.ensembles]
    rules = benchmark(view.module).ensemble_rules
    if missing:
        return f"no finished cell of {', '.join(missing)}"
    if ensemble.rule not in rules:
        return f"no ensemble rule '{ensemble.rule}' (it has: {', '.join(rules) or 'none'})"
    return None


def ensemble_rows(root: RunRoot, views: Mapping[str, BenchmarkView], ensemble: EnsembleConfig
                  ) -> tuple[dict[str, list[Row]], list[str]]:
    """(benchmark -> the ensemble's prediction rows, problems) on the benchmarks it names, else on every one
    where all its members have finished cells and whose protocol has its rule. A problem is one line: a named
    benchmark it cannot be formed on, or a member its rule cannot use (a judge has no scores to average)."""
    name = ensemble_name(ensemble)
    out: dict[str, list[Row]] = {}
    problems = [f"ensemble {name}: benchmark {b}: no finished cell in this run"
                for b in ensemble.benchmarks if b not in views]
    for view in views.values():
        if ensemble.benchmarks and view.name not in ensemble.benchmarks:
            continue
        problem = _problem(ensemble, view)
        if problem is not None:  # said only where the ensemble names the benchmark; else it is not for it
            problems += [f"ensemble {name}: benchmark {view.name}: {problem}"] if ensemble.benchmarks else []
            continue
        members = {m: root.read_rows("predictions", view.name, m) for m in ensemble.members}
        try:
            out[view.name] = [{**row, "model": name}
                              for row in benchmark(view.module).ensemble(members, ensemble.rule)]
        except ValueError as e:
            problems.append(f"ensemble {name}: benchmark {view.name}: {e}")
    return out, problems


def add_ensembles(root: RunRoot, views: Mapping[str, BenchmarkView], ensembles: list[EnsembleConfig]) -> list[str]:
    """Fold each ensemble into the views it can be formed on (ensemble_rows), as a model marked with its members
    and rule; returns the problems, one line each."""
    problems = []
    for ensemble in ensembles:
        name = ensemble_name(ensemble)
        rows_by_benchmark, found = ensemble_rows(root, views, ensemble)
        problems += found
        for bench, rows in rows_by_benchmark.items():
            view = views[bench]
            if name in view.outcomes:
                problems.append(f"ensemble {name}: benchmark {bench}: '{name}' is already a model of it")
                continue
            add_rows(view, name, rows)
            view.ensembles[name] = {"members": list(ensemble.members), "rule": ensemble.rule}
            view.kinds[name] = f"ensemble: {ensemble.rule} of {', '.join(ensemble.members)}"
    return problems
