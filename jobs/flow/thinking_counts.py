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


class QuartileAccuracy(TypedDict):
    """The items of one quartile of the item's thinking tokens (the sum over its requests' traces)."""

    tokens_from: float  # above the quartile below's upper edge (the first quartile: its least value) ...
    tokens_to: float  # ... up to this edge, inclusive (numpy's linear percentiles of the items' tokens)
    n: int
    accuracy: float | None  # the mean of the items' `correct`; None where the quartile holds no item


class ThinkingSummary(TypedDict):
    """metrics.json's `thinking` of a judge with a reasoning block."""

    traces: int  # answers with a trace (failed requests have none)
    unfinished: int  # of those, traces that did not end
    unfinished_thinking_rate: float | None  # unfinished / traces; None without a trace
    thinking_tokens: TokenSummary | None  # None where no trace's tokens were counted
    # what thinking longer bought: scored items by quartile of their thinking tokens; None where no scored item
    # had its tokens counted
    accuracy_by_thinking_quartile: list[QuartileAccuracy] | None


class ThinkingCounts:
    """A cell's traces, added to shard by shard: answers with `thinking_finished` set, those False, and each
    trace's `thinking_tokens` by value (a Counter merges across shards and gives exact percentiles)."""

    def __init__(self) -> None:
        self.traces = self.unfinished = 0
        self.tokens: Counter[int] = Counter()
        self.items: Counter[tuple[int, float]] = Counter()  # (an item's thinking tokens, its correct) -> items

    def add(self, answers: Iterable[Mapping[str, Any]], rows: Iterable[Mapping[str, Any]] = ()) -> ThinkingCounts:
        """A shard's answers and, to tell accuracy by thinking length, its item rows (scored where `correct` is
        a number; an item counts where every one of its traces had its tokens counted)."""
        answers = list(answers)
        per_item: dict[str, int | None] = {}
        for answer in answers:
            if answer.get("thinking_finished") is not None:
                tokens, item = answer.get("thinking_tokens"), str(answer.get("item_id"))
                so_far = per_item.get(item, 0)
                per_item[item] = None if tokens is None or so_far is None else so_far + int(tokens)
        for row in rows:
            tokens = per_item.get(str(row.get("item_id")))
            if tokens is not None and isinstance(row.get("correct"), int | float):
                self.items[(tokens, float(row["correct"]))] += 1
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
        self.items.update(other.items)
        return self

    def summary(self) -> ThinkingSummary:
        rate = self.unfinished / self.traces if self.traces else None
        return ThinkingSummary(traces=self.traces, unfinished=self.unfinished, unfinished_thinking_rate=rate,
                               thinking_tokens=self._token_summary(),
                               accuracy_by_thinking_quartile=self._quartile_accuracy())

    def _quartile_accuracy(self) -> list[QuartileAccuracy] | None:
        if not self.items:
            return None
        keys = list(self.items)
        counts = np.array([self.items[k] for k in keys])
        tokens = np.array([k[0] for k in keys], dtype=float)
        correct = np.array([k[1] for k in keys])
        edges = [float(tokens.min()), *np.percentile(np.repeat(tokens, counts), [25, 50, 75, 100]).tolist()]
        quartiles = []
        for q in range(4):
            inside = (tokens <= edges[q + 1]) & ((tokens > edges[q]) if q else (tokens >= edges[0]))
            n = int(counts[inside].sum())
            accuracy = float((correct[inside] * counts[inside]).sum() / n) if n else None
            quartiles.append(QuartileAccuracy(tokens_from=edges[q], tokens_to=edges[q + 1], n=n, accuracy=accuracy))
        return quartiles

    def _token_summary(self) -> TokenSummary | None:
        if not self.tokens:
            return None
        every = np.repeat(np.array(list(self.tokens), dtype=float), list(self.tokens.values()))
        p50, p95 = np.percentile(every, [50, 95])
        return TokenSummary(counted=len(every), mean=float(every.mean()), p50=float(p50), p95=float(p95))
