"""Retrieval engines: BM25 (bm25s) and dense encoders (sentence-transformers), with their indexes and the Ray
Data stages that encode passages and answer queries.

An index is built once per (corpus file, retriever settings) and stored as named byte blobs (`files()`), so
jobs.flow.ranked can cache it in the run root on a local disk or S3 and any worker can load it back (`load`).
Dense search is an exact inner product (numpy) up to a size threshold and an HNSW graph (faiss) above it.

Every ranking is cut the way trec_eval orders one (benchmarks.mtrag.retrieval.scoring.trec_order: float32 score
descending, then document id descending), so the top k we store is the top k the scorer would have kept,
even when scores tie at the cut.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from actors.hardware import resolve_dtype
from benchmarks.mtrag.retrieval.scoring import trec_order

Ranking = list[tuple[str, float]]

BM25_DEFAULTS: dict[str, Any] = {"k1": 1.2, "b": 0.75, "method": "lucene", "stopwords": "en", "lower": True}
DENSE_DEFAULTS: dict[str, Any] = {"query_prefix": "", "passage_prefix": "", "normalize": True,
                                  "max_seq_length": None, "with_title": True}
ANN_DEFAULTS: dict[str, Any] = {"m": 32, "ef_construction": 200, "ef_search": 256}


def engine_settings(engine: str, settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """A retriever's settings with defaults filled in; an unknown key is a ValueError naming it."""
    if engine not in INDEXES:
        raise ValueError(f"engine {engine!r} is no retriever engine ({', '.join(INDEXES)})")
    defaults = INDEXES[engine].defaults
    unknown = sorted(set(settings or {}) - set(defaults))
    if unknown:
        raise ValueError(f"retriever settings {', '.join(unknown)} are not known to engine {engine} "
                         f"(known: {', '.join(defaults)})")
    return {**defaults, **(settings or {})}


def top_k(scores: np.ndarray, ids: Sequence[str], k: int) -> Ranking:
    """The k best (id, score) pairs of a full score vector, cut in trec_eval's order (ties: id descending)."""
    scores = np.asarray(scores, dtype=np.float32)
    if len(scores) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        candidates = np.flatnonzero(scores >= kth)  # every document tied with the k-th stays a candidate
    else:
        candidates = np.arange(len(scores))
    return trec_order({ids[i]: float(scores[i]) for i in candidates})[:k]


def passage_text(title: str, text: str, with_title: bool = True) -> str:
    """What a retriever indexes: the title, then the text (the title once, where the text already opens with it)."""
    title, text = (title or "").strip(), text or ""
    if not with_title or not title or text.startswith(title):
        return text
    return f"{title}\n{text}"


# ---- BM25 ----------------------------------------------------------------------------------------------


