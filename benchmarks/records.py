"""Reading benchmark files row by row, keeping where each row came from.

Every benchmark reads JSONL, JSON arrays, Parquet or a folder of those. Errors must name the file and the
row, so rows are yielded with their (source, row) position instead of being read as one anonymous table.
"""
from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".parquet")


@dataclass(frozen=True)
class Record:
    """One raw row, or the reason it could not be read (then `data` is None)."""

    source: str
    row: int  # 1-based line number (JSONL) or row index + 1 (JSON array, Parquet)
    data: dict[str, Any] | None
    problem: str | None = None


def data_files(path: str) -> list[str]:
    """The data files under `path`: the file itself, or every supported file in a folder, sorted."""
    if os.path.isdir(path):
        found = sorted(
            os.path.join(root, name)
            for root, _, names in os.walk(path)
            for name in names
            if name.endswith(SUFFIXES) and not name.startswith(".")
        )
        if not found:
            raise FileNotFoundError(f"{path}: no {', '.join(SUFFIXES)} files in this folder")
        return found
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file or folder")
    return [path]


def read_records(path: str) -> Iterator[Record]:
    """Yield every row of every data file under `path`; unreadable rows become records with a problem."""
    for source in data_files(path):
        if source.endswith(".parquet"):
            yield from _parquet_records(source)
        elif source.endswith((".jsonl", ".jsonl.gz")):
            yield from _jsonl_records(source)
        else:
            yield from _json_records(source)


def read_items(path: str, read_row: Callable[[Record], tuple[dict[str, Any], list[str]]],
               duplicate: str) -> Iterator[tuple[Record, dict[str, Any], str | None]]:
    """Every row of `path` read into an item by `read_row` (item, problems), with repeated item ids caught:
    (record, item, None) for a good row, the item carrying source, row and error None; (record, what could be
    read, problem) for a bad one, the problem naming the file and row. `duplicate` words a repeat, with {}
    for where the id was first seen."""
    first_seen: dict[str, str] = {}
    for record in read_records(path):
        where = f"{record.source}: row {record.row}"
        if record.data is None:
            yield record, {}, f"{where}: {record.problem}"
            continue
        item, problems = read_row(record)
        if not problems and item["item_id"] in first_seen:
            problems = [duplicate.format(first_seen[item["item_id"]])]
        if problems:
            yield record, item, f"{where}: " + "; ".join(problems)
            continue
        first_seen[item["item_id"]] = where
        yield record, {**item, "source": record.source, "row": record.row, "error": None}, None


def error_item(benchmark: str, record: Record, problem: str, subset: str = "", item_id: str | None = None
               ) -> dict[str, Any]:
    """The item row of a bad input row: where it came from and why, under its own id when it has a usable one,
    else a positional id (file and row) that no good item can share."""
    return {"item_id": item_id or f"{benchmark}/{record.source}:{record.row}", "benchmark": benchmark,
            "subset": subset, "source": record.source, "row": record.row, "error": problem}


def items_or_errors(path: str, read_row: Callable[[Record], tuple[dict[str, Any], list[str]]], duplicate: str,
                    benchmark: str, subset: str = "") -> Iterator[dict[str, Any]]:
    """read_items, with each bad row turned into its error item in place. An error item keeps the row's own id
    unless a good item already has it (a duplicate); then, like a row that has no id, it is named by file and
    row, so error items keep distinct ids. `subset` is theirs when the row names none."""
    good: set[str] = set()
    for record, item, problem in read_items(path, read_row, duplicate):
        if problem is None:
            good.add(item["item_id"])
            yield item
            continue
        own = item.get("item_id")
        yield error_item(benchmark, record, problem, item.get("subset", subset), None if own in good else own)


def _jsonl_records(source: str) -> Iterator[Record]:
    opener = gzip.open if source.endswith(".gz") else open  # bundled data keeps large files compressed
    with opener(source, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as e:
                yield Record(source, number, None, f"not valid JSON ({e.msg})")
                continue
            if isinstance(data, dict):
                yield Record(source, number, data)
            else:
                yield Record(source, number, None, "not a JSON object")


def _json_records(source: str) -> Iterator[Record]:
    with open(source, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            yield Record(source, e.lineno, None, f"not valid JSON ({e.msg})")
            return
    rows = data if isinstance(data, list) else [data]
    for number, row in enumerate(rows, 1):
        if isinstance(row, dict):
            yield Record(source, number, row)
        else:
            yield Record(source, number, None, "not a JSON object")


def _parquet_records(source: str) -> Iterator[Record]:
    import pyarrow.parquet as pq  # pyarrow is a core dependency; imported here to keep this module light

    for number, row in enumerate(pq.read_table(source).to_pylist(), 1):
        yield Record(source, number, row)
