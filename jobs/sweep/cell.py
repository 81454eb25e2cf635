"""One (benchmark, model) cell of a sweep: whether it runs (its hash against manifest.json's entry), its
benchmark's flow (jobs.flow) answered by the sweep's engines (`CellAnswerer`) and recorded in the run's storage
(jobs.flow.recorder), and how it ends in manifest.json.

Answered requests stream back and are stored in parts of `flush_every` rows (fewer once the first has waited
`flush_s`) while the cell runs, so a killed run resumes without asking the model again; a stopped one (SIGTERM,
SIGINT: jobs.sweep.interrupt) first stores the answers it holds, in a shorter part. The item rows, the errors
and the metrics are written when the cell completes.

A request's stored answer counts as answered even when it failed, unless the cell runs with `retry_errors`
(`ragjudge run --retry-errors`): then failed requests whose error may pass (jobs.engines.errors) are asked again,
their new answers stored as new parts, and wherever answers are read back the newest per request wins. A cell
whose failed requests exceed the benchmark's `max_error_rate` ends `failed_errors` (jobs.flow.error_budget), its
metrics written.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.boundary_types import JsonObject
from benchmarks.object_store import is_object_path, object_versions
from benchmarks.records import SUFFIXES
from benchmarks.row_types import Answer, Request
from jobs.config import (
    METRIC_SETTINGS,
    PLAN_SETTINGS,
    RUN_SETTINGS,
    BenchmarkConfig,
    ModelConfig,
    flat_settings,
    to_dict,
)
from jobs.config.reasoning import ReasoningSettings
from jobs.engines.answering import answer_requests, engine_label
from jobs.engines.base import engine_of
from jobs.engines.host import EngineHost
from jobs.engines.preflight import PreflightError
from jobs.flow import CellJob, CellProgress, CellRecorder, NoReadableRows, StreamTarget, flow_of
from jobs.flow.answer_cache import CellAnswerStore
from jobs.flow.error_budget import over_budget, reopens
from jobs.store import FAILED_DATA, FAILED_ERRORS, SCORED, CellBatch, Manifest, RunRoot, StorageError, redact
from jobs.store.answers import AnswerStore
from jobs.sweep.answer_parts import answered_parts
from jobs.sweep.interrupt import Interrupted, Stop
from jobs.sweep.progress import Progress

if TYPE_CHECKING:
    from ray.data import Dataset


@dataclass
class CellOutcome:
    benchmark: str
    model: str
    status: str  # done | cached | failed | failed_data | failed_errors | skipped | interrupted
    metrics: JsonObject | None
    seconds: float
    message: str = ""


@dataclass
class Cell:
    """What the steps of one cell share: where it stores, what it runs, who answers."""

    root: RunRoot
    manifest: Manifest
    bench: BenchmarkConfig
    model: ModelConfig
    flush_every: int
    log: Callable[[str], None] = print
    judges: dict[str, ModelConfig] = field(default_factory=dict)  # route name -> the model that answers it
    progress: Progress | None = None  # the sweep's live progress and status.json
    engines: EngineHost | None = None  # the sweep's engines; None: each round starts and releases its own
    stop: Stop = field(default_factory=Stop)  # set by SIGTERM or SIGINT (jobs.sweep.interrupt)
    answer_store: AnswerStore | None = None  # answers kept across runs (jobs.store.answers); None: ask everything
    cached_answers: int = 0  # of the cell's stored answers, those taken from the answer store
    retry_errors: bool = False  # ask stored failed requests again where their error may pass
    flush_s: float = math.inf  # a part is stored once its first answer has waited this long (storage.flush_s)

    @property
    def key(self) -> str:
        return f"{self.bench.name}/{self.model.name}"


def answers_hash(bench: BenchmarkConfig, model: ModelConfig, judges: dict[str, ModelConfig] | None = None) -> str:
    """What changes the cell's answers: the identity and prompt settings of its model and of the judges its
    requests are routed to, the protocol, the data bytes.

    Data on object storage is not read here: each object's ETag and size stand for its bytes. vLLM engine
    arguments count (one may quantize), but none set hashes as before they existed, so runs resume. A model
    is hashed over its flat view (jobs.config.flat_settings), so a setting that moved into an engine's section
    hashes as it did flat.
    """
    settings = [{k: v for k, v in to_dict(bench).items() if k not in METRIC_SETTINGS | PLAN_SETTINGS},
                *({k: v for k, v in flat_settings(m).items() if k not in RUN_SETTINGS and (v or k != "engine_args")}
                  for m in [model, *(judges or {}).values()])]
    h = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for path in bench.data:
        if is_object_path(path):
            for url, version in object_versions(path, SUFFIXES).items():
                h.update(f"{url}:{version}".encode())
            continue
        for file in sorted(Path(path).rglob("*")) if Path(path).is_dir() else [Path(path)]:
            if file.is_file():
                h.update(file.name.encode())
                with file.open("rb") as f:  # in pieces: a million-row file is hundreds of MB
                    h.update(hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()[:16]


def cell_hash(bench: BenchmarkConfig, answers: str) -> str:
    """What changes a cell's results: its answers and the metric settings."""
    metric = {k: v for k, v in to_dict(bench).items() if k in METRIC_SETTINGS}
    return hashlib.sha256(json.dumps([answers, metric], sort_keys=True).encode()).hexdigest()[:16]


