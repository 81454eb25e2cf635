"""What the steps of a judged cell share (`JudgedCell`: its benchmark, model, answerer and recorder, and what
follows from them, worked out once), and how its items are cut into shards.

The driver holds one shard of SHARD_ITEMS items, with their requests, answers and rows, at a time, and sizes it
so that a shard of full-length pairs stays small beside the driver (docs/measurements.md, "Figures moved from
the code's comments"); smaller shards cost a Ray Data dataset each where nothing streamed, and an engine that
drains at each shard's end. Fixed, not a setting: a shard's stored answers are named by its number
(jobs.flow.recorder), so a resumed cell must cut its items where the first attempt did.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from actors.bertscore import EncoderSettings
from benchmarks.options import typed_options
from benchmarks.protocol import Benchmark
from benchmarks.row_types import Item
from jobs.config import KINDS, BenchmarkConfig, ModelConfig, protocol_kind
from jobs.engines.base import engine_of
from jobs.flow.answerer import Answerer
from jobs.flow.freed_memory import trim_heap
from jobs.flow.progress import CellProgress
from jobs.flow.recorder import CellRecorder
from jobs.flow.text_pairs import encoder_settings
from jobs.flow.walk import in_shards, read_items
from jobs.store.answers import AnswerStore

SHARD_ITEMS = 5_000
T = TypeVar("T")


def reads_logprobs_after_trace(model: ModelConfig) -> bool:
    """A thinking judge whose verdict is read from log-probs after its trace, in a round of their own
    (`verdict: logprob` on an engine that prefills: jobs.flow.thinking_rounds)."""
    return model.reasoning is not None and model.verdict == "logprob" and engine_of(model).prefills


class NoReadableRows(ValueError):
    """A judged cell's data has no row its benchmark can read: the cell fails (`failed_data`), naming the first
    reasons, before any engine starts."""


@dataclass(frozen=True)
class CellJob:
    """What a cell's flow is handed: what it scores, who answers, where it records, what it says."""

    bench: BenchmarkConfig
    model: ModelConfig
    answerer: Answerer
    recorder: CellRecorder
    log: Callable[[str], None] = print
    answer_store: AnswerStore | None = None  # a ranked cell's query rewrites go through it too
    retry_errors: bool = False
    progress: CellProgress = field(default_factory=CellProgress)

    def say(self, line: str) -> None:
        self.log(f"{self.bench.name} x {self.model.name}: {line}")


@dataclass(frozen=True)
class JudgedCell:
    """A judged cell's job with its benchmark's protocol, options, the model's protocol kind, how a generative
    judge's verdict is read and the encoder stage's settings."""

    spec: Benchmark
    job: CellJob
    options: Any
    kind: str
    verdict: str | None  # logprob | text for a generative judge, None for a scorer
    encoder: EncoderSettings | None  # the BERTScore stage's, None where the benchmark has none
    shard_items: int  # SHARD_ITEMS

    @classmethod
    def of(cls, spec: Benchmark, job: CellJob) -> JudgedCell:
        options = typed_options(spec.Options, job.bench.options)
        kind = protocol_kind(job.model)
        # An engine that cannot prefill (an HTTP API) has its verdict read from the text, and so has a judge that
        # thinks unless it asks for log-probs (`verdict: logprob`), which are then read after its trace in a
        # round of their own (jobs.flow.thinking_rounds).
        thinks_in_text = job.model.reasoning is not None and not reads_logprobs_after_trace(job.model)
        reads_text = thinks_in_text or not engine_of(job.model).prefills
        verdict = ("text" if reads_text else job.model.verdict) if KINDS[kind].generates else None
        return cls(spec, job, options, kind, verdict, encoder_settings(spec, options, job.bench.name), SHARD_ITEMS)

    @property
    def bench(self) -> BenchmarkConfig:
        return self.job.bench

    @property
    def model(self) -> ModelConfig:
        return self.job.model

    @property
    def answerer(self) -> Answerer:
        return self.job.answerer

    @property
    def recorder(self) -> CellRecorder:
        return self.job.recorder

    def say(self, line: str) -> None:
        self.job.say(line)

    def items(self) -> Iterator[Item]:
        """Every item of the cell's data, in file order (bad rows as items with `error`)."""
        return read_items(self.spec, self.bench.data, self.bench.limit, self.bench.columns)

    def for_each_shard(self, step: Callable[[int, list[Item]], None]) -> None:
        """step(shard, its items) for every shard of the items, read as each is needed (`map_shards`)."""
        for shard, items in enumerate(in_shards(self.items(), self.shard_items)):
            step(shard, items)
            trim_heap()

    def map_shards(self, step: Callable[[int, list[Item]], T], wanted: Collection[int]) -> list[T]:
        """step(shard, its items) for the `wanted` shards (the others read past), each shard read as it is needed
        and none past the last one wanted (a streamed cell whose shards were all walked in a Ray task wants none,
        and read its whole data again for nothing); after each step the C allocator's free pages go back to the
        system (jobs.flow.freed_memory), so the driver's memory does not grow shard after shard."""
        results = []
        if not wanted:
            return results
        last = max(wanted)
        for shard, items in enumerate(in_shards(self.items(), self.shard_items)):
            if shard in wanted:
                results.append(step(shard, items))
                trim_heap()
            if shard == last:
                break
        return results
