"""SIGTERM and SIGINT for `ragjudge run`: Ctrl-C, Slurm's warning signal before the time limit, a Kubernetes
eviction. The run stops the way a rerun can resume it, within a bounded time.

The first signal sets the sweep's Stop: no cell starts and no running cell sends another request; each running
cell stores the requests it has answered as one last part, is marked `interrupted` in manifest.json and ends;
the driver gives its lease back and exits with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM:
what shells, Slurm and Kubernetes already read as "ended by that signal", and distinct from the codes of
failed cells, 1, a user's mistake, 2, and a busy run root, 3). Requests still at an engine are not stored: the
rerun asks them, and them only, again. If all that takes longer than `storage.grace_s`, or a second signal
comes, the driver exits at once with the same code (after the grace period it gives its lease back first; a
lease left by a second signal is taken over at once by a rerun on this host, jobs.store.lease), and before
that what the sweep asked to keep in any case (`Stop.at_give_up`: manifest.json's engine records), each given
at most GIVE_UP_S. Without a Stop (Ray's own handler is the default while it starts), SIGTERM aborts the
process, as it did before.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TypedDict

SIGNALS = (signal.SIGTERM, signal.SIGINT)
GIVE_UP_S = 10.0  # past the grace period, the longest a hook of `Stop.at_give_up` may hold up the exit


class Interrupted(Exception):
    """A cell stopped because the driver was told to; the requests it had answered are stored."""


class StopRecord(TypedDict):
    """What manifest.json keeps of a stop beside an interrupted cell."""

    signal: str | None
    interrupted_at: str  # ISO 8601, UTC


class Stop:
    """The driver's stop request: set once, by the first SIGTERM or SIGINT; cells and the scheduler read it."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signum: int | None = None
        self.at: float | None = None
        self.give_up_hooks: list[Callable[[], None]] = []

    def at_give_up(self, hook: Callable[[], None]) -> None:
        """Run `hook` if the grace period runs out, before the process exits: what a run must record even then
        (it may find the storage or the cluster hung, so it gets at most GIVE_UP_S)."""
        self.give_up_hooks.append(hook)

    def request(self, signum: int) -> None:
        self.signum, self.at = signum, time.time()
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise Interrupted once the stop is set: a cell calls it before it sends more requests."""
        if self.is_set():
            raise Interrupted(f"{self.signal_name}: its answered requests are stored, the rerun asks the rest")

    @property
    def signal_name(self) -> str | None:
        return signal.Signals(self.signum).name if self.signum else None

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a process the signal ended."""
        return 128 + (self.signum or 0)

    def record(self) -> StopRecord:
        """What manifest.json keeps of the stop beside an interrupted cell."""
        at = datetime.fromtimestamp(self.at or 0.0, timezone.utc).isoformat(timespec="seconds")
        return {"signal": self.signal_name, "interrupted_at": at}


def _say(text: str) -> None:
    """A line on stderr written with one system call: safe inside a signal handler, whatever else is printing."""
    os.write(sys.stderr.fileno(), f"ragjudge: {text}\n".encode())


@contextmanager
def stop_on_signals(grace_s: float, before_exit: Callable[[], None]) -> Iterator[Stop]:
    """SIGTERM and SIGINT set the yielded Stop for the `with` block, and start a timer that, `grace_s` later,
    calls `before_exit` (give the lease back) and ends the process; a second signal ends it at once. Without a
    signal the previous handlers come back at the end; after one, handlers and timer stay until the process
    ends, so the bound covers Ray's shutdown too."""
    stop = Stop()

    def give_up() -> None:
        _say(f"{stop.signal_name}: still stopping after {grace_s:g} s (storage.grace_s); exiting now")
        try:
            for hook in stop.give_up_hooks:
                _bounded(hook, GIVE_UP_S)
            before_exit()
        finally:
            os._exit(stop.exit_code)

    def handle(signum: int, frame: object) -> None:
        if stop.is_set():
            _say(f"{signal.Signals(signum).name} again: exiting at once")
            os._exit(stop.exit_code)
        stop.request(signum)
        _say(f"{stop.signal_name}: storing the answered requests and stopping (at most {grace_s:g} s, "
             "storage.grace_s; a second signal exits at once)")
        timer = threading.Timer(grace_s, give_up)
        timer.daemon = True
        timer.start()

    previous = {signum: signal.signal(signum, handle) for signum in SIGNALS}
    try:
        yield stop
    finally:
        if not stop.is_set():
            for signum, handler in previous.items():
                if handler is not None:  # None: a handler installed outside Python, which cannot be put back
                    signal.signal(signum, handler)


def _bounded(hook: Callable[[], None], seconds: float) -> None:
    """Run `hook` in a thread of its own for at most `seconds`; an error or a hang is said, never raised."""
    def run() -> None:
        try:
            hook()
        except Exception as e:  # noqa: BLE001 - the process is exiting: say it and go on
            _say(f"while exiting: {type(e).__name__}: {e}")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        _say(f"while exiting: {getattr(hook, '__name__', 'a hook')} still running after {seconds:g} s; left")
