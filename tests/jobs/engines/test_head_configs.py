"""The model-file keys of score heads and API parameters: which of the 45 use them, and the checks that keep
each key on the engine that reads it (configs only: no models, no network)."""
from __future__ import annotations

from pathlib import Path

import pytest

from jobs.config import ConfigError, ModelConfig, to_dict
from jobs.loading import list_models, load_model

CONF = Path(__file__).resolve().parents[3] / "conf"
# The ten RAG-RewardBench Table 2 reward models whose card defines their score, and the head each one names.
CARD_HEADS = {"internlm2_1_8b_reward": "internlm2", "internlm2_7b_reward": "internlm2",
              "internlm2_20b_reward": "internlm2", "urm_llama_3_1_8b": "classifier", "eurus_rm_7b": "eurus",
              "inf_orm_llama3_1_70b": "inf_orm", "llama3_athene_rm_8b": "athene", "starling_rm_34b": "starling",
              "gpm_llama_3_1_8b_instruct": "gpm", "llama_3_1_nemotron_70b_reward_hf": "nemotron"}
# Code from a model's repository runs only where it must: InternLM2's tokenizer, URM's model class.
TRUSTED = {"internlm2_1_8b_reward", "internlm2_7b_reward", "internlm2_20b_reward", "urm_llama_3_1_8b"}


@pytest.fixture(scope="module")
def registry():
    return {m.name: m for m in list_models(CONF)}


def test_the_ten_card_defined_models_name_their_heads(registry):
    assert {name: m.transformers.head for name, m in registry.items() if m.transformers.head} == CARD_HEADS
    assert all((registry[name].kind, registry[name].engine) == ("discriminative", "transformers") for name in CARD_HEADS)


def test_trust_remote_code_is_set_per_model_and_only_where_the_card_needs_it(registry):
    assert {name for name, m in registry.items() if m.trust_remote_code} == TRUSTED
    assert ModelConfig().trust_remote_code is False


def test_o1_mini_sends_the_parameters_its_api_takes(registry):
    assert registry["o1_mini_2024_09_12"].api.params == {"max_tokens": "max_completion_tokens", "temperature": None,
                                                         "top_p": None}
    assert [name for name, m in registry.items() if m.api.params] == ["o1_mini_2024_09_12"]


@pytest.mark.parametrize("settings, message", [
    ({"transformers": {"head": "athene"}, "engine": "vllm"},
     "transformers.head': only engine transformers reads the transformers section"),
    ({"transformers": {"head": "athene"}, "kind": "implicit"},
     "transformers.head': a score head is read by the transformers engine"),
    ({"transformers": {"head": "no_such_head"}}, "transformers.head': 'no_such_head' is not one of"),
    ({"tokenizer": "01-ai/Yi-34B-Chat", "engine": "vllm"}, "tokenizer': only engine transformers"),
    ({"api": {"params": {"max_tokens": "max_completion_tokens"}}},
     "api.params': only engine anthropic_batch or http or openai_batch reads the api section"),
    ({"kind": "api", "engine": "http", "api": {"params": {"max_new_tokens": None}}}, "api.params.max_new_tokens'"),
    ({"kind": "api", "engine": "http", "api": {"params": {"max_tokens": " "}}}, "an empty name"),
])
def test_keys_sit_only_on_models_whose_engine_reads_them(settings, message):
    model = to_dict(ModelConfig(name="m", path="p", kind="discriminative", engine="transformers"))
    with pytest.raises(ConfigError, match=message):
        load_model({**model, **settings}, "inline")
