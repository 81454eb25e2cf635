"""A thinking judge's trace, split from its answer where the answer leaves the engine (jobs.engines.answering), so
that every benchmark reads its verdict from the text after the trace and never from inside it.

A model says how it thinks in its `reasoning:` block: the delimiters its trace is written between (`<think>` and
`</think>` unless it names others), or the field of an OpenAI-compatible reply that carries the trace apart from
the content (`reasoning_content`: vLLM's reasoning parsers, DeepSeek's API; `reasoning`: OpenRouter, Ollama).
A trace that does not end (the model ran out of tokens inside it) leaves the answer without text: the benchmark
scores it as it scores a missing verdict, and it is counted unfinished (`thinking_finished` False).

Why not vLLM's reasoning parsers here: they take the tokenizer of the model they parse and are built per model
family; this split is a text rule a stored answer can be split by again, for every engine. A server that runs a
parser (`vllm serve --reasoning-parser`) hands its result over in `reasoning_content`, which `api_field` reads.
"""
from __future__ import annotations

from benchmarks.row_types import Answer
from jobs.config.reasoning import ReasoningSettings

# The ids of the requests a thinking judge's answer adds (jobs.flow.thinking_rounds): the request's own, then
CLOSED = "+closed"  # ... this for the answer after its trace cut at the budget, closed
VERDICT = "+verdict"  # ... this for the log-prob verdict read after its trace


def split_trace(text: str, start: str, end: str) -> tuple[str | None, str, bool]:
    """(answer, trace, finished) of a generated text. The trace ends at the first `end`; a start delimiter is
    optional, since many chat templates open the trace in the prompt. Without `end`, the whole text is the trace,
    unfinished, and there is no answer."""
    head, found, tail = text.partition(end)
    before, opened, inside = head.partition(start)
    trace = (inside if opened else before).strip()
    return (tail.strip(), trace, True) if found else (None, trace, False)


def split_answer(answer: Answer, settings: ReasoningSettings) -> Answer:
    """The answer with its text after the trace, `thinking` (the trace) and `thinking_finished`. An answer
    whose engine split it already (an API's own field: thinking_finished set) or that has no text (it failed)
    keeps its text. Log-probs read at a prefill right after the prompt are read inside the trace, so they are
    dropped; a VERDICT request's were read after the trace and are kept."""
    split = Answer(**answer)
    if "candidate_logprobs" in split and not str(split.get("request_id", "")).endswith(VERDICT):
        split["candidate_logprobs"] = None
    split.setdefault("thinking_tokens", None)  # where the engine counted none (jobs.flow.thinking_counts)
    if split.get("thinking_finished") is not None or split.get("text") is None:
        split.setdefault("thinking", None)
        split.setdefault("thinking_finished", None)
        return split
    split["text"], split["thinking"], split["thinking_finished"] = split_trace(split["text"], *settings.pair())
    return split
