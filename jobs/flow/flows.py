"""The two ways a cell flows from a benchmark's data to its metrics, behind one interface, and `flow_of`, the
one place that tells them apart by the benchmark's class.

`JudgedFlow`: items expanded into requests, answered in rounds (jobs.flow.rounds), combined into item rows,
scored by the encoder stage where the benchmark has one, stored and reduced to metrics. `RankedFlow`: corpora
indexed, queries searched, rankings scored against qrels (jobs.flow.ranked).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from actors.bertscore import EncoderSettings
from benchmarks.boundary_types import JsonObject
from benchmarks.options import typed_options
from benchmarks.protocol import Benchmark, RetrievalBenchmark, benchmark
from jobs.config import KINDS, BenchmarkConfig, ModelConfig, protocol_kind
from jobs.engines.base import engine_of
from jobs.engines.preflight import PreflightError
from jobs.flow.answer_cache import identity_of
from jobs.flow.cell_metrics import CellMetrics
from jobs.flow.error_budget import RequestErrors
from jobs.flow.first_round import StreamingAnswerer, stream_first_round, survey
from jobs.flow.freed_memory import give_back_freed
from jobs.flow.ranked import evaluate_retrieval
from jobs.flow.recorder import CellRecorder
from jobs.flow.rounds import Answerer, NoProgress, RoundsProgress, UnknownJudges, answer_rounds
from jobs.flow.shard_tasks import ShardWalk, bad_rows, walked_shards, walks_away
from jobs.flow.text_pairs import encoder_settings, with_text_pair_scores
from jobs.flow.walk import in_shards, item_rows, read_items
from jobs.store.answers import AnswerStore

# Items a judged cell holds at once: one shard's items, requests, answers and rows, sized so that a shard of
# full-length pairs stays small beside the driver (docs/measurements.md, "Figures moved from the code's
# comments"); its reduced state goes to Ray's object store (jobs.flow.cell_metrics). Smaller shards cost a Ray
# Data dataset each (but for a streamed first round) and an engine that drains at each shard's end. Fixed, not a
# setting: a shard's stored answers are named by its number (jobs.flow.recorder), so a resumed cell must cut its
# items where the first attempt did.
SHARD_ITEMS = 5_000


class ShardedAnswerer(StreamingAnswerer, Protocol):
    """A cell's answerer: its first round as one stream where it can (jobs.flow.first_round), then one answerer
    for each shard of its items."""

    def shard(self, index: int) -> Answerer: ...

    def cached_in(self, shard: int, answers: int) -> None:
        """How many of a shard's answers came from the answer store (counted where the shard was walked)."""
        ...


@dataclass(frozen=True)
class CellJob:
    """What a cell's flow is handed: what it scores, who answers, where it records, what it says."""

    bench: BenchmarkConfig
    model: ModelConfig
    answerer: ShardedAnswerer
    recorder: CellRecorder
    log: Callable[[str], None] = print
    answer_store: AnswerStore | None = None  # a ranked cell's query rewrites go through it too
    retry_errors: bool = False
    progress: RoundsProgress | None = None

    def say(self, line: str) -> None:
        self.log(f"{self.bench.name} x {self.model.name}: {line}")


class _LaterShard:
    """The sweep's progress for a shard after the first: its requests add to the cell's total."""

    def __init__(self, progress: RoundsProgress):
        self.progress = progress

    def cell_started(self, total: int, done: int) -> None:
        self.progress.more_requests(total - done)

    def more_requests(self, n: int) -> None:
        self.progress.more_requests(n)

    def advanced(self, n: int) -> None:
        self.progress.advanced(n)


class Flow(ABC):
    """What the sweep, validate, plan and the viewer ask of a benchmark's flow."""

    @abstractmethod
    def evaluate(self, job: CellJob) -> tuple[JsonObject, dict[str, int]]:
        """The cell's metrics, its rows recorded on the way, and how many rows each table got."""

    def routes(self, options: Any) -> list[str]:
        """Models other than the cell's own that its requests are routed to."""
        return []

    def encoder(self, options: Any) -> EncoderSettings | None:
        """The settings of its encoder stage (BERTScore), None for none."""
        return None

    def validates(self) -> bool:
        """Whether it has items to validate a model's scoring paths on (`ragjudge validate`)."""
        return False


