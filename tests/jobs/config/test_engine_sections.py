"""Each engine's own keys in its section of the model file (issue 65): a section loads and reaches its engine, an
old flat key fails in one line naming its new place, and a model whose settings only moved hashes as before."""
from __future__ import annotations

from pathlib import Path

import pytest

from jobs.config import MOVED, BenchmarkConfig, ConfigError, credential_variables, flat_settings
from jobs.engines.base import engine_of, worker_model
from jobs.engines.demand import engine_demand
from jobs.engines.http.client import api_credentials, chat_request
from jobs.engines.identity import model_identity
from jobs.engines.readiness import gpus_needed
from jobs.engines.vllm.engine import tasks_in_flight
from jobs.engines.vllm.stage import engine_settings
from jobs.loading import load_model, load_sweep
from jobs.store.redaction import redact
from jobs.sweep.cell import answers_hash

# A model of every section, each key away from its default, written once flat (before issue 65) and once in
# sections (now).
JUDGE = {"name": "judge", "path": "org/judge", "kind": "generative", "engine": "vllm", "tensor_parallel_size": 2,
         "vllm": {"kv_cache_gib": 4, "enforce_eager": True, "engine_args": {"max_num_seqs": 64}},
         "serve": {"shared": True, "min_replicas": 2, "max_replicas": 3, "target_ongoing_requests": 4,
                   "downscale_delay_s": 9.0}}
API = {"name": "api_judge", "path": "gpt-x", "kind": "api", "engine": "openai_batch",
       "api": {"base_env": "BASE_VAR", "key_env": "KEY_VAR", "max_concurrency": 3, "max_retries": 2, "timeout_s": 30.0,
               "params": {"max_tokens": "max_completion_tokens", "temperature": None}},
       "batch": {"poll_s": 5.0, "max_wait_s": 100.0}}
RM = {"name": "rm", "path": "org/rm", "kind": "discriminative", "engine": "transformers",
      "transformers": {"head": "eurus"}, "tokenizer": "org/tok"}
# Computed on main before the move (4321c63, the keys flat): answers_hash(BENCH, model), answers_hash(BENCH, JUDGE
# routed to the model as a judge), model_identity(model), the engine's server_name(model).
PINNED = {"judge": ("c48eab4260402ea8", "753788183e16ebfb", "f61f0163120f798f", "judge-generate-0571243c"),
          "api_judge": ("8eb0b058ca7286e3", "9c76dc649d069646", "25d51fe8058c8764", "api_judge-score"),
          "rm": ("6e1281fa137546e4", "df323e5a5215560e", "f8f8bef3f3baf819", "rm-score")}


def _file(tmp_path: Path, text: str, name: str = "m") -> str:
    (tmp_path / "models").mkdir(parents=True, exist_ok=True)
    (tmp_path / "models" / f"{name}.yaml").write_text(text)
    return name


def _load(tmp_path: Path, text: str, name: str = "m"):
    return load_model(_file(tmp_path, text, name), "test", [tmp_path])


