"""A thinking judge's budget: a trace cut at `reasoning.budget_tokens` is closed and its answer asked for in a
round of its own, the budget forcing of s1 (Muennighoff et al. 2025).

Under a budget the engine generates a request's trace up to its end delimiter or the budget (actors.sampling
`text_sampling`). Where the trace did not end, the request is asked again as a request of its own (its id
with CLOSED after it): the same messages, and the assistant turn continued after the cut trace and the end
delimiter (`continue_text`), under the request's own token limit. Both answers are stored under their own ids,
so a resumed cell asks neither again, and each is kept in the answer store under its own inputs (the budget
is in the model's identity, the cut trace in the second request's). The benchmark sees one answer per request:
the first one's trace and counts, the second one's text (`merged_answers`); it stays `thinking_finished` False,
since the model did not end its trace itself.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from benchmarks.row_types import Answer, Request
from jobs.config.reasoning import ReasoningSettings

CLOSED = "+closed"  # the id of the request that asks for the answer after a cut trace: the first one's, then this


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
        start, end = settings.pair()
        closing.append({**request, "request_id": request["request_id"] + CLOSED,
                        "continue_text": f"{start}\n{answer.get('thinking') or ''}\n{end}\n\n"})
    return closing


def merged_answers(answered: Mapping[str, Answer]) -> list[Answer]:
    """One answer per request, as the benchmark reads them: a request whose trace was closed gets its closing
    request's text and error, and keeps its own trace and counts; closing requests' answers are not listed."""
    merged = []
    for request_id, answer in answered.items():
        if request_id.endswith(CLOSED):
            continue
        closed = answered.get(request_id + CLOSED)
        if closed is not None:
            answer = {**answer, **{key: closed.get(key) for key in ("text", "error", "retryable")}}
        merged.append(answer)
    return merged
