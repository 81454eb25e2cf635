"""A cell's records on its run's storage: answers in parts as they arrive, then item rows, bad rows and metrics.

Part names are deterministic (`<attempt>-<rows stored before it>`: every part of a cell sorts in the order it
was stored, and a quarantined part's rows still count, so no name is used twice); a part that does not read is
moved to quarantine/, said and listed in manifest.json. Every write goes through the `RunRoot`, so the run's
fence, retries and redaction hold for all of them.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.row_types import Answer, Row
from jobs.store import Manifest, RunRoot


class CellRecorder:
    """The recorder (jobs.flow.rounds.Recorder) of one (benchmark, model) cell of a run."""

    def __init__(self, root: RunRoot, manifest: Manifest, benchmark: str, model: str,
                 say: Callable[[str], None] = print):
        self.root, self.manifest, self.benchmark, self.model, self.say = root, manifest, benchmark, model, say
        self.next_part = 0  # rows stored so far, quarantined ones included: the next part's name

    @property
    def key(self) -> str:
        return f"{self.benchmark}/{self.model}"

    def stored_answers(self) -> list[Answer]:
        stored, unreadable = self.root.read_whole_rows("requests", self.benchmark, self.model)
        self._quarantined(unreadable)
        self.next_part = max(len(stored), self.next_part)
        return stored

    def record_answers(self, part: list[Answer]) -> None:
        self.root.write_rows("requests", self.benchmark, self.model, part,
                             part=f"{self.manifest.attempts:04d}-{self.next_part:07d}")
        self.next_part += len(part)

    def parts_read_back(self) -> bool:
        _, unreadable = self.root.read_whole_rows("requests", self.benchmark, self.model)
        self._quarantined(unreadable)
        return not unreadable

    def record_rows(self, rows: list[Row], bad: list[dict[str, Any]]) -> dict[str, int]:
        """The cell's item rows and bad rows, replacing an earlier attempt's; how many rows each table holds."""
        return self.root.write_cell(self.benchmark, self.model, rows, bad)

    def record_metrics(self, metrics: dict[str, Any]) -> None:
        self.root.write_json(self.root.metrics_path(self.benchmark, self.model), metrics)

    def _quarantined(self, unreadable: list[dict[str, Any]]) -> None:
        """Say and record the parts read_whole_rows moved to quarantine/."""
        for part in unreadable:
            self.say(f"WARNING {self.benchmark} x {self.model}: {self.root.uri(part['path'])} cannot be read "
                     f"({part['reason']}); moved to {self.root.uri(part['moved_to'])}, its requests are asked again")
        if unreadable:
            self.manifest.add_quarantined(self.key, unreadable)
