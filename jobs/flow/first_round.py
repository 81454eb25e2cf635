"""A judged cell's first round as one Ray Data stream, where its engine takes one (jobs.engines.base `streams`).

Asked shard by shard (jobs.flow.rounds), each shard of SHARD_ITEMS items is a Ray Data dataset of its own, and
each pays the dataset's start and its tail, where the engine drains: at a million requests that left the cell
well below Ray Data's own ceiling (docs/measurements.md, "The framework's ceiling: a judged cell with an engine
that costs nothing, 10k to 1M requests"). Here a read task on the cluster reads the items, expands their first requests to the cell's own model and drops the ones
answered before, and the whole round goes to the engine as one dataset; the driver gets the answers back in
parts (as every round does, by size or time) and records each in the part of the shard its item is in, so the
shard-by-shard walk that follows finds its first round answered and asks only the followups and the judges.

The driver holds the plan: how many requests there are, and per item and per answered request a 64-bit digest
(`CellSurvey`, about 16 bytes an item and 8 an answer), never the items, requests or answers of more than a shard.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.protocol import Benchmark
from benchmarks.records import Columns, id_digests
from benchmarks.row_types import Answer, Item, Request, check_keys
from jobs.engines.preflight import PreflightError
from jobs.engines.rows import LIGHT, in_blocks_of
from jobs.flow.answerer import StreamTarget
from jobs.flow.freed_memory import trim_heap
from jobs.flow.judged_cell import JudgedCell, NoReadableRows
from jobs.flow.recorder import CellRecorder, ShardAnswers
from jobs.flow.rounds import requests_to_retry
from jobs.flow.walk import first_requests, in_shards, newest_answers, read_items, routed

if TYPE_CHECKING:
    from ray.data import Dataset

READ_ITEMS = 64  # items the read task turns into requests at a time
STREAM_READ_BYTES = 1 << 20  # the requests the read task gathers before they go on to the engine
MIN_BLOCKS = 64  # a stream has at least this many blocks where it has that many batches
MAX_BATCHES = 64  # and at most this many batches in a block
FIRST_BAD = 3  # bad input rows a cell names on the console (all of them are in its errors/)
FREE_EVERY = 10_000  # answers the stream records between heap trims (jobs.flow.freed_memory)


@dataclass
class CellSurvey:
    """What the driver knows of a cell before its first request: its shards, the shard of each item (by the
    item id's digest, sorted), the first round's requests to the cell's own model and which are answered."""

    shards: int = 0
    items: int = 0  # good ones, of the streamed plan
    good: int = 0  # items read that are not bad input rows
    bad: int = 0  # bad input rows (error items)
    first_bad: list[str] = field(default_factory=list)  # the first FIRST_BAD of their errors, in file order
    first: int = 0  # first-round requests to the cell's own model
    answered: int = 0  # of them, recorded before and not to be asked again
    batch: int = 1  # requests an engine batch holds
    item_digests: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    item_shards: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint32))
    done: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))  # answered request ids' digests
    next_parts: list[int] = field(default_factory=list)  # each shard's next answer part (ShardAnswers.next_part)
    problems: list[str] = field(default_factory=list)  # of the items under the cell's options, each once

    def shards_of(self, item_ids: Sequence[str]) -> np.ndarray:
        """The shard of each item id (an id the cell has no item for is a bug in the stream: raised)."""
        at, found = _find(self.item_digests, id_digests(item_ids))
        if not found.all():
            raise RuntimeError(f"an answer for item {item_ids[int(np.argmin(found))]!r}, which the cell has no item for")
        return self.item_shards[at]

    def record_answers(self, recorder: CellRecorder, shard: int, answers: list[Answer]) -> None:
        """Store answers of the stream in their shard's next part."""
        shard_answers = recorder.shard_answers(shard, self.next_parts[shard])
        shard_answers.record_answers(answers)
        self.next_parts[shard] = shard_answers.next_part