class NoReadableRows(ValueError):
    """A judged cell's data has no row its benchmark can read: the cell fails (`failed_data`), naming the first
    reasons, before any engine starts."""


@dataclass
class _Walk:
    """What a judged cell's walk adds up, shard by shard: its reducer states, request errors, stored rows and
    bad input rows."""

    metrics: CellMetrics
    errors: RequestErrors = field(default_factory=RequestErrors)
    stored: Counter[str] = field(default_factory=lambda: Counter(predictions=0, errors=0))
    n_bad: int = 0


def _store_identities(job: CellJob) -> dict[str, str] | None:
    """The answer store's identity of the cell's model, worked out here once for a Ray task's copy of the store
    (None: the cell keeps no answers)."""
    if job.answer_store is None:
        return None
    identity_of(job.answer_store, job.model)
    return dict(job.answer_store.identities)


@dataclass(frozen=True)
class JudgedFlow(Flow):
    """Item by item: planned in tokens, validated, shown in the item viewer."""

    spec: Benchmark

    def evaluate(self, job: CellJob) -> tuple[JsonObject, dict[str, int]]:
        """The items are read once to check them all before any engine starts (and, where the answerer can
        stream, to plan the first round: jobs.flow.first_round), then the first round is asked as one stream,
        then shard by shard (SHARD_ITEMS) each shard is answered (its followups and judges, or every round
        where nothing streamed), combined, recorded and reduced to its part of the metrics
        (jobs.flow.cell_metrics) before the next is read, so the driver holds one shard's items, requests,
        answers and rows at a time. Where nothing is left to ask after the stream, the shards are walked in a
        Ray task (jobs.flow.shard_tasks) and the driver holds none of them; it walks only the shards that task
        hands back."""
        spec, bench, model = self.spec, job.bench, job.model
        options = typed_options(spec.Options, bench.options)
        kind = protocol_kind(model)
        streamed = self._first_round(job, options, kind)
        give_back_freed()  # the plan's arrays
        encoder = encoder_settings(spec, options, bench.name)
        # An engine that cannot prefill (an HTTP API) has its verdict read from the text.
        verdict = (model.verdict if engine_of(model).prefills else "text") if KINDS[kind].generates else None
        walk = _Walk(CellMetrics(spec, remote=job.answerer.streams() is not None))
        job.recorder.clear_rows()
        here: set[int] | None = None  # the shards the driver walks: all (None), or those the task handed back
        if walks_away(spec, options, streamed, encoder is not None, job.recorder.root.fence_travels):
            here = self._walk_away(job, walk, ShardWalk(spec, tuple(bench.data), bench.limit, dict(bench.columns), kind,
                                                        options, verdict,
                                                        SHARD_ITEMS, job.recorder.elsewhere(), model,
                                                        job.retry_errors, _store_identities(job)))
        if here is None or here:
            self._walk_here(job, options, kind, verdict, encoder, streamed, walk, here)
        metrics = walk.metrics.summarize(bench.bootstrap_resamples)
        metrics.update(model=model.name, kind=model.kind, note=model.note, n_bad_rows=walk.n_bad, config=bench.name,
                       request_errors=walk.errors.counts())
        return metrics, dict(walk.stored)

    def _walk_here(self, job: CellJob, options: Any, kind: str, verdict: str | None,
                   encoder: EncoderSettings | None, streamed: bool, walk: _Walk, only: set[int] | None) -> None:
        """The shards walked in the driver (`only` these, where not None): answered, combined, recorded and
        reduced one at a time."""
        spec, bench = self.spec, job.bench
        for shard, items in enumerate(in_shards(read_items(spec, bench.data, bench.limit, bench.columns), SHARD_ITEMS)):
            if only is not None and shard not in only:
                continue
            good = [item for item in items if not item.get("error")]
            first = shard == 0 and not streamed  # the stream told progress of the cell's start
            progress = job.progress if first or job.progress is None else _LaterShard(job.progress)
            try:
                answered = answer_rounds(spec, options, kind, good, job.answerer.shard(shard),
                                         job.recorder.shard(shard), retry_errors=job.retry_errors, say=job.say,
                                         progress=progress, streamed=streamed)
            except UnknownJudges as e:
                raise PreflightError(f"benchmark '{bench.name}': {e}") from None
            rows = item_rows(spec, good, answered, kind, options, verdict)
            if encoder is not None:
                rows = with_text_pair_scores(spec, good, rows, options, encoder, job.log)
            bad = bad_rows(bench.name, job.model.name, items, rows)
            job.recorder.record_rows(shard, rows, bad)
            walk.metrics.add(shard, rows)
            walk.stored.update(predictions=len(rows), errors=len(bad))
            walk.errors.add(answered)
            walk.n_bad += len(items) - len(good)
            del items, good, answered, rows, bad  # the shard's, freed before its pages are given back
            give_back_freed()

    @staticmethod
    def _walk_away(job: CellJob, walk: _Walk, task: ShardWalk) -> set[int]:
        """The shards walked in a Ray task (on the driver's node where the run root is a local folder), their
        states' references and tallies kept; returns the shards it handed back, which the driver walks."""
        import ray

        node = ray.get_runtime_context().get_node_id() if job.recorder.root.on_this_machine else None
        handed_back = set()
        for tally, state_ref in walked_shards(task, node):
            if not tally.walked:
                handed_back.add(tally.shard)
                continue
            walk.metrics.add_reduced(tally.shard, state_ref)
            walk.stored.update(predictions=tally.predictions, errors=tally.errors)
            walk.errors.merge(tally.request_errors)
            walk.n_bad += tally.n_bad
            job.answerer.cached_in(tally.shard, tally.cached)
        if handed_back:
            job.say(f"{len(handed_back)} shard{'s' * (len(handed_back) > 1)} with requests left to ask, or a "
                    "stored part that does not read: walked in the driver")
        return handed_back

    def _first_round(self, job: CellJob, options: Any, kind: str) -> bool:
        """Every item checked, and the first round asked as one stream where the answerer takes one; whether it
        did (one whose every request was answered before counts: it asked nothing). The plan lives only here, so
        the walk does not hold its arrays: 12 bytes an item and 8 a request answered before."""
        spec, bench = self.spec, job.bench
        plan, problems = survey(spec, bench.data, bench.limit, bench.columns, kind, options, SHARD_ITEMS, job.recorder,
                                job.answerer, job.retry_errors)
        if problems:
            raise PreflightError(f"benchmark '{bench.name}': " + "; ".join(problems))
        if plan.bad:
            first = "; ".join(plan.first_bad) + ("; ..." if plan.bad > len(plan.first_bad) else "")
            if not plan.good:
                raise NoReadableRows(f"no readable row in {', '.join(bench.data)}: {plan.bad} bad row"
                                     f"{'s' * (plan.bad > 1)}, first: {first}")
            job.say(f"{plan.bad} of {plan.good + plan.bad} input rows could not be read and are not scored (each in "
                    f"errors/, counted as n_bad_rows); first: {first}")
        # None planned (an answerer that does not stream): every request is asked shard by shard. Planned but
        # all answered before: as a stream that asked nothing, so the shards may still be walked in a task.
        streamed = plan.first > 0
        if streamed:
            stream_first_round(spec, bench.data, bench.limit, bench.columns, kind, options, plan, job.answerer,
                               job.progress or NoProgress(), job.say)
        return streamed

    def routes(self, options: Any) -> list[str]:
        return self.spec.routes(options)

    def encoder(self, options: Any) -> EncoderSettings | None:
        return self.spec.text_pair_encoder(options)

    def validates(self) -> bool:
        return self.spec.validation_items([], 0) is not None  # None, whatever the items: it has none


@dataclass(frozen=True)
class RankedFlow(Flow):
    """Scored on rankings against qrels."""

    spec: RetrievalBenchmark

    def evaluate(self, job: CellJob) -> tuple[JsonObject, dict[str, int]]:
        return evaluate_retrieval(job.recorder.root, job.bench, job.model, job.log, job.answer_store)


def flow_of(module: str) -> JudgedFlow | RankedFlow:
    """The flow of a registered benchmark module."""
    spec = benchmark(module)
    return RankedFlow(spec) if isinstance(spec, RetrievalBenchmark) else JudgedFlow(spec)
