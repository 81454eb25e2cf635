"""Who answers a judged cell's requests, as the cell's flow sees it: one interface, which the sweep's cell
implements (jobs.sweep.cell `CellAnswerer`: the sweep's engines, through the answer store). `ragjudge validate`
and `ragjudge plan` ask no rounds: they call an engine (jobs.engines.answering) or only expand requests
(jobs.flow.walk)."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from benchmarks.row_types import Answer, Request
from jobs.config.reasoning import ReasoningSettings

if TYPE_CHECKING:
    from ray.data import Dataset


@dataclass(frozen=True)
class StreamTarget:
    """The engine a cell's first round streams to."""

    reads: frozenset[str]  # the request keys the engine reads, checked in the driver before it starts
    engine: str  # the engine and model, as the check's error names them
    batch: int  # requests an engine batch holds (a block of the stream holds whole batches: `block_rows`)


class Answerer(Protocol):
    """A judged cell's answerer. Route None is the cell's own model, a name one of its judges; `shard` is the
    shard of the cell's items the requests come from (a batch engine keeps one batch per route and shard)."""

    judges: Iterable[str]  # the routes it has a judge for
    # The cell runs on the sweep's Ray cluster (it has the sweep's engine host): its first round may stream and
    # its metrics are reduced there. A cell without one (a test, a dry run) is asked and reduced in the driver.
    on_cluster: bool

    def reasoning(self, route: str | None) -> ReasoningSettings | None:
        """The reasoning block of the route's model; None: it does not think."""
        ...

    def stream_target(self) -> StreamTarget | None:
        """The engine the cell's own first-round requests stream to as one dataset; None: asked shard by shard."""
        ...

    def answers_in_store(self, requests: Iterable[Request]) -> list[Answer]:
        """The answers the answer store keeps for some of these requests (marked `cached`); [] without a store,
        and then `requests` is not read (the survey hands in a generator that would expand a shard again)."""
        ...

    def ask_stream(self, requests: Dataset) -> Iterator[list[Answer]]:
        """The answers to a dataset of the cell's own requests, in parts as they arrive."""
        ...

    def ask(self, shard: int, route: str | None, requests: list[Request]) -> Iterator[list[Answer]]:
        """The answers to one route's requests of a shard, in parts as they arrive (raising Interrupted once the
        run stops)."""
        ...

    def answered_before(self, shard: int, route: str | None, requests: list[Request]) -> None:
        """Requests of the shard that an earlier attempt answered (their answers are stored)."""
        ...

    def route_answered(self, shard: int, route: str | None) -> None:
        """Every request of the route that this round asked for the shard is stored."""
        ...

    def shard_answered(self, shard: int, answers: list[Answer]) -> None:
        """The shard has every answer it needs, walked in the driver (its engines' answers go to the store)."""
        ...

    def store_answers_used(self, shard: int, n: int) -> None:
        """How many of a shard's answers came from the answer store, where a Ray task walked it."""
        ...
