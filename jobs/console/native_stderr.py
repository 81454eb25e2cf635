"""What C and C++ code in the driver's process writes to file descriptor 2: lines of a logger, not the console.

Python's logging and sys.stderr cannot see it: Ray's core worker logs its errors straight to fd 2 as well as to
its own file. The one a demo shows is `core_worker.cc: Actor with class name: 'MapWorker(MapBatches(...))' ...
has constructor arguments in the object store and max_restarts > 0`, printed once per process for the first
Ray Data actor pool: Ray Data always ray.put()s a pool's function and passes it by reference (ray-project/ray
#53727), whatever the project gives it, and the operator holds that reference for the pool's life, so a
restart still finds it. A pipe takes fd 2's place and a thread turns each line into a record of `logger`;
sys.stderr is pointed at a copy of the console's descriptor, so Python's own writes (ragjudge's error lines, a
traceback) still reach the console.
"""
from __future__ import annotations

import io
import logging
import os
import sys
import threading

STDERR = 2
LOGGER = "stderr"  # the logger its lines go to (jobs.console.library_logs sends it to the run's file)
JOIN_S = 5.0  # a child process holding the pipe keeps it open: the reader is left, as a daemon, after this


class NativeStderr:
    """Between start() and stop(), fd 2 of this process feeds `logger` (one ERROR record a line)."""

    def __init__(self, logger: logging.Logger):
        self.logger = logger
        self.console: int | None = None  # a copy of the console's fd 2
        self.python_stderr: io.TextIOBase | None = None  # sys.stderr before, when it wrote to fd 2
        self.reader: threading.Thread | None = None

    def start(self) -> None:
        sys.stderr.flush()
        self.console = os.dup(STDERR)
        read_end, write_end = os.pipe()
        os.dup2(write_end, STDERR)
        os.close(write_end)
        if _writes_fd(sys.stderr, STDERR):  # else (a test's capture) Python's writes never reached fd 2
            self.python_stderr = sys.stderr
            sys.stderr = open(self.console, "w", buffering=1, encoding=sys.stderr.encoding,  # noqa: SIM115
                              errors="backslashreplace", closefd=False)
        self.reader = threading.Thread(target=self._read, args=(read_end,), name="ragjudge-native-stderr",
                                       daemon=True)
        self.reader.start()

    def _read(self, read_end: int) -> None:
        with open(read_end, "rb") as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", errors="replace").rstrip("\n")
                if line:
                    self.logger.error(line)

    def stop(self) -> None:
        """fd 2 back to the console; the reader ends when the pipe's last writer closes it."""
        if self.console is None:
            return
        sys.stderr.flush()
        os.dup2(self.console, STDERR)  # closes this process's write end of the pipe
        if self.python_stderr is not None:
            sys.stderr.close()
            sys.stderr = self.python_stderr
        os.close(self.console)
        self.console = None
        if self.reader is not None:
            self.reader.join(JOIN_S)


def _writes_fd(stream: object, fd: int) -> bool:
    try:
        return stream.fileno() == fd  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False
