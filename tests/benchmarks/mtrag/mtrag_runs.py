"""Helpers of the mtRAG retrieval tests: the released files' counts, hand-made files and run rows in the
official task format."""
from __future__ import annotations

from pathlib import Path

# Released files: tasks (= queries per strategy = qrels queries), qrels pairs, turn-1 tasks, pooled passages.
# Tasks per domain and the 102 turn-1 tasks are Table 4's counts.
REAL = {"clapnq": (208, 578, 28, 6315), "cloud": (188, 494, 25, 6430), "fiqa": (180, 535, 24, 7064),
        "govt": (201, 521, 25, 833)}


def write_lines(path, lines):
    Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def qrels_file(path, pairs, header=True):
    return write_lines(path, (["query-id\tcorpus-id\tscore"] if header else []) + [f"{q}\t{d}\t1" for q, d in pairs])


def row(tid, collection, *docs):
    """A run row in the official task format; docs are (document_id, score)."""
    return {"task_id": tid, "Collection": collection,
            "contexts": [{"document_id": d, "score": s, "text": "", "title": ""} for d, s in docs]}

