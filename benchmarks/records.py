"""Reading benchmark files row by row, keeping where each row came from.

Every benchmark reads JSONL, JSON arrays, CSV/TSV, Parquet or a folder of those. Errors must name the file and
the row, so rows are yielded with their (source, row) position instead of being read as one anonymous table. A
benchmark config's `columns` (benchmark field -> the file's column) renames a row's columns before the
benchmark reads it, and a problem with a mapped field names its column too.
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.decoding import as_object, file_lines, json_object, json_problem, open_data, unstorable_field
from benchmarks.object_store import is_object_path, object_versions
from benchmarks.options import is_int
from benchmarks.row_types import Item

SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".parquet", ".csv", ".csv.gz", ".tsv", ".tsv.gz")
Columns = Mapping[str, str]  # benchmark field -> the data file's column that holds it


@dataclass(frozen=True)
class Record:
    """One raw row, or the reason it could not be read (then `data` is None)."""

    source: str
    row: int  # 1-based line number (JSONL) or row index + 1 (JSON array, CSV/TSV data rows, Parquet)
    data: dict[str, Any] | None
    problem: str | None = None


def data_files(path: str) -> list[str]:
    """The data files under `path`: the file itself, or every supported file in a folder (or under an s3://
    prefix: benchmarks.object_store), sorted."""
    if is_object_path(path):
        return list(object_versions(path, SUFFIXES))
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


def read_records(path: str, columns: Columns | None = None) -> Iterator[Record]:
    """Yield every row of every data file under `path`, its columns renamed by `columns`; unreadable rows become
    records with a problem, and so does a file with no rows at all (row 1: "no rows"), so an empty or truncated
    download is never silent."""
    for source in data_files(path):
        read = _parquet_records if source.endswith(".parquet") else (
            _jsonl_records if source.endswith((".jsonl", ".jsonl.gz")) else
            _csv_records if source.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz")) else _json_records)
        empty = True
        try:
            for record in read(source):
                empty = False
                yield mapped(record, columns) if columns and record.data is not None else record
        except OSError as e:  # opening failed: a broken link, no permission
            empty = False
            yield Record(source, 1, None, f"cannot be read ({e.strerror or e})")
        if empty:
            yield Record(source, 1, None, "no rows in this file")


def id_digest(text: str) -> int:
    """A 64-bit BLAKE2b digest of an id: what compact sets of ids keep (SeenIds; a cell's answered requests and
    its items' shards, jobs.flow.first_round)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def id_digests(texts: Iterable[str]) -> np.ndarray:
    """id_digest of each, as uint64."""
    return np.fromiter((id_digest(text) for text in texts), np.uint64)


class SeenIds:
    """The item ids a walk over a benchmark's files has read, and where each was first read, in about 16 bytes
    an id where a dict of the ids and places took many times that (docs/measurements.md, "Figures moved from
    the code's comments"; a million-item file is read in one driver, jobs.flow.walk): an id's 64-bit BLAKE2b
    digest and its (file, row), sorted in numpy arrays, the newest in a dict until it holds an eighth of them.
    Two ids share a digest with odds of about n^2 / 2^65 (3e-8 at a million ids); the later would be reported
    as a duplicate of the earlier, naming both rows."""

    def __init__(self) -> None:
        self.sources: dict[str, int] = {}  # file -> its number in a place
        self.recent: dict[int, int] = {}  # digest -> place, since the last merge
        self.digests = np.empty(0, np.uint64)
        self.places = np.empty(0, np.uint64)

    def where(self, item_id: str) -> str | None:
        """'<file>: row <n>' where the id was first read, None if it was not."""
        digest = id_digest(item_id)
        place = self.recent.get(digest)
        if place is None:
            at = int(np.searchsorted(self.digests, np.uint64(digest)))
            if at == len(self.digests) or int(self.digests[at]) != digest:
                return None
            place = int(self.places[at])
        source = next(name for name, number in self.sources.items() if number == place >> ROW_BITS)
        return f"{source}: row {place & ((1 << ROW_BITS) - 1)}"

    def __contains__(self, item_id: object) -> bool:
        return isinstance(item_id, str) and self.where(item_id) is not None

    def add(self, item_id: str, source: str, row: int) -> None:
        number = self.sources.setdefault(source, len(self.sources))
        self.recent[id_digest(item_id)] = number << ROW_BITS | row
        if len(self.recent) >= max(1 << 15, len(self.digests) // 8):
            self._merge()

    def _merge(self) -> None:
        """The recent ids sorted on their own and inserted into the sorted arrays (after any equal digest, so
        the place first read stays first): a copy of each array and no sort of all of them, which at half a
        million ids held five arrays of their size at once."""
        new = np.fromiter(self.recent, np.uint64, len(self.recent))
        order = np.argsort(new, kind="stable")
        at = np.searchsorted(self.digests, new[order], side="right")
        self.digests = np.insert(self.digests, at, new[order])
        self.places = np.insert(self.places, at, np.fromiter(self.recent.values(), np.uint64, len(new))[order])
        self.recent = {}


ROW_BITS = 40  # a place is (file number << ROW_BITS) | row
csv.field_size_limit(sys.maxsize)  # a passage may be megabytes; the reader's default limit is 128 KiB


def mapped(record: Record, columns: Columns) -> Record:
    """The record with each mapped column under its field's name. A column of the field's own name that the
    mapping replaces is no longer read (benchmarks.columns names it as unread)."""
    data = record.data or {}
    renamed = {key: value for key, value in data.items() if key not in columns and key not in columns.values()}
    renamed.update({name: data[column] for name, column in columns.items() if column in data})
    return Record(record.source, record.row, renamed, record.problem)


def with_columns(problem: str, columns: Columns | None) -> str:
    """A problem's fields that come from another column, named with it: "field 'reject' (column 'rejected')"."""
    if not columns:
        return problem
    return re.sub(r"field '([^']+)'", lambda m: m.group(0) + (f" (column '{columns[m.group(1)]}')"
                                                             if m.group(1) in columns else ""), problem)


def read_items(path: str, read_row: Callable[[Record], tuple[dict[str, Any], list[str]]], duplicate: str,
               seen: SeenIds | None = None, columns: Columns | None = None
               ) -> Iterator[tuple[Record, dict[str, Any], str | None]]:
    """Every row of `path` read into an item by `read_row` (item, problems), with repeated item ids caught:
    (record, item, None) for a good row, the item carrying source, row and error None; (record, what could be
    read, problem) for a bad one, the problem naming the file, row and every field that is wrong. `duplicate`
    words a repeat, with {} for where the id was first seen; `seen` gets the ids of the good rows; `columns`
    maps benchmark fields to the file's columns."""
    seen = SeenIds() if seen is None else seen
    for record in read_records(path, columns):
        where = f"{record.source}: row {record.row}"
        if record.data is None:
            yield record, {}, f"{where}: {record.problem}"
            continue
        item, problems = read_row(record)
        if not problems and (first := seen.where(item["item_id"])) is not None:
            problems = [duplicate.format(first)]
        if problems:
            yield record, item, f"{where}: " + with_columns("; ".join(problems), columns)
            continue
        seen.add(item["item_id"], record.source, record.row)
        yield record, {**item, "source": record.source, "row": record.row, "error": None}, None


def id_problem(row: dict[str, Any]) -> str | None:
    """What is wrong with a row's own `id`, when it has one: only text or an integer can name an item (a list,
    an object, true or NaN would all become ids that say nothing, or that collide)."""
    value = row.get("id")
    if value is None or isinstance(value, str) or is_int(value):
        return None
    return "field 'id' is not text or an integer"


def error_item(benchmark: str, record: Record, problem: str, subset: str = "", item_id: str | None = None
               ) -> Item:
    """The item row of a bad input row: where it came from and why, under its own id when it has a usable one,
    else a positional id (file and row) that no good item can share."""
    return {"item_id": item_id or f"{benchmark}/{record.source}:{record.row}", "benchmark": benchmark,
            "subset": subset, "source": record.source, "row": record.row, "error": problem}


def items_or_errors(path: str, read_row: Callable[[Record], tuple[dict[str, Any], list[str]]], duplicate: str,
                    benchmark: str, subset: str = "", columns: Columns | None = None) -> Iterator[Item]:
    """read_items, with each bad row turned into its error item in place. An error item keeps the row's own id
    unless a good item already has it (a duplicate); then, like a row that has no id, it is named by file and
    row, so error items keep distinct ids. `subset` is theirs when the row names none."""
    good = SeenIds()
    for record, item, problem in read_items(path, read_row, duplicate, good, columns):
        if problem is None:
            yield item
            continue
        own = item.get("item_id")
        yield error_item(benchmark, record, problem, item.get("subset", subset), None if own in good else own)


def _jsonl_records(source: str) -> Iterator[Record]:
    for number, line, problem in file_lines(source):
        if line is not None and not line.strip():
            continue
        data, problem = json_object(line) if line is not None else (None, problem)
        yield Record(source, number, data, problem)


def _json_records(source: str) -> Iterator[Record]:
    with open_data(source) as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        yield Record(source, raw.count(b"\n", 0, e.start) + 1, None,
                     f"not valid UTF-8 (byte {raw[e.start]:#04x}): the whole file is unread")
        return
    if not text.strip():
        return
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        yield Record(source, getattr(e, "lineno", 1), None, json_problem(e))
        return
    for number, row in enumerate(data if isinstance(data, list) else [data], 1):
        yield Record(source, number, *as_object(row))


def _csv_records(source: str) -> Iterator[Record]:
    """CSV or TSV (by its suffix) with a header row, every cell text and an empty cell null. The standard
    library's reader, not pyarrow's: pyarrow numbers no line once a quoted cell may hold a newline (a passage
    does), so a row with another number of cells than the header could not be named. A cell that is not UTF-8,
    or a row whose cells do not match the header, fails its own row; a cell holding a JSON list or object
    (passages written by json.dumps) stays text for the benchmark to read."""
    with open_data(source) as raw:
        data = gzip.GzipFile(fileobj=raw).read() if source.endswith(".gz") else raw.read()
    # Bytes that are not UTF-8 become lone surrogates, found per cell below, so one bad cell costs its row only.
    lines = io.StringIO(data.decode("utf-8-sig", errors="surrogateescape"), newline="")
    reader = csv.reader(lines, delimiter="\t" if source.endswith((".tsv", ".tsv.gz")) else ",", strict=True)
    try:
        header = next(reader, None)
    except csv.Error as e:
        yield Record(source, 1, None, f"the header is not a CSV row ({e}): the whole file is unread")
        return
    if header is None:
        return
    if (name := next((name for name in header if unstorable_field({name: ""}) is not None), None)) is not None:
        yield Record(source, 1, None, f"the header's column {name!r} is not valid UTF-8: the whole file is unread")
        return
    number = 0
    while True:
        line = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as e:  # a quote that never closes: nothing after it can be told apart
            yield Record(source, number + 1, None, f"line {line} of the file is not a CSV row ({e}): "
                                                   "the rest of the file is unread")
            return
        if not any(cells):
            continue  # a blank line
        number += 1
        if len(cells) != len(header):
            yield Record(source, number, None, f"{len(cells)} cells where the header has {len(header)} "
                                               f"(line {line} of the file)")
            continue
        row = {name: cell if cell != "" else None for name, cell in zip(header, cells)}
        if (field := unstorable_field(row)) is not None:
            yield Record(source, number, None, f"field {field!r} is not valid UTF-8")
            continue
        yield Record(source, number, row)


# A result part's schema metadata: the schema its rows were written with, before the columns of the rest of its
# table were added to it (jobs.store.unify), as Arrow IPC bytes.
WRITTEN_SCHEMA = b"ragjudge.written_schema"


def as_written(table: pa.Table) -> pa.Table:
    """A part's columns (those of them `table` has) with their types as its rows were written: the columns that
    making its table one schema added, all null, are left out, so a reader that tells kinds of rows apart by
    their columns (a judge's `pick_cr`) reads each part as its cell wrote it. A part without WRITTEN_SCHEMA
    is returned as it is."""
    written = (table.schema.metadata or {}).get(WRITTEN_SCHEMA)
    if written is None:
        return table
    fields = [field for field in pa.ipc.read_schema(pa.py_buffer(written)) if field.name in table.column_names]
    return pa.Table.from_arrays([pa.nulls(table.num_rows) if pa.types.is_null(field.type)  # no cast to null
                                 else cast_column(table.column(field.name), field.type) for field in fields],
                                schema=pa.schema(fields))


def cast_column(column: pa.ChunkedArray, to: pa.DataType) -> pa.ChunkedArray:
    """The column in type `to`, left as it is where it has it already: pyarrow's cast of a list of nulls to its
    own type writes offsets past its values (an API judge's `logprobs_cr`, [null, null] a row, then fails to read)."""
    return column if column.type == to else column.cast(to)


def _parquet_records(source: str) -> Iterator[Record]:
    try:
        with open_data(source) as f:
            table = as_written(pq.read_table(f))
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError, ArrowIOError an OSError
        yield Record(source, 1, None, f"not a readable Parquet file ({e})")
        return
    for number, row in enumerate(table.to_pylist(), 1):
        yield Record(source, number, row)
