"""A thinking judge's traces, counted shard by shard: how many answers had one and how many of those did not
end (the judge ran out of tokens inside it, so the answer has no verdict: jobs.engines.reasoning). A cut trace
lowers a judge's numbers the way a wrong verdict does; metrics.json says how many there were, so the two are
never confused."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict


class ThinkingSummary(TypedDict):
    """metrics.json's `thinking` of a judge with a reasoning block."""

    traces: int  # answers with a trace (failed requests have none)
    unfinished: int  # of those, traces that did not end
    unfinished_thinking_rate: float | None  # unfinished / traces; None without a trace


class ThinkingCounts:
    """A cell's traces, added to shard by shard: answers with `thinking_finished` set, and those False."""

    def __init__(self) -> None:
        self.traces = self.unfinished = 0

    def add(self, answers: Iterable[Mapping[str, Any]]) -> ThinkingCounts:
        for answer in answers:
            finished = answer.get("thinking_finished")
            if finished is not None:
                self.traces += 1
                self.unfinished += not finished
        return self

    def merge(self, other: ThinkingCounts) -> ThinkingCounts:
        """Another shard's counts added (a shard walked in a Ray task: jobs.flow.shard_tasks)."""
        self.traces += other.traces
        self.unfinished += other.unfinished
        return self

    def summary(self) -> ThinkingSummary:
        rate = self.unfinished / self.traces if self.traces else None
        return ThinkingSummary(traces=self.traces, unfinished=self.unfinished, unfinished_thinking_rate=rate)
