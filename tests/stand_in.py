"""The registered stand-in engine (jobs.engines.stand_in.engine) with a test's own replies: a cell runs its
rounds through jobs.sweep.cell.run_cell, as a sweep runs it, without Ray or a model."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import pytest

from jobs.config import BenchmarkConfig, ModelConfig, StorageConfig, SweepConfig
from jobs.engines.base import Requests, engines
from jobs.engines.host import EngineHost
from jobs.engines.http import engine as http
from jobs.engines.rows import dataset_rows, merge_parts
from jobs.engines.stand_in.engine import Reply, stand_in_reply
from jobs.store.answers import AnswerStore
from jobs.store.manifest import Manifest
from jobs.store.run_root import RunRoot
from jobs.sweep.cell import Cell, CellOutcome, run_cell


def echo(request: dict[str, Any], model: ModelConfig) -> str:
    """The stand-in's own reply: 'answer to <the first message>'."""
    return stand_in_reply(request)


def pick(request: dict[str, Any], model: ModelConfig) -> str:
    """Choose 1, Choose 2 or no verdict, by the request id's hash: right and wrong verdicts both."""
    return ["Choose 1", "Choose 2", "no idea"][hashlib.sha256(request["request_id"].encode()).digest()[0] % 3]


def stand_in_engine(monkeypatch: pytest.MonkeyPatch, reply: Reply = echo) -> list[list[str]]:
    """Answers each request with reply(request, model), through the engine's own answer (its `reply` hook);
    returns the request ids of each engine call."""
    calls: list[list[str]] = []
    engine = engines()["stand_in"]
    answer = type(engine).answer  # the class's own, whatever an earlier call of this put on the instance

    def counted(requests, model, log=print, host=None):
        if not isinstance(requests, list):  # a Ray dataset: read here, so the test's reply runs in this process
            requests = list(dataset_rows(requests))
        calls.append([r["request_id"] for r in requests])
        yield from answer(engine, requests, model, log, host)

    monkeypatch.setattr(engine, "reply", reply)
    monkeypatch.setattr(engine, "answer", counted)
    return calls


def stand_in_model(name: str = "judge") -> ModelConfig:
    return ModelConfig(name=name, path="p", kind="generative", engine="stand_in")


def run(tmp_path, bench: BenchmarkConfig, model: ModelConfig | None = None, run_name: str = "run",
        judges: dict[str, ModelConfig] | None = None, cache: bool = False, retry_errors: bool = False,
        host: EngineHost | None = None, **storage: Any) -> tuple[RunRoot, CellOutcome]:
    """One cell through jobs.sweep.cell.run_cell (answers stored two at a time), as a sweep runs it, as `ragjudge
    run --retry-errors` does with `retry_errors`; `storage` are more of the sweep's storage settings
    (endpoint_url, retry_s); `cache`: with the root's answer store; `host`: the sweep's engine host, as on the
    sweep's cluster (the first round then streams where the engine takes a dataset)."""
    settings = StorageConfig(run=run_name, root=str(tmp_path), **storage)
    root = RunRoot.of(settings)
    manifest = Manifest(root, SweepConfig(name="test", storage=settings))
    cell = Cell(root, manifest, bench, model or stand_in_model(), flush_every=2, judges=judges or {},
                engines=host, answer_store=AnswerStore(root) if cache else None, retry_errors=retry_errors)
    return root, run_cell(cell)


def inline_actor_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Engines that answer through an actor pool (http) call their actor class in this process, a batch at a
    time, instead of in Ray Data actors: the engine's own code and its rows' way to the cell; a stream's requests
    (a Ray dataset, in a sweep) are read here first."""
    def pool(requests: Requests, model: ModelConfig, actor: type, kwargs: dict[str, Any]
             ) -> Iterator[dict[str, Any]]:
        if not isinstance(requests, list):
            requests = list(dataset_rows(requests))
        answer = actor(**kwargs)
        for start in range(0, len(requests), model.batch_size):
            chunk = requests[start:start + model.batch_size]
            out = answer({key: [r[key] for r in chunk] for key in chunk[0]})
            yield from merge_parts({key: out[key][i] for key in out} for i in range(len(chunk)))

    monkeypatch.setattr(http, "actor_pool", pool)
