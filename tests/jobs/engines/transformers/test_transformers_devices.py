"""The transformers engine across several devices (issue 63): a reward net whose actor holds N GPUs is split by
accelerate into whole decoder layers balanced over them, and scores as it does on one device. On CPU the two
"devices" are both the CPU, so this checks the map and the dispatch path; the copy of activations from one GPU to
the next happens only on GPUs."""
from __future__ import annotations

import numpy as np
import pytest
from tiny_reward_models import (
    CONVERSATIONS,
    llama_config,
    prefixed,
    random_linear,
    save_checkpoint,
    seeded,
    tokenizer,
)
from transformers import LlamaModel

from jobs.config import ModelConfig
from jobs.engines.base import engine_of
from jobs.engines.demand import engine_demand
from jobs.engines.transformers import devices
from jobs.engines.transformers.model import TransformersEngine
from jobs.engines.transformers.settings import TransformersSettings


def _inf_orm(tmp_path, layers: int):
    # Wide MLPs, so that the decoder layers, not the 49k-token embedding, hold most of the weights, as in a real LM.
    config = llama_config(pad_token_id=49151, num_hidden_layers=layers, intermediate_size=8192)
    backbone = seeded(lambda: LlamaModel(config), 7)
    first, second = random_linear(64, 64, seed=8, bias=True), random_linear(1, 64, seed=9, bias=True)
    tensors = {**prefixed(backbone, "model."), "score.0.weight": first["weight"], "score.0.bias": first["bias"],
               "score.2.weight": second["weight"], "score.2.bias": second["bias"]}
    return save_checkpoint(tmp_path / "inf_orm", config, tensors, tokenizer())


def _size(module) -> int:
    return sum(p.numel() * p.element_size() for p in module.parameters())


def test_a_net_is_split_into_whole_decoder_layers_balanced_over_the_devices(tmp_path):
    net = TransformersEngine(str(_inf_orm(tmp_path, layers=4)), task="classify", head="inf_orm",
                             max_model_len=4096).head.net
    assert devices.no_split_classes(net) == ["LlamaDecoderLayer"]
    size = _size(net)  # each device could hold it all: the balance, not the room, splits it
    where = devices.split_map(net, ("cuda:0", "cuda:1"), memory={0: size, 1: size})
    layers = {name: device for name, device in where.items() if name.startswith("backbone.layers")}
    assert set(layers) == {f"backbone.layers.{k}" for k in range(4)}  # each decoder layer whole, none cut
    on = {device: sum(_size(net.get_submodule(n)) for n, d in where.items() if d == device) for device in
          ("cuda:0", "cuda:1")}
    assert on["cuda:0"] > 0 and on["cuda:1"] > 0 and max(on.values()) < 0.7 * size  # both hold a fair share
    with pytest.raises(ValueError, match="does not fit on 2 devices"):
        devices.split_map(net, ("cuda:0", "cuda:1"), memory={0: size // 4, 1: size // 4})


def test_a_net_dispatched_over_two_devices_scores_as_on_one(tmp_path, monkeypatch):
    folder = _inf_orm(tmp_path, layers=4)
    one = TransformersEngine(str(folder), task="classify", head="inf_orm", max_model_len=4096)
    split: list[dict[str, str]] = []
    real = devices.split_map

    def two_cpus(module, names, memory=None):
        found = real(module, ("cuda:0", "cuda:1"), {0: _size(module), 1: _size(module)})
        split.append(found)
        return {name: "cpu" for name in found}  # the same map, both halves on the one device this machine has

    monkeypatch.setattr(devices, "split_map", two_cpus)
    monkeypatch.setattr(devices, "visible_devices", lambda: ("cpu", "cpu"))
    monkeypatch.setattr("jobs.engines.transformers.model.visible_devices", lambda: ("cpu", "cpu"))
    two = TransformersEngine(str(folder), task="classify", head="inf_orm", max_model_len=4096)
    assert split and set(split[0].values()) == {"cuda:0", "cuda:1"}
    scores = [[row["score"] for row in engine.classify(CONVERSATIONS)] for engine in (one, two)]
    np.testing.assert_allclose(scores[1], scores[0], rtol=1e-6)


def test_its_actor_holds_every_gpu_its_weights_are_split_over():
    model = ModelConfig(name="m", path="p", kind="discriminative", engine="transformers",
                        transformers=TransformersSettings(head="inf_orm"),
                        num_gpus=1, tensor_parallel_size=4)
    assert engine_of(model).placement(model, None)[0] == {"num_cpus": 1.0, "num_gpus": 4.0}
    assert engine_demand(model)["GPU"] == 4.0
    cpu = ModelConfig(name="m", path="p", kind="discriminative", engine="transformers", tensor_parallel_size=2)
    assert engine_demand(cpu)["GPU"] == 0.0
