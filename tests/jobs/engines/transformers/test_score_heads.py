"""Scalar score heads (jobs.engines.transformers.heads) on tiny random models of each card's layout: Eurus-RM-7b
(MistralModel + regression_head), Starling-RM-34B (`transformer.` + v_head, Yi's tokenizer elsewhere), Athene-RM-8B
(CLS token appended), INF-ORM-Llama3.1-70B (two-layer score MLP) and Llama-3.1-Nemotron-70B-Reward-HF (LM logit of token
0). Each expected score is computed here with transformers and torch directly, from the same random weights."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_reward_models import (
    CONVERSATIONS,
    SIZES,
    closed_ids,
    last_hidden,
    llama_config,
    prefixed,
    random_linear,
    save_checkpoint,
    seeded,
    tokenizer,
)
from transformers import LlamaForCausalLM, LlamaModel, MistralConfig, MistralModel
from worker_models import worker_of

from jobs.engines.transformers.model import TransformersEngine
from jobs.engines.transformers.scorers import RequestScorer
from jobs.loading import load_model


def _scores(engine: TransformersEngine, conversations=CONVERSATIONS) -> list[float]:
    rows = engine.classify(conversations)
    assert all(row["error"] is None and not row["truncated"] for row in rows), rows
    return [row["score"] for row in rows]


def test_eurus_reads_regression_head_at_the_last_token_of_the_cards_inst_format(tmp_path):
    tok = tokenizer()
    config = MistralConfig(**SIZES, rope_theta=10000.0, sliding_window=4096)
    backbone = seeded(lambda: MistralModel(config), 1)
    head = random_linear(1, config.hidden_size, seed=2)
    folder = save_checkpoint(tmp_path / "eurus", config,
                             {**prefixed(backbone, "model."), "regression_head.weight": head["weight"]}, tok)
    template = load_model("eurus_rm_7b", "test").chat_template
    engine = TransformersEngine(str(folder), task="classify", head="eurus", chat_template=template,
                                max_model_len=4096)
    expected = []
    for conversation in CONVERSATIONS:
        user, answer = (m["content"] for m in conversation)
        ids = tok(f"{tok.bos_token}[INST] {user} [/INST] {answer}", add_special_tokens=False).input_ids
        assert engine.templater.closed(conversation) == ids  # the card's text, from the model file's template
        expected.append((last_hidden(backbone, ids)[-1] @ head["weight"][0]).item())
    np.testing.assert_allclose(_scores(engine), expected, rtol=1e-4, atol=1e-5)


def _starling(tmp_path):
    tok = tokenizer()
    backbone = seeded(lambda: LlamaModel(llama_config()), 3)
    head = random_linear(1, 64, seed=4)
    folder = save_checkpoint(tmp_path / "starling", llama_config(),
                             {**prefixed(backbone, "transformer."), "v_head.weight": head["weight"]})
    tok.save_pretrained(tmp_path / "yi-tokenizer")  # the weights' repository ships no tokenizer
    return tok, backbone, head, folder, str(tmp_path / "yi-tokenizer")


def test_starling_reads_v_head_before_the_first_pad_id_with_a_tokenizer_from_elsewhere(tmp_path):
    tok, backbone, head, folder, tokenizer_path = _starling(tmp_path)
    model = load_model("starling_rm_34b", "test")
    # A conversation that contains id 0 (the card's PAD_ID) is read before it, as the card's class indexes.
    stray = [CONVERSATIONS[0][0], {"role": "assistant", "content": "The Danube<|endoftext|> flows there."}]
    conversations = [*CONVERSATIONS, stray]
    engine = TransformersEngine(str(folder), task="classify", head="starling", chat_template=model.chat_template,
                                tokenizer=tokenizer_path, max_model_len=4096)
    expected = []
    for conversation in conversations:
        user, answer = (m["content"] for m in conversation)
        ids = tok(f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n{answer}<|im_end|>",
                  add_special_tokens=False).input_ids
        position = ids.index(0) - 1 if 0 in ids else len(ids) - 1
        expected.append((last_hidden(backbone, ids)[position] @ head["weight"][0]).item())
    assert 0 in tok(stray[1]["content"], add_special_tokens=False).input_ids
    np.testing.assert_allclose(_scores(engine, conversations), expected, rtol=1e-4, atol=1e-5)


def test_the_request_scorer_passes_head_tokenizer_and_template_from_the_model_file(tmp_path):
    *_, folder, tokenizer_path = _starling(tmp_path)
    settings = worker_of(load_model("starling_rm_34b", "test"), path=str(folder), tokenizer=tokenizer_path,
                         dtype="float32", max_model_len=4096)
    direct = TransformersEngine(str(folder), task="classify", head="starling", chat_template=settings.chat_template,
                                tokenizer=tokenizer_path, max_model_len=4096)
    batch = {"request_id": np.array(["a#chosen", "a#reject"]), "item_id": np.array(["a", "a"]),
             "messages": np.array(CONVERSATIONS, dtype=object)}
    out = RequestScorer(settings)(batch)
    assert out["score"] == _scores(direct) and out["error"] == [None, None]
    assert list(out["request_id"]) == ["a#chosen", "a#reject"] and "messages" not in out


def test_athene_appends_the_cls_token_and_reads_v_head_there(tmp_path):
    tok = tokenizer()
    tok.cls_token = "<|endoftext|>"
    backbone = seeded(lambda: LlamaModel(llama_config()), 5)
    head = random_linear(1, 64, seed=6)
    folder = save_checkpoint(tmp_path / "athene", llama_config(),
                             {**prefixed(backbone, "model."), "v_head.weight": head["weight"]}, tok)
    engine = TransformersEngine(str(folder), task="classify", head="athene", max_model_len=4096)
    expected = []
    for conversation in CONVERSATIONS:
        ids = closed_ids(tok, conversation) + [tok.cls_token_id]
        expected.append((last_hidden(backbone, ids)[-1] @ head["weight"][0]).item())
    rows = engine.classify(CONVERSATIONS)
    assert [row["n_tokens"] for row in rows] == [len(closed_ids(tok, c)) + 1 for c in CONVERSATIONS]
    np.testing.assert_allclose([row["score"] for row in rows], expected, rtol=1e-4, atol=1e-5)


def test_a_stock_classifier_head_refuses_a_checkpoint_without_its_score_weights(tmp_path):
    tok = tokenizer()
    tok.cls_token = "<|endoftext|>"
    backbone = seeded(lambda: LlamaModel(llama_config()), 5)
    folder = save_checkpoint(tmp_path / "athene", llama_config(architectures=["LlamaForSequenceClassification"]),
                             {**prefixed(backbone, "model."), "v_head.weight": torch.zeros(1, 64)}, tok)
    with pytest.raises(ValueError, match="score.weight"):  # never a freshly initialised classifier
        TransformersEngine(str(folder), task="classify", max_model_len=4096)
    save_checkpoint(folder, llama_config(), prefixed(backbone, "model."), tok)
    with pytest.raises(ValueError, match=r"no heads.v_head.weight"):  # a head whose weights are missing says so
        TransformersEngine(str(folder), task="classify", head="athene", max_model_len=4096)


def test_inf_orm_scores_with_its_two_layer_mlp_where_the_card_pools(tmp_path):
    tok = tokenizer()
    config = llama_config(pad_token_id=49151)  # not in these conversations: the last token
    backbone = seeded(lambda: LlamaModel(config), 7)
    first, second = random_linear(64, 64, seed=8, bias=True), random_linear(1, 64, seed=9, bias=True)
    tensors = {**prefixed(backbone, "model."), "score.0.weight": first["weight"], "score.0.bias": first["bias"],
               "score.2.weight": second["weight"], "score.2.bias": second["bias"]}
    folder = save_checkpoint(tmp_path / "inf_orm", config, tensors, tok)
    engine = TransformersEngine(str(folder), task="classify", head="inf_orm", max_model_len=4096)
    expected = []
    for conversation in CONVERSATIONS:
        hidden = last_hidden(backbone, closed_ids(tok, conversation))[-1]
        inner = torch.relu(hidden @ first["weight"].T + first["bias"])
        expected.append((inner @ second["weight"][0] + second["bias"][0]).item())
    np.testing.assert_allclose(_scores(engine), expected, rtol=1e-4, atol=1e-5)


def test_nemotron_reward_is_the_lm_logit_of_token_0_after_the_closed_conversation(tmp_path):
    tok = tokenizer()
    model = seeded(lambda: LlamaForCausalLM(llama_config()), 10)
    model.save_pretrained(tmp_path / "nemotron")
    tok.save_pretrained(tmp_path / "nemotron")
    engine = TransformersEngine(str(tmp_path / "nemotron"), task="classify", head="nemotron", max_model_len=4096)
    expected = []
    for conversation in CONVERSATIONS:
        with torch.no_grad():
            logits = model(torch.tensor([closed_ids(tok, conversation)])).logits
        expected.append(logits[0, -1, 0].item())
    np.testing.assert_allclose(_scores(engine), expected, rtol=1e-4, atol=1e-5)
