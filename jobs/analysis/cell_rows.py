"""One model's prediction rows of a benchmark folded into the report's BenchmarkView: its item outcomes and its
reliability and position columns. `ragjudge report` (a run's cells) and `ragjudge aggregate` (a file of several
models' rows) fold rows the same way, so they give the same numbers."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobs.analysis.leaderboard import item_outcomes
from jobs.analysis.reliability import needed_column, position_bias, reliability
from jobs.analysis.report_view import BenchmarkView
from jobs.analysis.response_pairs import COLUMNS


def read_column(name: str) -> bool:
    """Whether the report reads this prediction column: the reliability columns and the response pairs."""
    return needed_column(name) or name in COLUMNS


def add_rows(view: BenchmarkView, model: str, rows: list[Mapping[str, Any]]) -> None:
    """Fold one model's rows into `view`: outcomes, subsets, reliability and (judges) position columns."""
    view.outcomes[model], subsets = item_outcomes(rows)
    view.subsets.update(subsets)
    view.reliability[model] = reliability(rows)
    position = position_bias(rows) or {}
    if "first_position_rate" in view.reliability[model]:
        position["first_position_rate"] = view.reliability[model]["first_position_rate"]
    if position:
        view.position[model] = position
