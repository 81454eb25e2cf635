"""What a report shows, gathered from a run (jobs.analysis.report) and drawn as a page (jobs.analysis.report_page)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from benchmarks.boundary_types import JsonObject
from jobs.analysis.leaderboard import Outcomes
from jobs.analysis.response_pairs import ResponsePair
from jobs.store.manifest import SCORED


@dataclass
class PaperTable:
    """One benchmark's own table in its paper's layout; `problem` says why it could not be drawn."""

    text: str | None = None
    html: str | None = None
    problem: str | None = None


@dataclass
class BenchmarkView:
    """Everything the report shows for one benchmark of the run (models in the manifest's order)."""

    name: str  # as in the run's cells and partitions
    module: str  # the benchmark implementation (benchmarks.protocol name)
    metrics: list[JsonObject] = field(default_factory=list)
    outcomes: dict[str, Outcomes] = field(default_factory=dict)
    subsets: dict[str, str] = field(default_factory=dict)  # item id -> subset
    reliability: dict[str, dict[str, float | None]] = field(default_factory=dict)
    position: dict[str, dict[str, float]] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    implicit: dict[str, str] = field(default_factory=dict)  # implicit models: what their score is (manifest)
    pairs: dict[str, ResponsePair] = field(default_factory=dict)  # item id -> its two responses (bias columns)
    ensembles: dict[str, JsonObject] = field(default_factory=dict)  # virtual models: name -> members, rule
    over_budget: dict[str, str] = field(default_factory=dict)  # failed_errors cells: model -> why (manifest)
    # cells the manifest says are scored whose stored rows are missing, unreadable or short: model -> why
    incomplete: dict[str, str] = field(default_factory=dict)
    resamples: int = 1000


@dataclass
class Report:
    """A run's report: the views, leaderboard.json's content and the manifest they came from."""

    run: str
    manifest: JsonObject
    views: list[BenchmarkView]
    leaderboard: JsonObject

    @property
    def not_scored(self) -> list[JsonObject]:
        """The cells the run did not score (failed, failed_data, interrupted, or still running), each with its
        status and reason from the manifest."""
        return [{"benchmark": key.split("/", 1)[0], "model": key.split("/", 1)[1], "status": cell.get("status"),
                 "reason": cell.get("error") or cell.get("signal") or ""}
                for key, cell in sorted((self.manifest.get("cells") or {}).items())
                if cell.get("status") not in (*SCORED, "skipped")]

    @property
    def problems(self) -> list[str]:
        """One line per cell the report could not score although the manifest says it is scored."""
        return [f"{view.name} x {model}: {why}" for view in self.views for model, why in view.incomplete.items()]


def error_notes(view: BenchmarkView, board: JsonObject) -> list[str]:
    """Footnotes of a leaderboard whose models' item sets differ because rows failed, and of the models whose
    cells are over their error budget; [] when neither."""
    lacking = [f"{m['model']} {m['missing']}" for m in board["models"] if m.get("missing")]
    notes = [(f"missing: items other models scored and this one did not (its rows failed: errors/): "
              f"{', '.join(lacking)}; each pair is tested on the items both scored (the pair's n)")] if lacking else []
    shown = {m["model"] for m in board["models"]}
    return notes + [f"{model} is over its error budget (failed_errors): {why}"
                    for model, why in view.over_budget.items() if model in shown]


def incomplete_notes(view: BenchmarkView) -> list[str]:
    """A line per model of the benchmark that is missing from its leaderboard because its stored rows are not
    whole (the manifest says its cell is scored): the model is marked, not dropped in silence."""
    return [f"{model}: NOT SCORED, its stored rows are not whole: {why}" for model, why in view.incomplete.items()]


def subset_matrix(view: BenchmarkView, models: list[str]) -> tuple[list[str], np.ndarray]:
    """(subsets, models x subsets mean outcome): the heat map's data, NaN where a model scored none."""
    subsets = sorted(set(view.subsets.values()))
    column = {s: i for i, s in enumerate(subsets)}
    values = np.full((len(models), len(subsets)), np.nan)
    for r, model in enumerate(models):
        sums, counts = np.zeros(len(subsets)), np.zeros(len(subsets))
        for item, outcome in view.outcomes.get(model, {}).items():
            c = column[view.subsets[item]]
            sums[c] += outcome
            counts[c] += 1
        with np.errstate(invalid="ignore", divide="ignore"):
            values[r] = np.where(counts > 0, sums / counts, np.nan)
    return subsets, values


ENGINE_COLUMNS = ("starts", "start_s", "busy_s", "requests", "prompt_tokens", "cached_prompt_tokens",
                  "generated_tokens", "thinking_tokens")


def engine_rows(manifest: JsonObject) -> list[list[str]]:
    """The run's engines as table rows (model, engine, each of ENGINE_COLUMNS, cached share of prompt tokens),
    header first; [] when the run recorded none."""
    entries = manifest.get("engines") or []
    if not entries:
        return []
    rows = [["model", "engine", *ENGINE_COLUMNS, "cached %"]]
    for entry in sorted(entries, key=lambda e: (e["model"], e["engine"])):
        prompt = entry.get("prompt_tokens") or 0
        cached = f"{100 * (entry.get('cached_prompt_tokens') or 0) / prompt:.1f}" if prompt else "-"
        rows.append([entry["model"], entry["engine"],
                     *(f"{entry.get(c, 0):.1f}" if c.endswith("_s") else str(entry.get(c, 0))
                       for c in ENGINE_COLUMNS), cached])
    return rows