def run_cell(cell: Cell, problems: Iterable[str] = ()) -> CellOutcome:
    """One cell, unless it finished before (done or failed_errors) with the same hash and is not reopened to
    ask its retryable errors again; `problems` found before it (preflight, routing) fail it before any engine
    starts. A failure, a storage fault included (jobs.store.retry), is recorded in the manifest and never stops
    the sweep; nor does a stop (SIGTERM, SIGINT), recorded as `interrupted` with the signal and its time."""
    root, bench, model = cell.root, cell.bench, cell.model
    start = time.time()
    recorder = CellRecorder(root, cell.manifest, bench.name, model.name, cell.log)
    answers = answers_hash(bench, model, cell.judges)
    digest = cell_hash(bench, answers)
    previous = recorder.entry()
    stamp = {"hash": digest, "answers_hash": answers}
    try:
        if (previous.get("status") in SCORED and previous.get("hash") == digest
                and not (cell.retry_errors and reopens(previous))):
            status = "cached" if previous["status"] == "done" else FAILED_ERRORS
            _finished(cell, status, previous.get("message", ""))
            return CellOutcome(bench.name, model.name, status, recorder.metrics(), time.time() - start,
                               _outcome_suffix(previous.get("message", "")))
        if previous.get("answers_hash") not in (None, answers):  # model, prompts or data changed: stale answers
            for table in ("requests", "predictions", "errors"):
                root.clear(table, bench.name, model.name)
        recorder.record_entry({"status": "running", **stamp, "started_at": round(start, 3)})
        if problems := list(problems):
            raise PreflightError("; ".join(problems))
        metrics, stored = evaluate(cell, recorder)
        recorder.record_metrics(metrics)
        thinking = metrics.get("thinking")
        if thinking and thinking["unfinished"]:
            cell.log(f"{cell.key}: {thinking['unfinished']} of {thinking['traces']} thinking traces did not end within "
                     "their token limit (max_new_tokens, or the benchmark's options.max_tokens where it sets one): no "
                     "verdict is read from them")
        over = over_budget(metrics.get("request_errors"), bench.max_error_rate)
        status = FAILED_ERRORS if over else "done"
        recorder.record_entry({"status": status, **stamp, "n": metrics["n"], "n_errors": metrics["n_errors"],
                               "request_errors": metrics.get("request_errors"), "rows": stored,
                               **({"thinking": thinking} if thinking else {}),
                               **({"message": over} if over else {}), "cached_answers": cell.cached_answers,
                               "started_at": round(start, 3), "finished_at": round(time.time(), 3),
                               "seconds": round(time.time() - start, 1)})
    except NoReadableRows as e:
        message = redact(str(e))
        return _ended(cell, recorder, FAILED_DATA, {**stamp, "error": message}, start, message)
    except Interrupted as e:
        return _ended(cell, recorder, "interrupted", {**stamp, "started_at": round(start, 3), **cell.stop.record()},
                      start, str(e))
    except Exception as e:  # noqa: BLE001 - one broken cell must not stop the sweep; the manifest says why
        message = redact(f"{type(e).__name__}: {e}")
        return _ended(cell, recorder, "failed", {**stamp, "error": message}, start, message)
    _finished(cell, status, over or "")
    return CellOutcome(bench.name, model.name, status, metrics, time.time() - start, _outcome_suffix(over or ""))


def _finished(cell: Cell, status: str, message: str = "") -> None:
    if cell.progress:
        cell.progress.cell_finished(cell.key, status, message)


def _outcome_suffix(message: str) -> str:
    """An outcome's message as the sweep's log line and the run's summary append it: ': <message>', or ''."""
    return f": {message}" if message else ""


