"""A thinking judge's rounds (jobs.flow.thinking_rounds): a trace cut at `reasoning.budget_tokens` is closed and its
answer asked for in a round of its own, and a `verdict: logprob` judge's log-probs are read after its trace in
another, each stored, resumed and kept in the answer store like any other round's; the benchmark reads the
closing answer's verdict and the verdict request's log-probs, never the trace's. The registered stand-in engine answers
(stand_in.py), its text written after a request's `continue_text` as every engine that continues a turn writes
it; the engines' own generation under a budget is tested with SmolLM2 (tests/jobs/engines/test_actors.py,
tests/jobs/engines/vllm/test_vllm_server_cache.py)."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from stand_in import run, stand_in_engine, stand_in_model

from benchmarks.rag_rewardbench import synthetic
from jobs.config import BenchmarkConfig
from jobs.config.reasoning import ReasoningSettings
from jobs.engines.reasoning import CLOSED, VERDICT, split_answer
from jobs.flow.thinking_rounds import closing_requests, merged_answers, verdict_requests

BUDGET = ReasoningSettings(budget_tokens=8)
RIGHT = {"cr": "Choose 1", "rc": "Choose 2"}  # the chosen response is first in `cr`, second in `rc`
WRONG = {"cr": "Choose 2", "rc": "Choose 1"}


def _request(variant: str) -> dict:
    return {"request_id": f"i#{variant}", "item_id": "i", "subset": "s", "variant": variant,
            "messages": [{"role": "user", "content": "q"}], "max_tokens": 32}


def _answer(variant: str, **columns) -> dict:
    return {"request_id": f"i#{variant}", "item_id": "i", "subset": "s", "variant": variant, "error": None,
            **columns}


def test_only_a_trace_cut_at_a_budget_is_closed_and_continued_after_its_end_delimiter():
    requests = [_request(v) for v in ("cut", "ended", "failed", "unasked")]
    answered = {"i#cut": _answer("cut", text=None, thinking="Choose 2, since", thinking_finished=False),
                "i#ended": _answer("ended", text="Choose 1", thinking="x", thinking_finished=True),
                "i#failed": _answer("failed", text=None, thinking=None, thinking_finished=None, error="boom")}
    assert closing_requests(requests, answered, lambda r: BUDGET) == [
        {**requests[0], "request_id": "i#cut+closed", "continue_text": "<think>\nChoose 2, since\n</think>\n\n"}]
    own = ReasoningSettings(start="[[plan]]", end="[[/plan]]", budget_tokens=8)
    [closing] = closing_requests(requests, answered, lambda r: own)
    assert closing["continue_text"] == "[[plan]]\nChoose 2, since\n[[/plan]]\n\n"
    assert closing_requests(requests, answered, lambda r: ReasoningSettings()) == []  # no budget: unfinished
    assert closing_requests(requests, answered, lambda r: None) == []  # a model that does not think


def test_the_benchmark_sees_one_answer_per_request_with_the_closing_answers_text():
    cut = _answer("cut", text=None, thinking="Choose 2, since", thinking_finished=False, thinking_tokens=8)
    closed = {**_answer("cut", text="Choose 1", thinking="Choose 2, since", thinking_finished=True,
                        thinking_tokens=0, retryable=False), "request_id": "i#cut" + CLOSED}
    failed_close = {**_answer("other", text=None, error="timeout", retryable=True), "request_id": "i#other" + CLOSED}
    other = _answer("other", text=None, thinking="t", thinking_finished=False, thinking_tokens=8)
    ended = _answer("ended", text="Choose 2", thinking="y", thinking_finished=True, thinking_tokens=3)
    merged = merged_answers({a["request_id"]: a for a in (cut, closed, other, failed_close, ended)})
    assert merged == [{**cut, "text": "Choose 1", "retryable": False},  # its own trace, counts and unfinished
                      {**other, "error": "timeout", "retryable": True}, ended]


def test_a_budget_needs_an_engine_that_continues_a_turn_and_is_one_token_or_more(tmp_path):
    from sweeps import write_sweep

    from jobs.config import ConfigError
    from jobs.loading import load_sweep

    def load(model: str):
        return load_sweep(write_sweep(tmp_path, "s", [f"{{name: judge, {model}}}"]))

    base = "path: p, kind: generative, engine: stand_in, reasoning: {budget_tokens: %s}"
    assert load(base % 64).models["judge"].reasoning.budget_tokens == 64
    with pytest.raises(ConfigError, match=r"reasoning.budget_tokens': 0 is not a number of tokens"):
        load(base % 0)
    with pytest.raises(ConfigError, match=r"reasoning.budget_tokens': .* engine http cannot do \(engine "
                                          r"stand_in or transformers or vllm can\)"):
        load("path: m, kind: api, engine: http, api: {base_env: B}, reasoning: {budget_tokens: 64}")


@pytest.fixture
def bench(tmp_path) -> BenchmarkConfig:
    pairs = list(synthetic.generate(scale=0.02, max_pairs=1))[:3]
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
    return BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(data)], bootstrap_resamples=10)


def _accuracies(metrics: dict) -> set[float]:
    """The accuracies of the cell's subsets (synthetic pairs are scored per subset only)."""
    return {entry["accuracy"] for entry in metrics["subsets"].values()}


def thinks_past_its_budget(request, model) -> str:
    """A trace that names the wrong response and never ends; after it is closed, the right verdict."""
    return RIGHT[request["variant"]] if request.get("continue_text") else f"<think>{WRONG[request['variant']]}, as"


