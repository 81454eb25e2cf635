"""No secret in any file of a run made against an endpoint that echoes them (issue 42, item 1).

An API judge whose key sits in a variable with no secret-looking name (JUDGE_KEY) and whose base URL carries a
user:password is run through the pipeline against a loopback endpoint that answers 400 quoting the request's
headers (the key as `Bearer`, the URL's credentials as `Basic` base64). Every file of the run, and what the run
printed, is searched for each secret raw, URL-encoded and base64-encoded.
"""
from __future__ import annotations

import base64
from urllib.parse import quote, quote_plus

import pytest
from loopback import ScriptedApi
from sweeps import write_sweep

from jobs.store.redaction import DECLARED

KEY = "judge-k3y+/Zq9w8e7r6t5y4"
USER, PASSWORD = "alice", "Op3n:S3same/77"


def _forms(secret: str) -> set[bytes]:
    """The secret raw, URL-encoded and base64-encoded, as bytes to look for in files."""
    return {form.encode() for form in (secret, quote(secret, safe=""), quote_plus(secret),
                                       base64.b64encode(secret.encode()).decode().rstrip("="),
                                       base64.urlsafe_b64encode(secret.encode()).decode().rstrip("="))}


@pytest.mark.integration
def test_a_run_against_an_echoing_endpoint_stores_no_secret_in_any_form(ray_session, tmp_path, monkeypatch, capfd):
    from jobs.loading import load_sweep
    from jobs.store.run_root import RunRoot
    from jobs.sweep.pipeline import run_sweep

    monkeypatch.setenv(DECLARED, "")  # what this load declares ends with the test
    with ScriptedApi({"": ["echo headers"]}) as api:
        port = api.server_address[1]
        monkeypatch.setenv("JUDGE_BASE", f"http://{USER}:{quote(PASSWORD, safe='')}@127.0.0.1:{port}/v1")
        monkeypatch.setenv("JUDGE_KEY", KEY)
        judge = ("{name: echo_judge, path: gpt-echo, kind: api, engine: http, api: {base_env: JUDGE_BASE, "
                 "key_env: JUDGE_KEY, max_retries: 0}, batch_size: 4, num_cpus: 0.25}")
        sweep_file = write_sweep(tmp_path, "leak", [judge],
                                 storage=f'root: "{tmp_path / "results"}"', bench_extra=", limit: 2")
        [outcome] = run_sweep(load_sweep(sweep_file))
    printed = capfd.readouterr()
    run = RunRoot(str(tmp_path / "results"), "leak")
    errors = run.read_rows("errors", "rag_rewardbench", "echo_judge")
    answers = run.read_rows("requests", "rag_rewardbench", "echo_judge")
    # The endpoint was reached and its echo stored, scrubbed: the test sees what it claims to.
    assert api.seen[""] == 4 and len(answers) == 4 and outcome.status == "failed_errors", outcome
    assert errors and all("HTTP 400" in e["error"] and "bad request; headers" in e["error"] for e in errors)
    files = [p for p in (tmp_path / "results").rglob("*") if p.is_file()]
    assert len(files) >= 5  # manifest, requests, predictions, errors, metrics (and the report)
    stored = {p: p.read_bytes() for p in files} | {"stdout": printed.out.encode(), "stderr": printed.err.encode()}
    for secret in (KEY, PASSWORD, f"{USER}:{PASSWORD}"):
        for form in _forms(secret):
            leaks = [str(where) for where, data in stored.items() if form in data]
            assert not leaks, f"{form!r} of a secret in {leaks}"
    assert all("[redacted]" in a["error"] for a in answers)
