"""Rows (dicts) as the bytes of one Parquet part, and the rows of several parts back, as the run root stores
them: every column any row has is kept, whatever row it first appears in."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.boundary_types import ArrowRow


def parquet_bytes(rows: list[ArrowRow]) -> bytes:
    """Rows -> one Parquet file's bytes whose columns are the union of all rows' keys (a missing key is null).

    pa.Table.from_pylist would take the columns from the first row alone and drop the rest without a word.
    """
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    columns = {}
    for name in names:
        try:
            columns[name] = pa.array([row.get(name) for row in rows])
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise ValueError(f"column {name!r} mixes types that one Parquet column cannot hold: {e}") from e
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns), sink)
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
