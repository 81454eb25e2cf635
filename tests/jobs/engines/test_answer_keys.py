"""The engines' side of the named rows (benchmarks.row_types): what they read from a request is declared there,
and the answers they build have the keys of their task. Hand-built engine rows and stand-in engines: no model."""
from __future__ import annotations

import numpy as np
import pytest
from worker_models import worker

from actors.sampling import REQUEST_INPUTS
from benchmarks.row_types import (
    ANSWER_BASE_KEYS,
    ANSWER_KEYS,
    PART_KEYS,
    Answer,
    JudgePart,
    PromptAnswer,
    Request,
    answer_keys,
    check_keys,
)
from jobs.engines.http.client import Answered, HttpJudge, Secret
from jobs.engines.transformers.heads import HEADS
from jobs.engines.transformers.scorers import RequestScorer
from jobs.engines.vllm import stage as vllm_stage

REQUEST = {"request_id": "rrb/1#cr", "item_id": "rrb/1", "subset": "s", "variant": "cr",
           "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}


def test_what_engines_read_and_carry_is_declared():
    assert set(REQUEST_INPUTS) <= Request.__required_keys__ | Request.__optional_keys__
    assert set(vllm_stage.ANSWER_COLUMNS) <= Answer.__required_keys__ | Answer.__optional_keys__
    for name, head in HEADS.items():
        assert ANSWER_KEYS["classify"] <= set(head.columns) <= PromptAnswer.__optional_keys__, name


def test_a_judge_request_splits_into_declared_parts():
    parts = vllm_stage.split_judge_request({**REQUEST, "prefill": "Choose ", "candidates": ["1", "2"]})
    assert [p["part"] for p in parts] == ["text", "verdict"]
    check_keys(parts, JudgePart.__required_keys__, "split_judge_request", "request")


def _engine_row(**columns):
    """A prepared row as the vLLM server returns it (jobs.engines.vllm.stage.prepare, then the engine's columns)."""
    return {"ragjudge_request_id": REQUEST["request_id"], **{k: REQUEST[k] for k in ("item_id", "subset", "variant")},
            "n_tokens": 5, "error": None, "truncated": False, **columns}


@pytest.mark.parametrize("task, row, columns", [
    ("classify", _engine_row(embeddings=[0.5]), ANSWER_KEYS["classify"]),
    ("judge", _engine_row(part="text", n_parts=2, generated_text="Choose 1"), {"text", *PART_KEYS}),
    ("judge", _engine_row(part="verdict", n_parts=2, candidate_ids=[1, 2], logprobs=[{"1": {"logprob": -0.1}}]),
     {"candidate_logprobs", *PART_KEYS}),  # merge_parts joins it to the text part's answer
    ("logprobs", _engine_row(response_start=1, prompt_logprobs=[None, {"3": {"logprob": -1.0}}]),
     ANSWER_KEYS["logprobs"]),
], ids=["classify", "judge-text", "judge-verdict", "logprobs"])
def test_a_vllm_answer_has_its_tasks_keys(task, row, columns):
    answer = vllm_stage.read_answer(row, task, vllm_stage.ANSWER_COLUMNS)
    check_keys([answer], ANSWER_BASE_KEYS | columns, "vllm", "answer")


def test_a_vllm_reference_pass_adds_the_reference_keys():
    row = _engine_row(response_start=1, prompt_logprobs=[None, {"3": {"logprob": -1.0}}], logp_sum=-2.0,
                      logp_mean=-2.0, n_response_tokens=1)
    columns = vllm_stage.ANSWER_COLUMNS + tuple(ANSWER_KEYS["logprobs"])
    answer = vllm_stage.read_answer(row, "logprobs", columns, prefix="ref_")
    check_keys([answer], answer_keys("logprobs", reference=True), "vllm reference", "answer")


def _batch(requests):
    return {key: np.array([r[key] for r in requests], dtype=object) for key in requests[0]}


def test_an_api_judges_answers_have_the_judge_keys():
    judge = HttpJudge(worker(name="api", max_retries=0, timeout_s=1, max_concurrency=1, max_new_tokens=8),
                      "http://127.0.0.1:9", Secret("k"))

    async def answer_all(conversations, samplings):
        usage = {"tries": ["HTTP 200"], "prompt_tokens": 3, "cached_prompt_tokens": 0, "generated_tokens": 2,
                 "thinking_tokens": 0}
        return [Answered({"text": "Choose 1", "error": None, "n_tokens": 3}, usage) for _ in conversations]

    judge._answer_all = answer_all
    out = judge(_batch([REQUEST, {**REQUEST, "request_id": "rrb/1#rc", "variant": "rc"}]))
    rows = [{key: values[i] for key, values in out.items()} for i in range(2)]
    check_keys(rows, answer_keys("judge", verdict=True), "http", "answer")


class _StandInEngine:
    """TransformersEngine's methods, answering every conversation the same way."""

    def classify(self, conversations):
        return [{"score": 1.0, "n_tokens": 3, "truncated": False, "error": None} for _ in conversations]

    def generate(self, conversations, samplings, trace_end=None, turns_so_far=None):
        return [{"text": "Choose 1", "n_tokens": 3, "truncated": False, "error": None} for _ in conversations]

    def verdict_logprobs(self, conversations, prefill, candidates, turns_so_far=None):
        return [{"candidate_logprobs": [-0.1, -2.0], "n_tokens": 4, "truncated": False, "error": None}
                for _ in conversations]

    def response_logprobs(self, conversations):
        return [{"logp_sum": -2.0, "logp_mean": -1.0, "n_response_tokens": 2, "n_tokens": 3, "truncated": False,
                 "error": None} for _ in conversations]


@pytest.mark.parametrize("kind, task, extra, reference", [
    ("discriminative", "classify", {}, False),
    ("generative", "judge", {"prefill": "Choose ", "candidates": ["1", "2"]}, False),
    ("implicit", "logprobs", {}, True),
])
def test_a_transformers_scorers_answers_have_their_tasks_keys(kind, task, extra, reference):
    scorer = RequestScorer.__new__(RequestScorer)  # no weights: the engine is a stand-in
    scorer.model, scorer.kind, scorer.engine = worker(max_new_tokens=8), kind, _StandInEngine()
    scorer.reference = _StandInEngine() if reference else None
    out = scorer(_batch([{**REQUEST, **extra}]))
    rows = [{key: values[0] for key, values in out.items()}]
    assert not set(REQUEST_INPUTS) & set(rows[0])
    check_keys(rows, answer_keys(task, verdict=bool(extra), reference=reference), "transformers", "answer")
