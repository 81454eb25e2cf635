"""Protocols with rounds (generate, then judge, then judge each statement): jobs.pipeline answers a module's
`followup` requests round by round, stores every answer, resumes without asking twice, and stops a module
that never settles. The engine is replaced by a function that answers instantly (stand_in.py); the real
engines are tested in test_pipeline.py and test_judge_benchmarks_run.py."""
from __future__ import annotations

import sys
import types
from types import SimpleNamespace

import pytest
from stand_in import evaluate, stand_in_engine

from jobs import pipeline
from jobs.config import BenchmarkConfig, ModelConfig
from jobs.preflight import PreflightError
from jobs.storage import RunRoot


def _request(item, variant, prompt):
    return {"request_id": f"{item['item_id']}#{variant}", "item_id": item["item_id"], "subset": "s",
            "variant": variant, "messages": [{"role": "user", "content": prompt}]}


def _stub(endless: bool = False) -> types.ModuleType:
    """A three-round protocol: a generation, a judgment of it, then a verdict on the judgment."""
    module = types.ModuleType("benchmarks.rounds_stub")
    module.KINDS = ("generative",)
    module.load_items = lambda path: iter([{"item_id": f"stub/{i}", "subset": "s", "error": None} for i in range(3)])
    module.expand = lambda item, kind, options=None: [_request(item, "generate", f"question {item['item_id']}")]

    def followup(item, answers, kind, options=None):
        by_variant = {a["variant"]: a for a in answers}
        if endless:
            return [_request(item, f"again{len(answers)}", "more")]
        out = [_request(item, "judge", f"judge: {by_variant['generate']['text']}")]
        if "judge" in by_variant:
            out.append(_request(item, "verdict", f"verdict on: {by_variant['judge']['text']}"))
        return out

    def combine(item, answers, kind, options=None):
        by_variant = {a["variant"]: a["text"] for a in answers}
        return {"item_id": item["item_id"], "subset": "s", "error": None, "texts": by_variant,
                "correct": float(len(by_variant) == 3)}

    module.followup = followup
    module.combine = combine
    module.measures = lambda row: {"correct": row["correct"]}
    module.summarize = lambda groups, resamples=0: {"n": len(groups["correct"]["s"]), "n_errors": 0,
                                                     "accuracy": sum(v for _, v in groups["correct"]["s"]) / 3}
    return module


@pytest.fixture
def engine(monkeypatch):
    """Answers each request with 'answer to <prompt>' and records the requests of every call (one per round)."""
    return stand_in_engine(monkeypatch)


def _evaluate(tmp_path, module, monkeypatch):
    monkeypatch.setitem(sys.modules, "benchmarks.rounds_stub", module)
    return evaluate(tmp_path, BenchmarkConfig(name="stub", module="rounds_stub", data=["unused"],
                                              bootstrap_resamples=0))


def test_rounds_follow_each_other_until_every_request_is_answered(tmp_path, monkeypatch, engine):
    root, metrics = _evaluate(tmp_path, _stub(), monkeypatch)
    assert [sorted(call) for call in engine] == [
        [f"stub/{i}#generate" for i in range(3)], [f"stub/{i}#judge" for i in range(3)],
        [f"stub/{i}#verdict" for i in range(3)]]
    assert metrics["accuracy"] == 1.0  # combine saw all three rounds of every item
    row = next(r for r in root.read_rows("predictions", "stub", "judge") if r["item_id"] == "stub/0")
    assert row["texts"]["verdict"] == "answer to verdict on: answer to judge: answer to question stub/0"
    assert len(root.read_rows("requests", "stub", "judge")) == 9


def test_a_resumed_cell_asks_nothing_twice(tmp_path, monkeypatch, engine):
    _evaluate(tmp_path, _stub(), monkeypatch)
    engine.clear()
    _, metrics = _evaluate(tmp_path, _stub(), monkeypatch)
    assert engine == [] and metrics["accuracy"] == 1.0


def test_a_followup_that_never_settles_is_stopped(tmp_path, monkeypatch, engine):
    with pytest.raises(RuntimeError, match=f"after {pipeline.MAX_ROUNDS} rounds"):
        _evaluate(tmp_path, _stub(endless=True), monkeypatch)


def _routed_stub() -> types.ModuleType:
    """A generation by the cell's model, then a judgment by the judge named 'critic'."""
    module = _stub()
    module.followup = lambda item, answers, kind, options=None: [
        {**_request(item, "judge", "judge it"), "route": "critic"}]
    module.routes = lambda options: ["critic"]
    return module


def test_requests_routed_to_a_judge_are_answered_by_that_judge_and_stored_in_the_cell(tmp_path, monkeypatch):
    calls = []

    def answer(requests, model, log=print):
        calls.append((model.name, sorted(r["request_id"] for r in requests)))
        for r in requests:
            yield {"request_id": r["request_id"], "item_id": r["item_id"], "subset": r["subset"],
                   "variant": r["variant"], "text": f"{model.name} on {r['variant']}", "error": None}

    monkeypatch.setattr(pipeline, "answer_requests", answer)
    monkeypatch.setitem(sys.modules, "benchmarks.rounds_stub", _routed_stub())
    bench = BenchmarkConfig(name="stub", module="rounds_stub", data=["unused"], bootstrap_resamples=0)
    critic = ModelConfig(name="critic", path="q", kind="generative")
    model = ModelConfig(name="judge", path="p", kind="generative")
    root = RunRoot(str(tmp_path), "run")
    pipeline._evaluate(root, SimpleNamespace(attempts=1), bench, model, 2, print, judges={"critic": critic})
    assert calls == [("judge", [f"stub/{i}#generate" for i in range(3)]),
                     ("critic", [f"stub/{i}#judge" for i in range(3)])]
    row = next(r for r in root.read_rows("predictions", "stub", "judge") if r["item_id"] == "stub/1")
    assert row["texts"] == {"generate": "judge on generate", "judge": "critic on judge"}
    assert len(root.read_rows("requests", "stub", "judge")) == 6  # the judge's answers belong to the cell
    with pytest.raises(PreflightError, match=r"did not name as judges \(critic\)"):
        pipeline._evaluate(RunRoot(str(tmp_path), "other"), SimpleNamespace(attempts=1), bench, model, 2, print)


def test_route_models_find_judges_in_the_sweep_then_the_registry_and_name_the_bad_ones():
    bench = BenchmarkConfig(name="gen", module="mtrag_generation", data=["unused"], options={
        "judges": {"rb_llm": ["self", "gpt_4o_mini", "nobody", "tiny_classifier"], "idk": "mine", "ragas": "self"}})
    mine = ModelConfig(name="mine", path="p", kind="generative")
    judges, problems = pipeline.route_models(bench, {"mine": mine})
    assert list(judges) == ["gpt_4o_mini", "mine"] and judges["mine"] is mine
    assert judges["gpt_4o_mini"].engine == "http"  # conf/models/gpt_4o_mini.yaml
    assert problems == ["benchmark 'gen': judge 'nobody' is neither a model of the sweep nor a conf/models entry",
                        "benchmark 'gen': judge 'tiny_classifier' is a discriminative model, not a generative judge"]
    # a judge's identity is part of what the cell's answers depend on
    model = ModelConfig(name="m", path="p", kind="generative")
    other = ModelConfig(name="mine", path="other", kind="generative")
    assert pipeline.answers_hash(bench, model, {"mine": mine}) != pipeline.answers_hash(bench, model, {"mine": other})
    assert pipeline.answers_hash(bench, model, {"mine": mine}) != pipeline.answers_hash(bench, model)
