"""Live progress of a sweep: a line per running cell (requests answered / total, requests per second over the
last minute, ETA), redrawn in place in a terminal and logged every 30 s otherwise (Slurm and Ray job logs are
files), also while no answer comes (`ticking`: a thread); and
ROOT/RUN/status.json, rewritten as cells advance, so `ragjudge status ROOT/RUN` shows the run from anywhere
(a second terminal, a laptop reading the S3 root).

The pipeline calls it; it never calls the pipeline. Cells run in threads, so every method takes one lock.
status.json is written on every state change (a cell starts, finishes, is skipped) and otherwise at most
every `write_every` seconds: an S3 PUT per answered request would cost more than the request.
"""
from __future__ import annotations

import shutil
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TextIO, TypedDict

from jobs.store import FAILED_ERRORS, RunRoot
from jobs.store.layout import STATUS
from jobs.sweep.cluster import NO_PROGRESS_S

BAR = 20  # characters of a terminal progress bar
RATE_WINDOW_S = 60.0  # requests per second over this recent window: a cell's pace now, not since its start
SAMPLE_EVERY_S = 1.0  # a cell keeps its (time, answered) at most this often, for the window
STALL_S = 60.0  # no running cell advanced this long: the console says what Ray could not place


class CellStatus(TypedDict, total=False):
    """A cell in status.json."""

    status: str  # running, done, failed, failed_errors, cached or interrupted
    done: int  # requests answered ...
    total: int  # ... of this many so far (a later round adds its own)
    resumed_from: int  # answered before this run started it
    started_at: float  # Unix time
    finished_at: float
    requests_per_s: float | None  # over the last RATE_WINDOW_S; None before the first answer
    eta_s: float | None
    message: str  # why it did not finish well


class RunStatus(TypedDict):
    """status.json."""

    run: str | None
    updated_at: float
    counts: dict[str, int]  # cells by status, skipped ones too
    cells: dict[str, CellStatus]
    skipped: dict[str, str]  # cell -> why it does not run


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def cell_line(key: str, cell: CellStatus, bar: bool = False) -> str:
    """One running cell: 'bench/model  812/2970 (27%)  14.2 req/s  ETA 2m32s', with a bar when asked."""
    done, total = int(cell.get("done") or 0), int(cell.get("total") or 0)
    share = done / total if total else 0.0
    rate = cell.get("requests_per_s")
    drawn = f"[{'#' * int(BAR * share):<{BAR}}] " if bar else ""
    # A slow judge answers a few requests a minute: "0.0 req/s" read as stuck in the demo.
    speed = "- req/s" if rate is None else f"{rate:.1f} req/s" if rate >= 0.1 or rate == 0 else f"{60 * rate:.1f} req/min"
    return (f"{key}  {drawn}{done}/{total} ({100 * share:.0f}%)  {speed}  "
            f"ETA {_duration(cell.get('eta_s'))}")


