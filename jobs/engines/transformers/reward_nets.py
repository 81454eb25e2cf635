"""Our own reward models for cards whose class is not part of transformers.

A RewardNet is a transformers backbone (LlamaModel, MistralModel, ...) plus the head modules a model card
describes, filled by name from the published safetensors. The card's own class never runs, so no repository
code is needed, and a checkpoint that lacks a weight the head reads is an error rather than a random head.
InternLM2 has no transformers class at all: its packed weights are unpacked into a LlamaModel, which computes
the same function (same norm, rotary embedding, attention and MLP; only the projections are stored fused).
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from benchmarks.boundary_types import JsonObject
from jobs.engines.transformers.devices import placed

HeadModules = Callable[["Checkpoint", Any], dict[str, nn.Module]]


@dataclass(frozen=True)
class Load:
    """How a head loads its weights: dtype ("auto": the checkpoint's own), hub revision, whether code the
    model's repository ships may run, and the devices its layers are split over (jobs.engines.transformers.
    devices; the first takes the inputs)."""

    dtype: str = "float32"
    revision: str | None = None
    trust_remote_code: bool = False
    devices: tuple[str, ...] = ("cpu",)

    @property
    def device(self) -> str:
        """Where a forward pass's inputs go: the device of the first layers."""
        return self.devices[0]

    def placed(self, module: nn.Module) -> nn.Module:
        """The module on this load's devices, in eval mode."""
        return placed(module, self.devices)

    def torch_dtype(self) -> Any:
        return self.dtype if self.dtype == "auto" else getattr(torch, self.dtype)


class Checkpoint:
    """The safetensors of a model folder or hub id, read one tensor at a time (a head needs a few of them,
    and a 70B checkpoint should not be read twice)."""

    def __init__(self, path: str, revision: str | None = None):
        from safetensors import safe_open
        from transformers.utils import cached_file

        self.path, self.revision = path, revision
        index = cached_file(path, "model.safetensors.index.json", revision=revision,
                            _raise_exceptions_for_missing_entries=False)
        if index:
            with open(index) as f:
                weight_map = json.load(f)["weight_map"]
            files = {name: cached_file(path, name, revision=revision) for name in set(weight_map.values())}
            self.where = {key: files[name] for key, name in weight_map.items()}
        else:
            single = cached_file(path, "model.safetensors", revision=revision,
                                 _raise_exceptions_for_missing_entries=False)
            if not single:
                raise FileNotFoundError(f"{path}: no safetensors weights (model.safetensors or its index)")
            with safe_open(single, framework="pt") as f:
                self.where = dict.fromkeys(f.keys(), single)
        self._open = safe_open

    def names(self) -> list[str]:
        return sorted(self.where)

    def shape(self, name: str) -> list[int] | None:
        if name not in self.where:
            return None
        with self._open(self.where[name], framework="pt") as f:
            return list(f.get_slice(name).get_shape())

    def tensor(self, name: str) -> torch.Tensor:
        with self._open(self.where[name], framework="pt") as f:
            return f.get_tensor(name)

    def config(self) -> JsonObject:
        from transformers.utils import cached_file

        with open(cached_file(self.path, "config.json", revision=self.revision)) as f:
            return json.load(f)


class RewardNet(nn.Module):
    """A decoder backbone and, by the names the checkpoint gives them, the modules a card puts on top."""

    def __init__(self, backbone: nn.Module, heads: dict[str, nn.Module]):
        super().__init__()
        self.backbone = backbone
        self.heads = nn.ModuleDict(heads)

    def hidden(self, ids: list[int]) -> torch.Tensor:
        """Last hidden states of one unpadded sequence, (tokens, hidden), in the model's dtype."""
        device = next(self.parameters()).device
        with torch.no_grad():
            return self.backbone(input_ids=torch.tensor([ids], device=device)).last_hidden_state[0]

    def apply(self, name: str, hidden: torch.Tensor) -> torch.Tensor:
        """A head module on hidden states, computed in the model's dtype as the card's class does, then float."""
        with torch.no_grad():
            return self.heads[name](hidden).float()