class BM25Index:
    """bm25s over one corpus. Queries are tokenised as the passages were (lowercase, stopwords, no stemming)."""

    engine: ClassVar[str] = "bm25"
    defaults: ClassVar[dict[str, Any]] = BM25_DEFAULTS
    encodes_queries: ClassVar[bool] = False  # searched with the queries' text

    def __init__(self, retriever, ids: list[str], settings: Mapping[str, Any]):
        self.retriever, self.ids, self.settings = retriever, ids, dict(settings)

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str], settings: Mapping[str, Any]) -> BM25Index:
        import bm25s

        settings = engine_settings(cls.engine, settings)
        retriever = bm25s.BM25(k1=settings["k1"], b=settings["b"], method=settings["method"])
        tokens = bm25s.tokenize(list(texts), lower=settings["lower"], stopwords=settings["stopwords"],
                                show_progress=False)
        retriever.index(tokens, show_progress=False)
        return cls(retriever, list(ids), settings)

    def _tokens(self, queries: Sequence[str]) -> list[list[str]]:
        import bm25s

        return bm25s.tokenize(list(queries), lower=self.settings["lower"], stopwords=self.settings["stopwords"],
                              return_ids=False, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every passage for one query (0 for a query with no indexed term)."""
        ids = self.retriever.get_tokens_ids(self._tokens([query])[0])
        if not ids:
            return np.zeros(len(self.ids), dtype=np.float32)
        return self.retriever.get_scores_from_ids(ids)

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """The top k passages that share a term with the query (a lexical engine returns no non-matches)."""
        return [[(pid, score) for pid, score in top_k(self.scores(q), self.ids, k) if score > 0] for q in queries]

    def files(self) -> dict[str, bytes]:
        with tempfile.TemporaryDirectory() as folder:
            self.retriever.save(folder, show_progress=False)
            out = {}
            for name in sorted(os.listdir(folder)):
                with open(os.path.join(folder, name), "rb") as f:
                    out[name] = f.read()
        out["ids.json"] = json.dumps(self.ids).encode()
        return out

    @classmethod
    def load(cls, files: Mapping[str, bytes], settings: Mapping[str, Any]) -> BM25Index:
        import bm25s

        with tempfile.TemporaryDirectory() as folder:
            for name, data in files.items():
                with open(os.path.join(folder, name), "wb") as f:
                    f.write(data)
            retriever = bm25s.BM25.load(folder)
        return cls(retriever, json.loads(files["ids.json"]), engine_settings(cls.engine, settings))


# ---- dense ---------------------------------------------------------------------------------------------


class DenseEncoder:
    """A sentence-transformers model that embeds queries and passages (float32; unit length if `normalize`)."""

    def __init__(self, path: str, settings: Mapping[str, Any] | None = None, device: str | None = None,
                 batch_size: int = 32, revision: str | None = None, dtype: str = "float32"):
        import torch
        from sentence_transformers import SentenceTransformer

        self.settings = engine_settings(DenseIndex.engine, settings)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        # bfloat16 halves the encoding time on CPUs with AVX512-BF16 and on GPUs (bfloat16-if-native picks it
        # there only: actors.hardware); embeddings come back float32.
        dtype = resolve_dtype(dtype or "float32", device)
        kwargs = {} if dtype == "float32" else {"model_kwargs": {"torch_dtype": getattr(torch, dtype)}}
        self.model = SentenceTransformer(path, device=device, revision=revision, **kwargs)
        if self.settings["max_seq_length"]:
            self.model.max_seq_length = int(self.settings["max_seq_length"])
        self.batch_size = batch_size

    @property
    def dim(self) -> int:
        return int(self.model.get_sentence_embedding_dimension())

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self.model.encode([prefix + t for t in texts], batch_size=self.batch_size,
                                            convert_to_tensor=True, normalize_embeddings=bool(self.settings["normalize"]),
                                            show_progress_bar=False).float().cpu().numpy(), dtype=np.float32)

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        return self._encode(queries, self.settings["query_prefix"])

    def encode_passages(self, titles: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        joined = [passage_text(t, x, self.settings["with_title"]) for t, x in zip(titles, texts)]
        return self._encode(joined, self.settings["passage_prefix"])


class DenseIndex:
    """Passage embeddings searched by inner product: exactly (numpy), or through a faiss HNSW graph (`ann`)."""

    engine: ClassVar[str] = "sentence_transformers"
    defaults: ClassVar[dict[str, Any]] = DENSE_DEFAULTS  # its encoder's settings, which made its vectors
    encodes_queries: ClassVar[bool] = True  # searched with the queries' vectors (DenseEncoder)

    def __init__(self, ids: list[str], embeddings: np.ndarray, ann: Mapping[str, Any] | None = None, faiss_index=None):
        self.ids, self.embeddings = ids, np.ascontiguousarray(embeddings, dtype=np.float32)
        self.ann = dict(ann) if ann else None
        self.faiss_index = faiss_index
        if self.ann and self.faiss_index is None:
            self.faiss_index = self._hnsw()

    @property
    def kind(self) -> str:
        return "hnsw" if self.ann else "exact"

    def _hnsw(self):
        import faiss

        settings = {**ANN_DEFAULTS, **self.ann}
        index = faiss.IndexHNSWFlat(self.embeddings.shape[1], int(settings["m"]), faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = int(settings["ef_construction"])
        index.add(self.embeddings)
        return index

    def search_vectors(self, queries: np.ndarray, k: int) -> list[Ranking]:
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if self.faiss_index is None:
            return [top_k(row, self.ids, k) for row in queries @ self.embeddings.T]
        self.faiss_index.hnsw.efSearch = max(int({**ANN_DEFAULTS, **self.ann}["ef_search"]), 2 * k)
        # A few more than k, so that a tie at the cut is decided by trec_eval's rule, not by the graph walk.
        candidates = min(2 * k, len(self.ids))
        distances, found = self.faiss_index.search(queries, candidates)
        return [trec_order({self.ids[i]: float(d) for d, i in zip(row_d, row_i) if i >= 0})[:k]
                for row_d, row_i in zip(distances, found)]

    def files(self) -> dict[str, bytes]:
        buffer = io.BytesIO()
        np.save(buffer, self.embeddings, allow_pickle=False)
        out = {"embeddings.npy": buffer.getvalue(), "ids.json": json.dumps(self.ids).encode(),
               "ann.json": json.dumps(self.ann).encode()}
        if self.faiss_index is not None:
            import faiss

            out["hnsw.faiss"] = faiss.serialize_index(self.faiss_index).tobytes()
        return out

    @classmethod
    def load(cls, files: Mapping[str, bytes], settings: Mapping[str, Any] | None = None) -> DenseIndex:
        """The stored index (its encoder's `settings` are the query encoder's business, not the index's)."""
        embeddings = np.load(io.BytesIO(files["embeddings.npy"]), allow_pickle=False)
        faiss_index = None
        if "hnsw.faiss" in files:
            import faiss

            faiss_index = faiss.deserialize_index(np.frombuffer(files["hnsw.faiss"], dtype=np.uint8))
        return cls(json.loads(files["ids.json"]), embeddings, json.loads(files["ann.json"]), faiss_index)


INDEXES: dict[str, type[BM25Index | DenseIndex]] = {index.engine: index for index in (BM25Index, DenseIndex)}


# ---- cached indexes ------------------------------------------------------------------------------------


def store_index(cache, folder: str, index: BM25Index | DenseIndex, meta: dict[str, Any]) -> dict[str, Any]:
    """Write an index's files under `folder` of a RunRoot (local or S3), then its meta.json: a folder whose
    meta.json exists is complete, so a build killed half way is built again, never half read."""
    files = index.files()
    for name, data in files.items():
        cache.write_bytes(f"{folder}/{name}", data)
    meta = {**meta, "files": sorted(files), "bytes": sum(map(len, files.values()))}
    cache.write_json(f"{folder}/meta.json", meta)
    return meta


def load_index(cache, folder: str) -> BM25Index | DenseIndex:
    """The index stored under `folder` by store_index; FileNotFoundError if it is not (all) there."""
    meta = cache.read_json(f"{folder}/meta.json")
    if meta is None:
        raise FileNotFoundError(f"no index at {cache.uri(folder)} (meta.json missing)")
    files = {}
    for name in meta["files"]:
        data = cache.read_bytes(f"{folder}/{name}")
        if data is None:
            raise FileNotFoundError(f"index file {cache.uri(folder + '/' + name)} is missing")
        files[name] = data
    return INDEXES[meta["engine"]].load(files, meta["settings"])


# ---- Ray Data stages -----------------------------------------------------------------------------------


def _strings(values: Any) -> list[str]:
    return ["" if v is None else str(v) for v in values]


@dataclass(frozen=True)
class RetrieverModel:
    """What a retriever's workers (PassageEncoder, QuerySearcher) read of its model file: built once by the driver
    from the model's config (jobs.engines.base Retriever.worker_model), its weights already a local folder."""

    engine: str  # an INDEXES key
    path: str  # the encoder's weights (a dense retriever's); a lexical one has none
    settings: Mapping[str, Any] | None  # the model file's `retriever:` mapping, as written (engine_settings checks it)
    batch_size: int
    dtype: str = "float32"
    revision: str | None = None


def _encoder(model: RetrieverModel) -> DenseEncoder:
    return DenseEncoder(model.path, model.settings, batch_size=model.batch_size, revision=model.revision,
                        dtype=model.dtype)


class PassageEncoder:
    """`map_batches` class: passage rows (pid, title, text, and any other columns such as a domain) -> the same
    rows with `embedding` instead of title and text. One model per actor."""

    def __init__(self, model: RetrieverModel):
        self.encoder = _encoder(model)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        embeddings = self.encoder.encode_passages(_strings(batch["title"]), _strings(batch["text"]))
        out = {key: values for key, values in batch.items() if key not in ("title", "text")}
        out["embedding"] = embeddings
        return out


class QuerySearcher:
    """`map_batches` class: query rows (domain, query, ...) -> the same rows with `document_ids` and `scores`.

    `indexes` maps each domain to where its index lies in the cache (a RunRoot and a folder); every actor
    loads them once, and a dense searcher also loads the encoder for the queries.
    """

    def __init__(self, model: RetrieverModel, cache, indexes: dict[str, str], top_k: int):
        self.top_k = top_k
        self.indexes = {domain: load_index(cache, folder) for domain, folder in indexes.items()}
        self.encoder = _encoder(model) if INDEXES[model.engine].encodes_queries else None

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        queries, domains = _strings(batch["query"]), _strings(batch["domain"])
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
