"""A cell's error budget: how many of its requests failed, how many of those may pass if asked again, and the
most common error, against its benchmark's `max_error_rate`.

The rate is failed requests over requests (each request counted once, by its newest answer; a judge's routed
requests included), not failed rows over rows: it measures what the engines did, which is what `ragjudge run
--retry-errors` can change, while bad input rows are the data's (metrics.json's `n_bad_rows`). A retrieval cell
sends no requests and has no budget.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from jobs.engines.errors import headline, retryable


def retried_failure(answer: Mapping[str, Any]) -> bool:
    """Whether --retry-errors asks this stored answer's request again: its stored `retryable`, or its error
    classed now where the row predates that column."""
    stored = answer.get("retryable")
    return retryable(answer.get("error")) if stored is None else bool(stored)


class ErrorCounts(TypedDict):
    """A cell's request errors as its metrics.json and manifest.json entry keep them (`request_errors`)."""

    requests: int
    failed: int
    retryable: int  # of the failed, those `ragjudge run --retry-errors` asks again
    top_error: str | None  # the most common error without its details
    top_error_count: int


class RequestErrors:
    """A cell's request error counts, added to shard by shard: {requests, failed, retryable, top_error,
    top_error_count} of its answers (one per request); the top error is the most common error without its
    details (jobs.engines.errors.headline), the first seen of those tied."""

    def __init__(self) -> None:
        self.requests = self.retryable = 0
        self.errors: Counter[str] = Counter()

    def add(self, answers: Iterable[Mapping[str, Any]]) -> RequestErrors:
        for answer in answers:
            self.requests += 1
            if answer.get("error"):
                self.errors[headline(str(answer["error"]))] += 1
                self.retryable += retried_failure(answer)
        return self

    def merge(self, other: RequestErrors) -> RequestErrors:
        """Another shard's counts added (a shard walked in a Ray task: jobs.flow.shard_tasks)."""
        self.requests += other.requests
        self.retryable += other.retryable
        self.errors.update(other.errors)
        return self

    def counts(self) -> ErrorCounts:
        top = self.errors.most_common(1)
        return {"requests": self.requests, "failed": self.errors.total(), "retryable": self.retryable,
                "top_error": top[0][0] if top else None, "top_error_count": top[0][1] if top else 0}


def request_errors(answers: Iterable[Mapping[str, Any]]) -> ErrorCounts:
    """RequestErrors' counts of one list of answers."""
    return RequestErrors().add(answers).counts()


def over_budget(counts: Mapping[str, Any] | None, max_error_rate: float) -> str | None:
    """Why a cell with these request_errors counts is over its budget, in one line; None when it is not (or
    has no requests)."""
    if not counts or not counts["requests"]:
        return None
    rate = counts["failed"] / counts["requests"]
    if rate <= max_error_rate:
        return None
    again = (f"; {counts['retryable']} retryable: `ragjudge run --retry-errors` asks them again"
             if counts["retryable"] else "; none retryable")
    return (f"{counts['failed']} of {counts['requests']} requests failed ({100 * rate:.1f}% > max_error_rate "
            f"{100 * max_error_rate:g}%); most common: {counts['top_error']} ({counts['top_error_count']}){again}")


def reopens(entry: Mapping[str, Any]) -> bool:
    """Whether --retry-errors reopens a finished cell: it stored retryable errors (None: a retrieval cell, which
    sends no requests; an entry from before they were counted: any failed row)."""
    if "request_errors" not in entry:
        return bool(entry.get("n_errors"))
    return bool((entry["request_errors"] or {}).get("retryable"))
