"""One (benchmark, model) cell, in the named steps of docs/ARCHITECTURE.md's flow, read top-down from `evaluate`.

Answered requests stream back to the driver and are stored in parts of `flush_every` rows while the cell runs,
so a killed run resumes without asking the model again; a stopped one (SIGTERM, SIGINT: jobs.sweep.interrupt) first
stores the answers it holds, in a shorter part. The item rows, the errors and the metrics are written when the
cell completes. A retrieval benchmark's cell is indexed and searched instead (jobs.sweep.retrieval).

A request's stored answer counts as answered even when it failed, unless the cell runs with `retry_errors`
(`ragjudge run --retry-errors`): then failed requests whose error may pass (jobs.engines.errors) are asked again,
their new answers stored as new parts, and wherever answers are read back the newest per request wins. A cell
whose failed requests exceed the benchmark's `max_error_rate` ends `failed_errors` (jobs.sweep.error_budget), its
metrics written.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from benchmarks.options import typed_options
from benchmarks.protocol import Answer, Benchmark, Item, Request, RetrievalBenchmark, Row, benchmark
from jobs.analysis import aggregate
from jobs.config import (
    METRIC_SETTINGS,
    PLAN_SETTINGS,
    RUN_SETTINGS,
    BenchmarkConfig,
    ModelConfig,
    protocol_kind,
    to_dict,
)
from jobs.engines import EngineHost, PreflightError, answer_requests, engine_of, retryable
from jobs.store import FAILED_ERRORS, SCORED, CellBatch, Manifest, RunRoot, StorageError, redact
from jobs.store.answers import AnswerStore
from jobs.sweep.answer_cache import Keys, answer_keys, asked_or_cached, keep_answers
from jobs.sweep.error_budget import asks_again, over_budget, reopens, request_errors
from jobs.sweep.interrupt import Interrupted, Stop, answered_parts
from jobs.sweep.progress import Progress
from jobs.sweep.retrieval import evaluate_retrieval
from jobs.sweep.text_pairs import encoder_settings, with_text_pair_scores

MAX_ROUNDS = 8  # a benchmark's followup rounds (e.g. generate, then judge, then judge each statement)


@dataclass
class CellOutcome:
    benchmark: str
    model: str
    status: str  # done | cached | failed | failed_errors | skipped | interrupted
    metrics: dict[str, Any] | None
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

    @property
    def key(self) -> str:
        return f"{self.bench.name}/{self.model.name}"


def answers_hash(bench: BenchmarkConfig, model: ModelConfig, judges: dict[str, ModelConfig] | None = None) -> str:
    """What changes the cell's answers: the identity and prompt settings of its model and of the judges its
    requests are routed to, the protocol, the data bytes.

    Data on object storage is not read here (only local files are hashed); its path is in the settings. vLLM
    engine arguments count (one may quantize), but none set hashes as before they existed, so runs resume.
    """
    settings = [{k: v for k, v in to_dict(bench).items() if k not in METRIC_SETTINGS | PLAN_SETTINGS},
                *({k: v for k, v in to_dict(m).items() if k not in RUN_SETTINGS and (v or k != "engine_args")}
                  for m in [model, *(judges or {}).values()])]
    h = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for path in bench.data:
        for file in sorted(Path(path).rglob("*")) if Path(path).is_dir() else [Path(path)]:
            if file.is_file():
                h.update(file.name.encode())
                h.update(hashlib.sha256(file.read_bytes()).digest())
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
    key = cell.key
    answers = answers_hash(bench, model, cell.judges)
    digest = cell_hash(bench, answers)
    previous = cell.manifest.cell(key)
    metrics_path = root.metrics_path(bench.name, model.name)
    stamp = {"hash": digest, "answers_hash": answers}
    try:
        if (previous.get("status") in SCORED and previous.get("hash") == digest
                and not (cell.retry_errors and reopens(previous))):
            status = "cached" if previous["status"] == "done" else FAILED_ERRORS
            _finished(cell, status, previous.get("message", ""))
            return CellOutcome(bench.name, model.name, status, root.read_json(metrics_path), time.time() - start,
                               _said(previous.get("message", "")))
        if previous.get("answers_hash") not in (None, answers):  # model, prompts or data changed: stale answers
            for table in ("requests", "predictions", "errors"):
                root.clear(table, bench.name, model.name)
        cell.manifest.set_cell(key, {"status": "running", **stamp, "started_at": round(start, 3)})
        if problems := list(problems):
            raise PreflightError("; ".join(problems))
        metrics, stored = evaluate(cell)
        root.write_json(metrics_path, metrics)
        over = over_budget(metrics.get("request_errors"), bench.max_error_rate)
        status = FAILED_ERRORS if over else "done"
        cell.manifest.set_cell(key, {"status": status, **stamp, "n": metrics["n"], "n_errors": metrics["n_errors"],
                                     "request_errors": metrics.get("request_errors"), "rows": stored,
                                     **({"message": over} if over else {}), "cached_answers": cell.cached_answers,
                                     "started_at": round(start, 3), "finished_at": round(time.time(), 3),
                                     "seconds": round(time.time() - start, 1)})
    except Interrupted as e:
        return _ended(cell, "interrupted", {**stamp, "started_at": round(start, 3), **cell.stop.record()}, start,
                      str(e))
    except Exception as e:  # noqa: BLE001 - one broken cell must not stop the sweep; the manifest says why
        message = redact(f"{type(e).__name__}: {e}")
        return _ended(cell, "failed", {**stamp, "error": message}, start, message)
    _finished(cell, status, over or "")
    return CellOutcome(bench.name, model.name, status, metrics, time.time() - start, _said(over or ""))


def _finished(cell: Cell, status: str, message: str = "") -> None:
    if cell.progress:
        cell.progress.cell_finished(cell.key, status, message)


def _said(message: str) -> str:
    """An outcome's message as the sweep's log line and the run's summary append it."""
    return f": {message}" if message else ""


