"""The batch engines (openai_batch, anthropic_batch) through a whole cell: a RAG-RewardBench cell of 6 items (12
requests) runs as a sweep runs it (jobs.sweep.cell.run_cell, the engines' own code, the real openai client and
httpx) against tests/batch_api.BatchServer on 127.0.0.1. Covered: upload, create, the states polled to the end, the
results mapped back by custom_id (the server answers each request with a verdict and token count of its
own, in a shuffled order: every answered row is checked against its request), items the provider failed or did
not run as error rows, a batch that failed validation, and a driver stopped while the batch runs: the rerun
polls the same batch, created once."""
from __future__ import annotations

import json
import signal
import threading
import time

import pytest
from batch_api import ANTHROPIC_PATH, OPENAI_PATH, BatchServer, answer_to
from stand_in import run
from sweeps import SAMPLE
from worker_models import worker

from jobs.config import BenchmarkConfig, ModelConfig
from jobs.engines.anthropic_batch.engine import AnthropicBatches
from jobs.engines.http.settings import ApiSettings, BatchSettings

KEY = "sk-batch-test-5e1f0a9c77"
ERRORED, LATE = "Hugh Hilton Goodwin", "Gun laws in Michigan"  # items 1 and 3 (both their requests)
ENGINES = ["openai_batch", "anthropic_batch"]
# The custom_id each engine sends for a request_id: OpenAI takes the request_id, Anthropic a digest of ids it
# does not take (with '#').
CUSTOM_ID = {"openai_batch": str,
             "anthropic_batch": AnthropicBatches(worker(timeout_s=1.0), "http://127.0.0.1", "-").custom_id}


def _model(engine: str, **settings) -> ModelConfig:
    max_wait = {"max_wait_s": settings.pop("batch_max_wait_s")} if "batch_max_wait_s" in settings else {}
    return ModelConfig(name="batch_judge", path="judge-model", kind="api", engine=engine,
                       api=ApiSettings(base_env="RAGJUDGE_TEST_BATCH_BASE", key_env="RAGJUDGE_TEST_BATCH_KEY",
                                       max_retries=1, timeout_s=10.0),
                       batch=BatchSettings(poll_s=0.01, **max_wait), **settings)


def _bench() -> BenchmarkConfig:
    return BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(SAMPLE)],
                           bootstrap_resamples=10)


def _run(tmp_path, monkeypatch, api: BatchServer, model: ModelConfig):
    monkeypatch.setenv("RAGJUDGE_TEST_BATCH_BASE", api.base_url)
    monkeypatch.setenv("RAGJUDGE_TEST_BATCH_KEY", KEY)
    root, outcome = run(tmp_path / "results", _bench(), model)
    return root, outcome, {a["request_id"]: a for a in root.read_rows("requests", "rag_rewardbench", model.name)}


def _manifest(tmp_path) -> dict:
    return json.loads((tmp_path / "results" / "run" / "manifest.json").read_text())


def _answered_as_asked(engine: str, answers: dict[str, dict]) -> None:
    """Every row the batch answered holds the answer the server gave that row's own request
    (batch_api.answer_to of its custom_id); the server returns results out of order, so an answer mapped to a
    request by position fails here."""
    answered = {rid: a for rid, a in answers.items() if not a["error"]}
    assert answered
    for rid, answer in answered.items():
        assert (answer["text"], answer["n_tokens"]) == answer_to(CUSTOM_ID[engine](rid)), rid


def _no_key_stored(tmp_path) -> None:
    stored = b"".join(p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file())
    assert stored and KEY.encode() not in stored


