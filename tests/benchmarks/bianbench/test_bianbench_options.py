"""Bi'anBench options: the configs load into the typed Options unchanged in meaning, the schema names a bad key,
and every cross-field problem is reported before a run (missing prompts found per item, not per request)."""
import pytest
from bianbench_cases import BIAN, DEFAULT, options, qa_row, write_jsonl
from omegaconf import OmegaConf

from benchmarks.bianbench import PAPER_PROMPTS, BianBench, Options, templates_in_force
from benchmarks.bianbench.options import Sampling
from benchmarks.options import OptionsError, typed_options
from benchmarks.paths import PROJECT_ROOT
from benchmarks.protocol import benchmark
from jobs.config import BenchmarkConfig

CONFIGS = ["conf/benchmarks/bianbench.yaml", "conf/benchmarks/bianbench_sample.yaml"]


def bench_config(path):
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(BenchmarkConfig), OmegaConf.load(path)))


@pytest.mark.parametrize("path", CONFIGS)
def test_both_configs_share_the_table12_prompts_and_the_paper_sampling(path):
    config = bench_config(path)
    opts = typed_options(type(benchmark(config.module)).Options, config.options)
    assert BIAN.problems(opts) == []
    assert (opts.runs, opts.temperature, opts.top_p, opts.max_tokens, opts.greedy) == (3, 0.8, 0.7, 512, False)
    templates = templates_in_force(opts)
    assert sorted((t, lang) for t, langs in templates.items() for lang in langs) == sorted(PAPER_PROMPTS)
    assert opts == DEFAULT  # the configs spell out the defaults


def test_the_registry_gives_the_class_with_its_name_kinds_and_options():
    bench = benchmark("bianbench")
    assert isinstance(bench, BianBench) and bench.Options is Options
    assert (bench.name, bench.kinds) == ("bianbench", ("generative",))


def test_check_options_names_the_key():
    with pytest.raises(OptionsError) as unknown:
        options(runs=0, top_p=1.5, temprature=0.2)
    assert unknown.value.key == "temprature" and str(unknown.value).startswith("options.temprature: ")
    assert BIAN.problems(options(runs=0, top_p=1.5)) == [
        "options.runs: 0 is not a whole number >= 1", "options.top_p: 1.5 is not a number in (0, 1]"]
    only_en_qa = {"templates_file": None, "templates": {"qa": {"en": "{question} {document} {answer}"},
                                                         "translation": {"zh": "{source_text} {oops}"}}}
    problems = BIAN.problems(options(**only_en_qa))
    assert "options.templates.summarization.en: missing" in problems
    assert "options.templates.qa.zh: missing" in problems
    assert "options.templates.data_to_text.zh: missing" not in problems  # the paper has none
    assert "options.templates.translation.zh: placeholder {translated_text} missing" in problems
    assert ("options.templates.translation.zh: unknown placeholder {oops} (translation fills {source_text}, "
            "{translated_text})") in problems
    assert BIAN.problems(options(templates_file="conf/prompts/nope.yaml"))[0].startswith(
        "options.templates_file: cannot read")


@pytest.mark.parametrize("raw, key", [
    ({"temprature": 0.2}, "temprature"),  # unknown key
    ({"templates": {"poem": {"en": "{question}"}}}, "templates.poem"),  # a task the paper does not have
    ({"templates": {"qa": {"fr": "{question}"}}}, "templates.qa.fr"),  # a language it does not have
    ({"runs": "three"}, "runs"),  # wrong types
    ({"runs": 2.5}, "runs"),
    ({"max_tokens": True}, "max_tokens"),
    ({"temperature": "hot"}, "temperature"),
    ({"greedy": "maybe"}, "greedy"),
    ({"templates": {"qa": {"en": ["not", "text"]}}}, "templates.qa.en"),
    ({"templates": {"qa": None}}, "templates.qa"),
])
def test_the_schema_rejects_a_bad_key_type_or_choice_naming_the_key(raw, key):
    with pytest.raises(OptionsError) as error:
        options(**raw)
    assert error.value.key == key and str(error.value).startswith(f"options.{key}: ")


