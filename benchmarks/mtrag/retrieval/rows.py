"""Item rows of a retrieval cell for the predictions partition: one per (task, strategy), with its ranking and
its eight scores."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from benchmarks.mtrag.common import domain, turn, turn_group
from benchmarks.mtrag.retrieval.data import BENCHMARK
from benchmarks.mtrag.retrieval.queries import item_id
from benchmarks.mtrag.retrieval.scoring import MEASURES
from benchmarks.row_types import Row


def prediction_rows(per_query: Iterable[Mapping[str, Any]], rankings: Mapping[str, Mapping[str, Any]],
                    strategy: str) -> list[Row]:
    """One row per scored query of a strategy (None scores where the qrels do not judge the task). There is
    no notion of `correct` here."""
    rows = []
    for scored in per_query:
        tid = scored["task_id"]
        ranking = rankings[tid]
        d = domain(scored["Collection"])
        row = {"item_id": item_id(d, tid, strategy), "benchmark": BENCHMARK, "subset": d,
               "strategy": strategy, "task_id": tid, "turn": turn(tid), "turn_group": turn_group(tid),
               "query": ranking["query"], "document_ids": list(ranking["document_ids"]),
               "scores": [float(s) for s in ranking["scores"]], "correct": None, "error": None}
        row.update({m: scored["retriever_scores"].get(m) for m in MEASURES})
        rows.append(row)
    return rows