@pytest.mark.parametrize("engine", ENGINES)
def test_a_batch_is_submitted_polled_to_its_end_and_mapped_back_with_failed_items_as_error_rows(
        engine, tmp_path, monkeypatch):
    with BatchServer(errored=ERRORED) as api:
        root, outcome, answers = _run(tmp_path, monkeypatch, api, _model(engine))
    assert outcome.status == "failed_errors" and "max_error_rate" in outcome.message, outcome.message  # over 2%
    [batch] = api.batches.values()
    assert api.creates == 1 and api.uploads == (engine == "openai_batch")
    path = (OPENAI_PATH if engine == "openai_batch" else ANTHROPIC_PATH)["completed"]
    assert batch["states"] == path[1:]  # polled through every state after the one create answered
    assert len(answers) == len(batch["requests"]) == 12
    failed = {rid: a["error"] for rid, a in answers.items() if a["error"]}
    assert sorted(rid.split("#")[0][-1] for rid in failed) == ["1", "1"]
    detail = "scripted 500" if engine == "openai_batch" else "api_error: scripted internal error"
    assert set(failed.values()) == {f"api: HTTP 500 (model 'batch_judge'): {detail}"}
    assert all(answers[rid]["retryable"] for rid in failed)  # a provider's 500: `--retry-errors` asks again
    _answered_as_asked(engine, answers)
    assert sorted(r["item_id"][-1] for r in root.read_rows("errors", "rag_rewardbench", "batch_judge")) == ["1"]
    assert any(KEY in value for value in api.header_values)  # sent to the provider (its header), stored nowhere
    _no_key_stored(tmp_path)
    assert "batches" not in _manifest(tmp_path) or not _manifest(tmp_path)["batches"]  # done with: forgotten


def test_openai_batch_file_holds_chat_completion_bodies_keyed_by_request_id(tmp_path, monkeypatch):
    with BatchServer() as api:
        _, outcome, answers = _run(tmp_path, monkeypatch, api, _model("openai_batch", max_new_tokens=5))
    assert outcome.status == "done", outcome.message
    [uploaded] = api.files.values().__iter__().__next__().splitlines()[:1]
    line = json.loads(uploaded)
    assert line["method"] == "POST" and line["url"] == "/v1/chat/completions" and line["custom_id"] in answers
    assert line["body"]["model"] == "judge-model" and line["body"]["max_tokens"] == 5
    assert line["body"]["messages"][-1]["role"] == "user"
    _answered_as_asked("openai_batch", answers)


def test_anthropic_batch_params_are_a_messages_body_with_custom_ids_anthropic_takes(tmp_path, monkeypatch):
    with BatchServer() as api:
        _, outcome, answers = _run(tmp_path, monkeypatch, api, _model("anthropic_batch", max_new_tokens=5))
    assert outcome.status == "done", outcome.message
    [batch] = api.batches.values()
    for custom_id, params in batch["requests"].items():
        assert len(custom_id) <= 64 and custom_id.replace("-", "").replace("_", "").isalnum()
        assert params["model"] == "judge-model" and params["max_tokens"] == 5 and "seed" not in params
        assert all(m["role"] in ("user", "assistant") for m in params["messages"])
    assert len(answers) == 12 and not any(a["error"] for a in answers.values())
    _answered_as_asked("anthropic_batch", answers)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("end", ["expired", "cancelled"])
def test_requests_an_ended_batch_did_not_run_are_error_rows(engine, end, tmp_path, monkeypatch):
    with BatchServer(end=end, late=LATE) as api:
        _, outcome, answers = _run(tmp_path, monkeypatch, api, _model(engine))
    assert outcome.status == "failed_errors" and "max_error_rate" in outcome.message, outcome.message  # over 2%
    [batch] = api.batches.values()
    path = (OPENAI_PATH if engine == "openai_batch" else ANTHROPIC_PATH)[end]
    assert batch["states"] == path[1:]
    word = end if engine == "openai_batch" or end == "expired" else "canceled"  # Anthropic's spelling
    failed = {rid: a["error"] for rid, a in answers.items() if a["error"]}
    assert sorted(rid.split("#")[0][-1] for rid in failed) == ["3", "3"]
    assert set(failed.values()) == {f"api: batch {word} (model 'batch_judge')"}
    assert {answers[rid]["retryable"] for rid in failed} == {end == "expired"}  # a cancel is the user's choice
    _answered_as_asked(engine, answers)