@dataclass
class _PlanParts:
    """The survey's plan as its shards add to it: their item digests, each item's shard and their answered
    request digests, appended as raw bytes to one buffer each, which grows in place. Kept as arrays a shard,
    each shard left Python objects behind among the items it had read, and those kept whole pages of Python's
    small-object allocator from going back (docs/measurements.md, "What the survey leaves behind")."""

    item_digests: bytearray = field(default_factory=bytearray)
    item_shards: bytearray = field(default_factory=bytearray)
    done: bytearray = field(default_factory=bytearray)

    def add(self, item_digests: np.ndarray, item_shards: np.ndarray, done: np.ndarray) -> None:
        self.item_digests += item_digests.astype(np.uint64, copy=False).data
        self.item_shards += item_shards.astype(np.uint32, copy=False).data
        self.done += done.astype(np.uint64, copy=False).data


@dataclass(frozen=True)
class FirstRound:
    """What the walk after the first round needs of it."""

    shards: int  # the shards of the cell's items
    streamed: bool  # asked as one stream (or found answered before): the walk asks only followups and judges


def ask_first_round(cell: JudgedCell) -> FirstRound:
    """The survey of every shard, its checks, then the first round as one stream where the answerer takes one.
    The plan lives only here, so the walk after it does not hold its arrays."""
    plan = survey(cell)
    check_survey(cell, plan)
    return FirstRound(plan.shards, stream_first_round(cell, plan))


def survey(cell: JudgedCell) -> CellSurvey:
    """Every shard read once: its bad rows, the problems of its items under the cell's options (e.g. a (task,
    language) without a prompt, which would fail every request), and where the answerer streams, the plan of
    the stream: each item's shard, its requests to the cell's own model (their keys checked against what the
    engine reads) and those the shard's stored parts answer. The answers the answer store keeps for the others
    are stored in the shard's parts here, a shard at a time, so the stream asks only what no one has answered."""
    target = cell.answerer.stream_target()
    plan, problems = CellSurvey(), {}  # problems in the order found, each once

    def survey_shard(shard: int, items: list[Item]) -> None:
        good = [item for item in items if not item.get("error")]
        plan.good += len(good)
        for item in items:
            if item.get("error"):
                plan.bad += 1
                if len(plan.first_bad) < FIRST_BAD:
                    plan.first_bad.append(str(item["error"]))
        problems.update(dict.fromkeys(cell.spec.check_items(good, cell.options)))
        plan.shards = shard + 1
        if target is not None:
            _plan_shard(cell, shard, good, target, plan, parts)

    parts = _PlanParts()
    cell.for_each_shard(survey_shard)
    if target is not None:
        plan.item_digests, plan.item_shards, plan.done = _joined(parts)
        trim_heap()
    plan.problems = list(problems)
    return plan


def check_survey(cell: JudgedCell, plan: CellSurvey) -> None:
    """Raise where the survey found the cell cannot run (a problem of its items: PreflightError; no readable
    row: NoReadableRows), and say its bad rows, which the walk records in errors/."""
    bench = cell.bench
    if plan.problems:
        raise PreflightError(f"benchmark '{bench.name}': " + "; ".join(plan.problems))
    if plan.bad:
        first = "; ".join(plan.first_bad) + ("; ..." if plan.bad > len(plan.first_bad) else "")
        if not plan.good:
            raise NoReadableRows(f"no readable row in {', '.join(bench.data)}: {plan.bad} bad row"
                                 f"{'s' * (plan.bad > 1)}, first: {first}")
        cell.say(f"{plan.bad} of {plan.good + plan.bad} input rows could not be read and are not scored (each in "
                 f"errors/, counted as n_bad_rows); first: {first}")


def _plan_shard(cell: JudgedCell, shard: int, good: list[Item], target: StreamTarget, plan: CellSurvey,
                parts: _PlanParts) -> None:
    """One shard's part of the plan, counted into `plan` and added to `parts`: its items' digests and shard, and
    the digests of its answered first-round requests (those its stored parts hold, and those the answer store
    keeps, stored here).

    The shard's requests are expanded READ_ITEMS items at a time (`_own_chunks`) and never held together; where
    an answer store is asked, they are expanded twice (once for its lookup, once to count what it answered), so
    that the shard's requests are not held for it either, which lowers the driver's floor (docs/measurements.md,
    "Where the stream's CPU goes, bigger blocks, and the walk's second copies")."""
    spec, kind, options = cell.spec, cell.kind, cell.options
    shard_answers = cell.recorder.shard_answers(shard)
    settled = _settled(shard_answers, cell.job.retry_errors)
    unsettled = (r for own in _own_chunks(spec, good, kind, options) for r in own if r["request_id"] not in settled)
    settled.update(_stored_from_answer_store(cell, shard_answers, unsettled))
    for own in _own_chunks(spec, good, kind, options):
        check_keys(own, target.reads, target.engine, "request")
        plan.first += len(own)
        plan.answered += sum(r["request_id"] in settled for r in own)
    plan.batch = target.batch
    plan.next_parts.append(shard_answers.next_part)
    plan.items += len(good)
    parts.add(id_digests(item["item_id"] for item in good), np.full(len(good), shard, np.uint32), id_digests(settled))


