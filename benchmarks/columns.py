"""The fields a judged benchmark reads from a data row, declared once per benchmark (`Benchmark.fields`), and
what a data file holds that its benchmark would not read: `ragjudge benchmarks` prints the fields, and a run
names every column it leaves unread, so that no column is dropped without a word."""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice

from benchmarks.records import Columns, data_files, read_records

UNREAD_SAMPLE_ROWS = 200  # rows of each file read to find the columns a benchmark leaves unread


@dataclass(frozen=True)
class Field:
    """One field of a benchmark's rows: its name, whether a row must have it, its type, what it means, and how
    it reaches the model's prompt (or the score)."""

    name: str
    type: str
    meaning: str
    use: str
    required: bool = True
    unless: str | None = None  # not read from a row that has this field (another form of the same data)


def field_names(fields: Iterable[Field]) -> set[str]:
    return {f.name for f in fields}


def mapping_problems(fields: Sequence[Field], columns: Mapping[str, str]) -> list[str]:
    """What is wrong with a `columns` mapping: a field the benchmark does not have, or a column two fields
    take."""
    known = field_names(fields)
    problems = [f"columns: '{name}' is not a field of this benchmark (its fields: {', '.join(sorted(known))})"
                for name in columns if name not in known]
    taken: dict[str, str] = {}
    for name, column in columns.items():
        if column in taken:
            problems.append(f"columns: '{taken[column]}' and '{name}' both read column '{column}'")
        taken[column] = name
    return problems


def unread_columns(fields: Sequence[Field], path: str, columns: Columns | None = None,
                   rows: int = UNREAD_SAMPLE_ROWS) -> dict[str, list[str]]:
    """Per data file under `path`, the columns of its first `rows` rows that no field reads (after the mapping
    renamed them), in the order first seen."""
    known = field_names(fields)
    found: dict[str, dict[str, None]] = {}
    for record in (r for source in data_files(path) for r in islice(read_records(source, columns), rows)):
        data = record.data or {}
        unread = [name for name in data if name not in known or any(
            f.name == name and f.unless and data.get(f.unless) is not None for f in fields)]
        if unread:
            found.setdefault(record.source, {}).update(dict.fromkeys(unread))
    return {source: list(names) for source, names in found.items()}


def unread_lines(benchmark: str, fields: Sequence[Field], data: Iterable[str], columns: Columns | None = None
                 ) -> list[str]:
    """One line per data file that has columns its benchmark does not read, naming them and how to map one."""
    lines = []
    for path in data:
        for source, names in unread_columns(fields, path, columns).items():
            listed = ", ".join(f"'{name}'" for name in names)
            lines.append(f"{benchmark}: {source}: column{'s' * (len(names) > 1)} {listed} not read (the fields: "
                         f"{', '.join(f.name for f in fields)}; to read one as a field: columns: {{FIELD: "
                         f"{names[0]}}})")
    return lines


def example_lines(examples: Iterable[Mapping[str, object]], limit: int = 2) -> list[str]:
    """The first `limit` example rows as JSON lines."""
    return [json.dumps(dict(row), ensure_ascii=False) for row in islice(examples, limit)]
