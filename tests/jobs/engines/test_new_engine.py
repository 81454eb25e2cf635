"""A new engine is one module and one registration: a toy engine written to a temporary package, outside the
project, is loaded by name from a model mapping and runs a RAG-RewardBench cell, with no other file edited."""
from __future__ import annotations

import importlib
import sys
import textwrap

from stand_in import run
from sweeps import SAMPLE

from jobs.config import BenchmarkConfig
from jobs.engines.base import engines
from jobs.loading import load_model

TOY = '''
"""Always prefers the response in first position."""
from benchmarks.row_types import ANSWER_BASE_KEYS
from jobs.engines.base import Engine, register


class FirstAlways(Engine):
    name = "first_always"
    weights = False
    prefills = False  # its verdict is read from its text
    unvalidated = "a toy engine: no model"

    def writes(self, model):
        return ANSWER_BASE_KEYS | {"text"}

    def answer(self, requests, model, log, host):
        for r in requests:
            yield {"request_id": r["request_id"], "item_id": r["item_id"], "subset": r["subset"],
                   "variant": r["variant"], "text": "[[Choose 1]]", "error": None}


register(FirstAlways())
'''


def test_an_engine_in_a_package_of_its_own_runs_a_cell(tmp_path, monkeypatch):
    package = tmp_path / "toy_engines"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(TOY), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        importlib.import_module("toy_engines")
        model = load_model({"name": "toy", "path": "none", "kind": "generative", "engine": "first_always"}, "test")
        bench = BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(SAMPLE)],
                                bootstrap_resamples=10)
        root, outcome = run(tmp_path / "results", bench, model)
    finally:
        engines().pop("first_always", None)
        sys.modules.pop("toy_engines", None)
    assert outcome.status == "done", outcome.message
    assert outcome.metrics["n"] == 6 and outcome.metrics["n_errors"] == 0
    predictions = root.read_rows("predictions", "rag_rewardbench", "toy")
    # Chosen first in one order (right) and second in the other (wrong): 1 and 0, so every pair scores 0.5
    # (docs/protocols.md 1: the mean over the two orders), never consistent; an unread verdict would be 0.5
    # and 0.5.
    assert [(p["correct_cr"], p["correct_rc"], p["correct"], p["consistent"]) for p in predictions] == \
        [(1.0, 0.0, 0.5, False)] * 6
