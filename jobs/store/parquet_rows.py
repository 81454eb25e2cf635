"""Rows (dicts) as the bytes of one Parquet part, and the rows of several parts back, as the run root stores
them: every column any row has is kept, whatever row it first appears in."""
from __future__ import annotations

import types
import typing

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.boundary_types import ArrowRow
from benchmarks.records import WRITTEN_SCHEMA, cast_column
from benchmarks.row_types import PART_KEYS, Answer

_ARROW_TYPES = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}


def arrow_type(hint: typing.Any) -> pa.DataType:
    """The Arrow type of a record's field: str, int, float or bool, a list of one, each of them or None."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        (hint,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return arrow_type(hint)
    if typing.get_origin(hint) is list:
        return pa.list_(arrow_type(typing.get_args(hint)[0]))
    return _ARROW_TYPES[hint]


def arrow_schema(record: type, leave_out: frozenset[str] = frozenset()) -> pa.Schema:
    """A TypedDict's fields as an Arrow schema, in the order the record declares them."""
    return pa.schema([(name, arrow_type(hint)) for name, hint in typing.get_type_hints(record).items()
                      if name not in leave_out])


# requests/: every part has every column an answer may have, typed, whatever its engine's task: the table reads as
# one dataset as it is written, and no part of it is rewritten when a run ends (jobs.store.unify).
REQUESTS_SCHEMA = arrow_schema(Answer, leave_out=PART_KEYS)


def parquet_bytes(rows: list[ArrowRow], schema: pa.Schema | None = None) -> bytes:
    """Rows -> one Parquet file's bytes whose columns are `schema`'s, with its types, then the rest of the rows'
    keys (a missing key is null); a value that is not of its schema's type keeps its own. With a `schema`, the
    rows' own columns are its WRITTEN_SCHEMA: the run root reads the part back as the rows were.

    pa.Table.from_pylist would take the columns from the first row alone and drop the rest without a word.
    """
    declared = dict(zip(schema.names, schema.types)) if schema is not None else {}
    names: dict[str, None] = dict.fromkeys(declared)
    for row in rows:
        names.update(dict.fromkeys(row))
    columns = {}
    for name in names:
        values = [row.get(name) for row in rows]
        try:
            columns[name] = pa.array(values, type=declared.get(name))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            if name not in declared:
                raise ValueError(f"column {name!r} mixes types that one Parquet column cannot hold: {e}") from e
            columns[name] = pa.array(values)  # not of its declared type: its own, for unify_table to say so
    table = pa.table(columns)
    if declared:  # the rows' own columns, for the readers that read a part as its rows were (as_written)
        own = {name for row in rows for name in row}
        written = pa.schema([field for field in table.schema if field.name in own])
        table = table.replace_schema_metadata({WRITTEN_SCHEMA: written.serialize().to_pybytes()})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def with_columns(part: pa.Table, constants: ArrowRow) -> pa.Table:
    """The part with a column of each constant it lacks (a part keeps its own: an older run's, say)."""
    for name, value in constants.items():
        if name not in part.column_names:
            part = part.append_column(name, pa.repeat(pa.scalar(value), part.num_rows))
    return part


def joined_rows(parts: list[pa.Table]) -> list[ArrowRow]:
    """The rows of several parts in order; a column that only some parts have is None in the others' rows."""
    names = list(dict.fromkeys(name for part in parts for name in part.column_names))
    rows: list[ArrowRow] = []
    for part in parts:
        part_rows = part.to_pylist()
        if part.column_names != names:
            part_rows = [{name: row.get(name) for name in names} for row in part_rows]
        rows.extend(part_rows)
    return rows


def table_schema(schemas: list[pa.Schema]) -> pa.Schema:
    """One schema for a table whose parts have these: every column any part has, in first-seen order, each
    with the type the parts agree on (a column all null in one part, or int in one and float in another, takes
    the wider type). ValueError naming the column whose types no one type holds (string in one, int in another).
    """
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise ValueError(str(e).removeprefix("Unable to merge: ")) from e


def conformed(part: pa.Table, schema: pa.Schema) -> pa.Table:
    """The part with exactly `schema`'s columns, in its order and types (null where the part lacks one), and
    the schema its rows were written with in its metadata (benchmarks.records.as_written reads them so)."""
    metadata = part.schema.metadata or {}
    written = metadata.get(WRITTEN_SCHEMA) or part.schema.remove_metadata().serialize().to_pybytes()
    return pa.Table.from_arrays(
        [cast_column(part.column(field.name), field.type) if field.name in part.column_names
         else pa.nulls(part.num_rows, field.type) for field in schema],
        schema=schema.with_metadata({**metadata, WRITTEN_SCHEMA: written}))
