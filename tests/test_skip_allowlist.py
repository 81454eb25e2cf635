"""tests/skip_allowlist.py: with RAGJUDGE_ALLOWED_SKIPS set, a skip the allowlist does not give fails the run,
naming the test and its reason, in one process and under pytest-xdist (whose controller gets the workers'
reports); skips it lists leave the run green."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import pytest

def test_runs():
    pass

def test_no_slurm():
    pytest.skip("no local Slurm to run (missing: ['sbatch'])")

@pytest.mark.skipif(True, reason="no chromium on PATH")
def test_browser():
    pass
"""
SLURM = "test_suite.py::* | no local Slurm to run | no Slurm here\n"
BROWSER = "test_suite.py::test_browser | no chromium | no browser here\n"
WORKERS = [[], ["-n", "2"]]


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, allowlist: str, args: list[str]):
    pytester.makepyfile(test_suite=SUITE)
    listed = pytester.path / "allowed.txt"
    listed.write_text("# glob | reason | why\n" + allowlist)
    monkeypatch.setenv("RAGJUDGE_ALLOWED_SKIPS", str(listed))
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))  # skip_allowlist, in xdist's workers too
    return pytester.runpytest_subprocess("-p", "skip_allowlist", "-rs", *args)


@pytest.mark.parametrize("workers", WORKERS)
def test_a_skip_the_allowlist_does_not_give_fails_the_run_naming_it(pytester, monkeypatch, workers):
    result = _run(pytester, monkeypatch, SLURM, workers)  # the browser test's reason is not Slurm's
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*skips not in the allowlist*",
                                 "UNLISTED SKIP test_suite.py::test_browser: no chromium on PATH"])
    assert "UNLISTED SKIP test_suite.py::test_no_slurm" not in result.stdout.str()


@pytest.mark.parametrize("workers", WORKERS)
def test_skips_the_allowlist_gives_pass(pytester, monkeypatch, workers):
    result = _run(pytester, monkeypatch, SLURM + BROWSER, workers)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=2)
    assert "UNLISTED SKIP" not in result.stdout.str()


def test_an_entry_without_its_why_is_refused(pytester, monkeypatch):
    result = _run(pytester, monkeypatch, "test_suite.py::* | no local Slurm to run\n", [])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "not `tests glob | reason | why`" in result.stderr.str()
