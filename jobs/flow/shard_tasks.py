"""A streamed cell's shard walk in a Ray task, so that the driver holds none of its items, answers or rows.

Once a cell's first round has been asked as one stream (jobs.flow.first_round) and its benchmark asks nothing
more (no followup rounds, no judges, no encoder stage), what is left of each shard is reading: its items, its
stored answers, its rows combined, recorded and reduced. Walked in the driver, that left the driver's memory
rising with the cell (docs/measurements.md, "What the walk's peak is made of, shard by shard"). Here one Ray task
reads the items in file order, as the driver's walk does, and yields each
shard's `ShardTally` and reducer state; a generator's returns are its caller's, so the states stay in the object
store, owned by the driver, which keeps their references and adds up the tallies. A shard with anything left to
ask (an answer missing, a retryable error under --retry-errors) or a stored part that does not read is handed
back untouched: the driver walks it as before, where the answerer, the progress and manifest.json are.
"""
from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.boundary_types import ArrowRow
from benchmarks.protocol import Answer, Benchmark
from benchmarks.row_types import Item, Row
from jobs.config import ModelConfig
from jobs.engines.errors import retryable
from jobs.flow.answer_cache import CellAnswerStore
from jobs.flow.error_budget import RequestErrors
from jobs.flow.judged_cell import JudgedCell, reads_logprobs_after_trace
from jobs.flow.recorder import RowRecorder
from jobs.flow.reducers import reducer_of
from jobs.flow.rounds import requests_to_retry
from jobs.flow.thinking_counts import ThinkingCounts
from jobs.flow.walk import first_requests, in_shards, item_rows, newest_answers, read_items


@dataclass
class ShardTally:
    """What a shard's walk counted: whether it was walked (else the driver walks it), its rows recorded, its
    bad input rows, its request errors, the answers it took from the answer store and a thinking judge's traces."""

    shard: int
    walked: bool = False
    predictions: int = 0
    errors: int = 0  # error rows recorded: bad input rows and rows that failed
    n_bad: int = 0  # input rows that could not be read
    request_errors: RequestErrors = field(default_factory=RequestErrors)
    cached: int = 0
    thinking: ThinkingCounts = field(default_factory=ThinkingCounts)


@dataclass(frozen=True)
class ShardPlacement:
    """Where a judged cell's shards are walked after its first round: in one Ray task beside the driver, or in
    the driver, and why the driver walks what it walks."""

    in_task: tuple[int, ...]
    in_driver: tuple[int, ...]
    why_driver: str = ""


def place_shards(cell: JudgedCell, shards: int, streamed: bool) -> ShardPlacement:
    """Every shard in a Ray task where the cell's first round was streamed (or found answered before) and
    nothing is asked after it (no followup round, no judge, no thinking judge's round), nor scored by an
    encoder stage (an actor the driver holds), and the run's write
    fence works in another process (the lease's does: jobs.store.lease `TokenFence`); else every shard in the
    driver, where the answerer, the progress and manifest.json are."""
    spec = cell.spec
    why = ("its first round was not streamed" if not streamed else
           "its benchmark asks followup rounds" if type(spec).followup is not Benchmark.followup else
           "its benchmark routes requests to judges" if spec.routes(cell.options) else
           "its judge's traces are closed or read for log-probs in rounds of their own" if _thinking_rounds(cell) else
           "its benchmark scores text pairs with an encoder" if cell.encoder is not None else
           "the run root's write fence works only in this process" if not cell.recorder.root.fence_travels else "")
    everything = tuple(range(shards))
    return ShardPlacement((), everything, why) if why else ShardPlacement(everything, ())


def _thinking_rounds(cell: JudgedCell) -> bool:
    """Whether the cell's own judge adds rounds to its answers (jobs.flow.thinking_rounds)."""
    reasoning = cell.model.reasoning
    return reasoning is not None and (reasoning.budget_tokens is not None or reads_logprobs_after_trace(cell.model))


