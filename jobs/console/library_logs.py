"""Ray's, vLLM's and the model libraries' own log lines during a run: in the run's logs/, not on the console.

A newcomer's `make demo` printed Ray's lines among ragjudge's (its token notice, every dataset's execution plan,
"registers for logging while another dataset ... is also logging", resource warnings for stages that only wait
for a shared engine) and the model conversion's tqdm bars, carriage returns and all (those now go to the
"transformers" logger while a model is made: jobs.console.step_progress `stderr_to_log`). Those lines are for
whoever debugs Ray, so they go to `logs/libraries.log` of the run (secrets redacted, as every file of a run),
and at the end the Ray session's own logs of this machine (its workers' and engines' stdout and stderr, Ray
Data's log) are copied to `logs/ray/`. What C++ code writes to the driver's stderr (Ray's core worker) goes to
the file as well (jobs.console.native_stderr). `--verbose` or RAGJUDGE_LOG=debug keeps them on the console too.

Python's logging has no hook for a handler a library adds later (ray.init sets its own, Serve when it starts),
so `take` runs again before each of ragjudge's lines (`say`); it is idempotent and walks a few hundred loggers.
"""
from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

from benchmarks.boundary_types import JsonObject
from jobs.console.native_stderr import LOGGER as NATIVE_LOGGER
from jobs.console.native_stderr import NativeStderr
from jobs.store import RunRoot, StorageError
from jobs.store.layout import LIBRARY_LOG, RAY_SESSION_LOGS
from jobs.store.redaction import redact

LIBRARIES = ("ray", "vllm", "transformers", "huggingface_hub", "sentence_transformers", "filelock", "py.warnings",
             NATIVE_LOGGER)  # the last: what C and C++ code writes to fd 2
SESSION_LOG_SUFFIXES = (".log", ".out", ".err")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def verbose_from_env() -> bool:
    """RAGJUDGE_LOG=debug: the libraries' lines on the console as well."""
    return os.environ.get("RAGJUDGE_LOG", "").lower() == "debug"


