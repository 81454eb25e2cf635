"""A model's answers to a list of requests, from its engine: in the sweep's engine host when there is one,
else in a host started for the call and released after it. The rows are checked where they enter the engine
(the request keys it reads) and where they leave it (the answer keys it writes), so a key one side stopped
writing fails there, naming the engine, the row and the key. Each answer leaves with `retryable`: whether its
error may pass if asked again (jobs.engines.errors), stored with it for `ragjudge run --retry-errors`."""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from benchmarks.protocol import Answer
from benchmarks.row_types import ANSWER_BASE_KEYS, check_keys
from jobs.config import ModelConfig
from jobs.engines.base import BatchSlot, Engine, Log, Requests, engine_of, engines
from jobs.engines.errors import retryable
from jobs.engines.host import EngineHost
from jobs.engines.reasoning import split_answer


def answer_requests(requests: Requests, model: ModelConfig, log: Log = print,
                    host: EngineHost | None = None, batch: BatchSlot | None = None) -> Iterator[Answer]:
    """Stream the model's answers to `requests` as plain dict rows, one per request; `batch` keeps a batch
    engine's submitted batch across runs (a cell's, per route). Requests come as a list or, to an engine that
    `streams`, as a Ray dataset, whose keys the survey checked in the driver before the stream (jobs.flow.first_round)."""
    engine = engine_of(model)
    if not engine.answers:
        raise ValueError(f"model '{model.name}': engine '{engine.name}' answers no requests "
                         f"(request engines: {', '.join(sorted(n for n, e in engines().items() if e.answers))})")
    if isinstance(requests, list):
        check_keys(requests, engine.reads, engine_label(engine, model), "request")
    answers = (_answer(engine, requests, model, log, host, batch) if host is not None
               else _own_host(engine, requests, model, log, batch))
    return _checked_answers(answers, engine, model)


def engine_label(engine: Engine, model: ModelConfig) -> str:
    """How errors about an engine's requests and answers name it."""
    return f"engine {engine.name} (model {model.name})"


def _answer(engine: Engine, requests: Requests, model: ModelConfig, log: Log, host: EngineHost,
            batch: BatchSlot | None) -> Iterator[Answer]:
    """The engine's answer; one that submits batches is handed the slot it keeps them in."""
    return engine.answer(requests, model, log, host, batch) if engine.submits else engine.answer(requests, model, log, host)


def _own_host(engine: Engine, requests: Requests, model: ModelConfig, log: Log,
              batch: BatchSlot | None) -> Iterator[Answer]:
    host = EngineHost(log)
    try:
        yield from _answer(engine, requests, model, log, host, batch)
    finally:
        host.close()


def _checked_answers(answers: Iterable[Answer], engine: Engine, model: ModelConfig) -> Iterator[Answer]:
    """Each answer as it comes, with `retryable`, and a thinking judge's split from its trace; one that did not
    fail has every key the engine writes."""
    writes, name = engine.writes(model), engine_label(engine, model)
    for answer in answers:
        check_keys([answer], ANSWER_BASE_KEYS if answer.get("error") else writes, name, "answer")
        if model.reasoning is not None:
            answer = split_answer(answer, model.reasoning)
        yield {**answer, "retryable": retryable(answer.get("error"))}
