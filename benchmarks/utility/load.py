"""Loading GTI/GTU rows (question, passage[n], ground_truth_label[n]; optional id, passages_types, answers,
dataset) through benchmarks.records.read_items: a bad row becomes an error item in place, naming file, row and
field."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

from benchmarks.columns import Field
from benchmarks.options import is_int
from benchmarks.records import Columns, Record, id_problem, items_or_errors
from benchmarks.row_types import Item
from benchmarks.utility.options import BENCHMARK

DEFAULT_SUBSET = "GTI"  # the subset of rows without a dataset
DUPLICATE = "duplicate of {} (same id, or same question)"


FIELDS = (
    Field("question", "text", "the question the passages are judged for", "QUESTION in every judgment prompt"),
    Field("passage", "list of texts", "the candidate passages", "numbered in the prompt, shuffled k times"),
    Field("ground_truth_label", "list of 0 | 1", "per passage: 1 if it has utility", "scored against the judgments"),
    Field("id", "text or integer", "the list's own id; default a hash of the question", "names the item",
          required=False),
    Field("passages_types", "list of text", "per passage its kind (e.g. ground truth, counterfactual)",
          "the report's breakdown by position and type", required=False),
    Field("answers", "text or list of texts", "gold answers (GTU rows)", "the second round's EM/F1 or ROUGE/BLEU",
          required=False),
    Field("dataset", "text", f"the source dataset; default '{DEFAULT_SUBSET}'", "the subset rows are grouped by",
          required=False),
)
EXAMPLES = (
    {"id": "q1", "question": "Who wrote Hamlet?", "passage": ["Hamlet is a tragedy by William Shakespeare.",
                                                            "Paris is the capital of France."],
     "ground_truth_label": [1, 0]},
    {"id": "q2", "question": "What is the capital of France?", "passage": ["Lyon is in France.",
                                                                         "Paris is the capital of France."],
     "ground_truth_label": [0, 1], "answers": ["Paris"], "dataset": "example"},
)


def load_items(path: str, columns: Columns | None = None) -> Iterator[Item]:
    """GTI/GTU rows from a JSONL/JSON/CSV/TSV/Parquet file or a folder of them, columns renamed by `columns`;
    bad rows come out as error items, in place. An error item keeps the row's own id unless a good row has it
    (a duplicate): then, like a row that cannot have an id, it is named by file and row, so error items keep
    distinct ids."""
    return items_or_errors(path, read_row, DUPLICATE, BENCHMARK, DEFAULT_SUBSET, columns)


def read_row(record: Record) -> tuple[dict[str, Any], list[str]]:
    """One raw row as an item, or its id and subset with everything wrong with it."""
    row = record.data or {}
    key = item_id(row) if isinstance(row.get("question"), str) or row.get("id") else fallback_id(record)
    subset = row["dataset"] if isinstance(row.get("dataset"), str) and row["dataset"] else DEFAULT_SUBSET
    problem = row_problem(row)
    if problem:
        return {"item_id": key, "subset": subset}, [problem]
    answers = row.get("answers")
    return {
        "item_id": key, "benchmark": BENCHMARK, "subset": subset,
        "question": row["question"], "passages": list(row["passage"]),
        "labels": [int(label) for label in row["ground_truth_label"]],
        "passages_types": list(row["passages_types"]) if row.get("passages_types") is not None else None,
        "answers": [answers] if isinstance(answers, str) else list(answers or []),
        "dataset": row.get("dataset"),
    }, []


def item_id(row: Mapping[str, Any]) -> str:
    """A stable id: the row's own `id` when it has one, else a hash of the question."""
    if row.get("id") not in (None, ""):
        return f"{BENCHMARK}/{row['id']}"
    return f"{BENCHMARK}/{hashlib.sha1(str(row.get('question')).encode('utf-8')).hexdigest()[:16]}"


def fallback_id(record: Record) -> str:
    """An id for rows that cannot have their own: file and row."""
    return f"{BENCHMARK}/{record.source}:{record.row}"


def row_problem(row: Mapping[str, Any]) -> str | None:
    """Everything wrong with a raw row, each problem naming its field; None for a good row."""
    problems = row_problems(row)
    return "; ".join(problems) if problems else None


def row_problems(row: Mapping[str, Any]) -> list[str]:
    """Each thing wrong with a raw row, naming its field (the labels are checked against the passages only
    where both are lists)."""
    question, passages, labels = row.get("question"), row.get("passage"), row.get("ground_truth_label")
    problems = [problem for problem in [id_problem(row)] if problem]
    if not isinstance(question, str) or not question.strip():
        problems.append("field 'question' " + ("missing" if question is None else "empty or not text"))
    passages_ok = isinstance(passages, list) and bool(passages)
    if not passages_ok:
        problems.append("field 'passage' " + ("missing" if passages is None else "not a non-empty list"))
    elif (bad := next((i for i, p in enumerate(passages) if not isinstance(p, str) or not p.strip()), None)) \
            is not None:
        problems.append(f"field 'passage': passage {bad} empty or not text")
    if not isinstance(labels, list):
        problems.append("field 'ground_truth_label' " + ("missing" if labels is None else "not a list"))
    elif passages_ok and len(labels) != len(passages):
        problems.append(f"field 'ground_truth_label': {len(labels)} labels for {len(passages)} passages")
    elif not all(is_int(label) and label in (0, 1) for label in labels):
        problems.append("field 'ground_truth_label': labels must be 0 or 1")
    types = row.get("passages_types")
    if types is not None and (not isinstance(types, list) or (passages_ok and len(types) != len(passages))):
        problems.append(f"field 'passages_types': expected a list of {len(passages) if passages_ok else 'one per'}"
                        f"{'' if passages_ok else ' passage'}")
    answers = row.get("answers")
    if answers is not None and not isinstance(answers, str) and (
            not isinstance(answers, list) or not all(isinstance(a, str) for a in answers)):
        problems.append("field 'answers': expected a list of strings")
    if row.get("dataset") is not None and not isinstance(row["dataset"], str):
        problems.append("field 'dataset': not text")
    return problems
