"""`reasoning:`, how a judge that thinks before it answers writes its trace (jobs.engines.reasoning splits it)."""
from __future__ import annotations

from dataclasses import dataclass

DELIMITERS = {"think": ("<think>", "</think>")}  # name -> (start, end): the tags thinking models write
API_FIELDS = ("reasoning_content", "reasoning")


@dataclass
class ReasoningSettings:
    """`reasoning:`, a judge that thinks before it answers (`reasoning: true` is this with its defaults)."""

    delimiters: str = "think"  # a pair of DELIMITERS ...
    start: str | None = None  # ... or the model's own start and end, both set
    end: str | None = None
    # the message field an OpenAI-compatible server puts the trace in; where a reply has it, it is the trace and
    # the content is the answer (engine http)
    api_field: str | None = None
    # vLLM's own reasoning parser by its registered name (qwen3, deepseek_r1, openai_gptoss, ...), run by the
    # vllm engine on each generated turn (jobs.engines.vllm.trace_parser) instead of the delimiters above
    parser: str | None = None
    # asked of the chat template (`enable_thinking`, as Qwen3's templates read it); None: the template's default
    enable_thinking: bool | None = None
    # the tokens its trace may take: a generation stops at the end delimiter or the budget, and a trace cut there
    # is closed and its answer asked for in a round of its own (jobs.flow.thinking_rounds); None: no budget
    budget_tokens: int | None = None

    def pair(self) -> tuple[str, str]:
        """(start, end) delimiters of the trace."""
        return (self.start, self.end) if self.start and self.end else DELIMITERS[self.delimiters]

    def problems(self) -> list[tuple[str, str]]:
        """(key under reasoning., why) of each setting the types cannot check."""
        found = []
        if bool(self.start) != bool(self.end):
            found.append(("start" if not self.start else "end", "start and end are set together (or neither)"))
        if not self.start and self.delimiters not in DELIMITERS:
            known = ", ".join(DELIMITERS)
            found.append(("delimiters", f"unknown delimiters {self.delimiters!r}; known: {known}, or set start and end"))
        if self.parser is not None and (self.start or self.api_field or self.delimiters != "think"):
            key = "start" if self.start else "api_field" if self.api_field else "delimiters"
            found.append((key, f"parser {self.parser!r} finds the trace itself; set one of parser and {key}"))
        if self.budget_tokens is not None and self.budget_tokens < 1:
            found.append(("budget_tokens", f"{self.budget_tokens} is not a number of tokens (1 or more)"))
        if self.api_field is not None and self.api_field not in API_FIELDS:
            found.append(("api_field", f"{self.api_field!r} is none of {', '.join(API_FIELDS)}"))
        return found
