"""actors.templating on hand-written texts: the tokens a thinking judge's trace took, counted on the tokens its
engine generated (a vocabulary of its own), and what a turn continued after a closed trace writes."""
from __future__ import annotations

import pytest

from actors.templating import _overlap, trace_token_count

PIECES = ["<th", "ink>", "So", " 2", "</", "think", ">", "Choose", " 1"]  # token id i decodes to PIECES[i]


def _decode(ids) -> str:
    return "".join(PIECES[i] for i in ids)


@pytest.mark.parametrize("ids, tokens", [
    (list(range(9)), 7),  # "</", "think", ">" end the trace at its 7th token, which is counted; the answer is not
    (list(range(7)), 7),  # the end delimiter is the last token generated
    (list(range(4)), 4),  # cut inside the trace: every generated token was thinking
    ([4, 5, 6, 7], 3),  # a trace the template opened in the prompt starts at the first token
    ([], 0),
])
def test_trace_token_count_counts_the_engines_tokens_through_the_end_delimiter(ids, tokens):
    assert trace_token_count(ids, _decode, "</think>") == tokens


@pytest.mark.parametrize("prompt, turn, overlap", [
    ("<|im_start|>assistant\n<think>\n", "<think>\nSo 2\n</think>\n\n", len("<think>\n")),  # the template opened it
    ("<|im_start|>assistant\n", "<think>\nSo 2\n</think>\n\n", 0),  # the model opens its trace itself
    ("<|im_start|>assistant\n", "\nSo 2", 0),  # a shared newline is not a repeated head
    ("x" * 100 + "<think>", "<think>" + "y" * 100, len("<think>")),
])
def test_a_continued_turn_does_not_write_twice_what_the_opened_turn_ends_with(prompt, turn, overlap):
    assert _overlap(prompt, turn) == overlap