def test_a_cut_trace_is_closed_in_a_round_of_its_own_and_its_verdict_read_after_it(tmp_path, bench, monkeypatch):
    calls = stand_in_engine(monkeypatch, thinks_past_its_budget)
    model = replace(stand_in_model(), reasoning=BUDGET)
    root, outcome = run(tmp_path, bench, model)
    first = sorted(f"{p['item_id']}#{order}" for p in root.read_rows("predictions", bench.name, "judge")
                   for order in ("cr", "rc"))
    assert len(first) == 6 and [sorted(call) for call in calls] == [first, [rid + CLOSED for rid in first]]
    assert outcome.status == "done" and _accuracies(outcome.metrics) == {1.0}  # the trace's picks: 0.0
    assert outcome.metrics["thinking"]["unfinished"] == 6 == outcome.metrics["thinking"]["traces"]
    rows = root.read_rows("predictions", bench.name, "judge")
    assert {(r["text_cr"], r["text_rc"]) for r in rows} == {("Choose 1", "Choose 2")}
    assert len(root.read_rows("requests", bench.name, "judge")) == 12  # both requests of each stored

    calls.clear()
    root.write_json("manifest.json", {"run": "run", "cells": {}, "attempts": 1})  # forget the cell was done
    _, again = run(tmp_path, bench, model)
    assert again.status == "done" and calls == [] and _accuracies(again.metrics) == {1.0}


def test_the_answer_store_keys_on_the_budget(tmp_path, bench, monkeypatch):
    calls = stand_in_engine(monkeypatch, thinks_past_its_budget)
    model = replace(stand_in_model(), reasoning=BUDGET)
    run(tmp_path, bench, model, run_name="a", cache=True)
    calls.clear()
    _, same = run(tmp_path, bench, model, run_name="b", cache=True)
    assert same.status == "done" and calls == [] and _accuracies(same.metrics) == {1.0}
    _, other = run(tmp_path, bench, replace(model, reasoning=ReasoningSettings(budget_tokens=16)), run_name="c",
                   cache=True)
    assert other.status == "done" and [len(call) for call in calls] == [6, 6]  # another budget: asked again


def test_the_log_prob_verdict_is_asked_after_a_trace_that_ended_or_was_closed():
    requests = [{**_request(v), "prefill": "Choose ", "candidates": ["1", "2"]} for v in ("ended", "closed", "cut")]
    answered = {"i#ended": _answer("ended", text="Choose 1", thinking="So 2", thinking_finished=True),
                "i#closed": _answer("closed", text=None, thinking="So", thinking_finished=False),
                "i#closed" + CLOSED: {**_answer("closed", text="Choose 2", thinking="So", thinking_finished=True),
                                      "request_id": "i#closed" + CLOSED},
                "i#cut": _answer("cut", text=None, thinking="no end", thinking_finished=False)}
    assert verdict_requests(requests, answered, lambda r: BUDGET) == [
        {**requests[0], "request_id": "i#ended+verdict", "max_tokens": 1, "continue_text": "<think>\nSo 2\n</think>\n\n"},
        {**requests[1], "request_id": "i#closed+verdict", "max_tokens": 1, "continue_text": "<think>\nSo\n</think>\n\n"}]
    assert verdict_requests([_request("ended")], answered, lambda r: BUDGET) == []  # no prefill, no verdict
    assert verdict_requests(requests, answered, lambda r: None) == []  # its verdict is its text's
    answered["i#ended" + VERDICT] = {**_answer("ended", text="x", candidate_logprobs=[-0.2, -1.9]),
                                     "request_id": "i#ended" + VERDICT}
    assert merged_answers(answered)[0] == {**answered["i#ended"], "candidate_logprobs": [-0.2, -1.9]}


def test_log_probs_read_after_the_prompt_are_dropped_and_a_verdict_requests_are_kept():
    read = {"request_id": "i#cr", "text": "<think>Choose 1</think>Choose 2", "candidate_logprobs": [-0.1, -3.0]}
    assert split_answer(read, BUDGET)["candidate_logprobs"] is None  # read inside the trace
    after = {**read, "request_id": "i#cr" + VERDICT}
    assert split_answer(after, BUDGET)["candidate_logprobs"] == [-0.1, -3.0]


def test_a_logprob_judges_verdict_requests_continue_after_its_trace_and_are_asked_once(tmp_path, bench,
                                                                                       monkeypatch):
    asked = []

    def ends_its_trace(request, model) -> str:
        asked.append((request["request_id"], request.get("continue_text"), request.get("max_tokens")))
        return "x" if request.get("continue_text") else f"<think>{WRONG[request['variant']]}</think>Choose 1"

    calls = stand_in_engine(monkeypatch, ends_its_trace)
    model = replace(stand_in_model(), reasoning=ReasoningSettings(), verdict="logprob")
    root, outcome = run(tmp_path, bench, model)
    first = sorted(f"{p['item_id']}#{order}" for p in root.read_rows("predictions", bench.name, "judge")
                   for order in ("cr", "rc"))
    assert outcome.status == "done" and [sorted(call) for call in calls] == [first, [rid + VERDICT for rid in first]]
    closed = {rid + VERDICT: f"<think>\n{WRONG[rid[-2:]]}\n</think>\n\n" for rid in first}
    assert sorted(a for a in asked if a[0].endswith(VERDICT)) == sorted((rid, text, 1) for rid, text in closed.items())
    assert len(root.read_rows("requests", bench.name, "judge")) == 12
    calls.clear()
    root.write_json("manifest.json", {"run": "run", "cells": {}, "attempts": 1})
    _, again = run(tmp_path, bench, model)
    assert again.status == "done" and calls == []
