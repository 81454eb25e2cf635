"""The run root: where a run's manifest, predictions, answered requests, errors, metrics and report live.

One class serves a local folder and an `s3://bucket/prefix` (any S3-compatible endpoint), so the pipeline,
resume, `ragjudge report` and Ray Data readers see the same Hive-partitioned layout (jobs.store.layout) wherever
the run is stored. What differs between stores is a backend's (jobs.store.backends, picked by the URI's scheme);
what they share stays here: the layout, retries, redaction and the write fence.

Credentials, region and endpoint come from the standard AWS environment (or the endpoint argument); they are
never stored on the RunRoot, written into the run, or shown in its repr. As a second line of defence every
text and every string cell written here passes through `redact` (jobs.store.redaction), so an error message that
echoes a secret from the environment is stored without it.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, TypedDict

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from benchmarks.boundary_types import ArrowRow
from benchmarks.records import as_written
from jobs.config import RETRY_S, StorageConfig
from jobs.store import layout
from jobs.store.backends import Backend, backend_for
from jobs.store.layout import PARTITION_KEYS, QUARANTINE, TABLES, Table, flat_value, partition_value
from jobs.store.parquet_rows import (
    REQUESTS_SCHEMA,
    joined_rows,
    parquet_bytes,
    with_columns,
)
from jobs.store.redaction import redact, scrub, secret_values
from jobs.store.retry import T, UnreadableFile, retrying

__all__ = ["QUARANTINE", "TABLES", "RunRoot", "Table", "open_run", "partition_value", "redact"]


def open_run(path: str, endpoint_url: str | None = None) -> RunRoot:
    """The RunRoot of a run folder given as one path, ROOT/RUN (local or s3://bucket/prefix/RUN), as the
    commands that read a finished or running run take it."""
    parent, _, run = path.rstrip("/").rpartition("/")
    return RunRoot(parent or ".", run, endpoint_url=endpoint_url)


class QuarantinedPart(TypedDict):
    """A part read_whole_rows moved aside because it cannot be decoded."""

    path: str  # where it was, relative to the run
    moved_to: str  # where it is now: quarantine/<path>
    bytes: int
    reason: str  # the decoder's error, redacted


class RunRoot:
    """ROOT/RUN on a local path or an s3:// URI; all reads and writes of a run go through here."""

    def __init__(self, uri: str, run: str, endpoint_url: str | None = None,
                 before_write: Callable[[], None] | None = None, retry_s: float = RETRY_S) -> None:
        """`before_write` runs before every change to the run (the driver's lease fence: jobs.store.lease); it stays
        with this object, not its siblings, and with its pickles only as `__reduce__` says. A storage call
        failing transiently is tried again for up to `retry_s` seconds (jobs.store.retry)."""
        if not run or "/" in run.strip("/") or run in (".", ".."):
            raise ValueError(f"run must be one folder name, got {run!r}")
        if retry_s < 0:
            raise ValueError(f"storage.retry_s must be 0 or more, got {retry_s:g}")
        self._args = (uri, run, endpoint_url)
        self.retry_s = retry_s
        self.before_write = before_write
        self.run = run.strip("/")
        self.backend: Backend = backend_for(uri, endpoint_url)
        self.base = f"{self.backend.root}/{self.run}"

    @classmethod
    def of(cls, storage: StorageConfig, before_write: Callable[[], None] | None = None) -> RunRoot:
        """The run root of a sweep's `storage` settings (root, run, endpoint_url, retry_s)."""
        return cls(storage.root, storage.run, endpoint_url=storage.endpoint_url, before_write=before_write,
                   retry_s=storage.retry_s)

    def __repr__(self) -> str:
        return f"RunRoot({self.uri('')!r})"

    __str__ = __repr__

    def __reduce__(self):
        """Pickle as the constructor arguments: a copy on a Ray worker builds its client from its own env. The
        fence travels only where it says how it works in another process (`for_other_process()`: the lease's, which
        there reads lease.json before each write); any other stays with this object."""
        for_other_process = getattr(self.before_write, "for_other_process", None)
        return (RunRoot, (*self._args, for_other_process() if for_other_process else None, self.retry_s))

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The backend's pyarrow filesystem, on which `path()` names files (for pyarrow and Ray Data readers)."""
        return self.backend.filesystem

    @property
    def fence_travels(self) -> bool:
        """Whether a copy of this root in another process is fenced as this one is: it has no fence, or one
        that says how it works there (`__reduce__`)."""
        return self.before_write is None or hasattr(self.before_write, "for_other_process")

    @property
    def on_this_machine(self) -> bool:
        """Whether `path()` names a file of this machine's filesystem (a local root), not an object store's."""
        return self.backend.uri_prefix == ""

    # -- paths ---------------------------------------------------------------------------------------------
    def path(self, relpath: str = "") -> str:
        """The path of `relpath` on `self.filesystem` (for pyarrow and Ray Data readers)."""
        relpath = relpath.strip("/")
        if any(part in ("..", ".") for part in relpath.split("/")):
            raise ValueError(f"{relpath!r}: paths stay inside the run root")
        return f"{self.base}/{relpath}" if relpath else self.base

    def uri(self, relpath: str = "") -> str:
        """Where `relpath` is, for messages: s3://bucket/prefix/run/... or an absolute local path."""
        return self.backend.uri_prefix + self.path(relpath)

    def _naming(self, kind: str, benchmark: str, model: str) -> Callable[[str], str]:
        """How the cell's folder under `kind` encodes its names: layout.partition_value, or flat_value where only
        a folder of an older run is there (a model name's '/' as '__'), so an older run reads and resumes."""
        current, older = (layout.cell_folder(kind, benchmark, model, v) for v in (partition_value, flat_value))
        if older != current and not self._exists(current) and self._exists(older):
            return flat_value
        return partition_value

    def _exists(self, relpath: str) -> bool:
        """Whether a file or folder of the run is there."""
        path = self.path(relpath)
        return self.retrying("list", path, partial(self.backend.exists, path))

    def partition(self, table: str, benchmark: str, model: str) -> str:
        """Relative folder of one (table, benchmark, model) partition (jobs.store.layout)."""
        return layout.partition(table, benchmark, model, self._naming(table, benchmark, model))

    def metrics_path(self, benchmark: str, model: str) -> str:
        """Relative path of a cell's metrics.json (jobs.store.layout)."""
        return layout.metrics_path(benchmark, model, self._naming("metrics", benchmark, model))

    def strategy_path(self, kind: str, benchmark: str, model: str, strategy: str, name: str) -> str:
        """Relative path of a retrieval strategy's file under runs/ or metrics/ (jobs.store.layout)."""
        return layout.strategy_path(kind, benchmark, model, strategy, name, self._naming(kind, benchmark, model))

    # -- files ---------------------------------------------------------------------------------------------
    def retrying(self, doing: str, path: str, action: Callable[[], T]) -> T:
        """`action()` (a storage call on `path`), tried again through an outage for up to `retry_s`
        (jobs.store.retry): StorageUnreachable past it, StorageFull at once on a full disk."""
        return retrying(action, doing=doing, file=self.backend.uri_prefix + path, root=self.uri(""),
                        retry_s=self.retry_s)

    def _write_bytes(self, path: str, data: bytes) -> None:
        """Write a file so that readers see the old version or the whole new one, never a torn file.

        The bytes are whole in memory, so each try writes all of them (the backend's `put` is atomic), each
        behind the write fence: an outage may have outlasted the lease.
        """
        self.retrying("write", path, partial(self._fenced, self.backend.put, path, data))

    def _fenced(self, change: Callable[..., T], *args: Any) -> T:
        """`change(*args)` once the write fence (`before_write`) let it pass."""
        if self.before_write is not None:
            self.before_write()
        return change(*args)

    def _read_bytes(self, path: str) -> bytes | None:
        """The file's bytes, or None if there is none (an unreachable store raises: it is no missing file)."""
        return self.retrying("read", path, partial(self.backend.get, path))

    def create(self, relpath: str, data: bytes) -> bool:
        """Store a file only if there is none yet, atomically (the lease's take); False if there was one.
        Retried like every call: a retry that finds the file an earlier try created also returns False."""
        path = self.path(relpath)
        return self.retrying("create", path, partial(self._fenced, self.backend.create, path, data))

    def delete(self, relpath: str) -> None:
        """Remove a file of the run if it is there."""
        path = self.path(relpath)
        self.retrying("delete", path, partial(self._fenced, self.backend.delete, path))

    def delete_folders(self, relpath: str, prefix: str) -> None:
        """Remove the folders directly under `relpath` whose names start with `prefix`, each behind the write
        fence, as every other change of the run."""
        folder = self.path(relpath)

        def remove() -> None:
            for path in self.backend.folders(folder):
                if path.rsplit("/", 1)[-1].startswith(prefix):
                    self._fenced(self.backend.delete_folder, path)

        self.retrying("delete", folder, remove)

    def clear_strategies(self, kind: str, benchmark: str, model: str) -> None:
        """Remove a retrieval cell's strategy=* folders under runs/ or metrics/ (not the cell's metrics.json),
        so a strategy dropped from the config leaves no stale files behind."""
        self.delete_folders(layout.cell_folder(kind, benchmark, model, self._naming(kind, benchmark, model)),
                            layout.STRATEGY)

    def sibling(self, run: str) -> RunRoot:
        """Another folder under the same root and endpoint (e.g. a cache that several runs share)."""
        return RunRoot(self._args[0], run, endpoint_url=self._args[2], retry_s=self.retry_s)

    def write_bytes(self, relpath: str, data: bytes) -> None:
        """Store a binary file (an index) atomically. Not redacted: binary data holds no environment text."""
        self._write_bytes(self.path(relpath), data)

    def read_bytes(self, relpath: str) -> bytes | None:
        """The stored file's bytes, or None if there is none."""
        return self._read_bytes(self.path(relpath))

    def write_text(self, relpath: str, text: str) -> None:
        """Store a text file (the HTML report), atomically, secrets removed."""
        self._write_bytes(self.path(relpath), redact(text).encode("utf-8"))

    def write_json(self, relpath: str, obj: Any) -> None:
        """Store a JSON document (manifest, metrics) atomically: a killed run never leaves half a manifest."""
        self.write_text(relpath, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")

    def read_json(self, relpath: str) -> Any | None:
        """The stored JSON document, or None if there is none yet (a new run, an unfinished cell);
        UnreadableFile, naming it, if it is not JSON (cut short, emptied)."""
        data = self._read_bytes(self.path(relpath))
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
            raise UnreadableFile(f"{self.uri(relpath)} cannot be read: {type(e).__name__}: {e}") from None

    # -- partitions of rows --------------------------------------------------------------------------------
    def write_rows(self, table: Table, benchmark: str, model: str, rows: list[ArrowRow],
                   part: str) -> str | None:
        """Store rows as ONE Parquet file `part-<part>.parquet` of the partition, atomically; returns its URI.

        The part holds no `benchmark` or `model` column: its folders name the cell, and a Hive reader (pandas,
        pyarrow, DuckDB) fails on a key it finds in both; a row's own (an item's benchmark module) gives way to
        the cell's, which every read here adds back. Nothing is written for no rows. Resume relies on a part
        being whole or absent.
        """
        if not part or "/" in part or part.startswith("."):
            raise ValueError(f"part must be a plain name, got {part!r}")
        if not rows:
            return None
        relpath = layout.part_path(table, benchmark, model, part, self._naming(table, benchmark, model))
        self.write_parquet(relpath, [{k: v for k, v in row.items() if k not in PARTITION_KEYS} for row in rows],
                           REQUESTS_SCHEMA if table == "requests" else None)
        return self.uri(relpath)

    def write_parquet(self, relpath: str, rows: list[ArrowRow], schema: pa.Schema | None = None) -> None:
        """Store rows as one Parquet file, atomically, every string cell scrubbed (jobs.store.redaction), with
        `schema`'s columns first (parquet_bytes)."""
        secrets = secret_values()
        self._write_bytes(self.path(relpath), parquet_bytes([scrub(row, secrets) for row in rows], schema))

    def parquet_files(self, relpath: str) -> list[tuple[str, str]]:
        """(name between `part-` and `.parquet`, path) of each part file directly in a folder, by name."""
        folder = self.path(relpath)
        parts = []
        for path in self.retrying("list", folder, partial(self.backend.files, folder)):
            name = path.rsplit("/", 1)[1]
            if name.startswith("part-") and name.endswith(".parquet"):
                parts.append((name[len("part-"):-len(".parquet")], path))
        return sorted(parts)

    def _part_files(self, table: str, benchmark: str, model: str) -> list[tuple[str, str]]:
        return self.parquet_files(self.partition(table, benchmark, model))

    def _part_bytes(self, table: str, benchmark: str, model: str, names: Callable[[str], bool] | None = None
                    ) -> Iterator[tuple[str, bytes]]:
        return self._folder_bytes(self.partition(table, benchmark, model), names)

    def _folder_bytes(self, relpath: str, names: Callable[[str], bool] | None = None) -> Iterator[tuple[str, bytes]]:
        """(path, bytes) of each part of a folder in part-name order (those whose name `names` takes, when
        given), each fetched whole: a storage error raises here, apart from decoding (a part removed since it
        was listed is skipped)."""
        for name, path in self.parquet_files(relpath):
            if names is not None and not names(name):
                continue
            data = self._read_bytes(path)
            if data is not None:
                yield path, data

    def list_parts(self, table: Table, benchmark: str, model: str) -> list[str]:
        """The part names stored in a partition, sorted (the `<part>` of part-<part>.parquet)."""
        return [name for name, _ in self._part_files(table, benchmark, model)]

    def read_rows(self, table: Table, benchmark: str, model: str, columns: Callable[[str], bool] | None = None,
                  transform: Callable[[pa.Table], pa.Table] | None = None) -> list[ArrowRow]:
        """All rows of a partition, part by part in part-name order, with the cell's `benchmark` and `model`
        (where `columns` takes them); [] if it has none (read_folder_rows)."""
        return self.read_folder_rows(self.partition(table, benchmark, model), columns, _keys(benchmark, model),
                                     transform)

    def read_folder_rows(self, relpath: str, columns: Callable[[str], bool] | None = None,
                         constants: ArrowRow | None = None,
                         transform: Callable[[pa.Table], pa.Table] | None = None) -> list[ArrowRow]:
        """All rows of the parts in a folder, part by part in part-name order, each with the `constants` columns
        its part lacks (those `columns` takes); [] if it has none.

        Parts are read one at a time, so parts whose column types differ (a column all None in one part,
        float in another) still read back; a column that only some parts have is None in the others' rows.
        `columns`, when given, picks the columns to decode by name (a report skips the judges' long texts);
        each part is still fetched whole, one retried GET (parts hold `flush_every` rows). `transform`, when
        given, is applied to each part before its rows are made (it keeps some rows, or measures texts).
        """
        return joined_rows(self.read_folder_parts(relpath, columns, constants, transform))

    def read_folder_parts(self, relpath: str, columns: Callable[[str], bool] | None = None,
                          constants: ArrowRow | None = None,
                          transform: Callable[[pa.Table], pa.Table] | None = None) -> list[pa.Table]:
        """The parts read_folder_rows makes its rows of, as tables: a reader that keeps them so holds no rows."""
        parts = []
        for path, data in self._folder_bytes(relpath):
            try:
                names = None if columns is None else [n for n in pq.read_schema(pa.BufferReader(data)).names
                                                      if columns(n)]
                part = as_written(pq.read_table(pa.BufferReader(data), columns=names))
                part = part if transform is None else transform(part)
            except (pa.ArrowException, OSError) as e:  # decoding bytes in memory: the part itself is bad
                raise UnreadableFile(f"{self.backend.uri_prefix}{path} cannot be read: {type(e).__name__}: "
                                     f"{e}") from None
            parts.append(with_columns(part, {k: v for k, v in (constants or {}).items()
                                             if columns is None or columns(k)}))
        return parts

    def folders(self, relpath: str = "") -> list[str]:
        """The names of the folders directly in a folder of the run, [] if there is none."""
        folder = self.path(relpath)
        return sorted(path.rsplit("/", 1)[-1] for path in
                      self.retrying("list", folder, partial(self.backend.folders, folder)))

    def read_whole_rows(self, table: Table, benchmark: str, model: str, names: Callable[[str], bool] | None = None
                        ) -> tuple[list[ArrowRow], list[QuarantinedPart]]:
        """The rows of a partition's readable parts (those whose part name `names` takes, when given), and the
        parts that are not (cut short, emptied, garbled).

        Resume must not fail on one bad part, nor trust it: each is moved to `quarantine/<its relative
        path>` (kept for a post-mortem, out of every table's reads) and named as {path, moved_to, bytes, reason},
        so its rows count as never stored. Only decoding fails a part: each is fetched whole first, so a
        storage error (a network failure) still raises instead of moving a good part aside.
        """
        parts, moved = self.readable_parts(table, benchmark, model, names)
        return joined_rows(parts), moved

    def readable_parts(self, table: Table, benchmark: str, model: str, names: Callable[[str], bool] | None = None,
                       quarantine: bool = True) -> tuple[list[pa.Table], list[QuarantinedPart]]:
        """read_whole_rows's parts as Arrow tables, each decoded whole, with the cell's `benchmark` and `model`,
        the unreadable ones quarantined: for a check that every part still reads, which needs no row of them in
        Python. With `quarantine` False an unreadable part is named but left where it is (for a caller that
        hands it on to one that moves it)."""
        parts, moved = [], []  # moved: list[QuarantinedPart]
        for path, data in self._part_bytes(table, benchmark, model, names):
            try:
                parts.append(with_columns(as_written(pq.read_table(pa.BufferReader(data))), _keys(benchmark, model)))
            except (pa.ArrowException, OSError) as e:  # decoding bytes in memory: the file itself is bad
                relpath = path[len(self.base) + 1:]
                target = f"{QUARANTINE}/{relpath}"
                if quarantine:
                    self.retrying("move", path,
                                  partial(self._fenced, self.backend.move, path, self.path(target)))
                moved.append({"path": relpath, "moved_to": target, "bytes": len(data),
                              "reason": redact(f"{type(e).__name__}: {e}")})
        return parts, moved

    def read_dataset(self, table: Table):
        """A Ray Dataset over every partition of `table` (e.g. all predictions of the run), read in parallel,
        `benchmark` and `model` decoded from the folders (Ray Data's default Hive partitioning)."""
        import ray

        if table not in TABLES:
            raise ValueError(f"table must be one of {TABLES}, got {table!r}")
        return ray.data.read_parquet(self.path(table), filesystem=self.filesystem, file_extensions=["parquet"])

    def write_cell(self, benchmark: str, model: str, predictions: list[ArrowRow],
                   errors: list[ArrowRow]) -> dict[str, int]:
        """A finished cell's item rows and bad rows, each replacing what an earlier attempt stored; returns how
        many rows each table holds now, for manifest.json (a report checks the parts against it)."""
        for table, rows in (("predictions", predictions), ("errors", errors)):
            self.clear(table, benchmark, model)
            self.write_rows(table, benchmark, model, rows, part="0")
        return {"predictions": len(predictions), "errors": len(errors)}

    def clear(self, table: Table, benchmark: str, model: str) -> None:
        """Remove a partition before it is rewritten, so stale parts never mix with new ones."""
        folder = self.path(self.partition(table, benchmark, model))

        def remove() -> None:
            if self.backend.exists(folder):
                self._fenced(self.backend.delete_folder, folder)

        self.retrying("delete", folder, remove)


def _keys(benchmark: str, model: str) -> ArrowRow:
    """A cell's partition keys as the columns its rows are read with."""
    return dict(zip(PARTITION_KEYS, (benchmark, model)))
