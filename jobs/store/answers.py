"""ROOT/_answers: the answers every run under a root got from its models, kept by what produced them, so a
new run (another run folder, a cell whose judge changed) asks a model only what it was never asked.

    _answers/model=<model path>/part-<UTC time>-<rows>r-<random>.parquet    columns: key, run, the answer's own

A part holds no `model` column, so Hive readers (pandas, pyarrow, DuckDB) read the store as one dataset, its
`model` the folder's (jobs.store.layout.flat_value: a path's '/' as '__', as stores have always named it, so
kept answers stay found).

A row's `key` hashes the model's identity (jobs.engines.identity: its weights' content or commit and every
setting that changes answers) and the request's inputs (messages, prefill, candidates, sampling settings and
seed). The messages and the tokenizer (part of the identity) fix the prompt's token ids, so the driver never
tokenizes to look an answer up. Failed answers are never kept: a rerun asks them again.

Parts are only ever added, one per (cell, model) that asked something; `ragjudge cache prune` removes whole
parts, by model or by age; both read the part's time and row count from its name, which a listing gives on S3
as on a local disk, so neither downloads a part.
"""
from __future__ import annotations

import calendar
import hashlib
import json
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from actors.sampling import REQUEST_INPUTS
from benchmarks.boundary_types import ArrowRow
from benchmarks.row_types import PromptAnswer, Request
from jobs.store.layout import flat_value
from jobs.store.run_root import RunRoot

ANSWERS = "_answers"  # a sibling of the runs under the storage root, like the retrieval caches
ANSWER_COLUMNS = tuple(PromptAnswer.__annotations__)  # what an engine computed for a prompt
_TIME = "%Y%m%dT%H%M%SZ"


def answer_key(identity: str, request: Request) -> str:
    """The key of `request`'s answer from the model whose identity digest is `identity`."""
    inputs = {name: request[name] for name in REQUEST_INPUTS if request.get(name) is not None}
    return hashlib.sha256(json.dumps([identity, inputs], sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass
class PartInfo:
    """One stored part of a model's answers, as `ragjudge cache ls` and `prune` see it."""

    model: str  # the partition's folder value: the model's path, a hub id's "/" as "__"
    name: str  # between part- and .parquet
    created: float  # Unix time, from the name
    rows: int | None  # answers in the part, from the name (None: a part named before names carried it)

    @property
    def relpath(self) -> str:
        return f"model={self.model}/part-{self.name}.parquet"


class AnswerStore:
    """The answer store of one storage root (a RunRoot on ROOT/_answers)."""

    def __init__(self, root: RunRoot, log=print):
        self.cache, self.log = root.sibling(ANSWERS), log
        # What this store has read so far (one per sweep): cells look a model up round after round and judge
        # after judge, so each part is read once for its keys, and again only when it holds an answer asked for.
        self._where: dict[str, dict[str, str]] = {}  # model folder -> key -> the part's relpath that holds it
        self._indexed: set[str] = set()  # relpaths read into _where
        self._lock = threading.Lock()  # cells run in threads
        self.identities: dict[str, str] = {}  # model settings (JSON) -> identity digest, by jobs.flow.answer_cache

    def __getstate__(self) -> dict:
        """A copy for a Ray task (jobs.flow.shard_tasks): its root and identities, without what this one has
        read so far, its lock or its log (the copy prints, to the task's log)."""
        return {"cache": self.cache, "identities": dict(self.identities)}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, log=print, _where={}, _indexed=set(), _lock=threading.Lock())

    def find(self, model: str, keys: Iterable[str]) -> dict[str, ArrowRow]:
        """key -> the stored answer's columns, for the `keys` the model's partition holds. A part that cannot
        be read is said and skipped: its answers are asked again, and a new part keeps them."""
        folder = f"model={flat_value(model)}"
        with self._lock:
            where = self._index(folder)
            hits: dict[str, set[str]] = defaultdict(set)
            for key in keys:
                if key in where:
                    hits[where[key]].add(key)
            found = {}
            for relpath, wanted in hits.items():
                for row in self._rows(relpath) or ():
                    if row["key"] in wanted:
                        found[row["key"]] = {c: row.get(c) for c in ANSWER_COLUMNS if c in row}
            return found

    def _index(self, folder: str) -> dict[str, str]:
        """The folder's key -> part map, with the parts added since the last look read in."""
        where = self._where.setdefault(folder, {})
        for name, _ in self.cache.parquet_files(folder):
            relpath = f"{folder}/part-{name}.parquet"
            if relpath not in self._indexed:
                self._indexed.add(relpath)
                where.update((row["key"], relpath) for row in self._rows(relpath, ["key"]) or ())
        return where

    def _rows(self, relpath: str, columns: list[str] | None = None) -> list[ArrowRow] | None:
        data = self.cache.read_bytes(relpath)
        if data is None:
            return None
        try:
            return pq.read_table(pa.BufferReader(data), columns=columns).to_pylist()
        except (pa.ArrowException, OSError) as e:  # decoding bytes in memory: the part itself is bad
            self.log(f"WARNING answer store: {self.cache.uri(relpath)} cannot be read ({type(e).__name__}: {e}); "
                     "its answers are asked again")
            return None

    def add(self, model: str, run: str, answers: dict[str, ArrowRow]) -> None:
        """Keep the answers (key -> the answer row) in one new part of the model's partition; failed ones are
        left out."""
        rows = [{"key": key, "run": run, **{c: answer.get(c) for c in ANSWER_COLUMNS if c in answer}}
                for key, answer in answers.items() if not answer.get("error")]
        if rows:
            folder = f"model={flat_value(model)}"
            relpath = f"{folder}/part-{time.strftime(_TIME, time.gmtime())}-{len(rows)}r-{uuid.uuid4().hex[:8]}.parquet"
            self.cache.write_parquet(relpath, rows)
            with self._lock:
                if folder in self._where:  # known to this store: the new part needs no reading back
                    self._indexed.add(relpath)
                    self._where[folder].update((row["key"], relpath) for row in rows)

    def parts(self) -> list[PartInfo]:
        """Every stored part, model by model, oldest first."""
        out = []
        for folder in self.cache.folders():
            if folder.startswith("model="):
                for name, _ in self.cache.parquet_files(folder):
                    stamp, *middle, _ = name.split("-")
                    created = calendar.timegm(time.strptime(stamp, _TIME))
                    rows = int(middle[0][:-1]) if middle and middle[0].endswith("r") else None
                    out.append(PartInfo(folder.removeprefix("model="), name, created, rows))
        return out

    def rows(self, part: PartInfo) -> int:
        """How many answers a part holds: from its name, else from its footer."""
        if part.rows is not None:
            return part.rows
        data = self.cache.read_bytes(part.relpath)
        return 0 if data is None else pq.read_metadata(pa.BufferReader(data)).num_rows

    def remove(self, part: PartInfo) -> None:
        self.cache.delete(part.relpath)

    @property
    def uri(self) -> str:
        return self.cache.uri("")
