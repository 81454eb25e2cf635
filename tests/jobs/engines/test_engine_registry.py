"""The engine registry (jobs.engines.base): an engine registered by name is a config choice, answers its models'
requests, and brings its own rules; settings say next to themselves what changing them does."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields

import pytest

from benchmarks.row_types import RecordError
from jobs.config import (
    KINDS,
    METRIC_SETTINGS,
    PLAN_SETTINGS,
    RUN_SETTINGS,
    SECTIONS,
    BenchmarkConfig,
    ConfigError,
    ModelConfig,
    protocol_kind,
    to_dict,
)
from jobs.engines.answering import answer_requests
from jobs.engines.base import Engine, engine_of, engines
from jobs.loading import load_model


class Echo(Engine):
    """A new engine as a user would add one: a name, its kinds, a setting of its own, an answer."""

    name = "echo"
    kinds = frozenset({"generative"})
    separate_tokenizer = True
    weights = False

    def own_setting_problems(self, model):
        return [("tokenizer", "must name a folder")] if model.tokenizer and "/" not in model.tokenizer else []

    def answer(self, requests, model, log, host) -> Iterator[dict]:
        for r in requests:
            answer = {key: r[key] for key in ("request_id", "item_id", "subset", "variant")}
            if r["messages"][0]["content"] == "fail":
                yield {**answer, "error": "context overflow"}  # a failed answer carries no text
            elif r["messages"][0]["content"] == "forget":
                yield {**answer, "error": None}  # an answer that did not fail and lacks its text: a bug
            else:
                yield {**answer, "text": f"echo {r['messages'][0]['content']}", "error": None}


@pytest.fixture
def echo(monkeypatch):
    # The registry holds the one engine that reads `tokenizer` today (transformers); the new engine takes it over.
    monkeypatch.delitem(engines(), "transformers")
    monkeypatch.setitem(engines(), "echo", Echo())


def _model(**settings) -> dict:
    return {**to_dict(ModelConfig(name="m", path="p", kind="generative")), **settings}


def test_an_unregistered_engine_is_no_choice():
    with pytest.raises(ConfigError, match=r"key 'models\.m\.engine': 'echo' is not one of anthropic_batch, "
                                          r"bm25, http, openai_batch, sentence_transformers, stand_in, transformers, "
                                          r"vllm$"):
        load_model(_model(engine="echo"), "inline")


def test_a_registered_engine_is_a_choice_with_its_own_kinds_and_settings(echo):
    model = load_model(_model(engine="echo", tokenizer="org/tok"), "inline")
    assert engine_of(model).name == "echo"
    with pytest.raises(ConfigError, match=r"models\.m\.kind': 'implicit' does not go with engine echo: kind implicit "
                                          r"runs on engine stand_in or vllm, and engine echo runs only kind generative"):
        load_model(_model(engine="echo", kind="implicit"), "inline")
    with pytest.raises(ConfigError, match=r"models\.m\.tokenizer': must name a folder"):
        load_model(_model(engine="echo", tokenizer="tok"), "inline")
    with pytest.raises(ConfigError, match=r"models\.m\.tokenizer': only engine echo loads a separate tokenizer, not kind "
                                          r"generative on engine vllm"):
        load_model(_model(tokenizer="org/tok"), "inline")


def _request(content: str, **drop) -> dict:
    request = {"request_id": f"r-{content}", "item_id": "i1", "subset": "s", "variant": "v",
               "messages": [{"role": "user", "content": content}]}
    return {key: value for key, value in request.items() if key not in drop}


def test_a_registered_engine_answers_its_models_requests(echo):
    model = load_model(_model(engine="echo"), "inline")
    answers = list(answer_requests([_request("hi"), _request("fail")], model))
    assert [(a["request_id"], a.get("text"), a["error"]) for a in answers] == [
        ("r-hi", "echo hi", None), ("r-fail", None, "context overflow")]


def test_rows_are_checked_where_they_enter_and_leave_the_engine(echo):
    model = load_model(_model(engine="echo"), "inline")
    with pytest.raises(RecordError, match=r"engine echo \(model m\): request request_id 'r-hi' lacks 'variant'"):
        answer_requests([_request("hi", variant=None)], model)
    with pytest.raises(RecordError, match=r"engine echo \(model m\): answer request_id 'r-forget' lacks 'text'"):
        list(answer_requests([_request("hi"), _request("forget")], model))


def test_a_retriever_answers_no_requests():
    model = ModelConfig(name="bm25", path="bm25", kind="retriever", engine="bm25")
    with pytest.raises(ValueError, match="engine 'bm25' answers no requests"):
        answer_requests([], model)


def test_each_kind_means_one_protocol_kind_and_one_task():
    assert {k: (v.protocol, v.task) for k, v in KINDS.items()} == {
        "discriminative": ("discriminative", "classify"), "generative": ("generative", "judge"),
        "implicit": ("implicit", "logprobs"), "api": ("generative", "judge"), "retriever": ("retriever", None)}
    assert protocol_kind(ModelConfig(name="m", path="p", kind="api", engine="http")) == "generative"


def test_every_setting_says_what_changing_it_changes():
    assert {"batch_size", "num_gpus", "tensor_parallel_size", "max_retries", "note"} <= RUN_SETTINGS
    assert not {"path", "dtype", "engine_args", "max_model_len", "chat_template", "head"} & RUN_SETTINGS
    assert METRIC_SETTINGS == {"limit", "bootstrap_resamples", "max_error_rate"} and PLAN_SETTINGS == {"size", "plan_sample"}
    # a section's keys by their flat names (what the answers hash reads)
    marked = {f.metadata.get("flat", f.name): f.metadata["changes"]
              for schema in (ModelConfig, BenchmarkConfig, *SECTIONS.values()) for f in fields(schema)
              if "changes" in f.metadata}
    assert set(marked) == RUN_SETTINGS | METRIC_SETTINGS | PLAN_SETTINGS