def test_a_batch_that_failed_validation_fails_every_row_with_the_providers_reason(tmp_path, monkeypatch):
    with BatchServer(end="failed") as api:
        _, outcome, answers = _run(tmp_path, monkeypatch, api, _model("openai_batch"))
    assert outcome.status == "failed_errors" and "max_error_rate" in outcome.message, outcome.message  # over 2%
    [batch] = api.batches.values()
    assert batch["states"] == ["failed"]
    assert len(answers) == 12 and {a["error"] for a in answers.values()} == {
        "api: batch failed (model 'batch_judge'): scripted: the file did not validate"}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_results_line_that_is_not_json_is_counted_and_its_request_is_an_error_row(engine, tmp_path, monkeypatch,
                                                                                    capsys):
    with BatchServer(unreadable=ERRORED) as api:
        _, outcome, answers = _run(tmp_path, monkeypatch, api, _model(engine))
    assert outcome.status == "failed_errors" and "max_error_rate" in outcome.message, outcome.message  # over 2%
    failed = {rid: a["error"] for rid, a in answers.items() if a["error"]}
    assert sorted(rid.split("#")[0][-1] for rid in failed) == ["1", "1"] and len(answers) == 12
    assert set(failed.values()) == {"api: the batch has no result for this request (model 'batch_judge')"}
    assert "2 lines of batch" in capsys.readouterr().out
    _answered_as_asked(engine, answers)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_rerun_polls_the_batch_a_stopped_run_submitted_instead_of_submitting_again(engine, tmp_path, monkeypatch):
    held = threading.Event()
    with BatchServer(hold=held) as api:
        _, first, answers = _run(tmp_path, monkeypatch, api, _model(engine, batch_max_wait_s=0.3))
        assert first.status == "failed" and "still in_progress after 0.3 s (batch.max_wait_s)" in first.message
        assert not answers
        [batch_id] = api.batches
        kept = _manifest(tmp_path)["batches"]["rag_rewardbench/batch_judge"]["self"]
        assert kept["id"] == batch_id and kept["state"] == "in_progress" and KEY not in json.dumps(kept)
        polls_before = api.polls[batch_id]
        held.set()  # the provider finishes while no driver runs
        _, second, answers = _run(tmp_path, monkeypatch, api, _model(engine, batch_max_wait_s=0.3))
    assert second.status == "done", second.message
    assert api.creates == 1 and list(api.batches) == [batch_id] and api.polls[batch_id] > polls_before
    assert len(answers) == 12 and not any(a["error"] for a in answers.values())
    assert not _manifest(tmp_path).get("batches")
    _no_key_stored(tmp_path)
    _answered_as_asked(engine, answers)


def test_a_batch_submitted_for_other_answers_is_not_polled_again(tmp_path, monkeypatch):
    """max_new_tokens changes the answers (answers_hash): the kept batch was asked for the old ones."""
    held = threading.Event()
    with BatchServer(hold=held) as api:
        _, first, _ = _run(tmp_path, monkeypatch, api, _model("openai_batch", batch_max_wait_s=0.3))
        assert first.status == "failed"
        held.set()
        _, second, answers = _run(tmp_path, monkeypatch, api,
                                  _model("openai_batch", batch_max_wait_s=5.0, max_new_tokens=8))
    assert second.status == "done", second.message
    assert api.creates == 2 and len(answers) == 12
    [old, new] = api.batches.values()
    assert {body["max_tokens"] for body in new["requests"].values()} == {8} != {
        body["max_tokens"] for body in old["requests"].values()}
    _answered_as_asked("openai_batch", answers)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_kept_batch_the_provider_no_longer_knows_is_submitted_again(engine, tmp_path, monkeypatch, capsys):
    held = threading.Event()
    with BatchServer(hold=held) as api:
        _, first, _ = _run(tmp_path, monkeypatch, api, _model(engine, batch_max_wait_s=0.3))
        assert first.status == "failed"
        [gone] = api.batches
        api.batches.clear()  # deleted at the provider (its retention ran out): a poll of it is a 404
        held.set()
        _, second, answers = _run(tmp_path, monkeypatch, api, _model(engine, batch_max_wait_s=5.0))
    assert second.status == "done", second.message
    assert api.creates == 2 and len(answers) == 12 and not any(a["error"] for a in answers.values())
    assert f"the provider no longer knows batch {gone}" in capsys.readouterr().out
    _answered_as_asked(engine, answers)


