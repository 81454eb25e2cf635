"""Retrying errors through a whole cell (issue 29 item 2): a RAG-RewardBench cell of 6 items (12 requests) against
tests/loopback.ScriptedApi, run as a sweep runs it (jobs.sweep.cell.run_cell; the http engine, HttpJudge and the
real openai client; only Ray Data's actor pool is a call in this process). Items 1 and 2 get HTTP 503 on every
try, item 3 a 400: the cell ends `failed_errors`. A rerun asks nothing again; one with --retry-errors, while the
server answers, asks the 503 requests only, and the cell is done with the metrics of a run that never saw a 503."""
from __future__ import annotations

import time
from dataclasses import replace

import pytest
from fault_rows import record
from loopback import ScriptedApi
from stand_in import inline_actor_pool, run
from sweeps import SAMPLE

from jobs.config import BenchmarkConfig, ModelConfig
from jobs.engines.http.settings import ApiSettings
from jobs.store.manifest import MANIFEST

UNAVAILABLE = ("Hugh Hilton Goodwin", "Three Preludes (ballet)")  # items 1 and 2: both orders, every try
REFUSED = "Gun laws in Michigan"  # item 3: a 400, which the client does not retry
CELL = "rag_rewardbench/flaky_api"
TOP = "api: HTTP 503 (model 'flaky_api', 2 tries)"


@pytest.fixture
def api_cell(monkeypatch):
    """(bench, model) of a cell whose API judge is the test's ScriptedApi: its URL set per server."""
    inline_actor_pool(monkeypatch)
    monkeypatch.setenv("RAGJUDGE_TEST_FLAKY_KEY", "sk-flaky-0123456789")
    model = ModelConfig(name="flaky_api", path="flaky", kind="api", engine="http",
                        api=ApiSettings(max_retries=1, timeout_s=30.0, base_env="RAGJUDGE_TEST_FLAKY_BASE",
                                        key_env="RAGJUDGE_TEST_FLAKY_KEY"), batch_size=12)
    # 6 failed requests of 12 are over the budget, the 2 refused ones alone are not.
    bench = BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(SAMPLE)],
                            bootstrap_resamples=10, max_error_rate=0.2)
    return bench, model


def _run(monkeypatch, tmp_path, bench, model, script, run_name="run", retry_errors=False):
    """The cell run against a fresh ScriptedApi with `script`; (root, outcome, the requests the server saw per
    key)."""
    with ScriptedApi(script) as api:
        monkeypatch.setenv("RAGJUDGE_TEST_FLAKY_BASE", api.base_url)
        root, outcome = run(tmp_path / "results", bench, model, run_name=run_name, retry_errors=retry_errors)
    return root, outcome, dict(api.seen)


def test_retry_errors_asks_the_retryable_failures_again_and_only_with_the_flag(api_cell, monkeypatch, tmp_path):
    bench, model = api_cell
    failing = {**{key: ["503"] for key in UNAVAILABLE}, REFUSED: ["400"]}
    root, first, seen = _run(monkeypatch, tmp_path, bench, model, failing)
    assert seen == {UNAVAILABLE[0]: 4, UNAVAILABLE[1]: 4, REFUSED: 2, "": 6}  # 503: 2 tries each; 400: 1
    sent = sum(seen.values())
    assert first.status == "failed_errors" and (first.metrics["n"], first.metrics["n_errors"]) == (3, 3)
    entry = root.read_json(MANIFEST)["cells"][CELL]
    assert entry["status"] == "failed_errors"
    assert entry["request_errors"] == {"requests": 12, "failed": 6, "retryable": 4, "top_error": TOP,
                                       "top_error_count": 4}
    assert entry["message"].startswith(f"6 of 12 requests failed (50.0% > max_error_rate 20%); most common: {TOP} "
                                       "(4); 4 retryable")
    assert first.message == f": {entry['message']}"
    stored = root.read_rows("requests", bench.name, model.name)
    assert sorted((a["item_id"][-1], a["retryable"]) for a in stored if a["error"]) == [
        ("1", True), ("1", True), ("2", True), ("2", True), ("3", False), ("3", False)]
    assert not any(a["retryable"] for a in stored if not a["error"])
    errors = root.read_rows("errors", bench.name, model.name)
    assert sorted((e["item_id"][-1], e["retryable"]) for e in errors) == [("1", True), ("2", True), ("3", False)]

    # Without the flag stored errors are answers: nothing is asked, the cell stays over its budget.
    _, again, seen = _run(monkeypatch, tmp_path, bench, model, {})
    assert seen == {} and again.status == "failed_errors" and again.message == first.message

    # With it, the 503 requests only are asked again, and their newer answers win.
    answering = {**{key: ["ok"] for key in UNAVAILABLE}, REFUSED: ["400"]}  # seen counts per key
    start = time.perf_counter()
    root, retried, seen = _run(monkeypatch, tmp_path, bench, model, answering, retry_errors=True)
    seconds = time.perf_counter() - start
    assert seen == {UNAVAILABLE[0]: 2, UNAVAILABLE[1]: 2}
    sent += sum(seen.values())
    assert retried.status == "done", retried.message
    entry = root.read_json(MANIFEST)["cells"][CELL]
    assert entry["status"] == "done" and "message" not in entry
    assert entry["request_errors"]["failed"] == 2 and entry["request_errors"]["retryable"] == 0
    assert len(root.read_rows("requests", bench.name, model.name)) == 12 + 4  # appended, never rewritten
    assert sorted(e["item_id"][-1] for e in root.read_rows("errors", bench.name, model.name)) == ["3"]

    # A run that never met a 503 scores the same.
    _, clean, _ = _run(monkeypatch, tmp_path, bench, model, answering, run_name="clean")
    assert clean.status == "done" and retried.metrics == clean.metrics

    # Nothing retryable is left: the done cell is not reopened.
    _, last, seen = _run(monkeypatch, tmp_path, bench, model, {}, retry_errors=True)
    assert seen == {} and last.status == "cached"
    record(tmp_path, fault="API requests failing past the client's retries: HTTP 503 on every try (2 items), "
                           "HTTP 400 (1 item); 6 of 12 requests",
           injected="ScriptedApi steps '503' and '400'; max_retries 1, max_error_rate 0.2; then the server answers "
                    "the 503 items",
           outcome=f"6 of 12 requests fail: the cell ends failed_errors, naming the most common error ({TOP}, 4), "
                   "metrics written; a plain rerun asks nothing; --retry-errors asks the 4 503 requests only, "
                   f"{entry['request_errors']['failed']} still fail (the 400s: final), the cell is done, metrics "
                   "equal a run that never met a 503",
           requests_lost=entry["request_errors"]["failed"], requests_duplicated=sent - 12,
           time_to_recover_s=round(seconds, 2))


