"""The options of utility judgments (a benchmark config's `options`) and what they resolve to: the prompt
conditions every item is judged under (Tables 2-3, Figures 4-6) and the merged prompt data.

The types say what a value may be (benchmarks.options.typed_options enforces them); `problems` adds what a
type cannot say: ranges, non-empty lists, wordings that the (possibly overridden) prompt data defines, and the
prompt data's own shape.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from benchmarks.utility.prompts import (
    FORMS,
    LISTWISE,
    Form,
    Order,
    Requirement,
    default_prompts,
    merged,
    prompt_problems,
)

BENCHMARK = "utility"  # the benchmark's name in item ids, rows, metrics and bootstrap seeds
AUTHORS = "authors"  # requirements: [authors] = the requirement of the authors' script for each form
ORDER_TAGS = {"question_first": "q_first", "passages_first": "p_first"}
RequirementChoice = Literal[Requirement, "authors"]


@dataclass(frozen=True)
class Options:
    """A utility-judgments config's options; the defaults are the paper's Table 3 protocol."""

    forms: list[Form] = field(default_factory=lambda: list(FORMS))
    wordings: list[str] = field(default_factory=lambda: ["utility"])  # names in prompts.yaml `wordings`
    orders: list[Order] = field(default_factory=lambda: ["question_first"])
    requirements: list[RequirementChoice] = field(default_factory=lambda: [AUTHORS])
    k: int = 3  # shuffles per listwise judgment
    # None: random shuffles; an int (or a list of ints / None): a ground-truth passage at that prompt position
    gt_position: int | list[int | None] | None = None
    max_pairs: int | None = None  # pairwise: None = every pair; an int = that many seeded pairs (demos only)
    max_tokens: int | None = None  # None: the engine's default (the model's max_new_tokens)
    temperature: float | None = None  # None: greedy (the engine's default)
    answer: bool = True  # GTU rows (with gold answers): answer from each evidence source (gtu.py)
    answer_m: int | None = None  # None: rank forms hand over as many passages as set forms select (gtu.py)
    prompts: dict[str, Any] = field(default_factory=dict)  # overrides of prompts.yaml, merged key by key


@dataclass(frozen=True)
class Condition:
    """One prompt condition: the row a prediction belongs to (Tables 2-3, Figures 4-6)."""

    form: str
    wording: str
    order: str
    requirement: str
    gt_position: int | None = None  # listwise only: where a ground-truth passage is placed

    @property
    def key(self) -> str:
        gt = "" if self.gt_position is None else f"/gt{self.gt_position}"
        return f"{self.form}/{self.wording}/{ORDER_TAGS[self.order]}/{self.requirement}{gt}"


@dataclass(frozen=True)
class Plan:
    """What one Options value resolves to, computed once: its conditions in config order and its prompts."""

    conditions: tuple[Condition, ...]
    prompts: dict[str, Any]


def problems(options: Options) -> list[str]:
    """What the option types cannot say, each problem naming its key; [] when the options are fine."""
    prompts = merged(default_prompts(), options.prompts)
    out = prompt_problems(prompts)
    for key in ("forms", "wordings", "orders", "requirements"):
        if not getattr(options, key):
            out.append(f"options.{key}: expected a non-empty list")
    wordings = prompts.get("wordings")
    if isinstance(wordings, Mapping) and wordings:  # else prompt_problems has said the prompt data lacks them
        out += [f"options.wordings: {w!r} is not one of {', '.join(wordings)}" for w in options.wordings
                if w not in wordings]
    if options.k < 1:
        out.append("options.k: expected an integer >= 1")
    for key in ("max_pairs", "max_tokens", "answer_m"):
        if getattr(options, key) is not None and getattr(options, key) < 1:
            out.append(f"options.{key}: expected an integer >= 1 or null")
    if options.temperature is not None and options.temperature < 0:
        out.append("options.temperature: expected a number >= 0 or null")
    if not gt_positions(options) or any(p is not None and p < 0 for p in gt_positions(options)):
        out.append("options.gt_position: expected null, an integer >= 0, or a non-empty list of those")
    return out


def gt_positions(options: Options) -> list[int | None]:
    """options.gt_position as a list: each entry is one listwise condition (None: random shuffles)."""
    return list(options.gt_position) if isinstance(options.gt_position, list) else [options.gt_position]


def plan(options: Options) -> Plan:
    """The conditions and prompts of valid options (cached: every item asks); ValueError naming every
    problem."""
    return _plan(json.dumps(dataclasses.asdict(options), sort_keys=True))


@functools.lru_cache(maxsize=32)
def _plan(options_json: str) -> Plan:
    options = Options(**json.loads(options_json))
    found = problems(options)
    if found:
        raise ValueError("; ".join(found))
    prompts = merged(default_prompts(), options.prompts)
    conditions: list[Condition] = []
    for form, wording, order, requirement in itertools.product(
            options.forms, options.wordings, options.orders, options.requirements):
        resolved = prompts["authors_requirement"][form] if requirement == AUTHORS else requirement
        for gt in (gt_positions(options) if form in LISTWISE else [None]):
            condition = Condition(form, wording, order, resolved, gt)
            if condition not in conditions:
                conditions.append(condition)
    return Plan(tuple(conditions), prompts)

