"""An engine's answers cut into the parts a cell stores as they stream in: a part by size or by time, and one
last part when the run is stopped (jobs.sweep.interrupt `Stop`), so a killed or stopped run resumes without
asking the model again."""
from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from benchmarks.row_types import Answer
from jobs.sweep.interrupt import Stop

POLL_S = 0.2  # how often a cell waiting on its engine looks at the Stop
# How many parts the engine's stream may run ahead of the cell storing them. Unbounded, the answers waiting
# grew with the run wherever storing was the slower side, and with them the driver's private memory
# (docs/measurements.md, "The answers waiting between the stream and the store").
PARTS_AHEAD = 2

_END = object()  # the engine's stream ended
_DUE = object()  # no answer came before the part was due


class _Failed:
    """The engine's stream raised `error`; the cell's thread raises it."""

    def __init__(self, error: Exception) -> None:
        self.error = error


def answered_parts(rows: Iterable[Answer], size: int, stop: Stop, seconds: float = math.inf
                   ) -> Iterator[list[Answer]]:
    """An engine's answers in parts as they stream in, for the caller to store: a part once it holds `size`
    rows or its first row has waited `seconds` (so a slow engine's answers are stored as often as a fast one's
    are, without a fast one writing a small part many times a second). Once `stop` is set: one last part of the
    answers already here, then Interrupted. The stream is read on its own thread, so a cell waiting on its
    engine sees the stop within POLL_S; that thread is abandoned (a daemon) when the cell stops. The thread
    reads at most PARTS_AHEAD parts ahead of the caller."""
    answers: queue.Queue = queue.Queue(maxsize=PARTS_AHEAD * size)
    abandoned = threading.Event()
    threading.Thread(target=_pump, args=(rows, answers, abandoned), name="answers", daemon=True).start()
    part: list[Answer] = []
    due = math.inf  # when the part is stored whatever its size
    try:
        while (item := _next(answers, stop, due)) is not _END and item is not stop:
            if isinstance(item, _Failed):
                raise item.error
            if item is not _DUE:
                part.append(item)
                due = min(due, time.monotonic() + seconds)
            if part and (len(part) == size or time.monotonic() >= due):
                yield part
                part, due = [], math.inf
        if part:
            yield part
        stop.check()
    finally:
        abandoned.set()


def _pump(rows: Iterable[Answer], answers: queue.Queue, abandoned: threading.Event) -> None:
    try:
        for row in rows:
            if not _put(answers, row, abandoned):
                return
    except Exception as e:  # noqa: BLE001 - handed to the cell's thread, which raises it
        _put(answers, _Failed(e), abandoned)
    else:
        _put(answers, _END, abandoned)


def _put(answers: queue.Queue, item: Any, abandoned: threading.Event) -> bool:
    """Put `item` once the cell has room for it; False, without it, once the cell has stopped taking answers.
    The wait lasts as long as the cell does, which takes a part within its flush seconds or stops."""
    while not abandoned.is_set():
        try:
            answers.put(item, timeout=POLL_S)
            return True
        except queue.Full:
            continue
    return False


def _next(answers: queue.Queue, stop: Stop, due: float = math.inf) -> Any:
    """The next item from the pump; `stop` itself once it is set and no answer is waiting; _DUE once `due` (a
    time.monotonic) has passed with none."""
    while True:
        stopping = stop.is_set()
        try:
            return answers.get(timeout=0 if stopping else max(0.0, min(POLL_S, due - time.monotonic())))
        except queue.Empty:
            if stopping:
                return stop
            if time.monotonic() >= due:
                return _DUE
