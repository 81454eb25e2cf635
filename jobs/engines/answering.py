"""A model's answers to a list of requests, from its engine: in the sweep's engine host when there is one,
else in a host started for the call and released after it."""
from __future__ import annotations

from collections.abc import Iterator

from benchmarks.protocol import Answer, Request
from jobs.config import ModelConfig
from jobs.engines.base import ENGINES, Log, engine_of
from jobs.engines.host import EngineHost


def answer_requests(requests: list[Request], model: ModelConfig, log: Log = print,
                    host: EngineHost | None = None) -> Iterator[Answer]:
    """Stream the model's answers to `requests` as plain dict rows, one per request."""
    engine = engine_of(model)
    if not engine.answers:
        raise ValueError(f"model '{model.name}': engine '{engine.name}' answers no requests "
                         f"(request engines: {', '.join(sorted(n for n, e in ENGINES.items() if e.answers))})")
    if host is None:
        return _own_host(requests, model, log)
    return engine.answer(requests, model, log, host)


def _own_host(requests: list[Request], model: ModelConfig, log: Log) -> Iterator[Answer]:
    host = EngineHost(log)
    try:
        yield from engine_of(model).answer(requests, model, log, host)
    finally:
        host.close()
