"""GPM-Llama-3.1-8B's pairwise head on a tiny random Llama: each response's preference vector and the prompt's
block weights, and the pair score they give, against the card's own recipe computed here with torch (the last
token set to EOS, the prompt's hidden state where the prompt-only conversation ends, a batch of skew-symmetric
block matrices R and chosen^T R^T rejected)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_reward_models import (
    CONVERSATIONS,
    closed_ids,
    last_hidden,
    llama_config,
    prefixed,
    random_linear,
    save_checkpoint,
    seeded,
    tokenizer,
)
from transformers import LlamaModel

from benchmarks.rag_rewardbench import preference_margin as pair_score
from jobs.engines.transformers.model import TransformersEngine

DIM = 6  # value_head_dim: three 2-d blocks


def _card_vectors(tok, backbone, value, prompt, messages):
    """The card's pipeline for one conversation: (normalised preference vector, prompt hidden state)."""
    ids = closed_ids(tok, messages)
    ids[-1] = tok.eos_token_id  # the card overwrites the last position with EOS
    hidden = last_hidden(backbone, ids)
    vector = torch.nn.functional.normalize(hidden[-1] @ value.T, p=2, dim=-1)
    prompt_end = len(closed_ids(tok, messages[:1])) - 1  # total length minus the response's, minus one
    return vector, hidden[prompt_end]


def _card_pair_score(prompt_head, chosen, rejected, prompt_hidden) -> float:
    blocks = torch.softmax(prompt_hidden @ prompt_head.T, dim=-1)
    R = torch.zeros(DIM, DIM)
    for i in range(0, DIM, 2):
        R[i, i + 1], R[i + 1, i] = -blocks[i // 2], blocks[i // 2]
    return (chosen.view(1, DIM) @ R.T @ rejected.view(DIM, 1)).item()


@pytest.fixture
def gpm(tmp_path):
    tok = tokenizer()
    backbone = seeded(lambda: LlamaModel(llama_config()), 11)
    value, prompt = random_linear(DIM, 64, seed=12)["weight"], random_linear(DIM // 2, 64, seed=13)["weight"]
    # The authors' class keeps a causal LM's lm_head it never uses; the head must load past it.
    tensors = {**prefixed(backbone, "model."), "value_head.weight": value, "prompt_head.weight": prompt,
               "lm_head.weight": torch.zeros(49152, 64)}
    folder = save_checkpoint(tmp_path / "gpm", llama_config(), tensors, tok)
    return tok, backbone, value, prompt, folder


def test_gpm_answers_preference_vectors_and_the_pair_score_is_the_cards(gpm):
    tok, backbone, value, prompt, folder = gpm
    engine = TransformersEngine(str(folder), task="classify", head="gpm", max_model_len=4096)
    chosen, rejected = engine.classify(CONVERSATIONS)
    assert chosen["error"] is None and chosen["score"] is None  # no scalar per response
    (card_chosen, prompt_hidden), (card_rejected, _) = (_card_vectors(tok, backbone, value, prompt, c)
                                                         for c in CONVERSATIONS)
    np.testing.assert_allclose(chosen["preference"], card_chosen.tolist(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(rejected["preference"], card_rejected.tolist(), rtol=1e-4, atol=1e-6)
    # Both responses share the prompt, so their block weights agree (the prompt's hidden state is causal).
    np.testing.assert_allclose(chosen["preference_scale"], rejected["preference_scale"], rtol=1e-5)
    expected = _card_pair_score(prompt, card_chosen, card_rejected, prompt_hidden)
    ours = pair_score(chosen["preference"], chosen["preference_scale"], rejected["preference"])
    assert ours == pytest.approx(expected, rel=1e-4, abs=1e-7) and abs(expected) > 1e-6
    assert pair_score(rejected["preference"], chosen["preference_scale"], chosen["preference"]) == pytest.approx(-ours)


def test_gpm_without_a_prompt_head_weighs_every_block_one(gpm, tmp_path):
    tok, backbone, value, _, _ = gpm
    folder = save_checkpoint(tmp_path / "gpm_plain", llama_config(),
                             {**prefixed(backbone, "model."), "value_head.weight": value}, tok)
    [row] = TransformersEngine(str(folder), task="classify", head="gpm", max_model_len=4096).classify(CONVERSATIONS[:1])
    assert row["preference_scale"] == [1.0] * (DIM // 2)
    np.testing.assert_allclose(row["preference"], _card_vectors(tok, backbone, value, None, CONVERSATIONS[0])[0],
                               rtol=1e-4, atol=1e-6)


def test_pair_score_is_the_skew_symmetric_block_product():
    a, b, scale = [1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 0.0], [0.25, 0.75]
    # block 0: 1*1 - 0*0 = 1, block 1: 0*0 - 1*1 = -1
    assert pair_score(a, scale, b) == pytest.approx(0.25 - 0.75)
    assert pair_score(a, scale, a) == 0.0
