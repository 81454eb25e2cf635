"""The options of utility judgments: the typed schema (unknown keys, wrong types, bad choices fail naming the
key), the cross-field problems, the configs in conf/benchmarks/, prompt overrides."""
import dataclasses

import pytest
from omegaconf import OmegaConf
from utility_cases import BENCH, REAL, ROOT, opts, real_items, user

from benchmarks.options import OptionsError, typed_options
from benchmarks.utility import Options

# The defaults the options had as a dict before they were typed (they are the paper's Table 3 protocol).
DEFAULTS = {"forms": ["pointwise", "pairwise", "listwise_set", "listwise_rank"], "wordings": ["utility"],
            "orders": ["question_first"], "requirements": ["authors"], "k": 3, "gt_position": None,
            "max_pairs": None, "max_tokens": None, "temperature": None, "answer": True, "answer_m": None,
            "prompts": {}}


def test_prompt_overrides_and_option_problems():
    item = real_items()[0]
    override = {"forms": ["pointwise"], "requirements": ["none"],
                "prompts": {"forms": {"pointwise": {"instructions": {"none": "Answer 'My judgment: yes/no'."}}}}}
    assert user(BENCH.expand(item, "generative", opts(**override))[0]).endswith(
        "\n\nAnswer 'My judgment: yes/no'.")
    assert BENCH.problems(opts()) == [] and typed_options(Options, None) == Options() == opts()
    problems = BENCH.problems(opts(k=0, wordings=[], gt_position=[-1], max_pairs=0, temperature=-1, answer_m=0,
                                   prompts={"forms": {"pairwise": {"question_first": "{question} {passage}"}}}))
    assert problems == [
        "options.prompts.forms.pairwise.question_first: unknown placeholder(s) {passage}",
        "options.wordings: expected a non-empty list",
        "options.k: expected an integer >= 1",
        "options.max_pairs: expected an integer >= 1 or null",
        "options.answer_m: expected an integer >= 1 or null",
        "options.temperature: expected a number >= 0 or null",
        "options.gt_position: expected null, an integer >= 0, or a non-empty list of those",
    ]
    with pytest.raises(ValueError, match="options.k: expected an integer >= 1"):
        BENCH.expand(item, "generative", opts(k=0))
    with pytest.raises(ValueError, match="generative"):
        BENCH.expand(item, "discriminative", opts())


@pytest.mark.parametrize("raw, key", [
    ({"extra": 1}, "extra"),  # an unknown key
    ({"forms": ["listwise"]}, "forms[0]"),  # not one of the forms
    ({"orders": ["q_first"]}, "orders[0]"),
    ({"requirements": ["brief"]}, "requirements[0]"),  # none, cot, reasoning, answer_first or authors
    ({"forms": "pointwise"}, "forms"),  # a list, not one word
    ({"wordings": "utility"}, "wordings"),
    ({"k": "three"}, "k"),
    ({"k": 2.5}, "k"),
    ({"max_pairs": "all"}, "max_pairs"),
    ({"max_tokens": [64]}, "max_tokens"),
    ({"temperature": "hot"}, "temperature"),
    ({"answer": "maybe"}, "answer"),
    ({"answer_m": "mean"}, "answer_m"),
    ({"gt_position": "first"}, "gt_position"),
    ({"gt_position": [0, "x"]}, "gt_position"),
    ({"prompts": "mine.yaml"}, "prompts"),
])
def test_the_schema_names_the_key_of_an_unknown_key_a_wrong_type_or_a_bad_choice(raw, key):
    with pytest.raises(OptionsError) as caught:
        opts(**raw)
    assert caught.value.key == key and str(caught.value).startswith(f"options.{key}: ")


def test_every_cross_field_problem_names_its_key():
    cases = {
        "options.forms: expected a non-empty list": {"forms": []},
        "options.wordings: expected a non-empty list": {"wordings": []},
        "options.orders: expected a non-empty list": {"orders": []},
        "options.requirements: expected a non-empty list": {"requirements": []},
        "options.wordings: 'useful' is not one of utility, relevance": {"wordings": ["utility", "useful"]},
        "options.k: expected an integer >= 1": {"k": 0},
        "options.max_pairs: expected an integer >= 1 or null": {"max_pairs": 0},
        "options.max_tokens: expected an integer >= 1 or null": {"max_tokens": -5},
        "options.answer_m: expected an integer >= 1 or null": {"answer_m": 0},
        "options.temperature: expected a number >= 0 or null": {"temperature": -0.1},
        "options.gt_position: expected null, an integer >= 0, or a non-empty list of those": {"gt_position": -1},
        "options.prompts.wordings: missing or empty": {"prompts": {"wordings": "utility"}},
        "options.prompts.authors_requirement.pointwise: expected one of none, cot, reasoning, answer_first": {
            "prompts": {"authors_requirement": {"pointwise": "brief"}}},
    }
    for problem, raw in cases.items():
        assert BENCH.problems(opts(**raw)) == [problem], raw
    assert BENCH.problems(opts(gt_position=[])) == [
        "options.gt_position: expected null, an integer >= 0, or a non-empty list of those"]
    # a wording the prompt overrides define is a choice like the packaged ones
    wordings = {"useful": {**OmegaConf.to_container(OmegaConf.load(
        ROOT / "benchmarks" / "utility" / "prompts.yaml"))["wordings"]["utility"]}}
    assert BENCH.problems(opts(wordings=["useful"], prompts={"wordings": wordings})) == []


def test_defaults_and_the_typed_values():
    assert dataclasses.asdict(Options()) == DEFAULTS
    typed = opts(temperature=1, gt_position=[0, None, 9], k="5")
    assert (typed.temperature, type(typed.temperature), typed.gt_position, typed.k) == (1.0, float, [0, None, 9], 5)
    assert opts(gt_position=4).gt_position == 4 and BENCH.problems(opts(gt_position=[0, None, 9])) == []


def test_benchmark_configs_carry_valid_options():
    for name in ("utility", "utility_sample"):
        conf = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "benchmarks" / f"{name}.yaml"))
        typed = typed_options(Options, conf["options"])
        assert conf["module"] == "utility" and BENCH.problems(typed) == []
        assert dataclasses.asdict(typed) == {**DEFAULTS, **conf["options"]}  # the YAML's meaning, unchanged
    sample = OmegaConf.load(ROOT / "conf" / "benchmarks" / "utility_sample.yaml")
    assert sample.data == ["data/utility/candidate_passages.jsonl"]  # relative to the project root
    assert REAL.is_file()
