"""The BM25 engine's index (bm25s), built by a Ray task on the driver's behalf (engine.py) and loaded by every
searcher (actors.retrievers.QuerySearcher), which this module's class reaches through RetrieverModel.index."""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from actors.retrievers import Ranking, RetrieverModel, Settings, top_k, with_defaults

BM25_DEFAULTS: Settings = {"k1": 1.2, "b": 0.75, "method": "lucene", "stopwords": "en", "lower": True}


class BM25Index:
    """bm25s over one corpus. Queries are tokenised as the passages were (lowercase, stopwords, no stemming)."""

    engine: ClassVar[str] = "bm25"
    defaults: ClassVar[Settings] = BM25_DEFAULTS

    def __init__(self, retriever, ids: list[str], settings: Mapping[str, Any]):
        self.retriever, self.ids, self.settings = retriever, ids, dict(settings)

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str], settings: Mapping[str, Any]) -> BM25Index:
        import bm25s

        settings = with_defaults(cls, settings)
        retriever = bm25s.BM25(k1=settings["k1"], b=settings["b"], method=settings["method"])
        tokens = bm25s.tokenize(list(texts), lower=settings["lower"], stopwords=settings["stopwords"],
                                show_progress=False)
        retriever.index(tokens, show_progress=False)
        return cls(retriever, list(ids), settings)

    @staticmethod
    def query_encoder(model: RetrieverModel) -> None:
        """None: searched with the queries' text."""
        return

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
        return cls(retriever, json.loads(files["ids.json"]), with_defaults(cls, settings))
