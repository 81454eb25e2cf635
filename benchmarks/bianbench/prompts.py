"""The judge prompts of Table 12 (Appendix B.1): which ones are in force, how an item fills one, and what is
wrong with them (found before a run, not per request)."""
from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Any

import yaml

from benchmarks.bianbench.fields import TASKS
from benchmarks.bianbench.options import Options
from benchmarks.paths import project_path

# What each task's prompt is filled with: placeholder -> item field.
PLACEHOLDERS = {
    "qa": {"question": "question", "document": "context", "answer": "answer"},
    "summarization": {"document": "context", "summary": "answer"},
    "data_to_text": {"raw_data": "context", "target_text": "answer"},
    "translation": {"source_text": "context", "translated_text": "answer"},
}
# The prompts of Table 12: every (task, language) pair the paper has a prompt for.
PAPER_PROMPTS = tuple((task, "en") for task in TASKS) + (("qa", "zh"), ("summarization", "zh"),
                                                        ("translation", "zh"))
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@functools.lru_cache(maxsize=8)
def _templates_file(path: str) -> dict[str, dict[str, str]]:
    """The `templates` mapping of a prompt file, read once per process (expand runs once per item)."""
    full = project_path(path)
    try:
        loaded = yaml.safe_load(full.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ValueError(f"options.templates_file: cannot read {full}: {e}") from None
    templates = loaded.get("templates") if isinstance(loaded, dict) else None
    if isinstance(templates, dict):
        return templates
    raise ValueError(f"options.templates_file: {full} has no 'templates' mapping at the top level")


def templates_in_force(options: Options) -> dict[str, dict[str, Any]]:
    """task -> language -> prompt: the templates file's, with the inline `templates` over them.

    Raises ValueError (naming the key) on an unreadable templates file; `template_problems` reports that
    before a run.
    """
    templates: dict[str, dict[str, Any]] = {}
    if options.templates_file:
        templates = {task: dict(langs) for task, langs in _templates_file(options.templates_file).items()
                     if isinstance(langs, Mapping)}
    inline = asdict(options.templates) if options.templates else {}
    for task, langs in inline.items():
        given = {language: text for language, text in langs.items() if text is not None}
        if given:
            templates.setdefault(task, {}).update(given)
    return templates


def template_for(templates: Mapping[str, Mapping[str, Any]], item: Mapping[str, Any]) -> str | None:
    """The prompt for the item's (task, language); None (or empty) when there is none."""
    return templates.get(item["task"], {}).get(item["language"])


def prompt(item: Mapping[str, Any], template: str) -> str:
    """The template filled with the item, in one pass: braces that name no placeholder stay as they are."""
    values = {name: str(item[field]) for name, field in PLACEHOLDERS[item["task"]].items()}
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def template_problems(options: Options) -> list[str]:
    """An unreadable templates file, a Table 12 prompt missing, a placeholder missing or unknown; each names
    its key."""
    try:
        templates = templates_in_force(options)
    except ValueError as e:
        return [str(e)]
    problems = [f"options.templates.{task}.{language}: missing" for task, language in PAPER_PROMPTS
                if not templates.get(task, {}).get(language)]
    for task in TASKS:
        for language, template in templates.get(task, {}).items():
            problems += _placeholder_problems(task, language, template)
    return problems


def _placeholder_problems(task: str, language: str, template: Any) -> list[str]:
    key = f"options.templates.{task}.{language}"
    if not isinstance(template, str):
        return [f"{key}: not text"]
    names = set(_PLACEHOLDER.findall(template))
    wanted = set(PLACEHOLDERS[task])
    problems = [f"{key}: placeholder {{{name}}} missing" for name in sorted(wanted - names)]
    fills = ", ".join(f"{{{w}}}" for w in PLACEHOLDERS[task])
    problems += [f"{key}: unknown placeholder {{{name}}} ({task} fills {fills})"
                 for name in sorted(names - wanted)]
    return problems


def check_items(items: Iterable[Mapping[str, Any]], options: Options) -> list[str]:
    """The (task, language) pairs the data needs and the options lack, one message per pair: the pipeline fails
    the cell with them before an engine starts. Called directly (e.g. `plan`), such items get no requests
    (expand) and one error row per run (combine) instead of an exception."""
    templates = templates_in_force(options)
    needed: dict[tuple[str, str], list[str]] = defaultdict(list)
    for item in items:
        if not item.get("error") and not template_for(templates, item):
            needed[(item["task"], item["language"])].append(item["item_id"])
    return [f"options.templates.{task}.{language}: missing (needed by {len(ids)} item(s), e.g. {ids[0]})"
            for (task, language), ids in sorted(needed.items())]