class Progress:
    """Progress of one run; `root` None keeps status.json off (a dry run, a test of the lines alone)."""

    def __init__(self, root: RunRoot | None, log: Callable[[str], None] = print,
                 interactive: bool | None = None, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.time,
                 write_every: float = 5.0, log_every: float = 30.0, redraw_every: float = 0.5,
                 ticking: bool = False, unplaced: Callable[[], str | None] | None = None) -> None:
        self.root, self.log, self.clock = root, log, clock
        self.stream = stream or sys.stderr
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self.write_every, self.log_every, self.redraw_every = write_every, log_every, redraw_every
        self.cells: dict[str, CellStatus] = {}
        self.skipped_cells: dict[str, str] = {}
        self._lock = threading.Lock()
        self._written = self._logged = self._drawn_at = float("-inf")
        self._drawn_lines = 0
        self._write_failed = False
        self._samples: dict[str, deque[tuple[float, int]]] = {}  # a running cell's (time, done), the last minute
        self._stopped = threading.Event()
        # while no running cell advances for STALL_S, what Ray could not place (jobs.engines.waiting), each STALL_S
        self.unplaced, self._advanced_at, self._stall_said = unplaced, clock(), float("-inf")
        self._ticker = threading.Thread(target=self._tick_until_closed, name="ragjudge-progress", daemon=True) \
            if ticking else None  # started with the first cell, which the pipeline's `finally` closes

    # -- what the pipeline calls ---------------------------------------------------------------------------
    def cell_started(self, key: str, total_requests: int, done: int = 0) -> None:
        """A cell began; `done` requests were already answered (a resumed run), out of `total_requests`."""
        with self._lock:
            now = self.clock()
            self.cells[key] = {"status": "running", "done": done, "total": total_requests,
                               "resumed_from": done, "started_at": now, "requests_per_s": None, "eta_s": None}
            self._changed(now)
            if self._ticker is not None and not self._ticker.is_alive() and not self._stopped.is_set():
                self._ticker.start()

    def more_requests(self, key: str, n: int) -> None:
        """A later round (judge the answers of the first) adds `n` requests to the cell's total."""
        with self._lock:
            now = self.clock()
            cell = self._cell(key, now)
            cell["total"] += n
            self._rate(key, cell, now)
            self._changed(now)

    def advanced(self, key: str, n: int = 1) -> None:
        """`n` more requests of the cell are answered."""
        with self._lock:
            now = self.clock()
            cell = self._cell(key, now)
            cell["done"] += n
            self._advanced_at = now
            self._rate(key, cell, now)
            self._show(now)

    def tick(self) -> None:
        """The running cells' rates and ETAs brought to now, and shown when it is time, answers or not."""
        with self._lock:
            now = self.clock()
            for key, cell in self._running():
                self._rate(key, cell, now)
            self._show(now)

    def cell_finished(self, key: str, status: str, message: str = "") -> None:
        """The cell ended: done, failed, failed_errors (over its error budget), cached or interrupted; `message`
        says why where it did not finish well."""
        with self._lock:
            now = self.clock()
            cell = self._cell(key, now)
            cell.update(status=status, finished_at=now, eta_s=None, **({"message": message} if message else {}))
            self._samples.pop(key, None)
            self._changed(now)

    def skipped(self, keys: Iterable[str], reason: str = "") -> str | None:
        """Cells that will not run, logged as one summary line (returned too); None for no cells."""
        keys = list(keys)
        if not keys:
            return None
        with self._lock:
            self.skipped_cells.update(dict.fromkeys(keys, reason))
            shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
            cells = f"{len(keys)} cell{'s' if len(keys) > 1 else ''}"
            line = f"skipped {cells}{': ' + reason if reason else ''} ({shown})"
            self._print(line)
            self._changed(self.clock())
            return line

    def message(self, text: str) -> None:
        """A log line that keeps the terminal's progress lines below it (use it for the pipeline's log)."""
        with self._lock:
            self._print(text)

    def close(self) -> None:
        """Final status.json and the terminal's progress lines cleared."""
        self._stopped.set()
        if self._ticker is not None and self._ticker.is_alive() and self._ticker is not threading.current_thread():
            self._ticker.join(timeout=15)  # its stall line asks Ray, which the driver shuts down after this
        with self._lock:
            self._clear()
            self._write(self.clock())

    def _tick_until_closed(self) -> None:
        while not self._stopped.wait(1.0):
            self.tick()
            self._say_what_stalls()

    def _say_what_stalls(self) -> None:
        """A cell whose dataset Ray cannot place a task of moves nothing, with no line of Ray's on the console;
        once no running cell has advanced for STALL_S, say what waits for room, every STALL_S."""
        now = self.clock()
        with self._lock:
            quiet = any(True for _ in self._running()) and now - max(self._advanced_at, self._stall_said) >= STALL_S
        if not quiet or self.unplaced is None or (waiting := self.unplaced()) is None:
            return
        self._stall_said = now
        self.message(f"nothing answered for {now - self._advanced_at:.0f} s: {waiting}; a cell's dataset that "
                     f"moves nothing for {NO_PROGRESS_S:.0f} s fails (Ray Data's limit)")

    # -- state ---------------------------------------------------------------------------------------------
    def _cell(self, key: str, now: float) -> CellStatus:
        """The cell's entry; one the pipeline never started (a cached cell) is made, not a KeyError that
        would fail the cell over its progress line."""
        return self.cells.setdefault(key, {"status": "running", "done": 0, "total": 0, "resumed_from": 0,
                                           "started_at": now, "requests_per_s": None, "eta_s": None})

    def status(self) -> RunStatus:
        """status.json's content."""
        counts: dict[str, int] = {}
        for cell in self.cells.values():
            counts[cell["status"]] = counts.get(cell["status"], 0) + 1
        if self.skipped_cells:
            counts["skipped"] = len(self.skipped_cells)
        return {"run": self.root.run if self.root else None, "updated_at": self.clock(), "counts": counts,
                "cells": {k: CellStatus(**v) for k, v in self.cells.items()}, "skipped": dict(self.skipped_cells)}

    def _rate(self, key: str, cell: CellStatus, now: float) -> None:
        """Requests per second since the oldest sample of the last RATE_WINDOW_S (since the cell started, in
        its first minute), and the ETA at that pace; a cell that answered nothing for a whole window has a
        rate of 0 and no ETA."""
        samples = self._samples.setdefault(key, deque([(cell["started_at"], cell["resumed_from"])]))
        while len(samples) > 1 and now - samples[1][0] >= RATE_WINDOW_S:
            samples.popleft()
        since, done_then = samples[0]
        answered, elapsed = cell["done"] - done_then, now - since
        if elapsed > 0 and answered > 0:
            cell["requests_per_s"] = answered / elapsed
            cell["eta_s"] = max(0, cell["total"] - cell["done"]) / cell["requests_per_s"]
        elif elapsed >= RATE_WINDOW_S and cell["requests_per_s"] is not None:
            cell["requests_per_s"], cell["eta_s"] = 0.0, None
        if now - samples[-1][0] >= SAMPLE_EVERY_S:
            samples.append((now, cell["done"]))

    def _show(self, now: float) -> None:
        if now - self._written >= self.write_every:
            self._write(now)
        if self.interactive:
            if now - self._drawn_at >= self.redraw_every:
                self._draw(now)
        elif now - self._logged >= self.log_every:
            self._logged = now
            for line in self._lines(bar=False):
                self.log(line)

    def _running(self) -> list[tuple[str, CellStatus]]:
        return [(k, c) for k, c in self.cells.items() if c["status"] == "running"]

    def _lines(self, bar: bool) -> list[str]:
        return [cell_line(k, c, bar) for k, c in self._running()]

    def _changed(self, now: float) -> None:
        self._write(now)
        if self.interactive:
            self._draw(now)

    def _write(self, now: float) -> None:
        self._written = now
        if self.root is None:
            return
        try:
            self.root.write_json(STATUS, self.status())
        except OSError as e:  # progress must never fail a sweep; say so once
            if not self._write_failed:
                self._write_failed = True
                self._print(f"progress: cannot write {self.root.uri(STATUS)}: {e}")

    # -- terminal ------------------------------------------------------------------------------------------
    def _clear(self) -> None:
        if self.interactive and self._drawn_lines:
            self.stream.write(f"\x1b[{self._drawn_lines}F\x1b[J")  # up to the first line, clear to the end
            self.stream.flush()
            self._drawn_lines = 0

    def _draw(self, now: float) -> None:
        self._drawn_at = now
        self._clear()
        width = max(20, shutil.get_terminal_size().columns - 1)
        lines = [line[:width] for line in self._lines(bar=True)]
        if lines:
            self.stream.write("\n".join(lines) + "\n")
            self.stream.flush()
        self._drawn_lines = len(lines)

    def _print(self, text: str) -> None:
        if self.interactive:
            self._clear()
            self.log(text)
            self._draw(self.clock())
        else:
            self.log(text)


def format_status(status: RunStatus, now: float | None = None) -> str:
    """`ragjudge status`: when status.json was written, counts, then the running and failed cells (failed_errors:
    over their error budget), each failed one with why."""
    now = time.time() if now is None else now
    counts = ", ".join(f"{n} {state}" for state, n in sorted((status.get("counts") or {}).items()))
    age = now - float(status.get("updated_at") or now)
    head = f"run {status.get('run')}: {counts or 'no cells yet'} (status.json written {_duration(age)} ago)"
    lines = [head]
    cells = status.get("cells") or {}
    lines += ["  " + cell_line(k, c) for k, c in cells.items() if c.get("status") == "running"]
    lines += [f"  {k}: {c['status']}" + (f": {c['message']}" if c.get("message") else "")
              for k, c in cells.items() if c.get("status") in ("failed", FAILED_ERRORS)]
    return "\n".join(lines)
