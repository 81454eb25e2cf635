"""The engine registry: a model's `engine` -> how a list of requests is answered by it, as a stream of rows.

vllm (ray.data.llm processors over vLLM engines), transformers (an actor pool of RequestScorer), http (an
actor pool of HttpJudge calling an OpenAI-compatible API), a shared vLLM judge (a Ray Serve deployment every
cell of a sweep sends its requests to; any vllm model with `shared: true`), and stand_in: an instant engine
without Ray or weights, the way inspect_ai ships a mock model, for tests and dry runs of a benchmark's rounds.
A new engine is one function registered here with @engine("name") (and its name in jobs.config's choices).
Retrievers (bm25, sentence_transformers) index corpora instead of answering requests: jobs.retrieval runs them.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from jobs.config import ModelConfig, to_dict

Log = Callable[[str], None]
Answerer = Callable[[list[dict[str, Any]], ModelConfig, Log], Iterator[dict[str, Any]]]
ENGINES: dict[str, Answerer] = {}

# Settings that change how a model runs, not what it answers: changing them keeps stored answers.
RUN_SETTINGS = frozenset({
    "batch_size", "min_actors", "max_actors", "num_cpus", "num_gpus", "kv_cache_gib", "enforce_eager",
    "tensor_parallel_size", "max_concurrency", "max_retries", "api_base_env", "api_key_env", "note", "params_b",
    "shared", "min_replicas", "max_replicas", "target_ongoing_requests", "downscale_delay_s"})


def engine(name: str) -> Callable[[Answerer], Answerer]:
    """Register `fn` as the answerer of engine `name`."""
    def register(fn: Answerer) -> Answerer:
        ENGINES[name] = fn
        return fn
    return register


def answer_requests(requests: list[dict[str, Any]], model: ModelConfig, log: Log = print) -> Iterator[dict[str, Any]]:
    """Stream the model's answers to `requests` as plain dict rows, one per request."""
    if model.shared:
        return _shared(requests, model, log)
    if model.engine not in ENGINES:
        raise ValueError(f"model '{model.name}': engine '{model.engine}' answers no requests "
                         f"(request engines: {', '.join(sorted(ENGINES))})")
    return ENGINES[model.engine](requests, model, log)


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
def _vllm(requests: list[dict[str, Any]], model: ModelConfig, log: Log) -> Iterator[dict[str, Any]]:
    import ray

    from actors import vllm_stage

    return merge_parts(dataset_rows(vllm_stage.answer(ray.data.from_items(requests), resolved(model))))


def _actor_pool(requests: list[dict[str, Any]], model: ModelConfig, actor: type, kwargs: dict[str, Any]
                ) -> Iterator[dict[str, Any]]:
    import ray

    ds = ray.data.from_items(requests).map_batches(
        actor, fn_constructor_kwargs=kwargs,
        compute=ray.data.ActorPoolStrategy(min_size=model.min_actors, max_size=model.max_actors),
        batch_size=model.batch_size, num_cpus=model.num_cpus, num_gpus=model.num_gpus)
    return merge_parts(dataset_rows(ds))


@engine("transformers")
def _transformers(requests: list[dict[str, Any]], model: ModelConfig, log: Log) -> Iterator[dict[str, Any]]:
    from actors.scorers import RequestScorer

    return _actor_pool(requests, model, RequestScorer, {"model": resolved(model)})


@engine("http")
def _http(requests: list[dict[str, Any]], model: ModelConfig, log: Log) -> Iterator[dict[str, Any]]:
    from actors.http_engine import HttpJudge, api_credentials

    settings = resolved(model)
    return _actor_pool(requests, model, HttpJudge, {"model": settings, **api_credentials(settings)})


def stand_in_reply(request: dict[str, Any]) -> str:
    """The stand-in's text: 'answer to <the first message>', so a test can tell which request it answers."""
    messages = request.get("messages") or [{"content": ""}]
    return f"answer to {messages[0]['content']}"


@engine("stand_in")
def _stand_in(requests: list[dict[str, Any]], model: ModelConfig, log: Log) -> Iterator[dict[str, Any]]:
    """Answers every request at once, in order, with stand_in_reply; no Ray, no weights."""
    for r in requests:
        yield {"request_id": r["request_id"], "item_id": r["item_id"], "subset": r["subset"],
               "variant": r["variant"], "text": stand_in_reply(r), "error": None}


def dataset_rows(ds) -> Iterator[dict[str, Any]]:
    """Stream a Ray dataset's rows to the driver as plain dicts, without materializing it."""
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
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
