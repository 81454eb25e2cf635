"""How a retrieval cell flows: index (cached) -> queries -> search (Ray Data actor pool) -> runs -> scores -> storage.

A cell is (a RetrievalBenchmark, one retriever); jobs.sweep.pipeline hands it here when the model's kind is
"retriever". The benchmark (benchmarks.protocol.RetrievalBenchmark) says what to read, ask and score; this
module runs it:

1. Index, one per domain (`domains`, over `corpus`), a Ray step whose result is cached under ROOT/_indexes/
   (beside the runs, local or S3, through RunRoot), keyed by the corpus file's SHA-256 and the retriever's
   settings, so every later run under the same root reuses it: BM25 is built in one Ray task; a dense index is
   the corpus encoded through a Ray Data actor pool (`min_actors`..`max_actors` encoders, GPUs where the model
   asks for them), then stored by a Ray task, exact under `ann_threshold` passages and a faiss HNSW graph from
   it on (`search_settings`).
2. Queries (`queries`); a row without a query text (e.g. mtRAG's `llm_rewrite`) is asked of the benchmark's
   `rewriter`, a generative model of the registry, through the pipeline's engines (vLLM, transformers or an
   API), its answers kept in the answer store (ROOT/_answers, jobs.store.answers) and shared by every
   retriever and run that asks the same model the same request.
3. Search: a Ray Data actor pool whose actors load the cached indexes (and the query encoder) once.
4. Per strategy: the run (`run_row`), per-query scores and metrics.json (`score`), under
       ROOT/RUN/runs/benchmark=B/model=M/strategy=S/{run.jsonl,per_query.jsonl}
       ROOT/RUN/metrics/benchmark=B/model=M/strategy=S/metrics.json
   scored exactly as `ragjudge aggregate --benchmark B` scores run.jsonl (`aggregate_files`); and one
   prediction row per (task, strategy) in the usual predictions partition (`prediction_rows`).
"""
from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from actors.retrievers import IndexMeta, QuerySearcher, RetrieverModel, with_defaults
from benchmarks.boundary_types import ArrowRow, JsonObject
from benchmarks.options import typed_options
from benchmarks.protocol import Query, RetrievalBenchmark, Row, SearchSettings, benchmark
from jobs.config import KINDS, BenchmarkConfig, ConfigError, ModelConfig
from jobs.engines.answering import answer_requests
from jobs.engines.base import Retriever, engine_of
from jobs.engines.rows import dataset_rows
from jobs.flow.answer_cache import Keys, asked_or_cached, keep_answers
from jobs.loading import load_model
from jobs.store import RunRoot
from jobs.store.answers import AnswerStore

INDEX_CACHE = "_indexes"  # ROOT/_indexes: a sibling of the runs, shared by every run under the root


def index_cache(root: RunRoot) -> RunRoot:
    return root.sibling(INDEX_CACHE)


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def index_spec(model: ModelConfig, domain: str, corpus_sha256: str, n_passages: int,
               search: SearchSettings) -> IndexMeta:
    """Everything an index depends on; its hash names the cache folder. Run settings (actors, batch size,
    devices) are left out: they change how fast an index is built, not what it holds."""
    spec: IndexMeta = {"engine": model.engine, "domain": domain, "corpus_sha256": corpus_sha256,
                       "n_passages": n_passages,
                       "settings": with_defaults(retriever_of(model).index, model.retriever)}
    return {**spec, **retriever_of(model).index_spec(model, n_passages, search)}


def index_folder(spec: IndexMeta) -> str:
    return f"{spec['engine']}/{spec['domain']}-{_digest(spec)}"


def retriever_of(model: ModelConfig) -> Retriever:
    engine = engine_of(model)
    if not isinstance(engine, Retriever):
        raise TypeError(f"model '{model.name}': engine '{model.engine}' is no retriever")
    return engine


