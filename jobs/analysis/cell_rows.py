"""One model's prediction rows of a benchmark folded into the report's BenchmarkView: its item outcomes and its
reliability and position columns. `ragjudge report` (a run's cells) and `ragjudge aggregate` (a file of several
models' rows) fold rows the same way, so they give the same numbers."""
from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

import pyarrow as pa

from benchmarks.boundary_types import ArrowRow
from jobs.analysis.leaderboard import item_outcomes
from jobs.analysis.reliability import needed_column, position_bias, reliability
from jobs.analysis.report_view import BenchmarkView
from jobs.analysis.response_pairs import COLUMNS

BATCH = 4096  # rows made Python objects at a time


def read_column(name: str) -> bool:
    """Whether the report reads this prediction column: the reliability columns and the response pairs."""
    return needed_column(name) or name in COLUMNS


class PartRows(Collection[ArrowRow]):
    """The rows of a cell's parts (RunRoot.read_folder_parts) as RunRoot.read_rows makes them, made a batch at
    a time each time they are iterated: a fold that passes over them several times holds one batch of Python
    rows, not all of them."""

    def __init__(self, parts: list[pa.Table]) -> None:
        self.parts = parts
        self.names = list(dict.fromkeys(name for part in parts for name in part.column_names))

    def __len__(self) -> int:
        return sum(part.num_rows for part in self.parts)

    def __iter__(self) -> Iterator[ArrowRow]:
        for part in self.parts:
            for batch in part.to_batches(BATCH):
                rows = batch.to_pylist()
                yield from rows if batch.schema.names == self.names else \
                    ({name: row.get(name) for name in self.names} for row in rows)

    def __contains__(self, row: object) -> bool:
        return any(row == mine for mine in self)


def add_rows(view: BenchmarkView, model: str, rows: Collection[Mapping[str, Any]]) -> None:
    """Fold one model's rows into `view`: outcomes, subsets, reliability and (judges) position columns."""
    view.outcomes[model], subsets = item_outcomes(rows)
    view.subsets.update(subsets)
    view.reliability[model] = reliability(rows)
    position = position_bias(rows) or {}
    if "first_position_rate" in view.reliability[model]:
        position["first_position_rate"] = view.reliability[model]["first_position_rate"]
    if position:
        view.position[model] = position


def merge(view: BenchmarkView, model: str, cell: BenchmarkView) -> None:
    """Fold into `view` what add_rows folded of one model's rows into a view of their own (`cell`), as if
    add_rows had folded them into `view`."""
    view.outcomes[model] = cell.outcomes[model]
    view.subsets.update(cell.subsets)
    view.reliability[model] = cell.reliability[model]
    if model in cell.position:
        view.position[model] = cell.position[model]
