"""`ragjudge validate`'s comparison and hold rules (jobs.analysis.agreement) on hand-made verdict rows, the items it
asks each benchmark for, and `ragjudge run` skipping a held model (the stand-in engine: no Ray, no model). How
RAG-RewardBench reads its rows' verdicts: tests/benchmarks/rag_rewardbench/test_rag_rewardbench_validation.py."""
from __future__ import annotations

import json
import math

import pytest
from stand_in import stand_in_engine
from sweeps import SAMPLE, write_sweep

from jobs.analysis.agreement import (
    Thresholds,
    compare,
    format_table,
    held_models,
    pad_problem,
    truncation_rate,
    verdict,
    verdict_rows,
)
from jobs.cli import main
from jobs.config import ConfigError, ModelConfig
from jobs.engines.base import engine_of
from jobs.engines.transformers.settings import TransformersSettings
from jobs.loading import load_sweep
from jobs.store.layout import VALIDATE
from jobs.sweep import pipeline
from jobs.validate.scoring_paths import (
    skip_reason,
    validation_benchmarks,
    validation_samples,
)


def _row(item_id, verdict, *scores, error=None):
    return {"item_id": item_id, "error": error, "verdict": verdict, "scores": list(scores)}


def test_compare_verdict_rows_by_hand():
    a = [_row("p1", True, 1.0, 0.5), _row("p2", False, 0.25, 0.5), _row("p3", None, error="context overflow")]
    b = [_row("p1", True, 1.125, 0.5), _row("p2", True, 0.75, 0.5), _row("p3", True, 2.0, 1.0)]
    # p3 failed on one path: not compared. p1 agrees (|diff| 0.125), p2 flips (|diff| 0.5).
    assert compare(a, b) == {"pairs": 2, "verdict_agreement": 0.5, "max_score_diff": 0.5, "flipped": ["p2"]}
    assert compare(a, a)["verdict_agreement"] == 1.0
    # A score one path has and the other lacks is an infinite difference; two missing ones are not compared.
    out = compare([_row("p1", (1, 2), -0.5, None, None)], [_row("p1", (1, 2), -0.5, -1.0, None)])
    assert out == {"pairs": 1, "verdict_agreement": 1.0, "max_score_diff": math.inf, "flipped": []}


def test_verdict_rows_read_only_the_rows_that_did_not_fail():
    rows = [{"id": "a", "x": 2.0, "truncated": False}, {"id": "b", "error": "context overflow", "truncated": True}]
    out = verdict_rows(rows, lambda row: (row["x"] > 1, [row["x"]]), lambda row: row["id"])
    assert out == [{"item_id": "a", "error": None, "truncated": False, "verdict": True, "scores": [2.0]},
                   {"item_id": "b", "error": "context overflow", "truncated": True, "verdict": None, "scores": []}]
    assert truncation_rate(out) == 0.5


def test_no_pair_in_common_gives_no_agreement_and_holds():
    out = compare([_row("p1", None, error="x")], [_row("p1", True, 1.0, 0.0)])
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
    assert validation_benchmarks(sweep) == ["rag_rewardbench"]
    [sample] = validation_samples(sweep, 4)
    assert (sample.spec.name, sample.paths, sample.skipped) == ("rag_rewardbench", [str(SAMPLE)], 0)
    first = [json.loads(line)["id"] for line in SAMPLE.open()][:4]
    assert [item["item_id"].split("/")[-1] for item in sample.items] == first
    assert len(validation_samples(sweep, 100)[0].items) == 6  # the bundled file holds six
    with pytest.raises(ConfigError, match="--pairs"):
        validation_samples(sweep, 0)


def test_a_bad_row_is_skipped_and_counted_and_no_good_one_is_an_error(tmp_path):
    rows = [json.loads(line) for line in SAMPLE.open()]
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in [rows[0], {**rows[1], "reject": ""}, rows[2]]))
    sweep = load_sweep(write_sweep(tmp_path, "v", ["tiny_classifier"], f'root: "{tmp_path / "r"}"', data=data))
    [sample] = validation_samples(sweep, 2)
    assert [item["item_id"].split("/")[-1] for item in sample.items] == [rows[0]["id"], rows[2]["id"]]
    assert (sample.paths, sample.skipped) == ([str(data)], 1)
    data.write_text(json.dumps({**rows[0], "chosen": ""}) + "\n")
    with pytest.raises(ConfigError, match=r"no well-formed rag_rewardbench item to validate on in .*pairs.jsonl "
                                          r"\(1 bad rows skipped\)"):
        validation_samples(sweep, 2)


def test_a_sweep_without_validation_items_is_validated_on_a_bundled_sample(tmp_path):
    path = tmp_path / "conf" / "sweeps" / "b.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("name: b\nbenchmarks: [bianbench_sample]\nmodels: [tiny_classifier]\n"
                    f'storage: {{run: b, root: "{tmp_path / "r"}"}}\n')
    sweep = load_sweep(str(path))
    assert validation_benchmarks(sweep) == ["rag_rewardbench"]  # the one registered benchmark with a sample
    [sample] = validation_samples(sweep, 3)
    assert (sample.paths, len(sample.items)) == ([str(SAMPLE)], 3)


def test_models_without_local_weights_or_a_verdict_are_skipped(tmp_path):
    api = "{name: api, path: gpt-x, kind: api, engine: http, api: {base_env: NO_BASE, key_env: NO_KEY}}"
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
                                  transformers=TransformersSettings(head="gpm"))) == "head 'gpm' scores one unpadded sequence at a time; it has no padded path"
    big = ModelConfig(name="judge", path="org/70b", kind="generative", engine="vllm", tensor_parallel_size=4)
    assert _reference(big) == "a tensor-parallel model does not fit the transformers engine's one device"


def test_bad_thresholds_are_one_line_errors(tmp_path, capsys):
    assert main(["validate", "conf/sweeps/demo.yaml", "--min-agreement", "2"]) == 2
    assert capsys.readouterr().err.strip() == "ragjudge: min_agreement must lie in [0, 1], not 2.0"
    # its run folder in tmp_path: the command's libraries.log is open by the time --pairs is checked
    assert main(["validate", "conf/sweeps/demo.yaml", f"storage.root={tmp_path}", "--pairs", "0"]) == 2
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
