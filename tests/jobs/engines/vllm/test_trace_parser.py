"""vLLM's own reasoning parsers split a thinking judge's turn (jobs.engines.vllm.trace_parser; `reasoning.parser`),
on SmolLM2's tokenizer with `<think>` and `</think>` added as the tokens deepseek_r1's and qwen3's parsers look
for: hand-written turns, each against the reading that would take the verdict from inside the trace."""
from __future__ import annotations

import pytest
from sweeps import write_sweep

from actors.built_in_models import SMOLLM2, resolve_model
from jobs.config import ConfigError
from jobs.engines.vllm.trace_parser import TraceParser
from jobs.loading import load_sweep


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(SMOLLM2))
    tokenizer.add_tokens(["<think>", "</think>"], special_tokens=True)
    return tokenizer


@pytest.mark.parametrize("name", ["deepseek_r1", "qwen3"])
# SmolLM2 writes "Choose 2, since" in 5 tokens ('Choose', ' ', '2', ',', ' since'); each tag is one token, and the
# trace's tokens run through the end tag.
@pytest.mark.parametrize("turn, answer, trace, finished, tokens", [
    ("<think>Choose 2, since</think>\n\nChoose 1", "Choose 1", "Choose 2, since", True, 1 + 5 + 1),
    ("Choose 2, since</think>Choose 1", "Choose 1", "Choose 2, since", True, 5 + 1),  # the template opened it
    ("<think>Choose 2, since it", None, "Choose 2, since it", False, 1 + 5 + 1),  # cut: no verdict
])
def test_a_named_parser_reads_the_answer_after_the_trace(tokenizer, name, turn, answer, trace, finished, tokens):
    ids = tokenizer(turn, add_special_tokens=False).input_ids
    split = TraceParser(name, tokenizer).split(turn, ids, lambda part: tokenizer.decode(part))
    assert split == {"text": answer, "thinking": trace, "thinking_finished": finished, "thinking_tokens": tokens}


@pytest.mark.parametrize("extra, message", [
    ("reasoning: {parser: no_such_parser}",
     ("reasoning.parser': vLLM .* has no reasoning parser 'no_such_parser'; it has .*deepseek_r1.*qwen3")),
    ("engine: transformers, reasoning: {parser: qwen3}",
     "reasoning.parser': vLLM's reasoning parsers run in engine vllm, not transformers"),
    ("reasoning: {parser: qwen3, budget_tokens: 64}", "reasoning.budget_tokens': a budget and a log-prob verdict"),
    ("reasoning: {parser: qwen3, start: '<s>', end: '</s>'}", "reasoning.start': parser 'qwen3' finds the trace"),
])
def test_a_parser_that_cannot_work_fails_where_the_sweep_loads(tmp_path, extra, message):
    with pytest.raises(ConfigError, match=message):
        load_sweep(write_sweep(tmp_path, "p", [f"{{name: judge, path: org/judge, kind: generative, {extra}}}"]))
    line = "{name: judge, path: org/judge, kind: generative, reasoning: {parser: qwen3}}"
    assert load_sweep(write_sweep(tmp_path, "q", [line])).models["judge"].reasoning.parser == "qwen3"
