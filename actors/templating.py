"""Prompts templated by us, as token ids, the same way for every engine.

Scoring needs exact control over the tokens: a response being scored must sit in a *closed* assistant turn,
the prompt part must be masked, and a verdict is read at one precise position. Engines that template
themselves get this subtly wrong (an opened generation turn, a doubled BOS), so every engine receives ids.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

Messages = list[dict[str, str]]


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@dataclass
class Verdict:
    """Where a verdict is read: the prompt ids and the first token of each candidate that follows them."""

    prompt_ids: list[int]
    candidate_ids: list[int]


class Templater:
    """A model's chat template and tokenizer, applied with add_special_tokens=False (the template writes BOS)."""

    def __init__(self, path: str, chat_template: str | None = None, revision: str | None = None,
                 trust_remote_code: bool = False, enable_thinking: bool | None = None):
        """`enable_thinking`: passed to the template where set (a thinking model's templates read it, e.g.
        Qwen3's; a template that does not read it renders as without it)."""
        from transformers import AutoTokenizer  # heavy; only where a model is actually used

        # trust_remote_code: the model file's own setting (InternLM2 ships its tokenizer as code), never global
        self.tokenizer = AutoTokenizer.from_pretrained(path, revision=revision, trust_remote_code=trust_remote_code)
        if chat_template:  # the Jinja text itself, or a file that holds it
            is_file = "{" not in chat_template and os.path.isfile(chat_template)
            self.tokenizer.chat_template = Path(chat_template).read_text() if is_file else chat_template
        self.template_kwargs = {} if enable_thinking is None else {"enable_thinking": enable_thinking}

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def _text(self, messages: Messages, open_turn: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=open_turn,
                                                  **self.template_kwargs)

    def closed(self, messages: Messages) -> list[int]:
        """A finished conversation (e.g. user + assistant response), for classifier RMs."""
        return self._ids(self._text(messages, open_turn=False))

    def opened(self, messages: Messages) -> list[int]:
        """The conversation with a new assistant turn opened, for generation."""
        return self._ids(self._text(messages, open_turn=True))

    def continued(self, messages: Messages, turn_so_far: str) -> list[int]:
        """The conversation with a new assistant turn opened and `turn_so_far` written in it, for generating the
        rest (a cut trace closed: jobs.flow.thinking_rounds). Where the opened turn already ends with the text that
        `turn_so_far` begins with (a template that opens the trace itself), that text is not written twice."""
        opened = self._text(messages, open_turn=True)
        return self._ids(opened + turn_so_far[_overlap(opened, turn_so_far):])

    def response(self, messages: Messages) -> tuple[list[int], int]:
        """Ids of the closed conversation and where the last (assistant) message's tokens start.

        The response span runs to the end, so it includes the template's end-of-turn tokens: the policy must
        also assign probability to stopping there. Where the templates tokenise the shared prefix differently,
        the span starts at the longest common prefix.
        """
        full = self.closed(messages)
        prefix = self.opened(messages[:-1])
        return full, _common_prefix(full, prefix)

    def verdict(self, messages: Messages, prefill: str, candidates: list[str], turn_so_far: str = "") -> Verdict:
        """The prompt (opened turn, `turn_so_far` as `continued` writes it, prefill) and each candidate's
        deciding token.

        Tokenising prefill and candidate together ("Choose 1") and splitting at the first token where the
        candidates differ reads the verdict where the model would write it: BPE tokenizers merge the space
        into the digit (" 1"), so a prompt ending in a bare "Choose " token would be off-distribution.
        """
        opened = self._text(messages, open_turn=True)
        text = opened + turn_so_far[_overlap(opened, turn_so_far):] + prefill
        ids = [self._ids(text + candidate) for candidate in candidates]
        common = min(_common_prefix(ids[0], other) for other in ids[1:]) if len(ids) > 1 else len(ids[0]) - 1
        if any(len(c) <= common for c in ids):
            raise ValueError(f"candidates {candidates} are not distinguishable by a next token")
        deciding = [c[common] for c in ids]
        if len(set(deciding)) != len(deciding):
            raise ValueError(f"candidates {candidates} share their deciding token")
        return Verdict(ids[0][:common], deciding)


OVERLAP_CHARS = 64


def _overlap(text: str, after: str) -> int:
    """The length of the longest head of `after` that `text` ends with and that holds more than whitespace, up to
    OVERLAP_CHARS (an opened trace's delimiter, not a repeated passage)."""
    for size in range(min(len(text), len(after), OVERLAP_CHARS), 0, -1):
        if after[:size].strip() and text.endswith(after[:size]):
            return size
    return 0


def overflow(n_tokens: int, max_model_len: int, generates: bool) -> str | None:
    """Why a prompt cannot run, or None. Anything that generates (even the one token vLLM samples when it
    only scores prompt log-probs) needs room for that token; a classifier may fill the context."""
    if n_tokens > max_model_len:
        return f"context overflow: {n_tokens} tokens > max_model_len {max_model_len}"
    if generates and n_tokens == max_model_len:
        return f"context overflow: {n_tokens} tokens leave no room for a generated token (max_model_len {max_model_len})"
    return None


@functools.lru_cache(maxsize=4)
def templater(path: str, chat_template: str | None = None, revision: str | None = None,
              trust_remote_code: bool = False, enable_thinking: bool | None = None) -> Templater:
    """One Templater per model per worker process: Ray reuses workers, so tokenizers load once."""
    return Templater(path, chat_template, revision, trust_remote_code, enable_thinking)


def trace_token_count(token_ids: Sequence[int], decode: Callable[[Sequence[int]], str], end: str) -> int:
    """How many of the generated `token_ids` the trace took: those up to and including the one that completes
    the first `end` in their decoded text, or all of them where it never ends. Counted on the engine's own
    tokens rather than by tokenizing the trace again, which can split a text differently than the model wrote
    it; a binary search, since a decoded prefix that holds `end` holds it for every longer prefix."""
    low, high = 1, len(token_ids)
    if not token_ids or end not in decode(token_ids):
        return len(token_ids)
    while low < high:
        middle = (low + high) // 2
        if end in decode(token_ids[:middle]):
            high = middle
        else:
            low = middle + 1
    return low