def _ended(cell: Cell, status: str, entry: dict[str, Any], start: float, message: str) -> CellOutcome:
    """A cell that ended without metrics (failed, interrupted): its manifest entry, progress and outcome. The
    storage that failed the cell may not take the entry either: then it is said, and the entry stays in
    memory for the manifest's next write; the rerun runs the cell again all the same."""
    try:
        cell.manifest.set_cell(cell.key, {"status": status, **entry})
    except StorageError as e:
        cell.log(f"WARNING {cell.key}: {status}, but manifest.json could not record it: {e}")
    _finished(cell, status, message)
    return CellOutcome(cell.bench.name, cell.model.name, status, None, time.time() - start, _said(message))


def evaluate(cell: Cell) -> tuple[dict[str, Any], dict[str, int]]:
    """The cell's metrics, its rows stored on the way, and how many rows each table got (manifest.json keeps
    them, and reports check the stored parts against them)."""
    spec = benchmark(cell.bench.module)
    if isinstance(spec, RetrievalBenchmark):  # rankings scored against qrels, not requests answered one by one
        return evaluate_retrieval(cell.root, cell.bench, cell.model, cell.log, cell.answer_store)
    options = typed_options(spec.Options, cell.bench.options)
    items = load(cell.bench, spec)
    good = [item for item in items if not item.get("error")]
    if problems := spec.check_items(good, options):  # e.g. a (task, language) without a prompt
        raise PreflightError(f"benchmark '{cell.bench.name}': " + "; ".join(problems))
    encoder = encoder_settings(spec, options, cell.bench.name)
    answered = answer_rounds(cell, spec, options, good)
    rows = combine_rows(cell, spec, options, good, answered)
    if encoder is not None:
        rows = with_text_pair_scores(spec, good, rows, options, encoder, cell.log)
    for row in rows:
        row["model"] = cell.model.name
    bad = [{**item, "model": cell.model.name, "correct": None, "retryable": False}
           for item in items if item.get("error")]
    bad += [{"item_id": r["item_id"], "benchmark": cell.bench.name, "model": cell.model.name, "subset": r["subset"],
             "error": r["error"], "retryable": retryable(r["error"])} for r in rows if r.get("error")]
    stored = cell.root.write_cell(cell.bench.name, cell.model.name, rows, bad)
    metrics = aggregate(spec, rows, resamples=cell.bench.bootstrap_resamples)
    metrics.update(model=cell.model.name, kind=cell.model.kind, note=cell.model.note,
                   n_bad_rows=len(items) - len(good), config=cell.bench.name, request_errors=request_errors(answered))
    return metrics, stored


