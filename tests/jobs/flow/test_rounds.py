"""Protocols with rounds (generate, then judge, then judge each statement): a cell answers a benchmark's
`followup` requests round by round, stores every answer, resumes without asking twice, and stops a benchmark
that never settles. The registered stand-in engine answers instantly (stand_in.py); the real engines are
tested in test_pipeline.py and test_judge_benchmarks_run.py."""
from __future__ import annotations

from pathlib import Path

import pytest
import rounds_stub
from stand_in import run, stand_in_engine

from jobs.config import BenchmarkConfig, ModelConfig, StorageConfig, SweepConfig
from jobs.flow.rounds import MAX_ROUNDS
from jobs.loading import conf_folders
from jobs.sweep import cell as cells
from jobs.sweep.pipeline import route_models


@pytest.fixture
def stub(monkeypatch):
    return rounds_stub.register(monkeypatch)


@pytest.fixture
def engine(monkeypatch):
    """Answers each request with 'answer to <prompt>' and records the requests of every call (one per round)."""
    return stand_in_engine(monkeypatch)


def test_rounds_follow_each_other_until_every_request_is_answered(tmp_path, stub, engine):
    root, outcome = run(tmp_path, stub())
    assert [sorted(call) for call in engine] == [
        [f"stub/{i}#generate" for i in range(3)], [f"stub/{i}#judge" for i in range(3)],
        [f"stub/{i}#verdict" for i in range(3)]]
    assert outcome.status == "done" and outcome.metrics["accuracy"] == 1.0  # combine saw all three rounds
    row = next(r for r in root.read_rows("predictions", "stub", "judge") if r["item_id"] == "stub/0")
    assert row["texts"]["verdict"] == "answer to verdict on: answer to judge: answer to question stub/0"
    assert len(root.read_rows("requests", "stub", "judge")) == 9


def test_a_resumed_cell_asks_nothing_twice(tmp_path, stub, engine):
    run(tmp_path, stub(), run_name="first")
    engine.clear()
    root, outcome = run(tmp_path, stub(), run_name="first")
    assert outcome.status == "cached" and engine == []
    root.write_json("manifest.json", {"run": "first", "cells": {}, "attempts": 1})  # forget the cell was done
    _, outcome = run(tmp_path, stub(), run_name="first")
    assert outcome.status == "done" and engine == [] and outcome.metrics["accuracy"] == 1.0


def test_a_followup_that_never_settles_is_stopped(tmp_path, stub, engine):
    _, outcome = run(tmp_path, stub(endless=True))
    assert outcome.status == "failed" and f"after {MAX_ROUNDS} rounds" in outcome.message


def test_requests_routed_to_a_judge_are_answered_by_that_judge_and_stored_in_the_cell(tmp_path, stub,
                                                                                     monkeypatch):
    calls = []

    def reply(request, model):
        calls.append((model.name, request["request_id"]))
        return f"{model.name} on {request['variant']}"

    stand_in_engine(monkeypatch, reply)
    critic = ModelConfig(name="critic", path="q", kind="generative", engine="stand_in")
    root, outcome = run(tmp_path, stub(routed=True), judges={"critic": critic})
    assert outcome.status == "done"
    assert calls == [("judge", f"stub/{i}#generate") for i in range(3)] + [
        ("critic", f"stub/{i}#judge") for i in range(3)]
    row = next(r for r in root.read_rows("predictions", "stub", "judge") if r["item_id"] == "stub/1")
    assert row["texts"] == {"generate": "judge on generate", "judge": "critic on judge"}
    assert len(root.read_rows("requests", "stub", "judge")) == 6  # the judge's answers belong to the cell
    _, unrouted = run(tmp_path, stub(routed=True), run_name="other")
    assert unrouted.status == "failed" and "did not name as judges (critic)" in unrouted.message


def test_route_models_find_judges_in_the_sweep_then_the_registry_and_name_the_bad_ones():
    bench = BenchmarkConfig(name="gen", module="mtrag_generation", data=["unused"], options={
        "judges": {"rb_llm": ["self", "gpt_4o_mini", "nobody", "tiny_classifier"], "idk": "mine", "ragas": "self"}})
    mine = ModelConfig(name="mine", path="p", kind="generative")
    sweep = SweepConfig(name="s", models={"mine": mine}, storage=StorageConfig(run="r"),
                        conf=[str(p) for p in conf_folders(Path("conf/sweeps/demo.yaml"))])
    judges, problems = route_models(bench, sweep)
    assert list(judges) == ["gpt_4o_mini", "mine"] and judges["mine"] is mine
    assert judges["gpt_4o_mini"].engine == "http"  # conf/models/gpt_4o_mini.yaml
    assert problems == ["benchmark 'gen': judge 'nobody' is neither a model of the sweep nor a conf/models entry",
                        "benchmark 'gen': judge 'tiny_classifier' is a discriminative model, not a generative judge"]
    # a judge's identity is part of what the cell's answers depend on
    model = ModelConfig(name="m", path="p", kind="generative")
    other = ModelConfig(name="mine", path="other", kind="generative")
    assert cells.answers_hash(bench, model, {"mine": mine}) != cells.answers_hash(bench, model, {"mine": other})
    assert cells.answers_hash(bench, model, {"mine": mine}) != cells.answers_hash(bench, model)
