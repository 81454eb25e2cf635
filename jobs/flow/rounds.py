"""A judged cell's answers, round after round, from an answerer and a recorder handed in.

The flow decides what to ask (jobs.flow.walk); the `Answerer` decides who answers and how (the sweep's engines
and answer store; a scoring path of `ragjudge validate`), the `Recorder` keeps the answers as they arrive (the
run's parts on a `RunRoot`: jobs.flow.recorder). Each part is recorded as it arrives, so a resumed cell asks
nothing twice, but with `retry_errors` the requests whose stored answer failed retryably; a stored part that
cannot be read is quarantined by the recorder and its requests are asked again. Before the answers are
returned the recorder reads its parts back once: a part damaged while the cell ran (chaos seed 2, issue 44) is
quarantined and its requests asked again, so a done cell's answers are all in parts that read.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from benchmarks.protocol import Benchmark
from benchmarks.row_types import Answer, Item, Request
from jobs.flow.error_budget import asks_again
from jobs.flow.walk import by_route, first_requests, followup_requests, newest_answers, routed

MAX_ROUNDS = 8  # a benchmark's followup rounds (e.g. generate, then judge, then judge each statement)


class Answerer(Protocol):
    """Who answers a cell's requests: route None is the cell's own model, a name one of its judges."""

    judges: Iterable[str]  # the routes it has a judge for

    def ask(self, route: str | None, requests: list[Request]) -> Iterator[list[Answer]]:
        """The answers to `requests`, in parts as they arrive (raising Interrupted once the run stops)."""
        ...

    def answered_before(self, route: str | None, requests: list[Request]) -> None:
        """Requests an earlier attempt answered (their answers are in the recorder)."""
        ...

    def finished(self, route: str | None) -> None:
        """Every request of the route this round asked is recorded."""
        ...

    def all_answered(self, answered: list[Answer]) -> None:
        """The cell has every answer it needs (e.g. to keep them in the answer store)."""
        ...


class Recorder(Protocol):
    """Where a cell's answers are kept as they arrive."""

    def stored_answers(self) -> list[Answer]:
        """The answers of every readable part, in the order they were stored; unreadable ones quarantined."""
        ...

    def record_answers(self, part: list[Answer]) -> None:
        ...

    def parts_read_back(self) -> bool:
        """Whether every stored part still reads (the ones that do not are quarantined)."""
        ...


class RoundsProgress(Protocol):
    def cell_started(self, total: int, done: int) -> None: ...
    def more_requests(self, n: int) -> None: ...
    def advanced(self, n: int) -> None: ...


class NoProgress:
    def cell_started(self, total: int, done: int) -> None:
        pass

    def more_requests(self, n: int) -> None:
        pass

    def advanced(self, n: int) -> None:
        pass


class UnknownJudges(ValueError):
    """Requests routed to judges the answerer has none for: a config error, found before any is asked."""


def asked_again(answered: dict[str, Answer], retry_errors: bool) -> set[str]:
    """Of the recorded answers (request id -> its newest), the requests to ask again: with `retry_errors`,
    those whose answer failed with an error that may pass."""
    return {rid for rid, row in answered.items() if asks_again(row)} if retry_errors else set()


def answer_rounds(spec: Benchmark, options: Any, kind: str, items: list[Item], answerer: Answerer,
                  recorder: Recorder, *, retry_errors: bool = False, say: Callable[[str], None] = print,
                  progress: RoundsProgress | None = None, streamed: bool = False) -> list[Answer]:
    """Every answer the protocol needs, one per request (the newest recorded): the recorded ones, then round
    after round of new requests (the benchmark's followup builds each round from the answers so far) until
    none is new; asked again from the start while parts recorded on the way no longer read. `streamed`: the
    cell's first round was asked as one stream (jobs.flow.first_round), which said how much was to go."""
    for _ in range(MAX_ROUNDS):
        answered = _rounds(spec, options, kind, items, answerer, recorder, retry_errors,
                           (lambda line: None) if streamed else say, say, progress or NoProgress())
        if recorder.parts_read_back():
            return answered
    raise RuntimeError(f"stored parts were damaged again after {MAX_ROUNDS} reads")


def _rounds(spec: Benchmark, options: Any, kind: str, items: list[Item], answerer: Answerer, recorder: Recorder,
            retry_errors: bool, say_start: Callable[[str], None], say: Callable[[str], None],
            progress: RoundsProgress) -> list[Answer]:
    answered = newest_answers(recorder.stored_answers())
    again = asked_again(answered, retry_errors)
    done = set(answered) - again
    requests = first_requests(spec, items, kind, options)
    retried = f" ({len(again)} retryable errors among them)" if again else ""
    say_start(f"{len(items)} items, {len(done)} requests already answered, "
        f"{sum(r['request_id'] not in done for r in requests)} to go{retried}")
    progress.cell_started(len(requests), sum(r["request_id"] in done for r in requests))
    told: set[str] = set()  # requests the answerer asked or was told were answered before
    judges = set(answerer.judges)
    for round_ in range(MAX_ROUNDS):
        todo = [r for r in requests if r["request_id"] not in done]
        if round_ and todo:
            progress.more_requests(len(todo))
            say(f"round {round_}: {len(todo)} requests to go")
        if unknown := sorted({str(r["route"]) for r in todo if routed(r) and r["route"] not in judges}):
            raise UnknownJudges(f"requests for models it did not name as judges ({', '.join(unknown)})")
        earlier = [r for r in requests if r["request_id"] in done and r["request_id"] not in told]
        _tell_answered_before(answerer, judges, earlier)
        told.update(r["request_id"] for r in earlier)
        _ask_round(answerer, recorder, todo, answered, done, progress)
        told.update(r["request_id"] for r in todo)
        # This round's requests freed before the next round's are made (each holds its item's texts), which
        # lowers the walk's floor (docs/scale.md, "Where the stream's CPU goes, bigger blocks, and the walk's
        # second copies").
        del requests, todo, earlier
        requests = followup_requests(spec, items, answered.values(), kind, options)
        if all(r["request_id"] in done for r in requests):
            answerer.all_answered(list(answered.values()))
            return list(answered.values())
    raise RuntimeError(f"followup still asks for new requests after {MAX_ROUNDS} rounds")


def _tell_answered_before(answerer: Answerer, judges: set[str], earlier: list[Request]) -> None:
    """Tell the answerer which requests of each route it has answered before (a judge it lacks is not told)."""
    for route, part in by_route(earlier):
        if route is None or route in judges:
            answerer.answered_before(route, part)


def _ask_round(answerer: Answerer, recorder: Recorder, todo: list[Request], answered: dict[str, Answer],
               done: set[str], progress: RoundsProgress) -> None:
    """A round's requests asked, the cell's own model first, then each judge: each part recorded as it comes
    and added to `answered` and `done`."""
    for route, part_todo in by_route(todo):
        for part in answerer.ask(route, part_todo):
            recorder.record_answers(part)
            answered.update((row["request_id"], row) for row in part)
            done.update(row["request_id"] for row in part)
            progress.advanced(len(part))
        answerer.finished(route)