def ensure_indexes(cache: RunRoot, model: ModelConfig, worker: RetrieverModel,
                   corpora: dict[str, tuple[str, dict[str, dict[str, str]]]], search: SearchSettings,
                   log=print) -> dict[str, IndexMeta]:
    """Each domain's index from the cache, the missing ones built first by the model's engine.
    `corpora` maps a domain to (corpus file, passages); returns each index's meta with `folder` and `built`."""
    import ray

    out, missing = {}, {}
    for domain, (path, corpus) in corpora.items():
        spec = index_spec(model, domain, file_sha256(path), len(corpus), search)
        folder = index_folder(spec)
        meta = cache.read_json(f"{folder}/meta.json")
        if meta is None:
            missing[domain] = (spec, folder)
        else:
            log(f"index {model.name}/{domain}: cached at {cache.uri(folder)}")
            out[domain] = {**meta, "folder": folder, "built": False}
    if not missing:
        return out
    start = time.perf_counter()
    refs = retriever_of(model).build_indexes(cache, model, worker, missing,
                                             {domain: corpus for domain, (_, corpus) in corpora.items()}, log)
    for domain, meta in zip(refs, ray.get(list(refs.values()))):
        spec, folder = missing[domain]
        out[domain] = {**meta, "folder": folder, "built": True, "built_with": sorted(missing),
                       "step_seconds": round(time.perf_counter() - start, 3)}
        log(f"index {model.name}/{domain}: built {spec['index']['kind']} over {spec['n_passages']} passages, "
            f"stored at {cache.uri(folder)}")
    log(f"index {model.name}: built {', '.join(sorted(missing))} in {time.perf_counter() - start:.1f}s")
    return out


def search(rows: list[Query], model: ModelConfig, worker: RetrieverModel, cache: RunRoot,
           folders: dict[str, str], top_k: int) -> dict[tuple[str, str], ArrowRow]:
    """Every query row answered by a Ray Data pool of QuerySearcher actors: {(strategy, task_id): row}."""
    import ray

    ds = ray.data.from_items(rows).map_batches(
        QuerySearcher, fn_constructor_kwargs={"model": worker, "cache": cache, "indexes": folders, "top_k": top_k},
        compute=ray.data.ActorPoolStrategy(min_size=model.min_actors, max_size=model.max_actors),
        batch_size=model.batch_size, num_cpus=model.num_cpus, num_gpus=model.num_gpus)
    return {(row["strategy"], row["task_id"]): row for row in dataset_rows(ds)}


def rewriter_config(spec: Any) -> ModelConfig:
    """The rewriting model: a conf/models/<name>.yaml name or a model mapping; it must be generative."""
    model = load_model(spec, "options.rewriter")
    if not KINDS[model.kind].generates:
        raise ConfigError(f"options.rewriter: {model.name} is a {model.kind} model; a rewrite needs a generative one")
    return model


