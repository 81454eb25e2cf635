"""The end of `ragjudge run`: the cells by status, where the results, report and logs are, and each unfinished
cell's line."""
from types import SimpleNamespace

from jobs.console.run_end import end_lines, unfinished_lines
from jobs.store.run_root import RunRoot


def outcome(model: str, status: str, message: str = "", errors: dict | None = None) -> SimpleNamespace:
    return SimpleNamespace(benchmark="bianbench", model=model, status=status, message=message,
                           metrics=None if errors is None else {"n": 9, "request_errors": errors})


def errors(failed: int, retryable: int) -> dict:
    return {"requests": 12, "failed": failed, "retryable": retryable, "top_error": "api: HTTP 400 (model 'g', 1 try)",
            "top_error_count": failed - retryable}


OUTCOMES = [outcome("a", "done"), outcome("b", "cached"), outcome("c", "done"),
            outcome("d", "failed_errors", ": 6 of 12 requests failed (50.0% > max_error_rate 20%)", errors(6, 4)),
            outcome("e", "failed", ": PreflightError: no GPU"), outcome("f", "interrupted", ": SIGTERM")]


def test_the_end_counts_cells_by_status_and_says_what_to_open(tmp_path):
    root = RunRoot(str(tmp_path / "results"), "demo")
    lines = end_lines(OUTCOMES, root, report_written=True)
    page = tmp_path / "results" / "demo" / "report" / "index.html"
    assert lines[0] == "cells: 2 done, 1 cached, 1 failed_errors, 1 failed, 1 interrupted"
    assert lines[2] == (f"report:  {page}  (open {page.as_uri()} in a browser, or "
                        f"`ragjudge report {tmp_path / 'results' / 'demo'} --open`)")
    assert lines[3].startswith(f"logs:    {tmp_path / 'results' / 'demo' / 'logs' / 'libraries.log'} ")
    s3 = end_lines(OUTCOMES[:1], RunRoot("s3://bucket/results", "demo"), report_written=True)
    assert s3[2] == "report:  s3://bucket/results/demo/report/index.html"  # no file:// URL for a bucket
    assert [line.split(":")[0] for line in end_lines(OUTCOMES, root, report_written=False)] == \
        ["cells", "results", "logs"]


def test_each_unfinished_cell_has_its_line_and_one_over_its_budget_says_where_its_errors_are_and_what_fixes_it(
        tmp_path):
    root = RunRoot(str(tmp_path), "demo")
    assert unfinished_lines(OUTCOMES, root) == [
        "FAILED_ERRORS bianbench x d: 6 of 12 requests failed (50.0% > max_error_rate 20%)",
        f"  its request errors by kind: {tmp_path / 'demo' / 'metrics' / 'benchmark=bianbench' / 'model=d' / 'metrics.json'}",
        "  to fix: the same `ragjudge run` with --retry-errors asks its 4 retryable failed requests again",
        "FAILED bianbench x e: PreflightError: no GPU",
        "INTERRUPTED bianbench x f: SIGTERM"]
    assert unfinished_lines(OUTCOMES[:3], root) == []


def test_a_cell_over_its_budget_with_nothing_retryable_is_told_what_else_fixes_it(tmp_path):
    final = outcome("g", "failed_errors", ": 3 of 12 requests failed (25.0% > max_error_rate 2%)", errors(3, 0))
    *_, last = unfinished_lines([final], RunRoot(str(tmp_path), "demo"))
    assert last == ("  to fix: none of its failed requests is retryable (most common: api: HTTP 400 (model 'g', 1 try)): "
                    "change what that error names and run again (a changed model, prompt or data setting asks again), "
                    "or accept the errors with benchmarks.bianbench.max_error_rate=RATE (rescored, nothing asked)")
    assert "--retry-errors" not in last
