"""`ragjudge validate`'s comparison and hold rules (jobs.analysis.agreement) on hand-made item rows, the pairs it reads,
and `ragjudge run` skipping a held model (the stand-in engine: no Ray, no model)."""
from __future__ import annotations

import json
import math

import pytest
from stand_in import stand_in_engine
from sweeps import SAMPLE, write_sweep

from jobs.analysis.agreement import (
    VALIDATE,
    Thresholds,
    compare,
    format_table,
    held_models,
    pad_problem,
    truncation_rate,
    verdict,
)
from jobs.cli import main
from jobs.config import ConfigError, ModelConfig
from jobs.engines import engine_of
from jobs.loading import load_sweep
from jobs.sweep import pipeline
from jobs.validate.scoring_paths import skip_reason, validation_pairs


def _scorer(item_id, chosen, reject, **extra):
    return {"item_id": item_id, "score_chosen": chosen, "score_reject": reject,
            "correct": 1.0 if chosen > reject else 0.0, "error": None, **extra}


def test_compare_scorer_rows_by_hand():
    a = [_scorer("p1", 1.0, 0.5), _scorer("p2", 0.25, 0.5), {"item_id": "p3", "error": "context overflow"}]
    b = [_scorer("p1", 1.125, 0.5), _scorer("p2", 0.75, 0.5), _scorer("p3", 2.0, 1.0)]
    out = compare(a, b, "discriminative")
    # p3 failed on one path: not compared. p1 agrees (|diff| 0.125), p2 flips (|diff| 0.5).
    assert out == {"pairs": 2, "verdict_agreement": 0.5, "max_score_diff": 0.5, "flipped": ["p2"]}
    assert compare(a, a, "discriminative")["verdict_agreement"] == 1.0


def test_compare_implicit_and_judge_rows_by_hand():
    a = [{"item_id": "p1", "reward_chosen": -1.0, "reward_reject": -2.0, "correct": 1.0}]
    b = [{"item_id": "p1", "reward_chosen": -1.5, "reward_reject": -1.25, "correct": 0.0}]
    assert compare(a, b, "implicit") == {"pairs": 1, "verdict_agreement": 0.0, "max_score_diff": 0.75,
                                         "flipped": ["p1"]}
    judge = {"item_id": "p1", "pick_cr": 1, "pick_rc": 2, "logprobs_cr": [-0.5, -1.0], "logprobs_rc": [-1.0, -0.5]}
    same_picks = {**judge, "logprobs_cr": [-0.25, -1.0]}
    assert compare([judge], [same_picks], "generative") == {"pairs": 1, "verdict_agreement": 1.0,
                                                           "max_score_diff": 0.25, "flipped": []}
    # A candidate's log-prob one path has and the other lacks is an infinite difference; the picks differ too.
    missing = {**judge, "pick_rc": 1, "logprobs_rc": [-1.0, None]}
    out = compare([judge], [missing], "generative")
    assert out["max_score_diff"] == math.inf and out["verdict_agreement"] == 0.0


def test_no_pair_in_common_gives_no_agreement_and_holds():
    out = compare([{"item_id": "p1", "error": "x"}], [_scorer("p1", 1.0, 0.0)], "discriminative")
    assert out == {"pairs": 0, "verdict_agreement": None, "max_score_diff": None, "flipped": []}
    assert verdict({"a vs b": out}, Thresholds()) == ("held", "a vs b: no pair scored on both paths")


def test_verdict_thresholds():
    good = {"pairs": 20, "verdict_agreement": 0.95, "max_score_diff": 0.3, "flipped": ["p4"]}
    bad = {"pairs": 20, "verdict_agreement": 0.9, "max_score_diff": 0.01, "flipped": ["p4", "p9"]}
    assert verdict({"x": good}, Thresholds()) == ("ok", None)  # 19/20 = 95% is enough
    assert verdict({"x": good, "y": bad}, Thresholds()) == ("held", "y: verdicts agree on 90% of 20 pairs (< 95%)")
    assert verdict({"x": good}, Thresholds(max_score_diff=0.25)) == ("held", "x: a score moved by 0.3 (> 0.25)")
    with pytest.raises(ConfigError, match="min_agreement"):
        Thresholds(min_agreement=1.5)
    with pytest.raises(ConfigError, match="max_score_diff"):
        Thresholds(max_score_diff=-1)