def load_reward_net(path: str, load: Load, *, prefix: str, heads: HeadModules, internlm2: bool = False
                    ) -> tuple[RewardNet, Any]:
    """The backbone from the weights under `prefix` ("model.", "transformer.") and each head module from the
    weights under its own name; returns the net and the backbone's config."""
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModel

    checkpoint = Checkpoint(path, load.revision)
    config = (internlm2_config(checkpoint.config()) if internlm2
              else AutoConfig.from_pretrained(path, revision=load.revision))
    modules = heads(checkpoint, config)
    with init_empty_weights(include_buffers=False):  # parameters come from the checkpoint, buffers are computed
        net = RewardNet(AutoModel.from_config(config), modules)
    wanted = set(net.state_dict())
    state: dict[str, torch.Tensor] = {}
    for name in checkpoint.names():
        if name.startswith(prefix) and internlm2:
            tensors = internlm2_tensors(name[len(prefix):], checkpoint.tensor(name), config)
            state.update({f"backbone.{key}": value for key, value in tensors.items()})
        elif name.startswith(prefix) and f"backbone.{name[len(prefix):]}" in wanted:
            state[f"backbone.{name[len(prefix):]}"] = checkpoint.tensor(name)
        elif name.split(".")[0] in modules and f"heads.{name}" in wanted:
            state[f"heads.{name}"] = checkpoint.tensor(name)
    missing = sorted(wanted - set(state))
    if missing:
        raise ValueError(f"{path}: the checkpoint has no {', '.join(missing[:4])}"
                         f"{f' (and {len(missing) - 4} more)' if len(missing) > 4 else ''}; its layout is not "
                         f"the one this head reads (backbone under '{prefix}', head modules {sorted(modules)})")
    dtype = load.torch_dtype()
    state = {key: value if dtype == "auto" else value.to(dtype) for key, value in state.items() if key in wanted}
    net.load_state_dict(state, strict=True, assign=True)
    return load.placed(net), config


# ---- InternLM2 as a LlamaModel ---------------------------------------------------------------------------

_INTERNLM2_LAYER = {"attention.wo": "self_attn.o_proj", "feed_forward.w1": "mlp.gate_proj",
                    "feed_forward.w3": "mlp.up_proj", "feed_forward.w2": "mlp.down_proj",
                    "attention_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}


def internlm2_config(raw: JsonObject) -> Any:
    """A LlamaConfig with an InternLM2 config's sizes; `reward_token_id` and the other extra keys ride along."""
    from transformers import LlamaConfig

    skip = {"architectures", "auto_map", "model_type", "bias", "attn_implementation", "transformers_version",
            "torch_dtype", "_name_or_path", "tie_word_embeddings"}
    extra = {key: value for key, value in raw.items() if key not in skip}
    if extra.get("rope_scaling") is None:
        extra.pop("rope_scaling", None)
    return LlamaConfig(**extra, attention_bias=bool(raw.get("bias", False)), tie_word_embeddings=False)


def internlm2_tensors(name: str, tensor: torch.Tensor, config: Any) -> dict[str, torch.Tensor]:
    """One InternLM2 weight (its name under `model.`) as the LlamaModel weights it holds; {} for none.

    The fused `wqkv` stores, for each key/value head in turn, that group's query heads, then its key head,
    then its value head; Llama keeps the three projections apart, query heads in the same group order.
    """
    if name == "tok_embeddings.weight":
        return {"embed_tokens.weight": tensor}
    if name == "norm.weight":
        return {name: tensor}
    match = re.fullmatch(r"layers\.(\d+)\.(.+)\.(weight|bias)", name)
    if not match:
        return {}
    layer, module, kind = match.groups()
    if module != "attention.wqkv":
        return {f"layers.{layer}.{_INTERNLM2_LAYER[module]}.{kind}": tensor} if module in _INTERNLM2_LAYER else {}
    heads, groups = config.num_attention_heads, config.num_key_value_heads
    head_dim = config.hidden_size // heads
    packed = tensor.reshape(groups, heads // groups + 2, head_dim, *tensor.shape[1:])
    parts = {"q_proj": packed[:, :-2], "k_proj": packed[:, -2], "v_proj": packed[:, -1]}
    return {f"layers.{layer}.self_attn.{proj}.{kind}": part.reshape(-1, *tensor.shape[1:])
            for proj, part in parts.items()}
