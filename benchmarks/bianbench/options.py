"""Bi'anBench options: the paper's protocol as defaults (Appendix C: three runs at temperature 0.8, top-p 0.7).

Typed with benchmarks.options.typed_options: an unknown key (also a task or language under `templates`), a
wrong type or a mapping where text belongs fails there, naming the key. What types cannot say (ranges, a
readable templates file, the prompts it must hold) is `problems`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

# The seven Table 12 prompts, one file shared by the full benchmark and the sample (relative to the project).
DEFAULT_TEMPLATES_FILE = "conf/prompts/bianbench_table12.yaml"


@dataclass(frozen=True)
class TaskTemplates:
    """One task's prompts by language; None keeps the templates file's."""

    en: str | None = None
    zh: str | None = None


@dataclass(frozen=True)
class Templates:
    """Inline prompts that replace or add entries of the templates file, by task."""

    qa: TaskTemplates = field(default_factory=TaskTemplates)
    summarization: TaskTemplates = field(default_factory=TaskTemplates)
    data_to_text: TaskTemplates = field(default_factory=TaskTemplates)
    translation: TaskTemplates = field(default_factory=TaskTemplates)


class Sampling(NamedTuple):
    """How many runs are sampled, and with which settings."""

    runs: int
    temperature: float
    top_p: float


@dataclass(frozen=True)
class Options:
    """`templates_file` is relative to the project root unless absolute (None: inline prompts only);
    `templates.<task>.<en|zh>` overrides one of its prompts. `greedy`: one run at temperature 0, top-p 1,
    whatever runs, temperature and top_p say."""

    templates_file: str | None = DEFAULT_TEMPLATES_FILE
    templates: Templates | None = field(default_factory=Templates)
    runs: int = 3
    temperature: float = 0.8
    top_p: float = 0.7
    max_tokens: int = 512  # not in the paper; room for the JSON reasoning before the verdict
    greedy: bool = False

    @property
    def sampling(self) -> Sampling:
        """The runs and sampling settings in force (greedy overrides the others)."""
        if self.greedy:
            return Sampling(1, 0.0, 1.0)
        return Sampling(self.runs, self.temperature, self.top_p)


def value_problems(options: Options) -> list[str]:
    """The options whose value is out of range, each naming its key (checked even when greedy overrides it)."""
    checks = (("runs", options.runs >= 1, "a whole number >= 1"),
              ("max_tokens", options.max_tokens >= 1, "a whole number >= 1"),
              ("temperature", options.temperature >= 0, "a number >= 0"),
              ("top_p", 0 < options.top_p <= 1, "a number in (0, 1]"))
    return [f"options.{key}: {getattr(options, key)!r} is not {what}" for key, ok, what in checks if not ok]