def load(bench: BenchmarkConfig, spec: Benchmark) -> list[Item]:
    """Every item of the benchmark's data paths (the first `limit` of each), error items included."""
    return [item for path in bench.data for item in islice(spec.load_items(path), bench.limit)]


def answer_rounds(cell: Cell, spec: Benchmark, options: Any, items: list[Item]) -> list[Answer]:
    """Every answer the protocol needs, one per request (the newest stored): the stored ones, then round after
    round of new requests (the benchmark's followup builds each round from the answers so far) until none is
    new. Each part of answers is stored as it arrives, so a resumed cell asks nothing twice, but with
    `cell.retry_errors` the requests whose stored answer failed retryably; a stored part that cannot be read is
    moved to quarantine/ and its requests are asked again. Before the cell is done its parts are read back
    once: a part damaged while the cell ran (chaos seed 2, issue 44) is quarantined and its requests asked
    again, so a done cell's answers are all in parts that read."""
    next_part = 0  # rows stored so far: the next part's name (the quarantined rows count, so no name is reused)
    for _ in range(MAX_ROUNDS):
        answered, next_part = _answer_rounds(cell, spec, options, items, next_part)
        _, unreadable = cell.root.read_whole_rows("requests", cell.bench.name, cell.model.name)
        if not unreadable:
            return answered
        _quarantined(cell, unreadable)
    raise RuntimeError(f"{cell.key}: its stored parts were damaged again after {MAX_ROUNDS} reads")


def _quarantined(cell: Cell, unreadable: list[dict[str, Any]]) -> None:
    """Say and record the parts read_whole_rows moved to quarantine/."""
    for part in unreadable:
        cell.log(f"WARNING {cell.bench.name} x {cell.model.name}: {cell.root.uri(part['path'])} cannot be read "
                 f"({part['reason']}); moved to {cell.root.uri(part['moved_to'])}, its requests are asked again")
    if unreadable:
        cell.manifest.add_quarantined(cell.key, unreadable)


