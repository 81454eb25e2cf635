"""mtRAG retrieval (seeds/mtrag.txt, docs/protocols.md 3): retrievers x query strategies, scored as the
authors' script scores them (scoring.py). Pure Python: which files to read, which queries to ask, how to lay
out the results; jobs.flow.ranked runs the retrievers (jobs/engines/bm25, jobs/engines/sentence_transformers)
on a Ray cluster.

A cell is (this benchmark, one retriever). For every strategy it writes a run in the official task format,
per-query scores and a metrics.json with the script's collections/all layout plus the first/later-turn split;
the cell's metrics hold one such block per strategy, and `table_text` lays them out as the paper's Table 3
(Recall and nDCG at 1, 3, 5, 10; one row per strategy and retriever).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any, ClassVar

from benchmarks.mtrag.common import run_row
from benchmarks.mtrag.retrieval.data import (
    BENCHMARK,
    corpus_file,
    load_corpus,
    load_qrels,
    qrels_path,
    retrieval_root,
)
from benchmarks.mtrag.retrieval.options import (
    LLM_REWRITE,
    Options,
    option_problems,
    rewrite_prompt,
    short_domains,
    strategies,
)
from benchmarks.mtrag.retrieval.queries import query_rows, rewrite_messages, rewritten
from benchmarks.mtrag.retrieval.rows import prediction_rows
from benchmarks.mtrag.retrieval.scoring import aggregate_files, evaluate
from benchmarks.mtrag.retrieval.tables import table_text
from benchmarks.protocol import Query, RetrievalBenchmark, SearchSettings, register


@register("mtrag_retrieval")
class MtragRetrieval(RetrievalBenchmark):
    """mtRAG's retrieval task: four domains, the released query strategies plus our LLM rewrite."""

    name: ClassVar[str] = BENCHMARK
    kinds: ClassVar[tuple[str, ...]] = ("retriever",)
    Options: ClassVar[type] = Options

    problems = staticmethod(option_problems)
    domains = staticmethod(short_domains)
    strategies = staticmethod(strategies)

    def search_settings(self, options: Options) -> SearchSettings:
        return SearchSettings(top_k=options.top_k, ann_threshold=options.ann_threshold,
                              ann=asdict(options.ann))

    def corpus(self, data: Sequence[str], domain: str) -> tuple[str, dict[str, dict[str, str]], list[str]]:
        path = corpus_file(data, domain)
        loaded = load_corpus(path)
        return path, loaded.data, loaded.problems

    def qrels(self, data: Sequence[str], domain: str) -> tuple[dict[str, dict[str, int]], list[str]]:
        loaded = load_qrels(qrels_path(retrieval_root(data, domain), domain))
        return loaded.data, loaded.problems

    def queries(self, data: Sequence[str], domain: str, options: Options, limit: int | None = None
                ) -> tuple[list[Query], list[str]]:
        return query_rows(retrieval_root(data, domain), domain, strategies(options), limit)

    def rewriter(self, options: Options) -> Any:
        return options.rewriter if LLM_REWRITE in options.strategies else None

    def rewrite_request(self, query: Query, options: Options) -> dict[str, Any]:
        return {"messages": rewrite_messages(query["turns"], rewrite_prompt(options)),
                "max_tokens": options.rewrite_max_tokens}

    rewritten = staticmethod(rewritten)

    def run_row(self, query: Query, ranking: Iterable[tuple[str, float]],
                passages: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
        return run_row(query["task_id"], query["domain"], ranking, corpus=passages)

    def score(self, run: list[dict[str, Any]], qrels: Mapping[str, Mapping[str, int]]
              ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        return evaluate(run, dict(qrels))

    prediction_rows = staticmethod(prediction_rows)

    def aggregate_files(self, predictions: str, qrels: Sequence[str], out: str | None = None
                        ) -> dict[str, Any]:
        return aggregate_files(predictions, qrels, out)

    table_text = staticmethod(table_text)
