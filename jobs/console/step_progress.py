"""Progress of a step a person waits for (an index's passages encoded, a model made), as whole lines.

tqdm keeps the count, the rate over a recent window (its exponential smoothing) and the ETA; what it writes is
cut into lines here, because tqdm redraws a line with carriage returns even into a file, and the console of a
run is often a file (CI, Slurm, `ray job logs`). One line every `every` seconds, and one at the end.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr

from tqdm import tqdm

EVERY_S = 10.0
FORMAT = "{desc}: {n_fmt}/{total_fmt}{unit} ({percentage:.0f}%), {rate_noinv_fmt}, ETA {remaining}"


class _Lines:
    """A file for tqdm that hands each drawn meter, without its carriage return, to `log` as one line (not the
    same line twice: tqdm draws the last one again as it closes)."""

    def __init__(self, log: Callable[[str], None]):
        self.log, self.last = log, ""

    def write(self, text: str) -> None:
        if (line := text.strip("\r\n ")) and line != self.last:
            self.log(line)
            self.last = line

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def step_progress(desc: str, total: int, unit: str, log: Callable[[str], None] = print,
                  every: float = EVERY_S) -> tqdm:
    """A tqdm counter for `total` units of a step; `update(n)` as they are done, `close()` at its end (a
    `with` block does). Its lines: 'index minilm: 5120/20642 passages (25%), 42.1 passages/s, ETA 06:08'."""
    # position=0: each counter writes to its own _Lines, so none stacks below another. Left to tqdm, a counter
    # started while another is alive in the process (two cells' steps at once) takes the next position and
    # draws itself there with newlines and cursor-up codes, which would reach the console as lines.
    return tqdm(total=total, desc=desc, unit=f" {unit}", file=_Lines(log), mininterval=every, maxinterval=every,
                miniters=1, bar_format=FORMAT, ascii=True, disable=False, position=0)  # disable: not TQDM_DISABLE's



@contextmanager
def elapsed_lines(desc: str, log: Callable[[str], None] = print, every: float = EVERY_S,
                  last: float | None = None) -> Iterator[None]:
    """'desc: 20 s' every `every` seconds while the block runs: a step with nothing to count (a model being
    made in this process); 'desc: 20 s (45 s last time)' when the step's `last` seconds are known."""
    stop, start = threading.Event(), time.monotonic()
    against = "" if last is None else f" ({last:.0f} s last time)"

    def tick() -> None:
        while not stop.wait(every):
            log(f"{desc}: {time.monotonic() - start:.0f} s{against}")

    ticker = threading.Thread(target=tick, name="ragjudge-elapsed", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()


@contextmanager
def stderr_to_log(logger: str) -> Iterator[None]:
    """What the block writes to sys.stderr, as lines of `logger` (whose lines LibraryLogs sends to the run's
    file): a library's own tqdm bars (transformers' GGUF conversion has no switch) are carriage returns, and
    tqdm reads TQDM_DISABLE only when it is first imported."""
    with redirect_stderr(_Lines(logging.getLogger(logger).info)):  # type: ignore[type-var]
        yield
