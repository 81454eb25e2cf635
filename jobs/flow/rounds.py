"""A shard's answers, round after round: the stored ones, then each round's new requests asked by the cell's
answerer and stored as they arrive.

The flow decides what to ask (jobs.flow.walk); the answerer decides who answers and how (jobs.flow.answerer);
the shard's answer recorder keeps the answers as they arrive (jobs.flow.recorder). Each part is stored as it
arrives, so a resumed cell asks nothing twice, but with `retry_errors` the requests whose stored answer failed
retryably; a stored part that cannot be read is quarantined by the recorder and its requests are asked again.
Before the answers are returned the recorder reads its parts back once: a part damaged while the cell ran
(chaos seed 2, issue 44) is quarantined and the rounds start again from what still reads, so a done cell's
answers are all in parts that read.
"""
from __future__ import annotations

from benchmarks.row_types import Answer, Item, Request
from jobs.config.reasoning import ReasoningSettings
from jobs.engines.preflight import PreflightError
from jobs.flow.error_budget import retried_failure
from jobs.flow.judged_cell import JudgedCell, reads_logprobs_after_trace
from jobs.flow.recorder import ShardAnswers
from jobs.flow.thinking_rounds import closing_requests, merged_answers, verdict_requests
from jobs.flow.walk import by_route, first_requests, followup_requests, newest_answers, route_of, routed

MAX_ROUNDS = 8  # a benchmark's followup rounds (e.g. generate, then judge, then judge each statement)
MAX_READS = 8  # times a shard's rounds start again because a part stored on the way no longer reads


def requests_to_retry(answered: dict[str, Answer], retry_errors: bool) -> set[str]:
    """Of the stored answers (request id -> its newest), the requests to ask again: with `retry_errors`, those
    whose answer failed with an error that may pass."""
    return {rid for rid, row in answered.items() if retried_failure(row)} if retry_errors else set()


def _reads_logprobs_after_trace(cell: JudgedCell, request: Request) -> ReasoningSettings | None:
    """The reasoning block of the cell's own model where its verdict is read from log-probs after its trace
    (`verdict: logprob` on a thinking judge, jobs.flow.judged_cell) and `request` is its own; else None."""
    return cell.model.reasoning if reads_logprobs_after_trace(cell.model) and route_of(request) is None else None


def answer_rounds(cell: JudgedCell, shard: int, items: list[Item], streamed: bool) -> list[Answer]:
    """Every answer the protocol needs for the shard's good `items`, one per request (the newest stored): the
    stored ones, then round after round of new requests (the benchmark's followup builds each round from the
    answers so far) until none is new; started again while parts stored on the way no longer read. `streamed`:
    the cell's first round was asked as one stream (jobs.flow.first_round), which said how much was to go."""
    answers = cell.recorder.shard_answers(shard)
    for _ in range(MAX_READS):
        answered = _rounds(cell, shard, items, answers, streamed)
        if answers.parts_read_back():
            cell.answerer.shard_answered(shard, list(answered.values()))
            return merged_answers(answered)
    raise RuntimeError(f"stored parts were damaged again after {MAX_READS} reads")


def _rounds(cell: JudgedCell, shard: int, items: list[Item], answers: ShardAnswers,
            streamed: bool) -> dict[str, Answer]:
    """request id -> its newest answer, closing requests' (jobs.flow.thinking_rounds) included."""
    spec, kind, options = cell.spec, cell.kind, cell.options
    answered = newest_answers(answers.stored_answers())
    again = requests_to_retry(answered, cell.job.retry_errors)
    done = set(answered) - again
    requests = first_requests(spec, items, kind, options)
    if not streamed:  # the stream said the cell's start
        retried = f" ({len(again)} retryable errors among them)" if again else ""
        cell.say(f"{len(items)} items, {len(done)} requests already answered, "
                 f"{sum(r['request_id'] not in done for r in requests)} to go{retried}")
    cell.job.progress.requests(len(requests), sum(r["request_id"] in done for r in requests))
    told: set[str] = set()  # requests the answerer asked or was told were answered before
    for round_ in range(MAX_ROUNDS):
        _ask_round(cell, shard, answers, f"round {round_}" if round_ else "", requests, answered, done, told)
        closing = closing_requests(requests, answered, lambda r: cell.answerer.reasoning(route_of(r)))
        _ask_round(cell, shard, answers, f"round {round_}, traces cut at their budget closed", closing, answered,
                   done, told)
        verdicts = verdict_requests(requests, answered, lambda r: _reads_logprobs_after_trace(cell, r))
        _ask_round(cell, shard, answers, f"round {round_}, log-prob verdicts after the trace", verdicts, answered,
                   done, told)
        # The round's requests freed before the next round's are made (each holds its item's texts), which lowers
        # the walk's floor (docs/measurements.md, "Where the stream's CPU goes, bigger blocks, and the walk's
        # second copies").
        del requests, closing, verdicts
        requests = followup_requests(spec, items, merged_answers(answered), kind, options)
        if all(r["request_id"] in done for r in requests):
            return answered
    raise RuntimeError(f"followup still asks for new requests after {MAX_ROUNDS} rounds")


def _ask_round(cell: JudgedCell, shard: int, answers: ShardAnswers, name: str, requests: list[Request],
               answered: dict[str, Answer], done: set[str], told: set[str]) -> None:
    """A round: the answerer told which of its requests were answered before, then the rest asked, the cell's
    own model first, then each judge, each part stored as it comes and added to `answered` and `done`. `name`:
    how the console names a round after the first ("" for the first, which the cell's start line counts)."""
    answerer, judges = cell.answerer, set(cell.answerer.judges)
    todo = [r for r in requests if r["request_id"] not in done]
    if name and todo:
        cell.job.progress.more_requests(len(todo))
        cell.say(f"{name}: {len(todo)} requests to go")
    if unknown := sorted({str(r["route"]) for r in todo if routed(r) and r["route"] not in judges}):
        raise PreflightError(f"benchmark '{cell.bench.name}': requests for models it did not name as judges "
                             f"({', '.join(unknown)})")
    earlier = [r for r in requests if r["request_id"] in done and r["request_id"] not in told]
    for route, part in by_route(earlier):
        if route is None or route in judges:  # a judge it lacks is not told
            answerer.answered_before(shard, route, part)
    told.update(r["request_id"] for r in earlier)
    for route, route_todo in by_route(todo):
        for part in answerer.ask(shard, route, route_todo):
            answers.record_answers(part)
            answered.update((row["request_id"], row) for row in part)
            done.update(row["request_id"] for row in part)
            cell.job.progress.advanced(len(part))
        answerer.route_answered(shard, route)
    told.update(r["request_id"] for r in todo)
