"""The rounds a thinking judge's answers add after each round of its benchmark: a trace cut at its budget closed
(s1's budget forcing, Muennighoff et al. 2025), then the log-prob verdict read after the trace.

- **Closing** (`reasoning.budget_tokens`): the engine generates a request's trace up to its end delimiter or the
  budget (actors.sampling `text_sampling`). Where the trace did not end, the request is asked again as a request
  of its own (its id, then CLOSED): the same messages, and the assistant turn continued after the cut trace and
  the end delimiter (`continue_text`), under the request's own token limit.
- **The verdict after the trace** (`verdict: logprob` on an engine that prefills): a request with a `prefill`
  is asked again (its id, then VERDICT) with the turn continued after its trace, closed, and the benchmark's
  prefill after that ("Choose ", a JSON value's start), so the candidates' log-probs are read where the answer
  starts, not inside the trace (jobs.engines.reasoning drops those read right after the prompt).

Each answer is stored under its own request id, so a resumed cell asks none again, and kept in the answer store
under its own inputs (a budget is in the model's identity, a trace in the later requests'). The benchmark
sees one answer per request (`merged_answers`): the first one's trace and counts, a closed trace's text and
the verdict request's log-probs; a closed trace stays `thinking_finished` False, since the model did not end it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from benchmarks.row_types import Answer, Request
from jobs.config.reasoning import ReasoningSettings
from jobs.engines.reasoning import CLOSED, VERDICT

ROUND_KEYS = {CLOSED: ("text", "error", "retryable"), VERDICT: ("candidate_logprobs", "error", "retryable")}


def closing_requests(requests: Iterable[Request], answered: Mapping[str, Answer],
                     reasoning: Callable[[Request], ReasoningSettings | None]) -> list[Request]:
    """For each of `requests` whose answer's trace was cut at its model's budget (`reasoning(request)`: that
    model's reasoning block), the request that asks for the answer after it."""
    closing = []
    for request in requests:
        answer = answered.get(request["request_id"])
        settings = reasoning(request)
        if (answer is None or answer.get("error") or answer.get("thinking_finished") is not False
                or settings is None or settings.budget_tokens is None):
            continue
        closing.append({**request, "request_id": request["request_id"] + CLOSED,
                        "continue_text": closed_trace(answer, settings)})
    return closing


def verdict_requests(requests: Iterable[Request], answered: Mapping[str, Answer],
                     reasoning: Callable[[Request], ReasoningSettings | None]) -> list[Request]:
    """For each of `requests` with a prefill whose answer has a trace that ended or was closed, the request
    that reads the candidates' log-probs after it (one token of text, which nothing reads)."""
    merged = {answer["request_id"]: answer for answer in merged_answers(answered)}
    verdicts = []
    for request in requests:
        answer, settings = merged.get(request["request_id"]), reasoning(request)
        if request.get("prefill") is None or settings is None or answer is None or answer.get("error"):
            continue
        if answer.get("thinking_finished") or request["request_id"] + CLOSED in answered:
            verdicts.append({**request, "request_id": request["request_id"] + VERDICT, "max_tokens": 1,
                             "continue_text": closed_trace(answer, settings)})
    return verdicts


def closed_trace(answer: Answer, settings: ReasoningSettings) -> str:
    """The answer's trace between its delimiters, as the assistant turn's text so far."""
    start, end = settings.pair()
    return f"{start}\n{answer.get('thinking') or ''}\n{end}\n\n"


def merged_answers(answered: Mapping[str, Answer]) -> list[Answer]:
    """One answer per request, as the benchmark reads them: a request whose trace was closed gets its closing
    request's text, one whose verdict was read after its trace that request's log-probs (and either one's
    error), and keeps its own trace and counts; the later requests' answers are not listed."""
    merged = []
    for request_id, answer in answered.items():
        if request_id.endswith((CLOSED, VERDICT)):
            continue
        for suffix, keys in ROUND_KEYS.items():
            later = answered.get(request_id + suffix)
            if later is not None:
                answer = {**answer, **{key: later[key] for key in keys if key in later}}
        merged.append(answer)
    return merged
