"""A judged cell's requests, told to the sweep's live progress as the cell learns how many there are."""
from __future__ import annotations

from typing import Protocol


class SweepProgress(Protocol):
    """What the sweep's live progress (jobs.sweep.progress.Progress) takes from a cell."""

    def cell_started(self, key: str, total_requests: int, done: int = 0) -> None: ...
    def more_requests(self, key: str, n: int) -> None: ...
    def advanced(self, key: str, n: int = 1) -> None: ...


class CellProgress:
    """One cell's requests on the sweep's progress, under the cell's key: the first count starts the cell's bar
    and a later one (the next shard's, an attempt after a damaged part) adds what it has still to ask. Without the
    sweep's progress (`ragjudge validate`, a test) nothing is told."""

    def __init__(self, sweep: SweepProgress | None = None, key: str = "") -> None:
        self.sweep, self.key = sweep, key
        self.started = False

    def requests(self, total: int, done: int) -> None:
        """`total` requests, `done` of them answered before."""
        if self.sweep is None:
            return
        if self.started:
            self.sweep.more_requests(self.key, total - done)
        else:
            self.sweep.cell_started(self.key, total, done)
            self.started = True

    def more_requests(self, n: int) -> None:
        if self.sweep is not None:
            self.sweep.more_requests(self.key, n)

    def advanced(self, n: int) -> None:
        if self.sweep is not None:
            self.sweep.advanced(self.key, n)