class RedactedFile(logging.FileHandler):
    """A log file without secrets, whatever formatter it is given (ray.init sets its own on the "ray" logger's
    handlers, ours included)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class LibraryLogs:
    """For the length of a run: the libraries' loggers write to the run's log file instead of the console."""

    def __init__(self, root: RunRoot, verbose: bool = False):
        self.root, self.verbose = root, verbose
        self.upload = not root.on_this_machine  # else the file is written where it stays
        folder = Path(tempfile.mkdtemp(prefix="ragjudge-logs-")) if self.upload else Path(root.path())
        self.path = folder / (Path(LIBRARY_LOG).name if self.upload else LIBRARY_LOG)
        self.handler: RedactedFile | None = None
        self.removed: list[tuple[logging.Logger, logging.Handler]] = []  # console handlers, put back at the end
        self.attached: list[logging.Logger] = []  # loggers given the file
        self.unpropagated: list[logging.Logger] = []  # loggers that propagated to the root's console
        self.print_to_stdstream: Callable[..., None] | None = None  # Ray's, while ours replaces it
        self.warnings_console: logging.Handler | None = None  # --verbose: the captured warnings on stderr too
        self.native = NativeStderr(logging.getLogger(NATIVE_LOGGER))

    def __enter__(self) -> Self:
        import ray.data  # noqa: F401 -- Ray's and Ray Data's loggers get their console handlers at import

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handler = RedactedFile(self.path, encoding="utf-8")
        self.handler.setFormatter(logging.Formatter(FORMAT))
        logging.captureWarnings(True)
        self.take()
        if self.verbose:  # captured, warnings reach the console only through a handler of their own
            self.warnings_console = logging.StreamHandler(sys.stderr)
            logging.getLogger("py.warnings").addHandler(self.warnings_console)
        else:
            self.print_to_stdstream = _send_ray_prints_to_log()
            self.native.start()
        return self

    def take(self) -> None:
        """Send the libraries' loggers, and any handler they added since, to the run's file."""
        assert self.handler is not None, "take() inside `with LibraryLogs(...)`"
        names = [name for name in list(logging.root.manager.loggerDict)
                 if name in LIBRARIES or name.split(".", 1)[0] in LIBRARIES]
        for name in {*LIBRARIES, *names}:
            logger = logging.getLogger(name)
            if not self.verbose:
                for handler in list(logger.handlers):
                    if _to_console(handler):
                        logger.removeHandler(handler)
                        self.removed.append((logger, handler))
            # py.warnings too: a warning with no handler there gets a NullHandler from logging and is lost
            top = "." not in name or name in LIBRARIES
            if (top or logger.handlers or not logger.propagate) and self.handler not in logger.handlers:
                logger.addHandler(self.handler)
                self.attached.append(logger)
                if logger.propagate:  # the root logger has Python's last-resort console handler
                    self.unpropagated.append(logger)
                    logger.propagate = False

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.copy_ray_session_logs()
        self.native.stop()
        if self.print_to_stdstream is not None:
            import ray._private.worker

            ray._private.worker.print_to_stdstream = self.print_to_stdstream
        for logger, handler in self.removed:
            logger.addHandler(handler)
        for logger in self.unpropagated:
            logger.propagate = True
        for logger in self.attached:
            logger.removeHandler(self.handler)  # type: ignore[arg-type]
        if self.warnings_console is not None:
            logging.getLogger("py.warnings").removeHandler(self.warnings_console)
        logging.captureWarnings(False)
        if self.handler is not None:
            self.handler.close()
        if self.upload:
            if self.path.exists():
                self.root.write_text(LIBRARY_LOG, self.path.read_text(encoding="utf-8", errors="replace"))
            shutil.rmtree(self.path.parent, ignore_errors=True)

    def copy_ray_session_logs(self) -> None:
        """This machine's Ray session logs (its workers', engines' and Ray Data's), redacted, to logs/ray/.
        Nothing for a run that did not start Ray here."""
        import ray

        # No public API names the session folder; a Ray Client driver (ray://) has no node here.
        node = getattr(ray._private.worker.global_worker, "node", None) if ray.is_initialized() else None
        if node is None:
            return
        folder = Path(node.get_logs_dir_path())
        try:
            for path in sorted(folder.rglob("*")):
                if path.is_file() and path.suffix in SESSION_LOG_SUFFIXES:
                    text = path.read_text(encoding="utf-8", errors="replace")
                    self.root.write_text(f"{RAY_SESSION_LOGS}/{path.relative_to(folder).as_posix()}", text)
        except (OSError, StorageError) as e:  # the run's results stand without them
            print(f"ragjudge: Ray's session logs were not copied to the run ({e}); they are in {folder}",
                  file=sys.stderr)

    def say(self, line: str) -> None:
        """A line of ragjudge's on the console, after taking any console handler a library added since the last
        one (Serve's, a cell's first Ray Data dataset's)."""
        self.take()
        print(line, flush=True)


def _send_ray_prints_to_log() -> Callable[..., None]:
    """Ray prints what its raylets and workers publish to the driver with print(), not logging: with
    log_to_driver off, still the raylet's warnings ("12 PYTHON worker processes have been started ... 4x the
    maximum expected startup concurrency": Ray Data's light tasks, 0.25 CPU each, start more workers than a
    small machine has cores). There is no public hook, so the driver's printer is replaced (it is looked up
    by name where it is called) by one that logs each line to the "ray" logger, whose lines go to the run's
    file; the original is returned to be put back."""
    import ray._private.worker

    original = ray._private.worker.print_to_stdstream
    logger = logging.getLogger("ray.published")

    def to_log(data: JsonObject, ignore_prefix: bool = False) -> None:
        level = logging.ERROR if data.get("is_err") else logging.INFO
        for line in data.get("lines") or []:
            logger.log(level, "(%s) %s", data.get("pid"), line)

    ray._private.worker.print_to_stdstream = to_log
    return original


def _to_console(handler: logging.Handler) -> bool:
    return isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler) \
        and getattr(handler, "stream", None) in (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__)