def test_truncation_rate_held_models_and_table():
    assert truncation_rate([{"truncated": True}, {"truncated": False}, {}, {"truncated": None}]) == 0.25
    assert truncation_rate([]) is None
    report = {"models": {
        "rm": {"status": "ok", "reason": None, "truncation_rate": 0.0,
               "comparisons": {"a": {"verdict_agreement": 1.0, "max_score_diff": 2e-5},
                               "b": {"verdict_agreement": 0.96875, "max_score_diff": 0.015}},
               "tokenizer": {"eos_token": "<|im_end|>", "padding_side": "right", "pad_token_id": 0,
                             "config_pad_token_id": None,
                             "chat_template_sha256": "ab" * 32, "tokenizer_sha256": "cd" * 32}},
        "broken": {"status": "held", "reason": "b: verdicts agree on 50% of 6 pairs (< 95%)", "comparisons": {}},
        "api": {"status": "skipped", "reason": "API model: no local weights to score two ways"}}}
    assert held_models(report) == {"broken": "b: verdicts agree on 50% of 6 pairs (< 95%)"}
    assert held_models(None) == {}
    lines = format_table(report["models"]).splitlines()
    assert lines[0].split() == ["model", "status", "agreement", "max", "|diff|", "truncated", "eos", "padding",
                                "pad", "tok/cfg", "template", "tokenizer", "reason"]
    assert lines[1].split() == ["rm", "ok", "96.88%", "0.015", "0%", "<|im_end|>", "right", "0/-", "abababababab",
                                "cdcdcdcdcdcd"]
    assert lines[2].split()[:2] == ["broken", "held"] and lines[2].endswith("(< 95%)")


def test_a_classifier_whose_tokenizer_pads_with_another_id_than_its_config_is_held():
    """The tiny classifier of 8a262e6: config.pad_token_id 0 (<|endoftext|>), tokenizer pad <|im_end|> (2)."""
    broken = {"pad_token": "<|im_end|>", "pad_token_id": 2, "config_pad_token_id": 0}
    assert pad_problem(broken, "discriminative") == (
        "the tokenizer pads with id 2 (<|im_end|>) but config.pad_token_id is 0: a padded batch scores a pad token")
    assert pad_problem({**broken, "pad_token_id": 0}, "discriminative") is None  # the same id: fine
    assert pad_problem({**broken, "config_pad_token_id": None}, "discriminative") is None  # cannot pad at all
    assert pad_problem({**broken, "pad_token_id": None}, "discriminative") is None
    assert pad_problem({}, "discriminative") is None  # written before pad ids were recorded
    for kind in ("implicit", "generative"):  # log-probs follow the attention mask, not the pad id
        assert pad_problem(broken, kind) is None


def test_pairs_are_the_first_n_of_the_sweeps_own_data(tmp_path):
    sweep = load_sweep(write_sweep(tmp_path, "v", ["tiny_classifier"], f'root: "{tmp_path / "r"}"'))
    items, paths, _ = validation_pairs(sweep, 4)
    assert paths == [str(SAMPLE)]
    first = [json.loads(line)["id"] for line in SAMPLE.open()][:4]
    assert [item["item_id"].split("/")[-1] for item in items] == first
    assert len(validation_pairs(sweep, 100)[0]) == 6  # the bundled file holds six
    with pytest.raises(ConfigError, match="--pairs"):
        validation_pairs(sweep, 0)


def test_models_without_local_weights_or_a_verdict_are_skipped(tmp_path):
    api = "{name: api, path: gpt-x, kind: api, engine: http, api_base_env: NO_BASE, api_key_env: NO_KEY}"
    sweep = load_sweep(write_sweep(tmp_path, "v", ["tiny_classifier", "bm25", api], f'root: "{tmp_path / "r"}"'))
    assert skip_reason(sweep.models["tiny_classifier"], 0) is None
    assert skip_reason(sweep.models["bm25"], 0) == "a retriever model has no verdict on a pair"
    assert skip_reason(sweep.models["api"], 0) == "API model: no local weights to score two ways"


def _reference(model: ModelConfig) -> tuple[str, int | None] | str:
    return engine_of(model).reference_path(model)


