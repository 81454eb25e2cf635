"""The prompt data (prompts.yaml beside this file, overridable from a benchmark config) and the chat messages
built from it: one judgment request per form, and the GTU answer-generation prompt."""
from __future__ import annotations

import copy
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import yaml

PROMPTS_FILE = Path(__file__).with_name("prompts.yaml")
Form = Literal["pointwise", "pairwise", "listwise_set", "listwise_rank"]
Order = Literal["question_first", "passages_first"]
Requirement = Literal["none", "cot", "reasoning", "answer_first"]
FORMS: tuple[str, ...] = get_args(Form)
SET_FORMS = ("pointwise", "listwise_set")  # the judge answers with a set of passages
RANK_FORMS = ("pairwise", "listwise_rank")  # ... with a ranking
LISTWISE = ("listwise_set", "listwise_rank")  # ... after seeing all passages at once
ORDERS: tuple[str, ...] = get_args(Order)
REQUIREMENTS: tuple[str, ...] = get_args(Requirement)
# The placeholders each template may use besides the wording's slots.
_FORM_FIELDS = {
    "pointwise": {"question", "passage", "instruction"},
    "pairwise": {"question", "passage_0", "passage_1", "instruction"},
    "listwise_set": {"question", "number", "passages", "instruction"},
    "listwise_rank": {"question", "number", "passages", "instruction"},
}
_QA_FIELDS = {"question", "passages"}


def default_prompts() -> dict[str, Any]:
    """A fresh copy of the packaged prompt data."""
    return copy.deepcopy(_DEFAULT)


def merged(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `override` merged in key by key (nested mappings merge, anything else replaces)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def prompt_problems(prompts: Mapping[str, Any], where: str = "options.prompts") -> list[str]:
    """What is missing or malformed in merged prompt data, each problem naming its key."""
    problems: list[str] = []

    def text(path: tuple[str, ...], allowed: set[str]) -> None:
        node: Any = prompts
        for part in path:
            node = node.get(part) if isinstance(node, Mapping) else None
        key = ".".join((where, *path))
        if not isinstance(node, str):
            problems.append(f"{key}: missing or not text")
            return
        try:
            names = {field for _, field, _, _ in string.Formatter().parse(node) if field is not None}
        except ValueError as e:
            problems.append(f"{key}: bad template ({e})")
            return
        unknown = sorted(names - allowed)
        if unknown:
            problems.append(f"{key}: unknown placeholder(s) {', '.join('{' + n + '}' for n in unknown)}")

    wordings = prompts.get("wordings")
    if not isinstance(wordings, Mapping) or not wordings:
        return [f"{where}.wordings: missing or empty"]
    slot_sets = {name: set(slots) if isinstance(slots, Mapping) else set() for name, slots in wordings.items()}
    for name, slots in wordings.items():
        if not isinstance(slots, Mapping) or not all(isinstance(v, str) for v in slots.values()):
            problems.append(f"{where}.wordings.{name}: expected a mapping of slot names to text")
    common = set.intersection(*slot_sets.values())
    for name, slots in slot_sets.items():
        if slots != common:
            problems.append(f"{where}.wordings.{name}: slots differ from the other wordings' "
                            f"({', '.join(sorted(slots ^ common))})")
    for form, fields in _FORM_FIELDS.items():
        for part in ("system", *ORDERS):
            text(("forms", form, part), fields | common)
        for requirement in REQUIREMENTS:
            text(("forms", form, "instructions", requirement), common)
        if form.startswith("listwise"):
            text(("forms", form, "passage_line"), {"i", "passage"})
        authors = prompts.get("authors_requirement", {})
        if not isinstance(authors, Mapping) or authors.get(form) not in REQUIREMENTS:
            problems.append(f"{where}.authors_requirement.{form}: expected one of {', '.join(REQUIREMENTS)}")
    text(("qa", "passage_line"), {"i", "passage"})
    for part in ("factoid", "non_factoid", "closed_book_factoid", "closed_book_non_factoid"):
        text(("qa", part), _QA_FIELDS)
    return problems


def judgment_messages(prompts: Mapping[str, Any], form: str, wording: str, order: str, requirement: str,
                      question: str, shown: Sequence[str]) -> list[dict[str, str]]:
    """The chat messages of one judgment request; `shown` are the passages in prompt order (one for
    pointwise, two for pairwise, all for listwise)."""
    spec = prompts["forms"][form]
    slots = dict(prompts["wordings"][wording])
    fields: dict[str, Any] = {"question": question,
                              "instruction": spec["instructions"][requirement].format(**slots)}
    if form == "pointwise":
        fields["passage"] = shown[0]
    elif form == "pairwise":
        fields["passage_0"], fields["passage_1"] = shown
    else:
        fields["number"] = len(shown)
        fields["passages"] = "\n".join(spec["passage_line"].format(i=i, passage=p) for i, p in enumerate(shown))
    system = spec["system"].format(**slots, **fields)
    user = spec[order].format(**slots, **fields)
    return ([{"role": "system", "content": system}] if system.strip() else []) + [{"role": "user", "content": user}]


def answer_prompt(question: str, passages: Sequence[str], factoid: bool = True,
                  prompts: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
    """GTU answer generation on selected evidence (Section 5): the chat messages asking the generator to
    answer from `passages` (in the order given; none means closed book). Factoid questions (NQ, HotpotQA) ask
    for a short answer for EM/F1; non-factoid ones (MSMARCO-QA) for sentences, for ROUGE-L/BLEU."""
    qa = (prompts or _DEFAULT)["qa"]
    style = "factoid" if factoid else "non_factoid"
    if not passages:
        return [{"role": "user", "content": qa[f"closed_book_{style}"].format(question=question)}]
    lines = "\n".join(qa["passage_line"].format(i=i, passage=p) for i, p in enumerate(passages))
    return [{"role": "user", "content": qa[style].format(question=question, passages=lines)}]


with PROMPTS_FILE.open(encoding="utf-8") as _f:
    _DEFAULT: dict[str, Any] = yaml.safe_load(_f)
