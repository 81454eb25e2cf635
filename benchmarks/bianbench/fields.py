"""The names Bi'anBench rows use (splits, languages, tasks, labels) and how a row's are read back, so that the
loader, the rows, the reducer and the tables agree on them."""
from __future__ import annotations

import re
from typing import Any

BENCHMARK = "bianbench"
KINDS = ("generative",)
SPLITS = ("en", "zh", "cf")
LANGUAGES = ("en", "zh")
TASKS = ("qa", "summarization", "data_to_text", "translation")
# Row `task` values: the paper's names (Table 10) and our short ones; compared lower-case, '-'/' ' as '_'.
TASK_NAMES = {"question_answering": "qa", "qa": "qa", "summarization": "summarization",
              "data_to_text": "data_to_text", "machine_translation": "translation", "translation": "translation"}
LABELS = {"PASS": "PASS", "FAIL": "FAIL", "通过": "PASS", "失败": "FAIL"}


def task_name(value: Any) -> str | None:
    """The short task name of a row's `task` ('Data-to-Text' -> 'data_to_text'); None when unknown."""
    if not isinstance(value, str):
        return None
    return TASK_NAMES.get(re.sub(r"[\s\-]+", "_", value.strip().lower()))


def split_of(row: dict[str, Any]) -> str:
    """A row's split: its `split`, else the one in its item id (bianbench/<split>/<id>)."""
    if row.get("split"):
        return str(row["split"]).lower()
    parts = str(row.get("item_id", "")).split("/")
    return parts[1].lower() if len(parts) >= 3 and parts[0] == BENCHMARK else ""


def language_of(row: dict[str, Any]) -> str:
    """A row's language: its `language`, else its split's (en, zh), else its label's spelling (CF)."""
    if row.get("language"):
        return str(row["language"]).lower()
    split = split_of(row)
    if split in LANGUAGES:
        return split
    label = str(row.get("label") or "").strip()
    return "zh" if label in ("通过", "失败") else "en" if label.upper() in ("PASS", "FAIL") else ""


def label_of(row: dict[str, Any]) -> str | None:
    """A row's gold label as PASS or FAIL, whichever spelling it has (通过 / 失败, any case); None when unknown."""
    return LABELS.get(str(row.get("label") or "").strip().upper())