def _answer_rounds(cell: Cell, spec: Benchmark, options: Any, items: list[Item], next_part: int
                   ) -> tuple[list[Answer], int]:
    bench, model, root = cell.bench, cell.model, cell.root
    kind = protocol_kind(model)
    answers_hash = cell.manifest.cell(cell.key).get("answers_hash")  # run_cell's stamp: a batch's answers must match
    stored, unreadable = root.read_whole_rows("requests", bench.name, model.name)
    _quarantined(cell, unreadable)
    n_stored = max(len(stored), next_part)  # rows in parts: the next part's name
    answered = newest_answers(stored)
    again = {rid for rid, row in answered.items() if asks_again(row)} if cell.retry_errors else set()
    done = set(answered) - again
    requests = [r for item in items for r in spec.expand(item, kind, options)]
    asked_again = f" ({len(again)} retryable errors among them)" if again else ""
    cell.log(f"{bench.name} x {model.name}: {len(items)} items, {len(done)} requests already answered, "
             f"{sum(r['request_id'] not in done for r in requests)} to go{asked_again}")
    if cell.progress:
        cell.progress.cell_started(cell.key, len(requests), sum(r["request_id"] in done for r in requests))
    keys: Keys = {}  # request id -> (its answerer's path, its answer's key in the answer store)
    for round_ in range(MAX_ROUNDS):
        todo = [r for r in requests if r["request_id"] not in done]
        if round_ and todo and cell.progress:
            cell.progress.more_requests(cell.key, len(todo))
        if unknown := sorted({str(r["route"]) for r in todo if _routed(r) and r["route"] not in cell.judges}):
            raise PreflightError(f"benchmark '{bench.name}': requests for models it did not name as judges "
                                 f"({', '.join(unknown)})")
        if todo and round_:
            cell.log(f"{bench.name} x {model.name}: round {round_}: {len(todo)} requests to go")
        if cell.answer_store:  # answers an attempt before this one stored (a resume) are kept in the store too
            earlier = [r for r in requests if r["request_id"] in done and r["request_id"] not in keys]
            for route, part in _by_route(earlier):
                if route is None or route in cell.judges:
                    keys.update(answer_keys(cell.answer_store, cell.judges[route] if route else model, part))
        for route, part_todo in _by_route(todo):  # the cell's own model first, then each judge
            answerer = cell.judges[route] if route else model
            cell.stop.check()  # before an engine starts or a request is sent
            batch = CellBatch(cell.manifest, cell.key, route or "self", answers_hash)
            stream = asked_or_cached(cell.answer_store, answerer, part_todo, keys,
                                     lambda asked, by=answerer, kept=batch: answer_requests(asked, by, cell.log,
                                                                                             cell.engines, kept),
                                     lambda line: cell.log(f"{bench.name} x {model.name}: {line}"))
            for part in answered_parts(stream, cell.flush_every, cell.stop):
                root.write_rows("requests", bench.name, model.name, part,
                                part=f"{cell.manifest.attempts:04d}-{n_stored:07d}")
                n_stored += len(part)
                answered.update((row["request_id"], row) for row in part)
                done.update(row["request_id"] for row in part)
                if cell.progress:
                    cell.progress.advanced(cell.key, len(part))
            batch.clear()  # the route's answers are all stored: a batch engine's batch is done with
        so_far = answers_by_item(answered.values())
        requests = [r for item in items for r in spec.followup(item, so_far[item["item_id"]], kind, options)]
        if all(r["request_id"] in done for r in requests):
            cell.cached_answers = sum(bool(row.get("cached")) for row in answered.values())
            keep_answers(cell.answer_store, root.run, list(answered.values()), keys)
            return list(answered.values()), n_stored
    raise RuntimeError(f"{bench.name}: followup still asks for new requests after {MAX_ROUNDS} rounds")


def newest_answers(rows: Iterable[Answer]) -> dict[str, Answer]:
    """request_id -> its newest answer, of rows in the order their parts were stored (part names sort by
    attempt, then by rows stored before): an answer asked again (--retry-errors) replaces the one before it."""
    return {row["request_id"]: row for row in rows}


def combine_rows(cell: Cell, spec: Benchmark, options: Any, items: list[Item], answered: list[Answer]) -> list[Row]:
    """One prediction row per item, or several (e.g. one per sampled run), from all of its answers."""
    kind = protocol_kind(cell.model)
    # An engine that cannot prefill (an HTTP API) has its verdict read from the text.
    verdict = (cell.model.verdict if engine_of(cell.model).prefills else "text") if kind == "generative" else None
    by_item = answers_by_item(answered)
    rows: list[Row] = []
    for item in items:
        combined = spec.combine(item, by_item[item["item_id"]], kind, options, verdict=verdict)
        rows.extend(combined if isinstance(combined, list) else [combined])
    return rows


def _routed(request: Request) -> bool:
    """Whether a request names a judge to answer it; without `route`, or with "self", the cell's model does."""
    return request.get("route") not in (None, "self")


def _by_route(requests: list[Request]) -> list[tuple[str | None, list[Request]]]:
    """Requests grouped by who answers them: None (the cell's model) first, then judges by name."""
    groups: dict[str | None, list[Request]] = defaultdict(list)
    for request in requests:
        groups[str(request["route"]) if _routed(request) else None].append(request)
    return sorted(groups.items(), key=lambda group: (group[0] is not None, group[0] or ""))


def answers_by_item(answers: Iterable[Answer]) -> dict[str, list[Answer]]:
    """Answers grouped by the item they belong to (an item without answers gets an empty list)."""
    by_item: dict[str, list[Answer]] = defaultdict(list)
    for row in answers:
        by_item[row["item_id"]].append(row)
    return by_item
