"""o1-style API models: the request body follows the model file's `api_params` (max_completion_tokens, no
temperature or top_p), against a scripted chat-completions server on 127.0.0.1 that records every body and,
like o1-mini, answers 400 to a request carrying a parameter it does not take."""
from __future__ import annotations

import json
import threading
from dataclasses import replace
from http.server import ThreadingHTTPServer
from typing import ClassVar

import pytest
from loopback import JsonHandler, serve
from worker_models import worker_of

from actors.sampling import text_sampling
from actors.worker_model import WorkerModel
from jobs.engines.http.client import HttpJudge, Secret, request_params
from jobs.loading import load_model

O1_REJECTS = ("max_tokens", "temperature", "top_p")


class _Recording(JsonHandler):
    """Records request bodies; with `reasoning`, rejects what o1-mini rejects (HTTP 400, as its API does)."""

    state: ClassVar[dict] = {}

    def do_POST(self) -> None:  # http.server's method name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.state["lock"]:
            self.state["bodies"].append(body)
        rejected = [key for key in O1_REJECTS if key in body] if self.state["reasoning"] else []
        if rejected:
            return self._reply(400, {"error": {"message": f"Unsupported parameter: '{rejected[0]}'",
                                               "type": "invalid_request_error", "param": rejected[0]}})
        self._reply(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": "Choose 1"}}],
                          "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})




@pytest.fixture
def server():
    servers = []

    def start(reasoning: bool):
        _Recording.state = {"lock": threading.Lock(), "bodies": [], "reasoning": reasoning}
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recording)
        serve(httpd)
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/v1", _Recording.state

    yield start
    for httpd in servers:
        httpd.shutdown()


def _batch(n: int = 2) -> dict:
    return {"request_id": [f"r{i}" for i in range(n)], "item_id": [f"i{i}" for i in range(n)],
            "messages": [[{"role": "user", "content": f"question {i}"}] for i in range(n)]}


def _o1() -> WorkerModel:
    return worker_of(load_model("o1_mini_2024_09_12", "test"), max_retries=0)


def test_request_params_rename_and_drop_as_the_model_file_says():
    sampling = {"max_tokens": 64, "temperature": 0.8, "top_p": 0.7, "seed": 3}
    assert request_params(sampling, {}) == sampling
    assert request_params(sampling, {"max_tokens": "max_completion_tokens", "temperature": None, "top_p": None}) == {
        "max_completion_tokens": 64, "seed": 3}


def test_an_o1_style_model_is_sent_max_completion_tokens_and_no_sampling_temperature(server):
    base, state = server(reasoning=True)
    model = _o1()
    out = HttpJudge(model, base, Secret("sk-test"))(_batch())
    assert out["text"] == ["Choose 1", "Choose 1"] and out["error"] == [None, None]
    for body in state["bodies"]:
        assert not set(O1_REJECTS) & set(body)
        assert body["max_completion_tokens"] == model.max_new_tokens == 4096
        assert body["model"] == "o1-mini-2024-09-12" and body["seed"] == 0


def test_a_benchmarks_sampling_reaches_an_ordinary_api_model_unchanged(server):
    base, state = server(reasoning=False)
    model = worker_of(load_model("gpt_4o", "test"), max_retries=0)
    row = {"temperature": 0.8, "top_p": 0.7, "seed": 11, "max_tokens": 40}
    batch = {**_batch(1), **{key: [value] for key, value in row.items()}}
    HttpJudge(model, base, Secret("sk-test"))(batch)
    [body] = state["bodies"]
    assert {key: body[key] for key in row} == text_sampling(row, model) == row


def test_without_api_params_a_reasoning_endpoint_refuses_and_the_row_says_why(server):
    base, _ = server(reasoning=True)
    model = replace(_o1(), api_params={})
    out = HttpJudge(model, base, Secret("sk-test"))(_batch(1))
    assert out["text"] == [None] and out["error"][0].startswith("api: HTTP 400")
    assert "max_tokens" in out["error"][0]