def _settled(shard_answers: ShardAnswers, retry_errors: bool) -> set[str]:
    """The request ids the shard's stored parts answer and that are not to be asked again."""
    answered = newest_answers(shard_answers.stored_answers())
    return set(answered) - requests_to_retry(answered, retry_errors)


def _stored_from_answer_store(cell: JudgedCell, shard_answers: ShardAnswers, requests: Iterable[Request]) -> set[str]:
    """The answers the answer store keeps for `requests`, stored in the shard's parts; their request ids."""
    found = cell.answerer.answers_in_store(requests)
    if found:
        shard_answers.record_answers(found)
    return {answer["request_id"] for answer in found}


def _own_chunks(spec: Benchmark, items: Iterable[Item], kind: str, options: Any) -> Iterator[list[Request]]:
    """The good items' first-round requests to the cell's own model, READ_ITEMS items' worth at a time."""
    for chunk in in_shards(items, READ_ITEMS):
        yield _own_first_requests(spec, [item for item in chunk if not item.get("error")], kind, options)


def _joined(parts: _PlanParts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The plan's parts as three arrays: the item digests sorted, each item's shard in that order, and the
    answered request ids' digests sorted and unique. Each buffer of `parts` is let go once its array is made,
    so no two copies of one are held at once (made all at once, a `np.unique` beside the shards' parts still
    held, they were a resumed cell's peak: docs/measurements.md, "What the survey kept, and a resumed cell")."""
    digests = np.frombuffer(parts.item_digests, np.uint64)  # a view of the buffer
    order = np.argsort(digests, kind="stable")
    item_digests = digests[order]
    del digests
    parts.item_digests = bytearray()
    item_shards = np.frombuffer(parts.item_shards, np.uint32)[order]
    parts.item_shards = bytearray()
    del order
    answered = np.frombuffer(parts.done, np.uint64)  # a view of the buffer, sorted in place
    parts.done = bytearray()
    answered.sort()
    unique = np.ones(len(answered), bool)
    np.not_equal(answered[1:], answered[:-1], out=unique[1:])
    return item_digests, item_shards, answered[unique]


def stream_first_round(cell: JudgedCell, plan: CellSurvey) -> bool:
    """The first round's unanswered requests to the cell's own model, as one dataset read on the cluster, each
    answer recorded in its item's shard as it arrives; whether the cell streamed (one whose every request was
    answered before counts: it asked nothing, though its start is told as for a stream). None planned (an
    answerer that does not stream): False, and every request is asked shard by shard."""
    import ray

    if not plan.first:
        return False
    to_go = plan.first - plan.answered
    cell.say(f"{plan.items} items, {plan.answered} requests already answered, {to_go} to go " +
             (f"(the first round in one stream over {plan.shards} shard{'s' * (plan.shards > 1)})" if to_go else
              "(the first round answered before)"))
    cell.job.progress.requests(plan.first, plan.answered)
    if not to_go:
        return True
    bench = cell.bench
    read = partial(_requests, cell.spec, tuple(bench.data), bench.limit, dict(bench.columns), cell.kind, cell.options,
                   ray.put(plan.done))
    # Ray counts a stage's inputs before the stream runs: one read task, so it warns that the engine's stage
    # can run one task at a time; the read task cuts its output into many blocks (`block_rows`).
    warnings.filterwarnings("ignore", "The maximum number of concurrent tasks for", UserWarning)
    since_trimmed = 0
    for part in cell.answerer.ask_stream(_dataset(read, block_rows(to_go, plan.batch))):
        shards = plan.shards_of([answer["item_id"] for answer in part])
        for shard in np.unique(shards):
            plan.record_answers(cell.recorder, shard, [a for a, s in zip(part, shards, strict=True) if s == shard])
        cell.job.progress.advanced(len(part))
        if (since_trimmed := since_trimmed + len(part)) >= FREE_EVERY:
            trim_heap()
            since_trimmed = 0
    return True


def _own_first_requests(spec: Benchmark, items: list[Item], kind: str, options: Any) -> list[Request]:
    """The items' first-round requests to the cell's own model (those routed to judges go shard by shard)."""
    return [r for r in first_requests(spec, items, kind, options) if not routed(r)]


def _requests(spec: Benchmark, data: Sequence[str], limit: int | None, columns: Columns, kind: str, options: Any,
              done_ref: Any) -> Iterator[Any]:
    """The read task: the first-round requests to the cell's own model that `done_ref` (the sorted digests of
    answered request ids) does not hold, in item order, a block per READ_ITEMS items (Ray gathers them into
    blocks of STREAM_READ_BYTES: `_dataset`)."""
    import ray

    # The builder ray.data.from_items uses, so a request reaches the engine as the shard-by-shard path's do
    # (rows with other keys in one block: Arrow's from_pylist would take the first row's keys only).
    from ray.data._internal.delegating_block_builder import DelegatingBlockBuilder

    done: np.ndarray = ray.get(done_ref)
    for own in _own_chunks(spec, read_items(spec, data, limit, columns), kind, options):
        _, answered = _find(done, id_digests(r["request_id"] for r in own))
        builder = DelegatingBlockBuilder()
        for request in (r for r, skip in zip(own, answered, strict=True) if not skip):
            builder.add(request)
        if builder.num_rows():
            yield builder.build()


def _find(sorted_digests: np.ndarray, digests: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of `digests` is in `sorted_digests`, and whether it is there at all."""
    if not len(sorted_digests):
        return np.zeros(len(digests), np.intp), np.zeros(len(digests), bool)
    at = np.minimum(np.searchsorted(sorted_digests, digests), len(sorted_digests) - 1)
    return at, sorted_digests[at] == digests


def block_rows(requests: int, batch: int) -> int:
    """The requests a block of the stream holds: whole engine batches, MIN_BLOCKS blocks or more, up to
    MAX_BATCHES batches each.

    An engine's Ray Data task takes a block and sends its answers on when it is done, so a block holds answers
    back until its last batch is answered (a run stopped or killed part-way loses them: tests/jobs/sweep/test_resume.py)
    and the engine gets as many batches at once as there are blocks in flight (jobs.engines.vllm.engine
    `tasks_in_flight`). Each block is a task, though, and tasks cost, so the framework's ceiling rose with
    the batches a block holds (docs/measurements.md, "Blocks of whole batches"). So a block holds up to 64 batches,
    and only a stream of over 64 x 16 batches holds more than 16."""
    return batch * max(1, min(MAX_BATCHES, requests // (MIN_BLOCKS * batch)))


def _dataset(read: Callable[[], Iterator[Any]], rows: int) -> Dataset:
    """What one read task yields, in blocks of `rows` (`block_rows`).

    One read task: the items are read in file order, as the shard walk reads them (jobs.flow.walk), so no two
    tasks need to know where the other's items begin. The read is a `map_batches` stage over one seed row, not a
    datasource: Ray Data fuses a `map_batches` with the strict repartition behind it (`in_blocks_of`), so the
    read task cuts its own blocks, where a datasource's read cannot fuse and the repartition ran as tasks of
    its own, taking CPU from the engine (docs/measurements.md, "The read cuts its own blocks")."""
    import ray

    seed = ray.data.from_items([{"read": 0}])
    ds = seed.map_batches(partial(_read_blocks, read), batch_size=rows, batch_format="pyarrow", **LIGHT)
    # The read's blocks go on to the repartition once they reach this size (Ray's much larger default would
    # hold the first request back until that much is read); this dataset's setting only, not the session's.
    ds.context.target_max_block_size = STREAM_READ_BYTES
    return in_blocks_of(ds, rows)


def _read_blocks(read: Callable[[], Iterator[Any]], seed: Any) -> Iterator[Any]:
    """The read task: `read`'s blocks, whatever the seed row holds."""
    yield from read()
