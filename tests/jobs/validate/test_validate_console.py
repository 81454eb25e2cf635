"""`ragjudge validate` has `ragjudge run`'s console (issue 61): Ray's and Ray Data's INFO lines and the libraries'
warnings go to the run's logs/libraries.log, ragjudge's own lines to the console; `--verbose` keeps both. The
command runs in a process of its own (pytest's capture and warning filters would stand between), its
validation replaced by one that prints what Ray Data and torch print during one (no Ray is started)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from sweeps import write_sweep

RAY_LINE = "Starting execution of Dataset dataset_7_0. Full logs are in /tmp/ray/session_latest/logs/ray-data"
WARNING = "To copy construct from a tensor, it is recommended to use sourceTensor.detach()"
SCRIPT = f"""
import logging, sys, warnings
import jobs.cli.validate as validate_cli
from jobs.cli import main

def validated(sweep, pairs, thresholds, only, log=print):
    logging.getLogger("ray.data._internal.execution.streaming_executor").info({RAY_LINE!r})
    warnings.warn({WARNING!r}, UserWarning, stacklevel=1)
    log("validate judge: skipped")
    return {{"pairs": pairs, "data": ["data.jsonl"], "models": {{"judge": {{
        "kind": "generative", "engine": "stand_in", "status": "skipped", "reason": "an API model"}}}}}}

validate_cli.validate_sweep = validated
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def sweep(tmp_path):
    return write_sweep(tmp_path, "checks", ["{name: judge, path: none, kind: generative, engine: stand_in}"],
                       storage=f"root: {tmp_path / 'results'}")


def _validate(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-c", SCRIPT, "validate", *args], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_the_libraries_lines_go_to_the_runs_log_and_ours_to_the_console(sweep, tmp_path):
    done = _validate(str(sweep), "--pairs", "4")
    assert "validate judge: skipped" in done.stdout and "Validation: " in done.stdout
    assert RAY_LINE not in done.stdout + done.stderr and WARNING not in done.stdout + done.stderr
    log = (tmp_path / "results" / "checks" / "logs" / "libraries.log").read_text(encoding="utf-8")
    assert RAY_LINE in log and WARNING in log


def test_verbose_keeps_them_on_the_console_too(sweep, tmp_path):
    done = _validate(str(sweep), "--pairs", "4", "--verbose")
    assert RAY_LINE in done.stdout + done.stderr and WARNING in done.stdout + done.stderr
    assert "validate judge: skipped" in done.stdout
    assert RAY_LINE in (tmp_path / "results" / "checks" / "logs" / "libraries.log").read_text(encoding="utf-8")
