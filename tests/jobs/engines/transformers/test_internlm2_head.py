"""InternLM2-Reward's head on a tiny random checkpoint in InternLM2's own layout (model_type internlm2, fused
`wqkv`, `feed_forward.w1/w2/w3`, `v_head`), against a reference forward pass written here in plain torch from
InternLM2's definition: it reads the fused projection as InternLM2 does (per key/value group: its query heads,
then its key, then its value head), so it shares nothing with the head's unpacking into a LlamaModel."""
from __future__ import annotations

import json
import math

import numpy as np
import torch
from safetensors.torch import save_file
from tiny_reward_models import CONVERSATIONS, closed_ids, tokenizer

from jobs.engines.transformers.model import TransformersEngine

CONFIG = {"architectures": ["InternLM2ForRewardModel"], "model_type": "internlm2",
          "auto_map": {"AutoConfig": "configuration_internlm2.InternLM2Config",
                       "AutoModel": "modeling_internlm2.InternLM2ForRewardModel"},
          "attn_implementation": "eager", "bias": False, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2,
          "hidden_act": "silu", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
          "num_key_value_heads": 2, "num_hidden_layers": 2, "max_position_embeddings": 4096,
          "reward_token_id": 7, "rms_norm_eps": 1e-5, "rope_scaling": None, "rope_theta": 1000000,
          "tie_word_embeddings": False, "torch_dtype": "float32", "vocab_size": 49152}


def _weights(seed: int = 15) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    hidden, inter, heads, groups = 64, 128, 4, 2
    head_dim = hidden // heads

    def rand(*shape, scale=0.2):
        return torch.randn(*shape, generator=g) * scale

    out = {"model.tok_embeddings.weight": rand(49152, hidden, scale=1.0), "model.norm.weight": 1 + rand(hidden),
           "output.weight": rand(49152, hidden), "v_head.weight": rand(1, hidden, scale=0.5)}
    for layer in range(2):
        pre = f"model.layers.{layer}."
        out.update({pre + "attention.wqkv.weight": rand(groups * (heads // groups + 2) * head_dim, hidden),
                    pre + "attention.wo.weight": rand(hidden, hidden), pre + "feed_forward.w1.weight": rand(inter, hidden),
                    pre + "feed_forward.w3.weight": rand(inter, hidden), pre + "feed_forward.w2.weight": rand(hidden, inter),
                    pre + "attention_norm.weight": 1 + rand(hidden), pre + "ffn_norm.weight": 1 + rand(hidden)})
    return out


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _reference_reward(w: dict[str, torch.Tensor], ids: list[int]) -> float:
    """InternLM2ForRewardModel on one unpadded sequence: v_head of the final hidden state at the last token."""
    heads, groups, hidden = 4, 2, 64
    per_group, head_dim, n = heads // groups, hidden // heads, len(ids)
    x = w["model.tok_embeddings.weight"][ids]
    inv = 1.0 / (1e6 ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.arange(n).float()[:, None] * inv[None, :]
    cos, sin = torch.cat([angles.cos()] * 2, -1)[:, None, :], torch.cat([angles.sin()] * 2, -1)[:, None, :]

    def rotate(t):
        half = t[..., : head_dim // 2], t[..., head_dim // 2:]
        return t * cos + torch.cat([-half[1], half[0]], -1) * sin

    causal = torch.full((n, n), float("-inf")).triu(1)
    for layer in range(2):
        pre = f"model.layers.{layer}."
        h = _rms(x, w[pre + "attention_norm.weight"])
        qkv = (h @ w[pre + "attention.wqkv.weight"].T).view(n, groups, per_group + 2, head_dim)
        q = rotate(qkv[:, :, :per_group].reshape(n, heads, head_dim))
        k = rotate(qkv[:, :, per_group]).repeat_interleave(per_group, dim=1)  # query head i uses group i // 2
        v = qkv[:, :, per_group + 1].repeat_interleave(per_group, dim=1)
        scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(head_dim) + causal
        attended = torch.einsum("hqk,khd->qhd", scores.softmax(-1), v).reshape(n, hidden)
        x = x + attended @ w[pre + "attention.wo.weight"].T
        h = _rms(x, w[pre + "ffn_norm.weight"])
        gate, up = h @ w[pre + "feed_forward.w1.weight"].T, h @ w[pre + "feed_forward.w3.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ w[pre + "feed_forward.w2.weight"].T
    return (_rms(x, w["model.norm.weight"])[-1] @ w["v_head.weight"][0]).item()


def test_internlm2_appends_the_reward_token_and_reads_v_head_there(tmp_path):
    folder = tmp_path / "internlm2"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    weights = _weights()
    save_file(weights, str(folder / "model.safetensors"))
    tok = tokenizer()
    tok.save_pretrained(folder)
    engine = TransformersEngine(str(folder), task="classify", head="internlm2", max_model_len=4096)
    already = closed_ids(tok, CONVERSATIONS[0]) + [CONFIG["reward_token_id"]]
    expected = [_reference_reward(weights, closed_ids(tok, c) + [CONFIG["reward_token_id"]]) for c in CONVERSATIONS]
    rows = engine.classify(CONVERSATIONS)
    assert [row["n_tokens"] for row in rows] == [len(closed_ids(tok, c)) + 1 for c in CONVERSATIONS]
    np.testing.assert_allclose([row["score"] for row in rows], expected, rtol=1e-4, atol=1e-5)
    assert abs(expected[0] - expected[1]) > 1e-4
    # A conversation that already ends with the reward token is scored as it is, as the card's get_score does.
    assert engine.head.prompt(CONVERSATIONS[0])[0] == already
    assert engine.head.answer(already, None)["score"] == rows[0]["score"]
