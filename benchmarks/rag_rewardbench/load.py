"""Loading RAG-RewardBench pairs: JSONL/JSON/Parquet files or a folder of them (the released files are one per
category), each pair an item with a stable id; bad rows come out as error items in place."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from benchmarks.records import Record, id_problem, items_or_errors
from benchmarks.row_types import Item

BENCHMARK = "rag_rewardbench"
REQUIRED_FIELDS = ("prompt", "chosen", "reject", "subset")
OPTIONAL_FIELDS = ("chosen_model", "reject_model")
DUPLICATE = "duplicate of {} (same id, or same subset, prompt, chosen and reject)"
SYNTHETIC = "synthetic-"  # subset and id prefix of generated stand-in pairs (synthetic.py): never a result


def is_synthetic(subset: str) -> bool:
    """Whether a subset holds generated stand-in pairs, which no reported accuracy may include."""
    return subset.startswith(SYNTHETIC)


def category(subset: str) -> str:
    """The Table 2 column of a subset: its prefix before the first '-' (e.g. 'reason-hotpotqa' -> 'reason')."""
    return subset.split("-", 1)[0]


def item_id(row: dict[str, Any]) -> str:
    """A stable id: the row's own `id` when it has one, else a hash of the pair (independent of file order)."""
    if row.get("id") not in (None, ""):
        return f"{BENCHMARK}/{row['id']}"
    text = "\0".join(str(row.get(field) or "") for field in ("subset", "prompt", "chosen", "reject"))
    return f"{BENCHMARK}/{hashlib.sha1(text.encode('utf-8')).hexdigest()[:16]}"


def read_pair(record: Record) -> tuple[dict[str, Any], list[str]]:
    """One row's item, and its first problem (an id that is not one, a required field missing, empty or not
    text)."""
    row = record.data or {}
    subset = row.get("subset") if isinstance(row.get("subset"), str) else ""
    problems = [problem for problem in [id_problem(row)] if problem]
    problems += [f"field '{field}' " + ("missing" if row.get(field) is None else "empty or not text")
                for field in REQUIRED_FIELDS if not isinstance(row.get(field), str) or not row[field].strip()]
    item = {"item_id": item_id(row), "benchmark": BENCHMARK, "subset": subset,
            **{field: row.get(field) for field in ("prompt", "chosen", "reject")},
            **{field: str(row.get(field) or "") for field in OPTIONAL_FIELDS}}
    return item, problems[:1]


def load_items(path: str) -> Iterator[Item]:
    """Every pair under `path`; a bad row is an error item in place (records.items_or_errors)."""
    return items_or_errors(path, read_pair, DUPLICATE, BENCHMARK)