def test_reference_paths():
    vllm = ModelConfig(name="rm", path="org/rm", kind="discriminative", engine="vllm", batch_size=8)
    assert _reference(vllm) == ("transformers, one at a time", None)
    hf = ModelConfig(name="rm", path="org/rm", kind="discriminative", engine="transformers", batch_size=4)
    assert _reference(hf) == ("transformers, padded batches of 4", 4)
    assert _reference(ModelConfig(name="gpm", path="org/gpm", kind="discriminative", engine="transformers",
                                  head="gpm")) == "head 'gpm' scores one unpadded sequence at a time; it has no padded path"
    big = ModelConfig(name="judge", path="org/70b", kind="generative", engine="vllm", tensor_parallel_size=4)
    assert _reference(big) == "a tensor-parallel model does not fit the transformers engine's one device"


def test_bad_thresholds_are_one_line_errors(tmp_path, capsys):
    assert main(["validate", "conf/sweeps/demo.yaml", "--min-agreement", "2"]) == 2
    assert capsys.readouterr().err.strip() == "ragjudge: min_agreement must lie in [0, 1], not 2.0"
    assert main(["validate", "conf/sweeps/demo.yaml", "--pairs", "0"]) == 2
    assert capsys.readouterr().err.strip() == "ragjudge: --pairs must be at least 1, not 0"


def test_run_skips_a_held_model_prints_why_and_records_it(tmp_path, monkeypatch):
    stand_in_engine(monkeypatch, lambda request, model: 'The answer is "Choose 1"')
    monkeypatch.setattr(pipeline, "largest_gpu_node", lambda: 0.0)
    monkeypatch.setattr(pipeline, "_cluster_capacity", lambda: {"CPU": 2.0, "GPU": 0.0})
    judges = [f"{{name: {name}, path: p, kind: generative, engine: stand_in}}" for name in ("good", "broken")]
    sweep = load_sweep(write_sweep(tmp_path, "v", judges, f'root: "{tmp_path / "r"}"'))
    run = tmp_path / "r" / "v"
    run.mkdir(parents=True)
    why = "engine, batch 1 vs engine, batch 8: verdicts agree on 50% of 6 pairs (< 95%)"
    (run / VALIDATE).write_text(json.dumps({"models": {"good": {"status": "ok"},
                                                       "broken": {"status": "held", "reason": why}}}))
    lines: list[str] = []
    outcomes = {o.model: o for o in pipeline.run_sweep(sweep, log=lines.append)}
    assert outcomes["good"].status == "done"
    assert outcomes["broken"].status == "skipped" and why in outcomes["broken"].message
    assert any(line.startswith(f"held broken (ragjudge validate: {why})") for line in lines)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["held"] == {"broken": why}
    assert not (run / "predictions" / "benchmark=rag_rewardbench" / "model=broken").exists()

    outcomes = {o.model: o for o in pipeline.run_sweep(sweep, log=lines.append, include_held=True)}
    assert outcomes["broken"].status == "done"
    assert json.loads((run / "manifest.json").read_text())["held"] == {}


def test_a_cell_whose_judge_is_held_fails_naming_it(tmp_path, monkeypatch):
    stand_in_engine(monkeypatch)
    monkeypatch.setattr(pipeline, "largest_gpu_node", lambda: 0.0)
    monkeypatch.setattr(pipeline, "_cluster_capacity", lambda: {"CPU": 2.0, "GPU": 0.0})
    models = [f"{{name: {name}, path: p, kind: generative, engine: stand_in}}" for name in ("writer", "critic")]
    sweep = load_sweep(write_sweep(tmp_path, "v", models, f'root: "{tmp_path / "r"}"'))
    monkeypatch.setattr(pipeline, "route_models", lambda bench, sweep: ({"critic": sweep.models["critic"]}, []))
    (tmp_path / "r" / "v").mkdir(parents=True)
    (tmp_path / "r" / "v" / VALIDATE).write_text(json.dumps({"models": {"critic": {"status": "held",
                                                                                   "reason": "flips"}}}))
    outcomes = {o.model: o for o in pipeline.run_sweep(sweep, log=lambda line: None)}
    assert outcomes["critic"].status == "skipped"
    assert outcomes["writer"].status == "failed"
    assert "judge 'critic' is held by ragjudge validate (flips); --include-held runs it" in outcomes["writer"].message
