"""bm25: a lexical retriever (index.py); no weights, one Ray task per domain's index."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from actors.retrievers import IndexMeta, RetrieverModel, passage_text, store_index
from jobs.config import ModelConfig
from jobs.engines.base import Log, Retriever, register
from jobs.engines.bm25.index import BM25Index
from jobs.store import RunRoot

if TYPE_CHECKING:
    from ray import ObjectRef


def build_bm25(cache: RunRoot, folder: str, spec: IndexMeta, ids: list[str], texts: list[str]) -> IndexMeta:
    start = time.perf_counter()
    index = BM25Index.build(ids, texts, spec["settings"])
    return store_index(cache, folder, index, {**spec, "build_seconds": round(time.perf_counter() - start, 3)})


class Bm25(Retriever):
    name = "bm25"
    packages = ("bm25s",)
    weights = False  # `path` names no weights to find
    index = BM25Index

    def index_spec(self, model: ModelConfig, n_passages: int, search: Any) -> IndexMeta:
        return {"index": {"kind": "bm25"}}

    def build_indexes(self, cache: RunRoot, model: ModelConfig, worker: RetrieverModel,
                      missing: dict[str, tuple[IndexMeta, str]], passages: dict[str, dict[str, dict[str, str]]],
                      log: Log = print) -> dict[str, ObjectRef]:
        """One Ray task per domain, side by side (seconds for the demo's corpora: no progress lines)."""
        import ray

        task = ray.remote(num_cpus=model.num_cpus)(build_bm25)
        return {domain: task.remote(cache, folder, spec, list(passages[domain]),
                                    [passage_text(p["title"], p["text"]) for p in passages[domain].values()])
                for domain, (spec, folder) in missing.items()}


register(Bm25())