def test_a_model_whose_settings_only_moved_hashes_and_names_its_engines_as_before(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BASE_VAR", raising=False)
    # The pins were made where tcmalloc is installed, which a vLLM engine's environment preloads: pinned here
    # too, so the names do not depend on whether this machine has it.
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.setattr("actors.hardware.tcmalloc", lambda *dirs: "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4")
    Path("items.jsonl").write_text('{"a": 1}\n')
    bench = BenchmarkConfig(name="b", module="rag_rewardbench", data=["items.jsonl"])
    judge = load_model(JUDGE, "test")
    for entry in (JUDGE, API, RM):
        model = load_model(entry, "test")
        got = (answers_hash(bench, model), answers_hash(bench, judge, {"j": model}), model_identity(model),
               engine_of(model).server_name(model))
        assert got == PINNED[model.name], model.name


def test_the_vllm_section_reaches_the_engines_arguments(tmp_path):
    model = _load(tmp_path, "name: m\npath: org/m\nkind: generative\nbatch_size: 8\n"
                            "vllm: {kv_cache_gib: 3, enforce_eager: true, engine_args: {max_num_seqs: 24}}\n")
    worker = worker_model(model)
    kwargs, runtime_env, _ = engine_settings(worker, worker.path, "judge")
    assert kwargs["enforce_eager"] is True and kwargs["max_num_seqs"] == 24
    assert runtime_env["env_vars"]["VLLM_CPU_KVCACHE_SPACE"] == "3"
    assert not engine_of(model).compiles(model) and tasks_in_flight(model) == 4  # 24 / 8 + 1


def test_the_serve_section_makes_a_shared_judge_of_serves(tmp_path):
    model = _load(tmp_path, "name: m\npath: org/m\nkind: generative\nnum_gpus: 1\n"
                            "serve: {shared: true, min_replicas: 2, max_replicas: 5, target_ongoing_requests: 7}\n")
    assert engine_of(model).server_names(model) == [] and engine_demand(model) == {"CPU": 0.0, "GPU": 0.0}
    assert gpus_needed(model) == 2.0  # its min_replicas, one GPU each
    worker = worker_model(model)  # what serve_judge.deploy reads
    assert (worker.min_replicas, worker.max_replicas, worker.target_ongoing_requests) == (2, 5, 7)


def test_the_api_section_reaches_the_client_and_its_key_is_a_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("SECTION_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SECTION_KEY", "sk-section-secret-value")
    model = _load(tmp_path, "name: m\npath: gpt-x\nkind: api\nengine: http\napi:\n  base_env: SECTION_BASE\n"
                            "  key_env: SECTION_KEY\n  max_concurrency: 3\n  max_retries: 1\n  timeout_s: 7\n"
                            "  params: {max_tokens: max_completion_tokens, temperature: null}\n")
    worker = worker_model(model)
    credentials = api_credentials(worker)
    assert credentials["base_url"] == "http://127.0.0.1:9/v1" and str(credentials["api_key"]) == "sk-section-secret-value"
    assert (worker.max_concurrency, worker.max_retries, worker.timeout_s) == (3, 1, 7.0)
    _, sampling = chat_request({"messages": [{"role": "user", "content": "q"}], "max_new_tokens": 5, "temperature": 0.0,
                                "top_p": 1.0, "seed": 0}, worker)
    assert sampling["max_completion_tokens"] == worker.max_new_tokens and "max_tokens" not in sampling and "temperature" not in sampling
    assert credential_variables(model) == ["SECTION_BASE", "SECTION_KEY"]
    assert "sk-section-secret-value" not in redact("the key sk-section-secret-value leaked")


def test_the_batch_section_reaches_the_batch_wait_and_only_the_batch_engines_read_it(tmp_path):
    model = _load(tmp_path, "name: m\npath: gpt-x\nkind: api\nengine: openai_batch\n"
                            "api: {base_env: B, key_env: K}\nbatch: {poll_s: 0.5, max_wait_s: 9}\n")
    worker = worker_model(model)  # what jobs.engines.batch waits by
    assert (worker.batch_poll_s, worker.batch_max_wait_s) == (0.5, 9.0)
    with pytest.raises(ConfigError, match=r"key 'models\.m\.batch\.poll_s': only engine anthropic_batch or "
                                          r"openai_batch reads the batch section, not kind api on engine http$"):
        _load(tmp_path / "http", "name: m\npath: gpt-x\nkind: api\nengine: http\nbatch: {poll_s: 0.5}\n")


def test_the_transformers_section_reaches_the_scorer_and_only_that_engine_reads_it(tmp_path):
    model = _load(tmp_path, "name: m\npath: org/rm\nkind: discriminative\nengine: transformers\n"
                            "transformers: {head: eurus}\n")
    assert worker_model(model).head == "eurus"  # what ScorerServer hands the model
    assert engine_of(model).reference_path(model) == "head 'eurus' scores one unpadded sequence at a time; it has no padded path"
    with pytest.raises(ConfigError, match=r"key 'models\.m\.transformers\.head': only engine transformers reads the "
                                          r"transformers section, not kind discriminative on engine vllm$"):
        _load(tmp_path / "vllm", "name: m\npath: org/rm\nkind: discriminative\ntransformers: {head: eurus}\n")


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_flat_key_fails_in_one_line_naming_its_new_place(tmp_path, old):
    new = MOVED[old]
    with pytest.raises(ConfigError) as file_error:
        _load(tmp_path, f"name: m\npath: org/m\nkind: generative\n{old}: 1\n")
    assert str(file_error.value) == f"{tmp_path / 'models' / 'm.yaml'}: key 'models.m.{old}': moved to {new}"
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("name: s\nbenchmarks: []\nmodels:\n  - {name: inline, path: org/m, kind: generative, "
                     f"{old}: 1}}\n  - {{name: plain, path: org/m, kind: generative}}\nstorage: {{run: r}}\n")
    with pytest.raises(ConfigError) as inline_error:
        load_sweep(sweep)
    assert str(inline_error.value) == f"{sweep} (models): key 'models.inline.{old}': moved to {new}"
    sweep.write_text("name: s\nbenchmarks: []\nmodels:\n  - {name: plain, path: org/m, kind: generative}\n"
                     "storage: {run: r}\n")
    with pytest.raises(ConfigError) as override_error:
        load_sweep(sweep, [f"models.plain.{old}=1"])
    assert str(override_error.value) == f"command line override of {sweep}: key 'models.plain.{old}': moved to {new}"
    assert "\n" not in str(file_error.value) + str(inline_error.value) + str(override_error.value)


def test_the_flat_view_holds_every_setting_once_under_its_flat_name():
    model = load_model(JUDGE, "test")
    flat = flat_settings(model)
    assert not {"vllm", "serve", "api", "batch", "transformers"} & set(flat)
    assert (flat["kv_cache_gib"], flat["engine_args"], flat["min_replicas"], flat["api_params"]) == (4, {"max_num_seqs": 64}, 2, {})
