"""The dense engine's worker code: a sentence-transformers encoder, the Ray Data stage that encodes passages with
it, and the index its vectors make (exact inner product in numpy up to a size, a faiss HNSW graph above it),
loaded by every searcher (actors.retrievers.QuerySearcher) through RetrieverModel.index."""
from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from actors.hardware import resolve_dtype
from actors.retrievers import (
    Ranking,
    RetrieverModel,
    Settings,
    cut,
    passage_text,
    strings,
    top_k,
    with_defaults,
)
from benchmarks.boundary_types import ColumnBatch

DENSE_DEFAULTS: Settings = {"query_prefix": "", "passage_prefix": "", "normalize": True,
                                  "max_seq_length": None, "with_title": True}
ANN_DEFAULTS: Settings = {"m": 32, "ef_construction": 200, "ef_search": 256}


class DenseEncoder:
    """A sentence-transformers model that embeds queries and passages (float32; unit length if `normalize`)."""

    def __init__(self, path: str, settings: Mapping[str, Any] | None = None, device: str | None = None,
                 batch_size: int = 32, revision: str | None = None, dtype: str = "float32"):
        import torch
        from sentence_transformers import SentenceTransformer

        self.settings = with_defaults(DenseIndex, settings)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        # bfloat16 halves the encoding time on CPUs with AVX512-BF16 and on GPUs (bfloat16-if-native picks it
        # there only: actors.hardware); embeddings come back float32.
        dtype = resolve_dtype(dtype or "float32", device)
        kwargs = {} if dtype == "float32" else {"model_kwargs": {"torch_dtype": getattr(torch, dtype)}}
        self.model = SentenceTransformer(path, device=device, revision=revision, **kwargs)
        if self.settings["max_seq_length"]:
            self.model.max_seq_length = int(self.settings["max_seq_length"])
        self.batch_size = batch_size

    @classmethod
    def of(cls, model: RetrieverModel) -> DenseEncoder:
        return cls(model.path, model.settings, batch_size=model.batch_size, revision=model.revision, dtype=model.dtype)

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
    defaults: ClassVar[Settings] = DENSE_DEFAULTS  # its encoder's settings, which made its vectors

    def __init__(self, ids: list[str], embeddings: np.ndarray, ann: Mapping[str, Any] | None = None, faiss_index=None):
        self.ids, self.embeddings = ids, np.ascontiguousarray(embeddings, dtype=np.float32)
        self.ann = dict(ann) if ann else None
        self.faiss_index = faiss_index
        if self.ann and self.faiss_index is None:
            self.faiss_index = self._hnsw()

    @staticmethod
    def query_encoder(model: RetrieverModel) -> DenseEncoder:
        """Searched with the queries' vectors, made by the model the passages were encoded with."""
        return DenseEncoder.of(model)

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
        return [cut({self.ids[i]: float(d) for d, i in zip(row_d, row_i) if i >= 0}, k)
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


class PassageEncoder:
    """`map_batches` class: passage rows (pid, title, text, and any other columns such as a domain) -> the same
    rows with `embedding` instead of title and text. One model per actor."""

    def __init__(self, model: RetrieverModel):
        self.encoder = DenseEncoder.of(model)

    def __call__(self, batch: dict[str, np.ndarray]) -> ColumnBatch:
        embeddings = self.encoder.encode_passages(strings(batch["title"]), strings(batch["text"]))
        out = {key: values for key, values in batch.items() if key not in ("title", "text")}
        out["embedding"] = embeddings
        return out
