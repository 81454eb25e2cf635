"""Skips that CI does not accept. When RAGJUDGE_ALLOWED_SKIPS names an allowlist (tests/allowed_skips.txt,
as `.ci/run` sets it), a test or module skipped for a reason the list does not give it fails the run, and
the summary names each with its reason. Otherwise a skip is a line of `-rs` output: a browser test skipped
for want of Chromium left CI as green as one that ran.

Skips are read from the reports where they arrive: in pytest's one process, or in pytest-xdist's controller,
which receives every worker's reports (the workers check nothing themselves).
"""
from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest

ENV = "RAGJUDGE_ALLOWED_SKIPS"


def load(path: str) -> list[tuple[str, str]]:
    """The allowlist's entries (a glob of node ids, how the reason starts), from its lines of `glob | reason |
    why`, all three given; lines starting with `#` are comments."""
    entries = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [field.strip() for field in line.split(" | ", 2)]
        if len(fields) < 3 or not all(fields):
            raise pytest.UsageError(f"{path}:{number}: not `tests glob | reason | why`: {line}")
        entries.append((fields[0], fields[1]))
    return entries


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    """A skip's reason as `-rs` prints it: pytest keeps (file, line, "Skipped: reason") as the report's
    longrepr, a list once it came from an xdist worker."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3 else longrepr
    return str(text).removeprefix("Skipped: ")


def allowed(entries: list[tuple[str, str]], nodeid: str, reason: str) -> bool:
    return any(fnmatch.fnmatchcase(nodeid, tests) and reason.startswith(start) for tests, start in entries)


class SkipAllowlist:
    """Collects the skips the allowlist at `path` does not give, and fails the session that had any."""

    def __init__(self, path: str):
        self.path, self.entries = path, load(path)
        self.unlisted: dict[str, str] = {}  # node id -> the skip's reason

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):  # an xfail is reported as a skip too
            self._seen(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:  # pytest.skip(..., allow_module_level=True), importorskip at import
            self._seen(report)

    def _seen(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        reason = skip_reason(report)
        if not allowed(self.entries, report.nodeid, reason):
            self.unlisted[report.nodeid] = reason

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.unlisted and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.unlisted:
            return
        terminalreporter.section("skips not in the allowlist", sep="=", red=True, bold=True)
        terminalreporter.line(f"{len(self.unlisted)} skipped for a reason {self.path} does not list (make "
                              "them run here, or list them there with why):", red=True)
        for nodeid, reason in self.unlisted.items():
            terminalreporter.line(f"UNLISTED SKIP {nodeid}: {reason}", red=True)


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.get(ENV)
    if path and not hasattr(config, "workerinput"):  # pytest's one process or xdist's controller
        config.pluginmanager.register(SkipAllowlist(path), "skip_allowlist_check")
