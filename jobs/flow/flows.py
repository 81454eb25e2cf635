"""The two ways a cell flows from a benchmark's data to its metrics, behind one interface, and `flow_of`, the
one place that tells them apart by the benchmark's class.

`JudgedFlow`: items expanded into requests, answered in rounds (jobs.flow.rounds), combined into item rows,
scored by the encoder stage where the benchmark has one, stored and reduced to metrics; its steps are listed in
order in `JudgedFlow.evaluate`. `RankedFlow`: corpora indexed, queries searched, rankings scored against qrels
(jobs.flow.ranked).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import partial
from typing import Any

from actors.bertscore import EncoderSettings
from benchmarks.boundary_types import JsonObject
from benchmarks.protocol import Benchmark, RetrievalBenchmark, benchmark
from jobs.flow.cell_metrics import CellMetrics
from jobs.flow.first_round import ask_first_round
from jobs.flow.judged_cell import CellJob, JudgedCell
from jobs.flow.ranked import evaluate_retrieval
from jobs.flow.shard_tasks import place_shards
from jobs.flow.shard_walk import CellTotals, walk_in_task, walk_shard


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


@dataclass(frozen=True)
class JudgedFlow(Flow):
    """Item by item: planned in tokens, validated, shown in the item viewer."""

    spec: Benchmark

    def evaluate(self, job: CellJob) -> tuple[JsonObject, dict[str, int]]:
        """A judged cell, step by step. The driver holds the first round's plan (digests and counts) and one
        shard's items, requests, answers and rows at a time. The items are read three times: by the survey
        (every one checked before any engine starts), by the stream's read task on the cluster (so the driver
        never holds the stream's requests), and shard by shard by the walk (after the shard's answers are in)."""
        cell = JudgedCell.of(self.spec, job)
        # 1. Every shard surveyed (its bad rows; a problem, or no readable row, fails the cell before any engine
        #    starts), then the first round asked as one stream where the engine takes one.
        first = ask_first_round(cell)
        # 2. Which shards a Ray task walks and which the driver does, and why.
        placement = place_shards(cell, first.shards, first.streamed)
        totals = CellTotals(CellMetrics(self.spec, remote=job.answerer.on_cluster))
        job.recorder.rows.clear()
        # 3. The task's shards; those it hands back join the driver's.
        handed_back = walk_in_task(cell, totals, placement.in_task)
        # 4. Shard by shard in the driver: its rounds answered, its rows combined, scored, recorded and reduced.
        cell.map_shards(partial(walk_shard, cell, totals, first.streamed), placement.in_driver + handed_back)
        # 5. The shards' states merged and summarized (in one task on the cluster).
        return totals.summary(cell)

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