def test_a_cell_within_its_budget_is_done_and_its_final_errors_are_not_asked_again(api_cell, monkeypatch,
                                                                                     tmp_path):
    bench, model = api_cell
    _, first, seen = _run(monkeypatch, tmp_path, bench, model, {REFUSED: ["400"]})
    assert first.status == "done" and seen[REFUSED] == 2  # 2 of 12 failed: within 20%
    _, again, seen = _run(monkeypatch, tmp_path, bench, model, {}, retry_errors=True)
    assert seen == {} and again.status == "cached"  # no retryable error: not reopened


def test_a_budget_raised_past_the_errors_makes_the_cell_done_without_asking_anything(api_cell, monkeypatch,
                                                                                       tmp_path):
    bench, model = api_cell
    _, first, _ = _run(monkeypatch, tmp_path, bench, model, {REFUSED: ["400"], UNAVAILABLE[0]: ["503"]})
    assert first.status == "failed_errors"  # 4 of 12
    _, again, seen = _run(monkeypatch, tmp_path, replace(bench, max_error_rate=0.5), model, {})
    assert seen == {} and again.status == "done" and again.metrics["n"] == first.metrics["n"]


@pytest.mark.integration
def test_the_cli_exits_1_over_the_budget_and_0_once_retry_errors_brings_it_under(ray_session, tmp_path):
    """`ragjudge run` as a user runs it, twice, on the session's Ray: the summary names the cell over its budget,
    and `--retry-errors` asks its 503 requests only."""
    import os
    import subprocess
    import sys

    from sweeps import write_sweep

    from jobs.store.run_root import open_run

    model = ("{name: flaky_api, path: flaky, kind: api, engine: http, api: {base_env: RAGJUDGE_TEST_FLAKY_BASE, "
             "key_env: RAGJUDGE_TEST_FLAKY_KEY, max_retries: 1}, batch_size: 12, num_cpus: 0.25}")
    sweep = write_sweep(tmp_path, "retry", [model], bench_extra=", max_error_rate: 0.2")
    root = str(tmp_path / "results")

    def ragjudge(script: dict[str, list[str]], *flags: str) -> tuple[subprocess.CompletedProcess, dict]:
        with ScriptedApi(script) as api:
            env = {**os.environ, "RAY_ADDRESS": ray_session.get_runtime_context().gcs_address,
                   "RAGJUDGE_TEST_FLAKY_BASE": api.base_url, "RAGJUDGE_TEST_FLAKY_KEY": "sk-flaky-0123456789"}
            done = subprocess.run([sys.executable, "-m", "jobs", "run", str(sweep), f"storage.root={root}", *flags],
                                  env=env, capture_output=True, text=True, timeout=600, check=False)
        return done, dict(api.seen)

    first, seen = ragjudge({**{key: ["503"] for key in UNAVAILABLE}, REFUSED: ["400"]})
    assert first.returncode == 1, first.stderr[-3000:]
    assert f"FAILED_ERRORS {CELL.replace('/', ' x ')}: 6 of 12 requests failed (50.0% > max_error_rate 20%); " \
           f"most common: {TOP} (4)" in first.stderr
    retried, seen = ragjudge({**{key: ["ok"] for key in UNAVAILABLE}, REFUSED: ["400"]}, "--retry-errors")
    assert retried.returncode == 0, retried.stderr[-3000:]
    assert seen == {UNAVAILABLE[0]: 2, UNAVAILABLE[1]: 2}
    assert open_run(f"{root}/retry").read_json(MANIFEST)["cells"][CELL]["status"] == "done"
