"""A thinking judge's traces, counted shard by shard: how many answers had one, how many of those did not end
(the judge ran out of tokens inside it, so the answer has no verdict: jobs.engines.reasoning), and the tokens
they took. A cut trace lowers a judge's numbers the way a wrong verdict does; metrics.json says how many there
were, so the two are never confused, and what the thinking cost."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

import numpy as np


class TokenSummary(TypedDict):
    """The tokens the counted traces took: their mean and numpy's default (linear) percentiles."""

    counted: int  # traces whose engine counted their tokens (an API that reports no reasoning_tokens counts none)
    mean: float
    p50: float
    p95: float


class ThinkingSummary(TypedDict):
    """metrics.json's `thinking` of a judge with a reasoning block."""

    traces: int  # answers with a trace (failed requests have none)
    unfinished: int  # of those, traces that did not end
    unfinished_thinking_rate: float | None  # unfinished / traces; None without a trace
    thinking_tokens: TokenSummary | None  # None where no trace's tokens were counted


class ThinkingCounts:
    """A cell's traces, added to shard by shard: answers with `thinking_finished` set, those False, and each
    trace's `thinking_tokens` by value (a Counter merges across shards and gives exact percentiles)."""

    def __init__(self) -> None:
        self.traces = self.unfinished = 0
        self.tokens: Counter[int] = Counter()

    def add(self, answers: Iterable[Mapping[str, Any]]) -> ThinkingCounts:
        for answer in answers:
            finished = answer.get("thinking_finished")
            if finished is not None:
                self.traces += 1
                self.unfinished += not finished
                if answer.get("thinking_tokens") is not None:
                    self.tokens[int(answer["thinking_tokens"])] += 1
        return self

    def merge(self, other: ThinkingCounts) -> ThinkingCounts:
        """Another shard's counts added (a shard walked in a Ray task: jobs.flow.shard_tasks)."""
        self.traces += other.traces
        self.unfinished += other.unfinished
        self.tokens.update(other.tokens)
        return self

    def summary(self) -> ThinkingSummary:
        rate = self.unfinished / self.traces if self.traces else None
        return ThinkingSummary(traces=self.traces, unfinished=self.unfinished, unfinished_thinking_rate=rate,
                               thinking_tokens=self._token_summary())

    def _token_summary(self) -> TokenSummary | None:
        if not self.tokens:
            return None
        every = np.repeat(np.array(list(self.tokens), dtype=float), list(self.tokens.values()))
        p50, p95 = np.percentile(every, [50, 95])
        return TokenSummary(counted=len(every), mean=float(every.mean()), p50=float(p50), p95=float(p95))