@dataclass(frozen=True)
class ShardWalk:
    """Everything a shard's walk in the task needs, sent to the task once."""

    spec: Benchmark
    data: tuple[str, ...]
    limit: int | None
    columns: dict[str, str]
    kind: str
    options: Any
    verdict: str | None
    shard_items: int
    shards: frozenset[int]  # the shards to walk; the others are read past
    rows: RowRecorder
    model: ModelConfig
    retry_errors: bool
    answers: CellAnswerStore  # the task's copy of the cell's answer store

    @classmethod
    def of(cls, cell: JudgedCell, shards: Collection[int]) -> ShardWalk:
        bench, rows = cell.bench, cell.recorder.rows
        return cls(cell.spec, tuple(bench.data), bench.limit, dict(bench.columns), cell.kind, cell.options,
                   cell.verdict, cell.shard_items, frozenset(shards), rows, cell.model, cell.job.retry_errors,
                   CellAnswerStore.for_task(cell.job.answer_store, rows.root.run, cell.model))


def walked_shards(walk: ShardWalk, node: str | None) -> Iterator[tuple[ShardTally, Any]]:
    """Each shard's tally and, where it was walked, its state's object ref (None where it was not), in shard
    order. `node`: the node the task must run on (the driver's, where the run root is a local folder)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    where = {"scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=False)} if node else {}
    # No CPU of the cluster's accounting: this is the driver's own work in a process beside it, and the driver's
    # node may have none to give (a head started with 0 CPUs, as scripts/multinode.py starts it).
    task = ray.remote(_walk_task).options(num_returns="streaming", num_cpus=0, **where)
    refs = task.remote(walk)
    for tally_ref in refs:
        tally: ShardTally = ray.get(tally_ref)
        yield tally, next(refs) if tally.walked else None


def _walk_task(walk: ShardWalk) -> Iterator[Any]:
    """The task: per shard its tally, then its state where it was walked."""
    for shard, items in enumerate(in_shards(read_items(walk.spec, walk.data, walk.limit, walk.columns), walk.shard_items)):
        if shard not in walk.shards:
            continue
        tally, rows = _walk_shard(walk, shard, items)
        yield tally
        if tally.walked:
            yield reducer_of(walk.spec).reduced(rows)
        del items, rows


def _walk_shard(walk: ShardWalk, shard: int, items: list[Item]) -> tuple[ShardTally, list[Row]]:
    """One shard: its rows combined from its stored answers, recorded and counted; or, where it has anything
    left to ask or a part that does not read, an unwalked tally."""
    spec, kind, options = walk.spec, walk.kind, walk.options
    stored = walk.rows.whole_answers(shard)
    if stored is None:
        return ShardTally(shard), []
    answered = newest_answers(stored)
    del stored
    done = set(answered) - requests_to_retry(answered, walk.retry_errors)
    good = [item for item in items if not item.get("error")]
    requests = first_requests(spec, good, kind, options)
    if any(request["request_id"] not in done for request in requests):
        return ShardTally(shard), []
    answers = list(answered.values())
    walk.answers.answered_before(shard, walk.model, requests)  # as the driver's walk keeps them
    walk.answers.keep(shard, answers)
    del requests, answered
    rows = item_rows(spec, good, answers, kind, options, walk.verdict)
    return record_shard(walk.rows, shard, items, rows, answers), rows


def record_shard(recorder: RowRecorder, shard: int, items: Sequence[Item], rows: list[Row],
                 answers: Sequence[Answer]) -> ShardTally:
    """A walked shard's item rows and error rows recorded, wherever it was walked; its tally."""
    bad = bad_rows(recorder.benchmark, recorder.model, items, rows)
    recorder.record_rows(shard, rows, bad)
    return ShardTally(shard, True, len(rows), len(bad), sum(bool(item.get("error")) for item in items),
                      RequestErrors().add(answers), sum(bool(answer.get("cached")) for answer in answers),
                      ThinkingCounts().add(answers, rows))


def bad_rows(benchmark: str, model: str, items: Sequence[Item], rows: list[Row]) -> list[ArrowRow]:
    """A shard's error rows: its items that could not be read, and its rows that failed (their error classed
    retryable or not); the rows get the model's name on the way."""
    for row in rows:
        row["model"] = model
    bad = [{**item, "model": model, "correct": None, "retryable": False} for item in items if item.get("error")]
    return bad + [{"item_id": r["item_id"], "benchmark": benchmark, "model": model, "subset": r["subset"],
                   "error": r["error"], "retryable": retryable(r["error"])} for r in rows if r.get("error")]
