"""actors.templating's trace token count, on a hand-written vocabulary: the tokens a thinking judge's trace took,
counted on the tokens its engine generated."""
from __future__ import annotations

import pytest

from actors.templating import trace_token_count

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
