"""`ragjudge validate` on real engines: tiny random classifiers that pool the way transformers' classifiers do (the
last token that is not the config's pad id, 0). One's tokenizer pads with that same id, on the left: it passes.
Two pad with SmolLM2's own pad token (2) instead: padded on the right, the last position of a short sequence is
padding, so padded batches move its verdicts; padded on the left they happen not to, but any loader that pads on
the right (RewardBench's scripts) would, so both are held for their pad ids. Our engine never pads, so only the
padded-batch reference path (jobs.engines.transformers.padded_batch) and the pad-id check can tell them apart."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from sweeps import write_sweep
from worker_models import worker

from actors.built_in_models import SMOLLM2, resolve_model
from jobs.engines.transformers.model import TransformersEngine
from jobs.engines.transformers.padded_batch import PaddedBatchEngine
from jobs.loading import load_sweep
from jobs.store.layout import VALIDATE
from jobs.validate.scoring_paths import validate_sweep

pytestmark = pytest.mark.integration
SHAPES = {"padded_left": ("left", "<|endoftext|>"), "padded_right": ("right", None),
          "left_pad_mismatch": ("left", None)}  # name -> padding side, pad token (None: SmolLM2's, <|im_end|>)


def _tiny_classifier(folder, padding_side: str, pad_token: str | None) -> str:
    """A seeded random LlamaForSequenceClassification (hidden 64, 2 layers) with SmolLM2's tokenizer."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(SMOLLM2), padding_side=padding_side)
    if pad_token:
        tokenizer.pad_token = pad_token
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, head_dim=32, num_labels=1, pad_token_id=0,
                         initializer_range=0.2, tie_word_embeddings=False)
    torch.manual_seed(0)
    LlamaForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def classifiers(tmp_path_factory):
    root = tmp_path_factory.mktemp("validate-models")
    return {name: _tiny_classifier(root / name, *shape) for name, shape in SHAPES.items()}


def test_padded_batches_match_one_at_a_time_only_when_padding_is_on_the_left(classifiers):
    conversations = [[{"role": "user", "content": "Which river flows through Vienna?"},
                      {"role": "assistant", "content": answer}]
                     for answer in ("The Danube.", "The Danube flows through Vienna, as the passage says.", "No.")]
    for name, path in classifiers.items():
        alone = [row["score"] for row in TransformersEngine(path, task="classify").classify(conversations)]
        batched = PaddedBatchEngine(path, task="classify", batch_size=3)
        padded = [row["score"] for row in batched.classify(conversations)]
        if SHAPES[name][0] == "left":
            assert padded == pytest.approx(alone, abs=1e-4)
        else:  # the longest needs no padding; the two shorter ones are read on a pad token
            assert padded[1] == pytest.approx(alone[1], abs=1e-4)
            assert padded[0] != pytest.approx(alone[0], abs=1e-3) and padded[2] != pytest.approx(alone[2], abs=1e-3)


def test_a_causal_lm_in_padded_batches_scores_as_one_at_a_time():
    """SmolLM2 (pads on the right) as an implicit RM and as a judge, through RequestScorer: a causal LM's
    log-probs are read at each sequence's own positions, so padding changes nothing but rounding."""
    from benchmarks import rag_rewardbench as rb
    from jobs.engines.transformers.scorers import RequestScorer

    items = [{"item_id": f"p{k}", "subset": "s", "prompt": "Which river flows through Vienna?" * k,
              "chosen": "The Danube.", "reject": "The Rhine, I think, though the passage does not say so."}
             for k in (1, 3)]
    model = worker(name="smollm2", path=resolve_model(SMOLLM2), dtype="float32", max_model_len=2048, max_new_tokens=1)
    for kind, columns in (("implicit", ("logp_sum", "logp_mean")), ("generative", ("candidate_logprobs",))):
        requests = [r for item in items for r in rb.expand(item, kind)]
        batch = {key: [r[key] for r in requests] for key in requests[0]}
        alone, padded = (RequestScorer(replace(model, kind=kind), size)(batch) for size in (None, 4))
        for column in columns:
            flat = [[v for value in answers[column] for v in (value if isinstance(value, list) else [value])]
                    for answers in (alone, padded)]
            assert len(flat[0]) == len(requests) * (2 if kind == "generative" else 1)
            assert flat[1] == pytest.approx(flat[0], abs=1e-3), (kind, column)


def test_validate_holds_the_models_whose_padding_moves_verdicts_or_whose_pad_ids_differ(classifiers, ray_session,
                                                                                           tmp_path):
    models = [f'{{name: {name}, path: "{path}", kind: discriminative, engine: transformers, batch_size: 6}}'
              for name, path in classifiers.items()]
    sweep = load_sweep(write_sweep(tmp_path, "v", models, f'root: "{tmp_path / "results"}"'))
    report = validate_sweep(sweep, pairs=6, log=lambda line: None)
    good, broken, mismatched = (report["models"][name] for name in SHAPES)
    assert good["status"] == "ok", good
    assert broken["status"] == "held"
    assert "engine, batch 6 vs transformers, padded batches of 6: verdicts agree on" in broken["reason"]
    pads = "the tokenizer pads with id 2 (<|im_end|>) but config.pad_token_id is 0: a padded batch scores a pad token"
    assert pads in broken["reason"] and good["reason"] is None
    # Padded on the left its verdicts agree on every path, and it is held for its pad ids alone.
    assert mismatched["status"] == "held" and mismatched["reason"] == pads
    assert all(c["verdict_agreement"] == 1.0 for c in mismatched["comparisons"].values())
    assert list(good["comparisons"]) == ["engine, batch 1 vs engine, batch 6",
                                         "engine, batch 6 vs transformers, padded batches of 6"]
    assert all(c["pairs"] == 6 for c in good["comparisons"].values())
    assert good["comparisons"]["engine, batch 1 vs engine, batch 6"]["max_score_diff"] == 0.0
    assert good["truncation_rate"] == 0.0
    assert good["tokenizer"]["padding_side"] == "left" and broken["tokenizer"]["padding_side"] == "right"
    assert good["tokenizer"]["eos_token"] == "<|im_end|>"
    assert (good["tokenizer"]["pad_token_id"], good["tokenizer"]["config_pad_token_id"]) == (0, 0)
    assert (broken["tokenizer"]["pad_token_id"], broken["tokenizer"]["config_pad_token_id"]) == (2, 0)
    assert broken["tokenizer"]["tokenizer_sha256"] == mismatched["tokenizer"]["tokenizer_sha256"]
    stored = json.loads((tmp_path / "results" / "v" / VALIDATE).read_text())
    assert stored["models"]["padded_right"]["status"] == "held" and stored["pairs"] == 6
