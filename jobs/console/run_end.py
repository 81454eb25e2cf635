"""The last lines of `ragjudge run`: what happened to the cells, and what to open."""
from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from benchmarks.boundary_types import JsonObject
from jobs.store import FAILED_DATA, FAILED_ERRORS, RunRoot
from jobs.store.layout import LIBRARY_LOG, RAY_SESSION_LOGS, REPORT_PAGE

UNFINISHED = ("failed", FAILED_DATA, FAILED_ERRORS, "interrupted")


class CellOutcome(Protocol):
    """What the end says of a cell (jobs.sweep.cell.CellOutcome has it)."""

    benchmark: str
    model: str
    status: str
    message: str
    metrics: JsonObject | None  # a failed_errors cell's count its request errors (`request_errors`)


def end_lines(outcomes: Sequence[CellOutcome], root: RunRoot, report_written: bool) -> list[str]:
    """'cells: 6 done, 1 cached, 1 failed', then where the results, the report (and how to open it) and the
    libraries' logs are."""
    counts = Counter(o.status for o in outcomes)
    lines = ["cells: " + (", ".join(f"{n} {status}" for status, n in counts.items()) or "none ran")]
    lines.append(f"results: {root.uri('')}")
    if report_written:
        page = root.uri(REPORT_PAGE)
        lines.append(f"report:  {page}" + (f"  (open {Path(page).as_uri()} in a browser, or `ragjudge report "
                                           f"{shlex.quote(root.uri(''))} --open`)" if root.on_this_machine else ""))
    lines.append(f"logs:    {root.uri(LIBRARY_LOG)} (Ray's, vLLM's, the model libraries'); "
                 f"Ray's session logs in {root.uri(RAY_SESSION_LOGS)}/")
    return lines


def unfinished_lines(outcomes: Sequence[CellOutcome], root: RunRoot) -> list[str]:
    """Each failed or interrupted cell with its one-line error (for stderr); a cell over its error budget also
    with where its request errors are counted by kind (its metrics.json: failed requests are not stored) and,
    last, what will bring it under its budget."""
    lines = []
    for o in outcomes:
        if o.status in UNFINISHED:
            lines.append(f"{o.status.upper()} {o.benchmark} x {o.model}{o.message}")
            if o.status == FAILED_ERRORS:
                lines.append(f"  its request errors by kind: {root.uri(root.metrics_path(o.benchmark, o.model))}")
                lines.append(f"  to fix: {fix(o)}")
    return lines


def fix(outcome: CellOutcome) -> str:
    """What will bring a cell over its error budget under it: `--retry-errors` where some of its failed
    requests may pass if asked again (jobs.engines.errors), else what to change: asking again would fail alike."""
    counts = (outcome.metrics or {}).get("request_errors") or {}
    if counts.get("retryable"):
        return (f"the same `ragjudge run` with --retry-errors asks its {counts['retryable']} retryable failed "
                "requests again")
    return (f"none of its failed requests is retryable (most common: {counts.get('top_error')}): change what that "
            "error names and run again (a changed model, prompt or data setting asks again), or accept the errors "
            f"with benchmarks.{outcome.benchmark}.max_error_rate=RATE (rescored, nothing asked)")
