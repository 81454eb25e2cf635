"""The benchmark contract as code: every registered benchmark implements it and every shipped config types
against its Options; a class that misses a required method is refused when it loads, naming the method."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from benchmarks import protocol
from benchmarks.options import OptionsError, typed_options
from benchmarks.rag_rewardbench import RagRewardBench

CONF = Path(__file__).resolve().parents[2] / "conf" / "benchmarks"


@pytest.mark.parametrize("name", protocol.benchmark_names())
def test_every_registered_benchmark_loads_with_its_options_defaults(name):
    spec = protocol.benchmark(name)
    assert isinstance(spec, (protocol.Benchmark, protocol.RetrievalBenchmark)) and spec.kinds
    assert spec.problems(typed_options(spec.Options, {})) == []


@pytest.mark.parametrize("path", sorted(CONF.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_benchmark_config_types_against_its_options(path):
    config = OmegaConf.to_container(OmegaConf.load(path))
    spec = protocol.benchmark(config["module"])
    assert spec.problems(typed_options(spec.Options, config.get("options"))) == []


def test_a_benchmark_missing_a_required_method_is_refused_by_name(monkeypatch):
    class Partial(protocol.Benchmark):
        name, kinds = "partial", ("generative",)

        @dataclass(frozen=True)
        class Options:
            pass

        def load_items(self, path):
            return iter([])

        def expand(self, item, kind, options):
            return []

    monkeypatch.setitem(protocol.BENCHMARKS, "partial", Partial)
    with pytest.raises(protocol.UnknownBenchmark, match="missing combine, measures, summarize, table_text, fields$"):
        protocol.benchmark("partial")
    monkeypatch.setitem(protocol.BENCHMARKS, "not_one", dict)
    with pytest.raises(protocol.UnknownBenchmark, match="is not a Benchmark or RetrievalBenchmark"):
        protocol.benchmark("not_one")
    with pytest.raises(protocol.UnknownBenchmark, match="unknown benchmark module 'nowhere'"):
        protocol.benchmark("nowhere")


def test_benchmarks_are_found_where_they_are_defined():
    """Each package's `benchmark` module registers its class; nothing lists them elsewhere."""
    from benchmarks.bianbench.benchmark import BianBench
    from benchmarks.mtrag.retrieval.benchmark import MtragRetrieval

    assert protocol.benchmark_names() == ["bianbench", "mtrag_generation", "mtrag_retrieval", "rag_rewardbench",
                                          "utility"]
    assert protocol.BENCHMARKS["bianbench"] is BianBench and protocol.BENCHMARKS["mtrag_retrieval"] is MtragRetrieval
    assert isinstance(protocol.benchmark("rag_rewardbench"), RagRewardBench)


def test_a_second_class_under_a_registered_name_is_refused(monkeypatch):
    monkeypatch.setitem(protocol.BENCHMARKS, "bianbench", protocol.BENCHMARKS["bianbench"])
    with pytest.raises(protocol.UnknownBenchmark, match="'bianbench' is registered twice: benchmarks.bianbench.benchmark.BianBench and .*Impostor"):
        @protocol.register("bianbench")
        class Impostor(protocol.Benchmark):
            pass


def test_optional_hooks_default_to_one_round_no_judges_and_no_encoder():
    spec, item = RagRewardBench(), {"item_id": "x", "subset": "helpful-a"}
    options = typed_options(RagRewardBench.Options, {})
    assert spec.followup(item, [], "generative", options) == []
    assert spec.routes(options) == [] and spec.text_pair_encoder(options) is None
    assert (spec.group_key(item), spec.row_key(item)) == ("helpful-a", "x")
    with pytest.raises(OptionsError, match=r"options.anything: Key 'anything' not in"):
        typed_options(RagRewardBench.Options, {"anything": 1})


@pytest.mark.parametrize("name", sorted(set(protocol.benchmark_names()) - {"rag_rewardbench"}))
def test_a_benchmark_without_validation_hooks_has_no_validation_items(name):
    """The defaults: None whatever the items (`ragjudge validate` asks with none), no bundled sample, and no
    verdict to read; RAG-RewardBench's own hooks are tested in its package's tests."""
    spec = protocol.benchmark(name)
    if isinstance(spec, protocol.RetrievalBenchmark):
        assert not hasattr(spec, "validation_items")  # rankings have no verdict to validate
        return
    assert spec.validation_items([], 3) is None and spec.validation_items([{"item_id": "x"}], 1) is None
    assert spec.validation_sample() is None
    with pytest.raises(NotImplementedError, match="has validation items but reads no verdict"):
        spec.validation_verdict({"item_id": "x"}, spec.kinds[0])


def test_a_word_where_a_mapping_belongs_is_named_by_its_key():
    spec = protocol.benchmark("mtrag_generation")
    with pytest.raises(OptionsError) as error:
        typed_options(spec.Options, {"max_tokens": {"idk": 8}, "bertscore": "minilm"})
    assert error.value.key == "bertscore" and str(error.value).startswith("options.bertscore: ")
