"""What a person sees of `ragjudge run` when its output is not a terminal (CI, a log file): ragjudge's lines and
the end's summary, none of Ray's own lines and no carriage returns; Ray's lines are in the run's logs/."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sweeps import write_sweep

REPO = Path(__file__).resolve().parents[3]
# A line of Python's logging as Ray formats it: '2026-11-28 22:34:00,964\tINFO worker.py:2038 -- ...'
RAY_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\s+(INFO|WARNING|ERROR|DEBUG)\s", re.MULTILINE)

pytestmark = pytest.mark.integration


def _run(tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    echo = "{name: echo, path: none, kind: generative, engine: stand_in}"
    sweep = write_sweep(tmp_path, "console", [echo])
    return subprocess.run([sys.executable, "-m", "jobs", "run", str(sweep), f"storage.root={tmp_path / 'results'}",
                           *flags], capture_output=True, text=True, cwd=REPO, check=False, timeout=300,
                          env={**os.environ, **(env or {})})


def test_the_console_has_ragjudge_lines_and_the_log_has_rays(tmp_path):
    done = _run(tmp_path)
    console = done.stdout + done.stderr
    assert done.returncode == 0, console
    assert not RAY_LINE.search(console), console  # Ray's token notice and "Started a local Ray instance"
    assert "\r" not in console
    run = tmp_path / "results" / "console"
    assert "Ray: started a local cluster" in done.stdout
    assert "rag_rewardbench x echo: 6 items, 0 requests already answered, 12 to go" in done.stdout
    assert "cells: 1 done" in done.stdout
    assert f"report:  {run / 'report' / 'index.html'}  (open {(run / 'report' / 'index.html').as_uri()}" \
        in done.stdout
    assert f"logs:    {run / 'logs' / 'libraries.log'}" in done.stdout
    log = (run / "logs" / "libraries.log").read_text(encoding="utf-8")
    assert "Started a local Ray instance" in log
    session = run / "logs" / "ray"
    assert any(path.name.startswith("gcs_server") for path in session.iterdir())  # Ray's session logs, copied


def test_verbose_keeps_rays_lines_on_the_console_too(tmp_path):
    done = _run(tmp_path, env={"RAGJUDGE_LOG": "debug"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Started a local Ray instance" in done.stderr
    log = tmp_path / "results" / "console" / "logs" / "libraries.log"
    assert "Started a local Ray instance" in log.read_text(encoding="utf-8")
