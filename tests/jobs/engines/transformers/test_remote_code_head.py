"""URM-LLaMa-3.1-8B's way: the card scores with the repository's own AutoModelForSequenceClassification class
(`logits[0][0]`), so the model file sets trust_remote_code and the stock `classifier` head runs that class.

The repository here is local and its class is ours, written in the test from the card's description (a Llama
backbone, a value head giving each of five attributes a mean and a log-variance, a gating layer weighting the
means); no network. Without trust_remote_code the head refuses rather than build a stock classifier."""
from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
import torch
from tiny_reward_models import CONVERSATIONS, closed_ids, llama_config, seeded, tokenizer

from jobs.engines.transformers.model import TransformersEngine

MODELING = '''
import torch
from torch import nn
from transformers import LlamaModel, LlamaPreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutputWithPast


class TinyGatedReward(LlamaPreTrainedModel):
    """Five attributes, each a normal distribution (mean, log-variance); a gate weighs the means."""

    def __init__(self, config):
        super().__init__(config)
        self.model = LlamaModel(config)
        self.attributes = nn.Linear(config.hidden_size, 10)
        self.gate = nn.Linear(config.hidden_size, 5)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        last = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, -1]
        means = self.attributes(last)[:, :5]
        weights = torch.softmax(self.gate(last), dim=-1)
        return SequenceClassifierOutputWithPast(logits=(weights * means).sum(-1, keepdim=True))
'''


@pytest.fixture
def repository(tmp_path):
    folder = tmp_path / "urm"
    folder.mkdir()
    (folder / "modeling_tiny_gated.py").write_text(MODELING)
    spec = importlib.util.spec_from_file_location("modeling_tiny_gated_in_test", folder / "modeling_tiny_gated.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    config = llama_config(architectures=["TinyGatedReward"],
                          auto_map={"AutoModelForSequenceClassification": "modeling_tiny_gated.TinyGatedReward"})
    model = seeded(lambda: module.TinyGatedReward(config), 14)
    model.save_pretrained(folder)
    tokenizer().save_pretrained(folder)
    return folder, model


def test_the_repositorys_class_runs_only_with_trust_remote_code_and_scores_logits_0_0(repository):
    folder, model = repository
    with pytest.raises(ValueError, match="trust_remote_code: true"):
        TransformersEngine(str(folder), task="classify", max_model_len=4096)
    engine = TransformersEngine(str(folder), task="classify", head="classifier", trust_remote_code=True,
                                max_model_len=4096)
    assert type(engine.model).__name__ == "TinyGatedReward"
    tok = tokenizer()
    expected = []
    for conversation in CONVERSATIONS:
        with torch.no_grad():
            expected.append(model(torch.tensor([closed_ids(tok, conversation)])).logits[0][0].item())
    rows = engine.classify(CONVERSATIONS)
    np.testing.assert_allclose([row["score"] for row in rows], expected, rtol=1e-4, atol=1e-6)
