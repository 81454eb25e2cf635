"""http: a generative judge behind an OpenAI-compatible API (kind api), asked by a pool of HttpJudge actors
whose concurrency, retries and timeouts the model file sets; what asking each request took (its HTTP calls and
their tokens) goes to the sweep's engine host as its answer comes back, for manifest.json."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from actors.sampling import SAMPLING_PARAMS
from benchmarks.protocol import Answer
from jobs.config import ModelConfig
from jobs.engines.base import Engine, Log, Requests, Servers, register, worker_model
from jobs.engines.http.client import HttpJudge, api_credentials, taken_usage
from jobs.engines.rows import actor_pool


class Http(Engine):
    name = "http"
    kinds = frozenset({"api"})
    sections = frozenset({"api"})  # jobs/engines/http/settings.py
    packages = ("openai",)
    weights = False
    remote = True
    streams = True  # its actor pool takes a Ray dataset as it takes a list (jobs.engines.rows.actor_pool)
    prefills = False  # an API cannot prefill, so a judge's verdict is read from its text
    unvalidated = "API model: no local weights to score two ways"

    def own_setting_problems(self, model: ModelConfig) -> list[tuple[str, str]]:
        problems = []
        for key, value in model.api.params.items():
            if key not in SAMPLING_PARAMS:
                problems.append((f"api.params.{key}", f"not a request parameter; one of {', '.join(SAMPLING_PARAMS)}"))
            elif value is not None and not value.strip():
                problems.append((f"api.params.{key}", "an empty name; null drops the parameter"))
        return problems

    def preflight(self, model: ModelConfig) -> list[str]:
        try:
            api_credentials(worker_model(model))
        except ValueError as e:
            return [str(e)]
        return []

    def readiness(self, model: ModelConfig, machine: Any, gpus: float) -> list[str]:
        """Whether the variables are set; their values are not shown anywhere."""
        return [problem.removeprefix(f"model '{model.name}': ") for problem in self.preflight(model)]

    def answer(self, requests: Requests, model: ModelConfig, log: Log, host: Servers) -> Iterator[Answer]:
        worker = worker_model(model)
        return _counted(actor_pool(requests, model, HttpJudge, {"model": worker, **api_credentials(worker)}),
                        model, host)


def _counted(answers: Iterable[Answer], model: ModelConfig, host: Servers) -> Iterator[Answer]:
    """Each answer as it comes, its RequestUsage columns taken off and handed to the host."""
    for answer in answers:
        host.asked(model, taken_usage(answer))
        yield answer


register(Http())
