"""mtRAG retrieval options (docs/protocols.md 3): every config file loads into the typed Options unchanged in
meaning; what a type can say fails when typed, naming the key; what it cannot is a problem naming the key."""
import pytest
from bundled_data import REPO
from omegaconf import OmegaConf

from benchmarks.mtrag.retrieval import REWRITE_PROMPT, MtragRetrieval, Options
from benchmarks.options import OptionsError, typed_options
from jobs.loading import load_sweep

b = MtragRetrieval()
PROMPT = {"system": "Rewrite.", "user": "{history} / {question}"}


def opts(raw: dict | None = None) -> Options:
    return typed_options(Options, raw)


def rejected(raw: dict) -> OptionsError:
    with pytest.raises(OptionsError) as caught:
        opts(raw)
    return caught.value


def test_options_are_checked_with_the_key_named():
    assert b.problems(opts(None)) == []
    assert str(rejected({"colour": 1})).startswith("options.colour")
    assert str(rejected({"strategies": ["hyde"]})).startswith("options.strategies") and "hyde" in str(
        rejected({"strategies": ["hyde"]}))
    problems = b.problems(opts({"domains": ["moon"], "top_k": 5}))
    assert any(p.startswith("options.domains") and "moon" in p for p in problems)
    assert any(p.startswith("options.top_k") for p in problems)
    assert b.domains(opts({"domains": ["ibmcloud", "cloud"]})) == ["cloud"]


def test_configs_validate_and_the_demo_has_a_retrieval_cell():
    full = OmegaConf.to_container(OmegaConf.load(REPO / "conf" / "benchmarks" / "mtrag_retrieval.yaml"))
    options = opts(full["options"])
    assert b.problems(options) == [] and options.rewrite_prompt == REWRITE_PROMPT
    demo = load_sweep(REPO / "conf" / "sweeps" / "demo.yaml")
    bench = demo.benchmarks["mtrag_retrieval"]
    assert bench.module == "mtrag_retrieval" and b.problems(opts(bench.options)) == []
    assert b.domains(opts(bench.options)) == ["clapnq", "cloud", "fiqa", "govt"]
    assert b.strategies(opts(bench.options)) == ["lastturn", "rewrite"]
    assert {m.engine for m in demo.models.values() if m.kind == "retriever"} == {"bm25", "sentence_transformers"}


def test_config_files_keep_their_meaning():
    for name, strategies in (("mtrag_retrieval", ["lastturn", "rewrite", "questions"]),
                             ("mtrag_retrieval_demo", ["lastturn", "rewrite"])):
        options = opts(OmegaConf.to_container(OmegaConf.load(REPO / f"conf/benchmarks/{name}.yaml"))["options"])
        assert b.problems(options) == [] and b.strategies(options) == strategies, name
        settings = b.search_settings(options)
        assert (settings.top_k, settings.ann_threshold, settings.ann) == (
            10, 100_000, {"m": 32, "ef_construction": 200, "ef_search": 256}), name
        assert (b.rewriter(options), options.rewrite_max_tokens) == (None, 64), name
    assert opts().rewrite_prompt is None  # ours, REWRITE_PROMPT, as the full config spells it out


def test_the_schema_names_each_bad_key():
    for raw, key in [({"colour": 1}, "colour"), ({"ann": {"mm": 8}}, "ann.mm"), ({"top_k": "ten"}, "top_k"),
                     ({"ann": {"m": 1.5}}, "ann.m"), ({"domains": "govt"}, "domains"),
                     ({"strategies": ["lastturn", "hyde"]}, "strategies[1]"),
                     ({"rewrite_prompt": {"system": "s"}}, "rewrite_prompt.user"),
                     ({"rewrite_prompt": {**PROMPT, "examples": [{"history": [], "question": "q"}]}},
                      "rewrite_prompt.examples[0].rewrite")]:
        error = rejected(raw)
        assert error.key == key and str(error).startswith(f"options.{key}: "), (raw, str(error))


def test_a_given_rewrite_prompt_replaces_ours_whole():
    options = opts({"rewrite_prompt": PROMPT})
    assert (options.rewrite_prompt.system, options.rewrite_prompt.examples) == ("Rewrite.", [])  # no examples of ours
    rows = [{"turns": ["first?", "second?"]}]
    assert b.rewrite_request(rows[0], options)["messages"] == [
        {"role": "system", "content": "Rewrite."}, {"role": "user", "content": "1. first? / second?"}]


def test_each_cross_field_problem_is_reported():
    assert b.problems(opts({"domains": [], "strategies": []})) == [
        "options.domains: name at least one domain", "options.strategies: name at least one strategy"]
    assert b.problems(opts({"strategies": ["llm_rewrite"]})) == [
        "options.rewriter: llm_rewrite needs a generative model (a conf/models name or a mapping)"]
    assert b.problems(opts({"rewriter": 5})) == [
        "options.rewriter: expected a conf/models name or a model mapping, got 5"]
    assert b.problems(opts({"strategies": ["llm_rewrite"], "rewriter": "smollm2"})) == []
    assert b.problems(opts({"rewrite_prompt": {"system": "s", "user": "{history}"}})) == [
        "options.rewrite_prompt.user: must contain {question}"]
    assert b.problems(opts({"top_k": 0, "ann_threshold": 0})) == [
        "options.top_k: expected a positive integer, got 0", "options.ann_threshold: expected a positive integer, got 0",
        "options.top_k: 0 is below 10, the deepest cut scored"]
