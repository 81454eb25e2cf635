"""A judged cell's walk after its first round, shard by shard: each shard's rounds answered, its item rows
combined, scored by the encoder stage where the benchmark has one, recorded and reduced, in the driver
(`walk_shard`) or in one Ray task beside it (`walk_in_task`, jobs.flow.shard_tasks), and what the shards add
up to (`CellTotals`)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.boundary_types import JsonObject
from benchmarks.row_types import Item
from jobs.flow.cell_metrics import CellMetrics
from jobs.flow.error_budget import RequestErrors
from jobs.flow.judged_cell import JudgedCell
from jobs.flow.rounds import answer_rounds
from jobs.flow.shard_tasks import ShardTally, ShardWalk, record_shard, walked_shards
from jobs.flow.text_pairs import with_text_pair_scores
from jobs.flow.thinking_counts import ThinkingCounts
from jobs.flow.walk import item_rows


@dataclass
class CellTotals:
    """What a judged cell's shards add up to: their reducer states, request errors, stored rows, bad input
    rows and a thinking judge's traces."""

    metrics: CellMetrics
    errors: RequestErrors = field(default_factory=RequestErrors)
    stored: Counter[str] = field(default_factory=lambda: Counter(predictions=0, errors=0))
    n_bad: int = 0
    thinking: ThinkingCounts = field(default_factory=ThinkingCounts)

    def summary(self, cell: JudgedCell) -> tuple[JsonObject, dict[str, int]]:
        """The cell's metrics.json, and how many rows each table got."""
        model = cell.model
        metrics = self.metrics.summarize(cell.bench.bootstrap_resamples)
        metrics.update(model=model.name, kind=model.kind, note=model.note, n_bad_rows=self.n_bad, config=cell.bench.name,
                       request_errors=self.errors.counts())
        if model.reasoning is not None:
            metrics["thinking"] = self.thinking.summary()
        return metrics, dict(self.stored)

    def add(self, tally: ShardTally) -> None:
        """A walked shard's counts (its reducer state is added to `metrics` where it was reduced)."""
        self.stored.update(predictions=tally.predictions, errors=tally.errors)
        self.errors.merge(tally.request_errors)
        self.n_bad += tally.n_bad
        self.thinking.merge(tally.thinking)


def walk_shard(cell: JudgedCell, totals: CellTotals, streamed: bool, shard: int, items: list[Item]) -> None:
    """One shard in the driver: its rounds answered, its rows combined, scored, recorded and reduced."""
    good = [item for item in items if not item.get("error")]
    answered = answer_rounds(cell, shard, good, streamed)
    rows = item_rows(cell.spec, good, answered, cell.kind, cell.options, cell.verdict)
    if cell.encoder is not None:
        rows = with_text_pair_scores(cell.spec, good, rows, cell.options, cell.encoder, cell.job.log)
    totals.add(record_shard(cell.recorder.rows, shard, items, rows, answered))
    totals.metrics.add(shard, rows)


def walk_in_task(cell: JudgedCell, totals: CellTotals, shards: Sequence[int]) -> tuple[int, ...]:
    """The shards walked in one Ray task (on the driver's node where the run root is a local folder), their
    states' references and tallies added to `totals`; returns the shards it handed back (an answer missing, a
    stored part that does not read), which the driver walks."""
    if not shards:
        return ()
    import ray

    node = ray.get_runtime_context().get_node_id() if cell.recorder.root.on_this_machine else None
    handed_back = []
    for tally, state_ref in walked_shards(ShardWalk.of(cell, shards), node):
        if not tally.walked:
            handed_back.append(tally.shard)
            continue
        totals.add(tally)
        totals.metrics.add_reduced(tally.shard, state_ref)
        cell.answerer.store_answers_used(tally.shard, tally.cached)
    if handed_back:
        cell.say(f"{len(handed_back)} shard{'s' * (len(handed_back) > 1)} with requests left to ask, or a stored "
                 "part that does not read: walked in the driver")
    return tuple(handed_back)