def rewrite_queries(root: RunRoot, bench: RetrievalBenchmark, options: Any, rows: list[Query], log=print,
                    store: AnswerStore | None = None) -> tuple[list[Query], JsonObject]:
    """The rows with every query the benchmark left None written by its rewriter, and counts ({}: none).

    With the root's answer `store` (jobs.store.answers), rewrites it holds are taken from it and the new ones
    kept, so a rerun or another retriever asks nothing again; a failed rewrite falls back to the last turn
    and is asked again next time.
    """
    todo = [r for r in rows if r["query"] is None]
    if not todo:
        return rows, {}
    model = rewriter_config(bench.rewriter(options))
    requests = [{"request_id": r["item_id"], "item_id": r["item_id"], "subset": r["domain"], "variant": "rewrite",
                 **bench.rewrite_request(r, options)} for r in todo]
    log(f"rewrites with {model.name}: {len(requests)} queries to rewrite")
    keys: Keys = {}
    answers = {answer["request_id"]: answer for answer in asked_or_cached(
        store, model, requests, keys, lambda asked: answer_requests(asked, model, log), log)}
    keep_answers(store, root.run, list(answers.values()), keys)
    asked = sum(not answer.get("cached") for answer in answers.values())
    out, fallbacks, errors = [], 0, 0
    for r in rows:
        if r["query"] is None:
            entry = answers.get(r["item_id"], {})
            r, fell_back = bench.rewritten(r, entry.get("text"))
            fallbacks, errors = fallbacks + fell_back, errors + bool(entry.get("error"))
        out.append(r)
    return out, {"rewriter": model.name, "cache": store.uri if store else None, "asked": asked,
                 "fallback_to_last_turn": fallbacks, "engine_errors": errors}


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def _jsonl(rows: list[JsonObject]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def evaluate_retrieval(root: RunRoot, bench_config: BenchmarkConfig, model: ModelConfig, log=print,
                       answer_store: AnswerStore | None = None) -> tuple[JsonObject, dict[str, int]]:
    """One retrieval cell end to end; returns the cell's metrics (one block per strategy) for metrics.json and
    the rows it stored per table (RunRoot.write_cell). Rewrites go through `answer_store` (None: asked every
    time)."""
    bench = benchmark(bench_config.module)
    if not isinstance(bench, RetrievalBenchmark):
        raise TypeError(f"benchmark '{bench_config.name}': {bench.name} is not scored on rankings")
    options = typed_options(type(bench).Options, bench_config.options)
    if option_problems := bench.problems(options):
        raise ValueError("; ".join(option_problems))
    search_settings = bench.search_settings(options)
    worker = retriever_of(model).worker_model(model)
    cache = index_cache(root)
    started = time.perf_counter()

    problems: list[str] = []
    corpora, qrels, rows = {}, {}, []
    for domain in bench.domains(options):
        corpus_path, passages, found = bench.corpus(bench_config.data, domain)
        problems += found
        corpora[domain] = (corpus_path, passages)
        domain_qrels, found = bench.qrels(bench_config.data, domain)
        problems += found
        for tid, docs in domain_qrels.items():
            qrels.setdefault(tid, {}).update(docs)
        domain_rows, found = bench.queries(bench_config.data, domain, options, bench_config.limit)
        rows += domain_rows
        problems += found
    metas = ensure_indexes(cache, model, worker, corpora, search_settings, log)
    folders = {domain: meta["folder"] for domain, meta in metas.items()}
    indexes = {domain: {**{k: meta.get(k) for k in ("folder", "built", "n_passages", "build_seconds", "encode_seconds",
                                                    "step_seconds", "built_with", "bytes")}, "kind": meta["index"]["kind"]}
               for domain, meta in metas.items()}
    indexed = time.perf_counter()
    rows, rewrite_info = rewrite_queries(root, bench, options, rows, log, answer_store)
    rewritten = time.perf_counter()
    strategies = bench.strategies(options)
    log(f"{bench_config.name} x {model.name}: {len(rows)} queries ({len(strategies)} strategies, "
        f"{len(corpora)} domains)")
    answered = search(rows, model, worker, cache, folders, search_settings.top_k) if rows else {}
    searched = time.perf_counter()

    by_strategy: JsonObject = {}
    predictions: list[Row] = []
    for folder in ("runs", "metrics"):  # a strategy dropped from the config leaves no stale run behind
        root.clear_strategies(folder, bench_config.name, model.name)
    for strategy in strategies:
        mine = [r for r in rows if r["strategy"] == strategy]
        rankings = {r["task_id"]: answered[(strategy, r["task_id"])] for r in mine}
        run = [bench.run_row(r, zip(rankings[r["task_id"]]["document_ids"], rankings[r["task_id"]]["scores"]),
                             corpora[r["domain"]][1]) for r in mine]
        per_query, metrics = bench.score(run, qrels)
        metrics |= {"n_errors": len(problems), "problems": problems}  # as aggregate_files writes it
        where = {name: root.strategy_path(kind, bench_config.name, model.name, strategy, name) for kind, name
                 in (("runs", "run.jsonl"), ("runs", "per_query.jsonl"), ("metrics", "metrics.json"))}
        root.write_text(where["run.jsonl"], _jsonl(run))
        root.write_text(where["per_query.jsonl"], _jsonl(per_query))
        root.write_json(where["metrics.json"], metrics)
        by_strategy[strategy] = {k: v for k, v in metrics.items() if k != "problems"}
        predictions += bench.prediction_rows(per_query, rankings, strategy)

    for row in predictions:
        row["model"] = model.name
    stored = root.write_cell(bench_config.name, model.name, predictions,
                             [{"item_id": f"{bench_config.name}/problem/{i}", "subset": "", "error": p}
                              for i, p in enumerate(problems)])
    search_seconds = searched - rewritten
    return {
        "benchmark": bench.name, "config": bench_config.name, "model": model.name, "kind": model.kind,
        "engine": model.engine,
        "note": model.note, "n": sum(s["n"] for s in by_strategy.values()), "n_errors": len(problems),
        "n_bad_rows": 0, "problems": problems, "strategies": by_strategy, "indexes": indexes,
        "llm_rewrite": rewrite_info or None,
        "seconds": {"index": round(indexed - started, 3), "rewrite": round(rewritten - indexed, 3),
                    "search": round(search_seconds, 3)},
        "queries_per_s": round(len(rows) / search_seconds, 2) if rows and search_seconds > 0 else None,
    }, stored
