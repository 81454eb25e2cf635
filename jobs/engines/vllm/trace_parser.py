"""A thinking judge's trace split by vLLM's own reasoning parser (`reasoning.parser`: qwen3, deepseek_r1,
openai_gptoss, ...), in the engine's process, where the model's tokenizer is: vLLM's parsers are written per
model family and some read token ids as well as text, which the delimiter rule that splits every other
engine's answers (jobs.engines.reasoning) does not."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from actors.templating import Templater, trace_token_count
from benchmarks.row_types import TaskColumns


class TraceParser:
    """vLLM's reasoning parser of a name, on a tokenizer."""

    def __init__(self, name: str, tokenizer: Any):
        from vllm.reasoning import ReasoningParserManager

        self.parser = ReasoningParserManager.get_reasoning_parser(name)(tokenizer)

    def split(self, turn: str, token_ids: Sequence[int], decode: Callable[[Sequence[int]], str]) -> TaskColumns:
        """A generated turn's answer (`text`, None where the trace did not end), `thinking`, `thinking_finished`
        and `thinking_tokens` (the generated tokens through the parser's end delimiter; None where the parser
        names none). A parser that finds no trace leaves the whole turn as the answer, after an empty trace."""
        # The request is part of vLLM's signature for the OpenAI server's use; the parsers split without it.
        trace, answer = self.parser.extract_reasoning(turn, None)
        finished = answer is not None or bool(self.parser.is_reasoning_end(list(token_ids)))
        end = self.parser.reasoning_end_str
        return {"text": (answer or "").strip() if finished else None, "thinking": (trace or "").strip(),
                "thinking_finished": finished,
                "thinking_tokens": trace_token_count(list(token_ids), decode, end) if end else None}


@functools.lru_cache(maxsize=4)
def trace_parser(name: str, templater: Templater) -> TraceParser:
    """The parser of a name on a model's tokenizer (actors.templating.templater keeps one Templater a model),
    built once: a parser reads the whole vocabulary when it is built."""
    return TraceParser(name, templater.tokenizer)
