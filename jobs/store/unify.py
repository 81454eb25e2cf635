"""A finished run's tables made one dataset each: the parts whose columns differ from the table's are rewritten
with every column, so readers that take a folder's columns from its first file (pandas' read_parquet,
pyarrow.dataset) see every column of every cell."""
from __future__ import annotations

from functools import partial

import pyarrow as pa
import pyarrow.parquet as pq

from jobs.store.layout import PARTITION_KEYS, Table
from jobs.store.parquet_rows import conformed, table_schema
from jobs.store.run_root import RunRoot


def unify_table(root: RunRoot, table: Table) -> str | None:
    """Rewrite the parts of `table` whose columns differ from the table's (table_schema: every column of every
    part, one type each). Only footers are read to find them; those parts are rewritten whole, atomically.
    Parts of a run written before parts left the partition keys out are left as they are. Returns why the
    table cannot have one schema (two types of one column; nothing is rewritten then), or None."""
    parts = [f"{table}/{benchmark}/{model}/part-{name}.parquet"
             for benchmark in root.folders(table) for model in root.folders(f"{table}/{benchmark}")
             for name, _ in root.parquet_files(f"{table}/{benchmark}/{model}")]
    schemas = {relpath: root.retrying("read", root.path(relpath),
                                      partial(pq.read_schema, root.path(relpath), filesystem=root.filesystem))
               for relpath in parts}
    schemas = {relpath: schema.remove_metadata() for relpath, schema in schemas.items()
               if not set(PARTITION_KEYS) & set(schema.names)}
    if not schemas:
        return None
    try:
        schema = table_schema(list(schemas.values()))
    except ValueError as e:
        return f"{root.uri(table)}/: {e}"
    columns = dict(zip(schema.names, schema.types))
    for relpath, part_schema in schemas.items():
        if dict(zip(part_schema.names, part_schema.types)) != columns:  # the order of columns matters to none
            data = root.read_bytes(relpath)
            if data is not None:  # removed since it was listed: nothing to make whole
                sink = pa.BufferOutputStream()
                pq.write_table(conformed(pq.read_table(pa.BufferReader(data)), schema), sink)
                root.write_bytes(relpath, sink.getvalue().to_pybytes())
    return None
