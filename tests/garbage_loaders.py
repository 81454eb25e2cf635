"""Every data loader behind one interface for the garbage tests: its good rows (from the bundled data), the
fields garbage replaces, how it names a row in its messages, and what it read (good rows, error messages).

RAG-RewardBench, Bi'anBench, utility and mtRAG generation tasks give error items in place (the row's `error`
names file and row); mtRAG corpora, queries, qrels and runs list their problems as "file:line: why".
"""
from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from typing import Any

from bundled_data import CORPUS, DATA, GENERATION, RETRIEVAL
from garbage import HUGE

from benchmarks.bianbench import load_items as bianbench_items
from benchmarks.mtrag.common import read_run, run_row
from benchmarks.mtrag.generation.load import load_items as mtrag_task_items
from benchmarks.mtrag.retrieval.data import load_corpus, load_qrels, load_queries
from benchmarks.rag_rewardbench import load_items as rag_rewardbench_items
from benchmarks.utility.load import load_items as utility_items


@dataclass(frozen=True)
class Read:
    """What a loader made of a file: how many good rows, and every error message."""

    good: int
    errors: list[str]
    kept: Any  # the good rows as read (item ids, or the loaded data), to compare with a clean file's
    rows: list[Any]  # everything it returned, to check that it can be stored as UTF-8


@dataclass(frozen=True)
class Loader:
    name: str
    suffix: str  # the file name ending it reads
    good: Callable[[], list[bytes]]  # good lines, unique ids
    fields: tuple[str, ...]  # fields the field garbage replaces
    id_field: str
    fresh_id: Callable[[int], Any]
    read: Callable[[str], Read]
    where: Callable[[str, int], str]  # how its messages name a file's row
    huge: Callable[[dict[str, Any]], dict[str, Any]] | None  # a good row with a 10 MB text in it
    tolerated: tuple[str, ...] = ()  # field garbage kinds it reads as a good row, by design
    module: str = ""  # the benchmark whose items it loads (benchmarks.protocol.benchmark), if any

    def good_rows(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.good()]


def _first_lines(path: str, n: int) -> list[bytes]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return [line.rstrip(b"\n") for line in islice(f, n)]


def _items(load: Callable[[str], Any]) -> Callable[[str], Read]:
    def read(path: str) -> Read:
        items = list(load(path))
        good = sorted(i["item_id"] for i in items if not i.get("error"))
        return Read(len(good), [i["error"] for i in items if i.get("error")], good, items)
    return read


def _loaded(load: Callable[[str], Any], count: Callable[[Any], int] = len) -> Callable[[str], Read]:
    def read(path: str) -> Read:
        loaded = load(path)
        return Read(count(loaded.data), loaded.problems, loaded.data, [loaded.data])
    return read


def _item_where(path: str, row: int) -> str:
    return f"{path}: row {row}:"


def _line_where(path: str, row: int) -> str:
    return f"{path}:{row}:"


def _huge(field: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda row: {**row, field: "x" * HUGE}


def _task_huge(row: dict[str, Any]) -> dict[str, Any]:
    turns = [*row["input"][:-1], {**row["input"][-1], "text": "x" * HUGE}]
    return {**row, "input": turns}


def _run_huge(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "contexts": [{**row["contexts"][0], "text": "x" * HUGE}, *row["contexts"][1:]]}


def _run_lines() -> list[bytes]:
    rows = [run_row(f"conv{i}<::>1", "govt", [(f"p{i}", 1.5), (f"q{i}", 0.5)]) for i in range(3)]
    return [json.dumps(r).encode("utf-8") for r in rows]


LOADERS = (
    Loader("rag_rewardbench", ".jsonl", lambda: _first_lines(f"{DATA}/rag_rewardbench_appendix_d.jsonl", 3),
           ("id", "prompt", "chosen", "reject", "subset"), "id", lambda i: f"garbage-{i}",
           _items(rag_rewardbench_items), _item_where, _huge("chosen"),
           ("subset=null", "subset=empty"), module="rag_rewardbench"),  # a pair naming no subset is in 'all'
    Loader("bianbench", ".jsonl", lambda: _first_lines(str(DATA / "bianbench_table10.jsonl"), 4),
           ("id", "split", "task", "context", "answer", "label", "source_ds"), "id", lambda i: f"garbage-{i}",
           _items(bianbench_items), _item_where, _huge("context"), module="bianbench"),
    Loader("utility", ".jsonl", lambda: _first_lines(str(DATA / "utility" / "candidate_passages.jsonl"), 2),
           ("id", "question", "passage", "ground_truth_label"), "id",
           lambda i: f"garbage-{i}", _items(utility_items), _item_where, _huge("question"), module="utility"),
    Loader("mtrag_tasks", ".jsonl", lambda: _first_lines(str(GENERATION / "sample_responses_10.jsonl"), 3),
           ("task_id", "collection", "input", "targets", "contexts"), "task_id",
           lambda i: f"garbage{i}<::>1", _items(mtrag_task_items), _item_where, _task_huge,
           module="mtrag_generation"),
    Loader("mtrag_corpus", ".jsonl", lambda: _first_lines(f"{CORPUS}/govt.jsonl.gz", 3), ("_id", "text"),
           "_id", lambda i: f"garbage-{i}", _loaded(load_corpus), _line_where, _huge("text"),
           ("text=empty", "text=blank")),  # BEIR corpora hold title-only passages
    Loader("mtrag_queries", ".jsonl", lambda: _first_lines(f"{RETRIEVAL}/govt/lastturn.jsonl", 3),
           ("_id", "text"), "_id", lambda i: f"garbage{i}<::>1", _loaded(load_queries), _line_where,
           _huge("text")),
    Loader("mtrag_runs", ".jsonl", _run_lines, ("task_id", "Collection", "contexts"), "task_id",
           lambda i: f"garbage{i}<::>1", _loaded(read_run), _line_where, _run_huge),
    Loader("mtrag_qrels", ".tsv", lambda: _first_lines(f"{RETRIEVAL}/govt/qrels.tsv", 4), (), "", str,
           _loaded(load_qrels, lambda qrels: sum(map(len, qrels.values()))), _line_where, None),
)
JSON_LOADERS = tuple(loader for loader in LOADERS if loader.fields)
ITEM_LOADERS = tuple(loader for loader in LOADERS if loader.module)  # error items in place
