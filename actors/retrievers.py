"""What every retrieval engine's workers share: the record of a retriever model, the cached-index format and the
Ray Data stage that answers queries (QuerySearcher). Each engine's index is in its folder
(jobs/engines/bm25/index.py, jobs/engines/sentence_transformers/index.py) and reaches a worker as a class on the
RetrieverModel, so nothing here names an engine.

An index is built once per (corpus file, retriever settings) and stored as named byte blobs (`files()`), so
jobs.flow.ranked can cache it in the run root on a local disk or S3 and any worker can load it back (`load`).

Every ranking is cut the way trec_eval orders one (benchmarks.mtrag.retrieval.scoring.trec_order: float32 score
descending, then document id descending), so the top k we store is the top k the scorer would have kept,
even when scores tie at the cut.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypedDict

import numpy as np

from benchmarks.boundary_types import ColumnBatch
from benchmarks.mtrag.retrieval.scoring import trec_order

Ranking = list[tuple[str, float]]
Settings = dict[str, str | float | bool | None]  # a retriever's or an index's settings: YAML scalars by name


class Index(Protocol):
    """What a retriever engine's index class (jobs/engines/<engine>/index.py) gives the searchers."""

    engine: ClassVar[str]  # the engine that builds it
    defaults: ClassVar[Settings]  # its settings, filled in where a model file leaves them out

    @classmethod
    def load(cls, files: Mapping[str, bytes], settings: Mapping[str, Any]) -> Index: ...

    @staticmethod
    def query_encoder(model: RetrieverModel) -> Any:
        """What turns queries into vectors for `search_vectors`; None where the index searches text (`search`)."""


def with_defaults(index: type[Index], settings: Mapping[str, Any] | None) -> Settings:
    """A retriever's settings with its index's defaults filled in; an unknown key is a ValueError naming it."""
    unknown = sorted(set(settings or {}) - set(index.defaults))
    if unknown:
        raise ValueError(f"retriever settings {', '.join(unknown)} are not known to engine {index.engine} "
                         f"(known: {', '.join(index.defaults)})")
    return {**index.defaults, **(settings or {})}


def top_k(scores: np.ndarray, ids: Sequence[str], k: int) -> Ranking:
    """The k best (id, score) pairs of a full score vector, cut in trec_eval's order (ties: id descending)."""
    scores = np.asarray(scores, dtype=np.float32)
    if len(scores) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        candidates = np.flatnonzero(scores >= kth)  # every document tied with the k-th stays a candidate
    else:
        candidates = np.arange(len(scores))
    return cut({ids[i]: float(scores[i]) for i in candidates}, k)


def cut(scores: Mapping[str, float], k: int) -> Ranking:
    """The k best of (id -> score) in trec_eval's order, the one place a ranking is cut."""
    return trec_order(dict(scores))[:k]


def passage_text(title: str, text: str, with_title: bool = True) -> str:
    """What a retriever indexes: the title, then the text (the title once, where the text already opens with it)."""
    title, text = (title or "").strip(), text or ""
    if not with_title or not title or text.startswith(title):
        return text
    return f"{title}\n{text}"


# ---- cached indexes ------------------------------------------------------------------------------------


class IndexMeta(TypedDict, total=False):
    """A cached index's meta.json: the spec its folder's hash is taken over (what the index depends on), then
    what building and storing it recorded; a run's metrics.json keeps some of it per domain."""

    engine: str
    domain: str
    corpus_sha256: str
    n_passages: int
    settings: Settings  # the retriever's, its index's defaults filled in
    index: dict[str, str | int]  # {"kind": bm25 | exact | hnsw, and an HNSW graph's m, ef_construction, ef_search}
    path: str  # a dense retriever's encoder, as the model file names it ...
    revision: str | None
    dtype: str  # ... and the dtype it ran in on this machine's kind of device
    files: list[str]  # store_index: the index's files ...
    bytes: int  # ... and their size
    build_seconds: float
    encode_seconds: float  # dense: encoding the passages ...
    graph_seconds: float  # ... and making the graph
    # ensure_indexes (jobs.flow.ranked), not stored: where it is, and whether this run built it
    folder: str
    built: bool
    built_with: list[str]  # the domains built in the same step
    step_seconds: float


def store_index(cache, folder: str, index: Any, meta: IndexMeta) -> IndexMeta:
    """Write an index's files under `folder` of a RunRoot (local or S3), then its meta.json: a folder whose
    meta.json exists is complete, so a build killed half way is built again, never half read."""
    files = index.files()
    for name, data in files.items():
        cache.write_bytes(f"{folder}/{name}", data)
    meta = {**meta, "files": sorted(files), "bytes": sum(map(len, files.values()))}
    cache.write_json(f"{folder}/meta.json", meta)
    return meta


def load_index(cache, folder: str, index: type[Index]) -> Any:
    """The `index` stored under `folder` by store_index; FileNotFoundError if it is not (all) there."""
    meta = cache.read_json(f"{folder}/meta.json")
    if meta is None:
        raise FileNotFoundError(f"no index at {cache.uri(folder)} (meta.json missing)")
    files = {}
    for name in meta["files"]:
        data = cache.read_bytes(f"{folder}/{name}")
        if data is None:
            raise FileNotFoundError(f"index file {cache.uri(folder + '/' + name)} is missing")
        files[name] = data
    return index.load(files, meta["settings"])


# ---- Ray Data stages -----------------------------------------------------------------------------------


def strings(values: Any) -> list[str]:
    return ["" if v is None else str(v) for v in values]


@dataclass(frozen=True)
class RetrieverModel:
    """What a retriever's workers (a dense engine's PassageEncoder, QuerySearcher) read of its model file: built
    once by the driver from the model's config (jobs.engines.base Retriever.worker_model), its weights already a
    local folder."""

    index: type[Index]  # its engine's index class (jobs/engines/<engine>/index.py), imported by the worker
    path: str  # the encoder's weights (a dense retriever's); a lexical one has none
    settings: Mapping[str, Any] | None  # the model file's `retriever:` mapping, as written (with_defaults checks it)
    batch_size: int
    dtype: str = "float32"
    revision: str | None = None


class QuerySearcher:
    """`map_batches` class: query rows (domain, query, ...) -> the same rows with `document_ids` and `scores`.

    `indexes` maps each domain to where its index lies in the cache (a RunRoot and a folder); every actor
    loads them once, and a searcher whose index searches vectors also loads the encoder for the queries.
    """

    def __init__(self, model: RetrieverModel, cache, indexes: dict[str, str], top_k: int):
        self.top_k = top_k
        self.indexes = {domain: load_index(cache, folder, model.index) for domain, folder in indexes.items()}
        self.encoder = model.index.query_encoder(model)

    def __call__(self, batch: dict[str, np.ndarray]) -> ColumnBatch:
        queries, domains = strings(batch["query"]), strings(batch["domain"])
        rankings: list[Ranking] = [[] for _ in queries]
        for domain in sorted(set(domains)):
            rows = [i for i, d in enumerate(domains) if d == domain]
            index = self.indexes[domain]
            if self.encoder is not None:
                found = index.search_vectors(self.encoder.encode_queries([queries[i] for i in rows]), self.top_k)
            else:
                found = index.search([queries[i] for i in rows], self.top_k)
            for i, ranking in zip(rows, found):
                rankings[i] = ranking
        out = dict(batch)
        out["document_ids"] = [[pid for pid, _ in r] for r in rankings]
        out["scores"] = [[score for _, score in r] for r in rankings]
        return out
