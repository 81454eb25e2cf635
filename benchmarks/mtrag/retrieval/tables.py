"""The paper's Table 3 layout: Recall and nDCG at 1, 3, 5, 10; one row per strategy and retriever."""
from __future__ import annotations

from typing import Any

from benchmarks.formatting import fixed
from benchmarks.mtrag.retrieval.data import BENCHMARK
from benchmarks.mtrag.retrieval.options import LLM_REWRITE
from benchmarks.mtrag.retrieval.scoring import K_VALUES, MEASURES
from benchmarks.tables import titled

STRATEGY_TITLES = {"lastturn": "Last Turn", "rewrite": "Query Rewrite", "questions": "Questions",
                   LLM_REWRITE: "LLM Rewrite (ours)"}


def table_rows(metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """(strategy, retriever, the eight "all" numbers) for each strategy of each cell, strategies in the paper's
    order (last turn, rewrite, questions), retrievers in the order given."""
    rows = []
    order = {s: i for i, s in enumerate(("lastturn", "rewrite", "questions", LLM_REWRITE))}
    for cell in metrics:
        for strategy, block in (cell.get("strategies") or {}).items():
            rows.append({"strategy": strategy, "retriever": cell.get("model", "?"),
                         **{m: (block.get("all") or {}).get(m) for m in MEASURES}})
    return sorted(rows, key=lambda r: order.get(r["strategy"], len(order)))


def table_text(metrics: list[dict[str, Any]]) -> str:
    """The paper's Table 3 layout: Recall and nDCG at 1, 3, 5, 10 per retriever x strategy (the "all" row)."""
    header = ["Strategy", "Retriever"] + [f"R@{k}" for k in K_VALUES] + [f"nDCG@{k}" for k in K_VALUES]
    lines = [header]
    for row in table_rows(metrics):
        lines.append([STRATEGY_TITLES.get(row["strategy"], row["strategy"]), row["retriever"]]
                     + [fixed(row[f"recall_{k}"], 3) for k in K_VALUES]
                     + [fixed(row[f"ndcg_cut_{k}"], 3) for k in K_VALUES])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = [" | ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths)))
            for line in lines]
    text.insert(1, "-+-".join("-" * w for w in widths))
    return (f"{titled('mtRAG retrieval', BENCHMARK, metrics)}: Table 3 layout; all domains, weighted as the "
            "authors' script\n" + "\n".join(text))