@pytest.mark.parametrize("raw, problems", [
    ({"runs": 0}, ["options.runs: 0 is not a whole number >= 1"]),
    ({"max_tokens": 0}, ["options.max_tokens: 0 is not a whole number >= 1"]),
    ({"temperature": -0.5}, ["options.temperature: -0.5 is not a number >= 0"]),
    ({"top_p": 0}, ["options.top_p: 0.0 is not a number in (0, 1]"]),
    ({"top_p": 1.5}, ["options.top_p: 1.5 is not a number in (0, 1]"]),
    ({"greedy": True, "runs": 0}, ["options.runs: 0 is not a whole number >= 1"]),  # checked though greedy wins
    ({"templates": {"summarization": {"zh": ""}}}, ["options.templates.summarization.zh: missing",
                                                    "options.templates.summarization.zh: placeholder {document} missing",
                                                    "options.templates.summarization.zh: placeholder {summary} missing"]),
    ({"templates": {"qa": {"en": "{question} {answer}"}}},
     ["options.templates.qa.en: placeholder {document} missing"]),
    ({"templates": {"summarization": {"zh": "{document} {summary} {answer}"}}},
     ["options.templates.summarization.zh: unknown placeholder {answer} (summarization fills {document}, {summary})"]),
])
def test_every_cross_field_problem_is_reported_with_its_key(raw, problems):
    assert BIAN.problems(options(**raw)) == problems


def test_a_templates_file_that_is_not_a_prompt_mapping_is_reported(tmp_path):
    (tmp_path / "list.yaml").write_text("- just a list\n", encoding="utf-8")
    (tmp_path / "broken.yaml").write_text("templates: [unclosed\n", encoding="utf-8")
    (tmp_path / "number.yaml").write_text("templates:\n  qa:\n    en: 5\n", encoding="utf-8")
    assert BIAN.problems(options(templates_file=str(tmp_path / "list.yaml"))) == [
        f"options.templates_file: {tmp_path / 'list.yaml'} has no 'templates' mapping at the top level"]
    assert BIAN.problems(options(templates_file=str(tmp_path / "broken.yaml")))[0].startswith(
        f"options.templates_file: cannot read {tmp_path / 'broken.yaml'}: ")
    assert "options.templates.qa.en: not text" in BIAN.problems(options(templates_file=str(tmp_path / "number.yaml")))


def test_a_relative_templates_file_is_read_from_the_project_root_not_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert (PROJECT_ROOT / DEFAULT.templates_file).is_file()
    assert BIAN.problems(DEFAULT) == []
    assert sorted(templates_in_force(DEFAULT)) == ["data_to_text", "qa", "summarization", "translation"]


def test_inline_templates_override_the_file_and_null_templates_keeps_it():
    custom = options(templates={"qa": {"zh": "{question}|{document}|{answer}"}})
    assert templates_in_force(custom)["qa"]["zh"] == "{question}|{document}|{answer}"
    assert templates_in_force(custom)["qa"]["en"] == templates_in_force(DEFAULT)["qa"]["en"]
    assert templates_in_force(options(templates=None)) == templates_in_force(DEFAULT)
    assert templates_in_force(options(templates_file=None)) == {}


def test_greedy_sampling_overrides_runs_temperature_and_top_p():
    assert DEFAULT.sampling == Sampling(3, 0.8, 0.7)
    assert options(greedy=True, runs=5, temperature=0.5).sampling == Sampling(1, 0.0, 1.0)
    assert options(greedy=True, runs=5).runs == 5  # the option itself is kept as given


def test_a_missing_template_is_found_before_the_run_and_becomes_error_rows_not_a_crash(tmp_path):
    path = write_jsonl(tmp_path / "x_zh.jsonl", [
        {"id": 5, "task": "Data-to-Text", "context": "[a | b | c]", "answer": "甲", "label": "通过",
         "source_ds": "WebNLG_zh"}, qa_row(id=6, split="zh", label="失败")])
    items = list(BIAN.load_items(path))
    assert BIAN.check_items(items, DEFAULT) == [
        "options.templates.data_to_text.zh: missing (needed by 1 item(s), e.g. bianbench/zh/5)"]
    assert BIAN.expand(items[0], "generative", DEFAULT) == []
    rows = BIAN.combine(items[0], [], "generative", DEFAULT)
    assert [r["run"] for r in rows] == [0, 1, 2]
    assert {r["error"] for r in rows} == {
        "no prompt template for (data_to_text, zh): options.templates.data_to_text.zh missing"}
    assert {r["correct"] for r in rows} == {None}
