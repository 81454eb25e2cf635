"""The engine registry: a model's `engine` -> how a list of requests is answered by it, as a stream of rows.

vllm (Ray Data tasks that prepare requests and send them to the sweep's vLLM engine for the model),
transformers (the same, to the sweep's RequestScorer), http (an actor pool of HttpJudge calling an
OpenAI-compatible API), a shared vLLM judge (a Ray Serve deployment, scaled by its queue; any vllm model with
`shared: true`), and stand_in: an instant engine without Ray or weights, the way inspect_ai ships a mock
model, for tests and dry runs of a benchmark's rounds. The vllm and transformers engines live in the sweep's
EngineHost (jobs.engines.host): one start per distinct engine, whatever the number of benchmarks, rounds and
model files that share it.
A new engine is one function registered here with @engine("name") (and its name in jobs.config.schema's choices).
Retrievers (bm25, sentence_transformers) index corpora instead of answering requests: jobs.sweep.retrieval runs them.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from jobs.config import ModelConfig, to_dict
from jobs.engines.host import TASKS, EngineHost

Log = Callable[[str], None]
Answerer = Callable[[list[dict[str, Any]], ModelConfig, Log, EngineHost], Iterator[dict[str, Any]]]
LIGHT = {"num_cpus": 0.25}  # a Ray Data task that prepares, forwards and reads: the engine does the work
ENGINES: dict[str, Answerer] = {}

# Settings that change how a model runs, not what it answers: changing them keeps stored answers.
RUN_SETTINGS = frozenset({
    "batch_size", "min_actors", "max_actors", "num_cpus", "num_gpus", "kv_cache_gib", "enforce_eager",
    "tensor_parallel_size", "max_concurrency", "max_retries", "timeout_s", "api_base_env", "api_key_env", "note",
    "params_b", "shared", "min_replicas", "max_replicas", "target_ongoing_requests", "downscale_delay_s"})


def engine(name: str) -> Callable[[Answerer], Answerer]:
    """Register `fn` as the answerer of engine `name`."""
    def register(fn: Answerer) -> Answerer:
        ENGINES[name] = fn
        return fn
    return register


def answer_requests(requests: list[dict[str, Any]], model: ModelConfig, log: Log = print,
                    host: EngineHost | None = None) -> Iterator[dict[str, Any]]:
    """Stream the model's answers to `requests` as plain dict rows, one per request, from its engine in `host`
    (the sweep's); without one, from an engine started for this call and released after it."""
    if model.shared:
        return _shared(requests, model, log)
    if model.engine not in ENGINES:
        raise ValueError(f"model '{model.name}': engine '{model.engine}' answers no requests "
                         f"(request engines: {', '.join(sorted(ENGINES))})")
    if host is None:
        return _own_host(requests, model, log)
    return ENGINES[model.engine](requests, model, log, host)


def _own_host(requests: list[dict[str, Any]], model: ModelConfig, log: Log) -> Iterator[dict[str, Any]]:
    host = EngineHost(log)
    try:
        yield from ENGINES[model.engine](requests, model, log, host)
    finally:
        host.close()


def resolved(model: ModelConfig) -> dict[str, Any]:
    """The model's settings as the actors take them, with local folders for its weights."""
    from actors.model_store import resolve_model

    settings = to_dict(model)
    if model.engine not in ("http", "stand_in"):
        settings["path"] = resolve_model(model.path)
        if model.reference:
            settings["reference"] = resolve_model(model.reference)
    return settings


def _shared(requests: list[dict[str, Any]], model: ModelConfig, log: Log) -> Iterator[dict[str, Any]]:
    import ray

    from actors import serve_judge

    settings = resolved(model)
    started = serve_judge.deploy(settings)
    log(f"shared judge {model.name}: {'deployed' if started else 'already running, reused'}")
    return merge_parts(dataset_rows(serve_judge.answer(ray.data.from_items(requests), settings)))


@engine("vllm")
def _vllm(requests: list[dict[str, Any]], model: ModelConfig, log: Log, host: EngineHost) -> Iterator[dict[str, Any]]:
    """Both parts of a judge request (text, verdict) and both orders of a pair stay next to each other in one
    batch, so the engine's prefix cache sees them together. An implicit RM with a reference model is asked
    twice: its own engine, then the reference's, each adding its log-probs."""
    import ray

    from actors import vllm_stage

    settings, task = resolved(model), TASKS[model.kind]
    ds = ray.data.from_items(requests)
    if task == "judge":
        ds = ds.flat_map(vllm_stage.split_judge_request, **LIGHT)
    reference = settings.get("reference") if model.kind == "implicit" else None
    paths = [(settings["path"], "", vllm_stage.ANSWER_COLUMNS + (("messages",) if reference else ()))]
    if reference:
        paths.append((reference, "ref_", vllm_stage.ANSWER_COLUMNS + ("logp_sum", "logp_mean", "n_response_tokens")))
    for path, prefix, columns in paths:
        server = host.server(model, settings, path, task)
        ds = ds.map_batches(vllm_stage.ask, batch_size=model.batch_size, batch_format="pyarrow", **LIGHT,
                            fn_kwargs={"model": settings, "path": path, "task": task, "server": server,
                                       "prefix": prefix, "columns": columns, "keep_messages": prefix == "" and
                                       bool(reference)})
    return merge_parts(dataset_rows(ds))


def _actor_pool(requests: list[dict[str, Any]], model: ModelConfig, actor: type, kwargs: dict[str, Any]
                ) -> Iterator[dict[str, Any]]:
    import ray

    ds = ray.data.from_items(requests).map_batches(
        actor, fn_constructor_kwargs=kwargs,
        compute=ray.data.ActorPoolStrategy(min_size=model.min_actors, max_size=model.max_actors),
        batch_size=model.batch_size, num_cpus=model.num_cpus, num_gpus=model.num_gpus)
    return merge_parts(dataset_rows(ds))


@engine("transformers")
def _transformers(requests: list[dict[str, Any]], model: ModelConfig, log: Log, host: EngineHost
                  ) -> Iterator[dict[str, Any]]:
    import ray

    from actors import scorers

    settings = resolved(model)
    server = host.server(model, settings, settings["path"], "score")
    ds = ray.data.from_items(requests).map_batches(scorers.ask, batch_size=model.batch_size, **LIGHT,
                                                   fn_kwargs={"server": server})
    return merge_parts(dataset_rows(ds))


@engine("http")
def _http(requests: list[dict[str, Any]], model: ModelConfig, log: Log, host: EngineHost) -> Iterator[dict[str, Any]]:
    from actors.http_engine import HttpJudge, api_credentials

    settings = resolved(model)
    return _actor_pool(requests, model, HttpJudge, {"model": settings, **api_credentials(settings)})


def stand_in_reply(request: dict[str, Any]) -> str:
    """The stand-in's text: 'answer to <the first message>', so a test can tell which request it answers."""
    messages = request.get("messages") or [{"content": ""}]
    return f"answer to {messages[0]['content']}"


@engine("stand_in")
def _stand_in(requests: list[dict[str, Any]], model: ModelConfig, log: Log, host: EngineHost
              ) -> Iterator[dict[str, Any]]:
    """Answers every request at once, in order, with stand_in_reply; no Ray, no weights."""
    for r in requests:
        yield {"request_id": r["request_id"], "item_id": r["item_id"], "subset": r["subset"],
               "variant": r["variant"], "text": stand_in_reply(r), "error": None}


def dataset_rows(ds) -> Iterator[dict[str, Any]]:
    """Stream a Ray dataset's rows to the driver as plain dicts, without materializing it. Each block as soon
    as it is ready: Ray's prefetching holds a block back until the next one is ready, and answers held there
    are neither stored when a run stops (jobs.sweep.interrupt) nor seen by progress while the engine waits."""
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=0):
        yield from batch.to_pylist()


def merge_parts(rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Engine rows -> one answer per request: an engine that split a request (`n_parts`) is merged back.

    The parts carry different answer columns; a batch that mixes them fills the other part's columns with
    None, so a value is never overwritten by None, flags are or-ed and token counts take the maximum.
    """
    pending: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        row.pop("part", None)
        n_parts = row.pop("n_parts", None)
        if not n_parts:
            yield row
            continue
        parts = pending.setdefault(row["request_id"], [])
        parts.append(row)
        if len(parts) < n_parts:
            continue
        merged: dict[str, Any] = {}
        for part in pending.pop(row["request_id"]):
            for key, value in part.items():
                if key == "n_tokens":
                    merged[key] = max(merged.get(key) or 0, value or 0)
                elif merged.get(key) in (None, False):
                    merged[key] = value
        yield merged