def test_a_run_stopped_by_a_signal_while_its_batch_runs_is_resumed_by_polling_that_batch(tmp_path, monkeypatch):
    """The stop of SIGTERM/SIGINT (jobs.sweep.interrupt.Stop) while the provider holds the batch in_progress."""
    from jobs.config import StorageConfig, SweepConfig
    from jobs.store.manifest import Manifest
    from jobs.store.run_root import RunRoot
    from jobs.sweep.cell import Cell, run_cell
    from jobs.sweep.interrupt import Stop

    held, stop = threading.Event(), Stop()
    with BatchServer(hold=held) as api:
        monkeypatch.setenv("RAGJUDGE_TEST_BATCH_BASE", api.base_url)
        monkeypatch.setenv("RAGJUDGE_TEST_BATCH_KEY", KEY)
        settings = StorageConfig(run="run", root=str(tmp_path / "results"))
        root = RunRoot.of(settings)
        cell = Cell(root, Manifest(root, SweepConfig(name="test", storage=settings)), _bench(),
                    _model("openai_batch", batch_max_wait_s=3.0), flush_every=2, stop=stop)

        def stop_once_submitted() -> None:
            while not api.polls:  # the batch is submitted and polled: the driver now only waits
                time.sleep(0.01)
            stop.request(signal.SIGTERM)

        threading.Thread(target=stop_once_submitted, daemon=True).start()
        first = run_cell(cell)
        assert first.status == "interrupted", first.message
        [batch_id] = api.batches
        assert _manifest(tmp_path)["batches"]["rag_rewardbench/batch_judge"]["self"]["id"] == batch_id
        held.set()
        _, second, answers = _run(tmp_path, monkeypatch, api, _model("openai_batch", batch_max_wait_s=3.0))
    assert second.status == "done", second.message
    assert api.creates == 1 and len(answers) == 12
    _answered_as_asked("openai_batch", answers)


@pytest.mark.parametrize("engine", ENGINES)
def test_retry_errors_sends_a_new_batch_of_only_the_items_the_provider_failed(engine, tmp_path, monkeypatch):
    with BatchServer(errored=ERRORED) as api:
        _, first, _ = _run(tmp_path, monkeypatch, api, _model(engine))
    assert first.status == "failed_errors"
    with BatchServer() as api:
        monkeypatch.setenv("RAGJUDGE_TEST_BATCH_BASE", api.base_url)
        root, second = run(tmp_path / "results", _bench(), _model(engine), retry_errors=True)
    assert second.status == "done", second.message
    [batch] = api.batches.values()
    assert api.creates == 1 and len(batch["requests"]) == 2  # item 1's two orders, nothing else
    answers = {a["request_id"]: a for a in root.read_rows("requests", "rag_rewardbench", "batch_judge")}
    assert len(answers) == 12  # rows of both runs; the newer answer of each request wins when read back
    assert second.metrics["n_errors"] == 0
    _answered_as_asked(engine, answers)


def test_a_batch_still_running_says_so_while_it_is_waited_for(tmp_path, monkeypatch, capsys):
    """The wait on a provider's batch is bounded (batch.max_wait_s) and says what it waits for (issue 64)."""
    from jobs.engines import batch

    monkeypatch.setattr(batch, "WAIT_LINE_S", 0.05)
    with BatchServer(hold=threading.Event()) as api:
        _, first, _ = _run(tmp_path, monkeypatch, api, _model("openai_batch", batch_max_wait_s=0.3))
    assert first.status == "failed"
    [batch_id] = api.batches
    waiting = [line for line in capsys.readouterr().out.splitlines() if "still in_progress: " in line]
    assert waiting and waiting[0] == (f"model 'batch_judge': batch {batch_id} still in_progress: 0 min of 0 min "
                                      "(batch.max_wait_s)"), waiting
