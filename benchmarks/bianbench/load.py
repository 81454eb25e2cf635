"""Reading Bi'anBench rows (Table 10's schema) into items; a bad row becomes an error item in its place."""
from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.bianbench.fields import BENCHMARK, LANGUAGES, SPLITS, TASKS, label_of, task_name
from benchmarks.columns import Field
from benchmarks.decoding import quoted
from benchmarks.records import Columns, error_item, read_items
from benchmarks.row_types import Item

_SPLIT_IN_NAME = re.compile(r"(?:^|[_\-. ])(en|zh|cf)$", re.IGNORECASE)


FIELDS = (
    Field("id", "text or integer", "the example's id, unique within its split", "names the item in results"),
    Field("task", "text", "Question Answering, Summarization, Data-to-Text or Machine Translation",
          "picks the Table 12 prompt"),
    Field("context", "text or list of texts", "the source the answer must be faithful to (list items joined by a "
          "blank line)", "DOCUMENT / RAW_DATA / SOURCE_TEXT in the prompt"),
    Field("question", "text", "the question (Question Answering only; may be empty elsewhere)",
          "QUESTION in the QA prompt", required=False),
    Field("answer", "text", "the output judged", "ANSWER / SUMMARY / TARGET_TEXT / TRANSLATED_TEXT in the prompt"),
    Field("label", "PASS | FAIL | 通过 | 失败", "the gold verdict", "scored against the judge's verdict"),
    Field("source_ds", "text", "the source dataset", "the subset rows are grouped by (Tables 2, 3)"),
    Field("split", "en | zh | cf", "the split; default the file name's ending (_en, _zh, _cf)",
          "picks the prompt's language", required=False),
    Field("language", "en | zh", "the language of a counterfactual (cf) row; default from its label's spelling",
          "picks the prompt's language", required=False),
    Field("type", "text", "e.g. en2zh for a translation", "kept in the item's row", required=False),
)
EXAMPLES = (
    {"id": 1, "task": "Question Answering", "context": "The Eiffel Tower is in Paris.", "question":
     "Where is the Eiffel Tower?", "answer": "It is in Rome.", "label": "FAIL", "source_ds": "example", "split": "en"},
    {"id": 2, "task": "Summarization", "context": "Rain is expected all week in Oslo.", "question": "",
     "answer": "Oslo will be rainy this week.", "label": "PASS", "source_ds": "example", "split": "en"},
)


def load_items(path: str, columns: Columns | None = None) -> Iterator[Item]:
    """Items from a JSONL/JSON/CSV/TSV/Parquet file or a folder of them, columns renamed by `columns`; bad rows
    come out as error items, in place.

    A row's split is its `split` field when it has one, else its file name's ending (_en, _zh, _cf).
    """
    for record, item, problem in read_items(path, lambda r: _read_row(r.data, r.source),
                                            "duplicate of {} (same split and id)", columns=columns):
        if problem is None:
            yield item
        else:
            data = record.data or {}
            subset = data.get("source_ds") if isinstance(data.get("source_ds"), str) else ""
            yield error_item(BENCHMARK, record, problem, subset)


def _read_row(row: dict[str, Any], source: str) -> tuple[dict[str, Any], list[str]]:
    """One row's item fields, and what is wrong with it (each problem names its field)."""
    problems: list[str] = []

    def text(field: str, required: bool = True) -> str:
        value = row.get(field)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                problems.append(f"field '{field}' " + ("missing" if value is None else "empty"))
            return ""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or (
                isinstance(value, float) and not math.isfinite(value)):
            problems.append(f"field '{field}' is not text")
            return ""
        return str(value)

    source_id = text("id")
    split = str(row.get("split") or "").strip().lower()
    if not split:
        named = _SPLIT_IN_NAME.search(Path(source).name.split(".")[0])
        split = named.group(1).lower() if named else ""
        if not named:
            problems.append(f"field 'split' missing (and the file name {Path(source).name} does not end in "
                            "_en, _zh or _cf)")
    elif split not in SPLITS:
        problems.append(f"field 'split': {quoted(row.get('split'))} is not one of {', '.join(SPLITS)}")
    task = task_name(row.get("task"))
    if task is None:
        problems.append("field 'task' missing" if row.get("task") is None else
                        f"field 'task': {quoted(row.get('task'))} is not Question Answering, Summarization, Data-to-Text"
                        f" or Machine Translation (or {', '.join(TASKS)})")
    context = row.get("context")
    if isinstance(context, list) and all(isinstance(p, str) for p in context):
        context = "\n\n".join(context)  # passages as given, headings such as "新闻【1】:" included
    if context is None:
        problems.append("field 'context' missing")
    elif not isinstance(context, str):
        problems.append("field 'context' is neither text nor a list of texts")
    elif not context.strip():
        problems.append("field 'context' empty")
    question = text("question", required=task == "qa")
    answer = text("answer")
    label = label_of(row)
    if label is None:
        problems.append("field 'label' missing" if row.get("label") is None else
                        f"field 'label': {quoted(row.get('label'))} is not PASS, FAIL, 通过 or 失败")
    subset = text("source_ds")
    kind = text("type", required=False)
    language = split if split in LANGUAGES else ""
    if split == "cf":
        stated = str(row.get("language") or "").strip().lower()
        if stated and stated not in LANGUAGES:
            problems.append(f"field 'language': {quoted(row.get('language'))} is not en or zh")
        raw_label = str(row.get("label") or "").strip()
        language = stated or ("zh" if raw_label in ("通过", "失败") else "en")
    item = {"item_id": f"{BENCHMARK}/{split}/{source_id}", "benchmark": BENCHMARK, "id": source_id,
            "split": split, "language": language, "task": task, "subset": subset, "type": kind, "label": label,
            "context": context, "question": question, "answer": answer}
    return item, problems
