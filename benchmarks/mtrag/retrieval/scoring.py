"""mtRAG retrieval scores as the authors' script computes them (docs/protocols.md 3).

The script (IBM/mt-rag-benchmark, scripts/evaluation/run_retrieval_eval.py) reads a run in the task format,
keeps the last score of a document id repeated in one ranking, drops a document whose id equals the task id,
scores each query with pytrec_eval (recall.k and ndcg_cut.k), averages per collection over the queries that
pytrec_eval scores (those in both run and qrels; a query the run lacks is not a zero), rounds each mean to 5
decimals, and weights the collection means by their number of run rows for the "all" row. We do the same
through pytrec_eval itself, with two differences docs/protocols.md asks for: task ids and collection names are
normalised first (the script matches ids verbatim and knows only the long collection names), and one merged
qrels table serves every collection (mtRAG task ids are unique across domains).

Ranking rule (trec_eval's, which pytrec_eval runs): score descending, compared as 32-bit floats (trec_eval
keeps scores in a C float, so scores closer than float32 precision tie), then document id descending by
strcmp. `trec_order` reproduces it for code that must cut a ranking the same way, e.g. a retriever's top k.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pytrec_eval

from benchmarks.mtrag.common import DOMAINS, domain, read_run, task_id, turn_group, write_jsonl
from benchmarks.mtrag.retrieval.data import BENCHMARK, merged_qrels

K_VALUES = (1, 3, 5, 10)
MEASURES = tuple(f"recall_{k}" for k in K_VALUES) + tuple(f"ndcg_cut_{k}" for k in K_VALUES)
_TREC_MEASURES = {"recall." + ",".join(map(str, K_VALUES)), "ndcg_cut." + ",".join(map(str, K_VALUES))}
DECIMALS = 5  # the script rounds each collection's means to 5 decimals, then weights the rounded means

Qrels = dict[str, dict[str, int]]


def trec_order(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """(document id, score) pairs in trec_eval's order: float32 score descending, then id descending.

    Python compares str by code point, which is the byte order strcmp sees in UTF-8.
    """
    return sorted(scores.items(), key=lambda item: (np.float32(item[1]), item[0]), reverse=True)


def ranking_scores(row: Mapping[str, Any]) -> dict[str, float]:
    """{document id: score} of one run row as the script builds it: a repeated id keeps its last score, and a
    document whose id is the task id is dropped."""
    scores = {ctx["document_id"]: float(ctx["score"]) for ctx in row.get("contexts") or []}
    for own in {row["task_id"], task_id(row["task_id"])}:
        scores.pop(own, None)
    return scores


def score_queries(qrels: Qrels, run: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """pytrec_eval's eight measures for each query in both run and qrels (an empty ranking scores 0)."""
    scored = pytrec_eval.RelevanceEvaluator(qrels, _TREC_MEASURES).evaluate(
        {qid: dict(docs) for qid, docs in run.items()})
    return {qid: {m: values[m] for m in MEASURES} for qid, values in scored.items()}


def evaluate(rows: Iterable[Mapping[str, Any]], qrels: Qrels) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-query rows (input order; `retriever_scores` {} where the qrels lack the task, as the script writes)
    and the metrics: per collection (short name) the eight means, `count` (run rows) and `scored`; `all`."""
    rows = list(rows)
    run: dict[str, dict[str, float]] = {}
    collection_of: dict[str, str] = {}
    for row in rows:  # a task id seen twice keeps its last row, as the script's dicts do
        tid = task_id(row["task_id"])
        run[tid] = ranking_scores(row)
        collection_of[tid] = domain(row["Collection"])
    per_query = score_queries(qrels, run)

    collections: dict[str, dict[str, Any]] = {}
    for name in DOMAINS:
        tids = [t for t, c in collection_of.items() if c == name]
        if tids:
            scored = [per_query[t] for t in tids if t in per_query]
            collections[name] = {**_means(scored, DECIMALS), "count": len(tids), "scored": len(scored)}
    weighted = [c for c in collections.values() if c["scored"]]  # the script would divide by zero on the others
    total = sum(c["count"] for c in weighted)
    overall = {m: sum(c[m] * c["count"] for c in weighted) / total if total else None for m in MEASURES}
    groups = {t: _turn_group(t) for t in per_query}
    by_turn = {}
    for group in ("first", "later"):
        scored = [s for t, s in per_query.items() if groups[t] == group]
        by_turn[group] = {**_means(scored, DECIMALS), "scored": len(scored)}
    metrics = {
        "benchmark": BENCHMARK,
        "n": len(per_query),
        "collections": collections,
        "all": {**overall, "count": sum(c["count"] for c in collections.values()), "scored": len(per_query)},
        "by_turn": by_turn,  # Table 4's split; plain means over the scored queries (not in the script)
        "missing_from_run": sum(1 for q in qrels if q not in run),  # not counted as zero
        "duplicate_task_ids": len(rows) - len(run),
    }
    per_query_rows = [{"task_id": row["task_id"], "Collection": row["Collection"],
                       "retriever_scores": per_query.get(task_id(row["task_id"]), {})} for row in rows]
    return per_query_rows, metrics


def _turn_group(tid: str) -> str | None:
    try:
        return turn_group(tid)
    except ValueError:  # an id without a turn number belongs to neither group
        return None


def _means(scored: list[dict[str, float]], decimals: int) -> dict[str, float | None]:
    return {m: round(sum(s[m] for s in scored) / len(scored), decimals) if scored else None for m in MEASURES}


def aggregate_files(predictions: str, qrels_paths: Iterable[str], out: str | None = None) -> dict[str, Any]:
    """`ragjudge aggregate --benchmark mtrag_retrieval`: score a run file against one or more qrels files;
    with `out`, write out/per_query.jsonl and out/metrics.json. Unusable lines are listed under `problems`."""
    run = read_run(predictions)
    qrels = merged_qrels(list(qrels_paths))
    problems = run.problems + qrels.problems
    per_query, metrics = evaluate(run.data, qrels.data)
    metrics |= {"n_errors": len(problems), "problems": problems}
    if out:
        write_jsonl(os.path.join(out, "per_query.jsonl"), per_query)
        with open(os.path.join(out, "metrics.json"), "w", encoding="utf-8") as f:
            f.write(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")
    return metrics
