"""Fixed-width text tables, the layout every benchmark's `table_text` prints its paper's tables in, and their
titles."""
from __future__ import annotations

from typing import Any


def titled(paper: str, module: str, metrics: list[dict[str, Any]]) -> str:
    """A table's title: the benchmark as its paper names it, after the run's names for it (metrics.json's
    `config`) where one is not the module's own: a config `my_pairs` of RAG-RewardBench is "my_pairs
    (RAG-RewardBench)", so two configs of one benchmark never print alike."""
    configs = sorted({str(m.get("config") or module) for m in metrics})
    return paper if configs in ([], [module]) else f"{', '.join(configs)} ({paper})"


def aligned(rows: list[list[str]], left: int = 1) -> str:
    """Columns padded to their widest cell: the first `left` (labels) flush left, the numbers flush right."""
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) if c < left else cell.rjust(w) for c, (cell, w) in
                               enumerate(zip(r, widths))).rstrip() for r in rows)


def grid(title: str, header: list[str], rows: list[list[str]]) -> str:
    """A titled table whose first column holds the labels."""
    return f"{title}\n{aligned([header, *rows])}"