def _ended(cell: Cell, recorder: CellRecorder, status: str, entry: JsonObject, start: float,
           message: str) -> CellOutcome:
    """A cell that ended without metrics (failed, interrupted): its manifest entry, progress and outcome. The
    storage that failed the cell may not take the entry either: then it is said, and the entry stays in
    memory for the manifest's next write; the rerun runs the cell again all the same."""
    try:
        recorder.record_entry({"status": status, **entry})
    except StorageError as e:
        cell.log(f"WARNING {cell.key}: {status}, but manifest.json could not record it: {e}")
    _finished(cell, status, message)
    return CellOutcome(cell.bench.name, cell.model.name, status, None, time.time() - start, _outcome_suffix(message))


def evaluate(cell: Cell, recorder: CellRecorder) -> tuple[JsonObject, dict[str, int]]:
    """The cell's metrics, its rows recorded on the way, and how many rows each table got (manifest.json keeps
    them, and reports check the stored parts against them): its benchmark's flow, answered by the sweep's
    engines through the answer store and recorded in the run's storage."""
    job = CellJob(cell.bench, cell.model, CellAnswerer(cell), recorder, cell.log, cell.answer_store, cell.retry_errors,
                  CellProgress(cell.progress, cell.key))
    return flow_of(cell.bench.module).evaluate(job)


class CellAnswerer:
    """The sweep's answerer of a cell (jobs.flow.answerer.Answerer). On the sweep's cluster (the cell has its
    engine host) its first round is one stream where the engine takes a dataset; every other round is asked
    shard by shard. A route's requests go to its model's engine (started by the sweep's host, or by the round
    when it has none) unless the answer store holds their answers, and come back in parts of `flush_every` as
    they stream in; a stop (SIGTERM, SIGINT) ends the stream after one last part. A batch engine's submitted
    batch is kept in manifest.json, one per route and shard, until its answers are stored."""

    def __init__(self, cell: Cell):
        self.cell = cell
        self.judges = list(cell.judges)
        self.on_cluster = cell.engines is not None
        self.cached: dict[int, int] = {}  # shard -> its answers taken from the answer store
        self.store = CellAnswerStore(cell.answer_store, cell.root.run, lambda line: cell.log(f"{cell.key}: {line}"))

    def reasoning(self, route: str | None) -> ReasoningSettings | None:
        return self._model(route).reasoning

    def stream_target(self) -> StreamTarget | None:
        model = self.cell.model
        engine = engine_of(model)
        if not (engine.streams and self.on_cluster):
            return None
        return StreamTarget(engine.reads, engine_label(engine, model), model.batch_size)

    def answers_in_store(self, requests: Iterable[Request]) -> list[Answer]:
        return self.store.found(self.cell.model, requests)

    def ask_stream(self, requests: Dataset) -> Iterator[list[Answer]]:
        cell = self.cell
        cell.stop.check()  # before an engine starts or a request is sent
        yield from answered_parts(answer_requests(requests, cell.model, cell.log, cell.engines), cell.flush_every,
                                  cell.stop, cell.flush_s)

    def ask(self, shard: int, route: str | None, requests: list[Request]) -> Iterator[list[Answer]]:
        cell, model = self.cell, self._model(route)
        cell.stop.check()  # before an engine starts or a request is sent
        batch = self._batch(shard, route)
        stream = self.store.asked_or_cached(shard, model, requests,
                                            lambda asked: answer_requests(asked, model, cell.log, cell.engines, batch))
        yield from answered_parts(stream, cell.flush_every, cell.stop, cell.flush_s)

    def answered_before(self, shard: int, route: str | None, requests: list[Request]) -> None:
        self.store.answered_before(shard, self._model(route), requests)

    def route_answered(self, shard: int, route: str | None) -> None:
        self._batch(shard, route).clear()  # the route's answers are all stored: a batch engine's batch is done with

    def shard_answered(self, shard: int, answers: list[Answer]) -> None:
        self.store_answers_used(shard, sum(bool(row.get("cached")) for row in answers))
        self.store.keep(shard, answers)

    def store_answers_used(self, shard: int, n: int) -> None:
        self.cached[shard] = n
        self.cell.cached_answers = sum(self.cached.values())

    def _model(self, route: str | None) -> ModelConfig:
        return self.cell.judges[route] if route else self.cell.model

    def _batch(self, shard: int, route: str | None) -> CellBatch:
        cell = self.cell  # run_cell's stamp: a batch's answers must match
        slot = (route or "self") + (f"@s{shard}" if shard else "")
        return CellBatch(cell.manifest, cell.key, slot, cell.manifest.cell(cell.key).get("answers_hash"))
