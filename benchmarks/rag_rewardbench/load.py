"""Loading RAG-RewardBench pairs: JSONL/JSON/CSV/TSV/Parquet files or a folder of them (the released files are one
per category), each pair an item with a stable id; bad rows come out as error items in place.

Two forms of a row are read. The released one has the retrieved references inlined in `prompt` (Appendix D:
"## References / Reference [1] / Title: ... / Text: ... / Using the references listed above, answer the
following question in detail. / ## Question: ... / ## Response:"). The common RAG form has `question` and
`passages` (or `context`), a list of texts or of {title, text} objects, which is rendered into that layout, so
the model sees every passage as the paper's models saw theirs.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from benchmarks.columns import Field
from benchmarks.records import Columns, Record, id_problem, items_or_errors
from benchmarks.row_types import Item

BENCHMARK = "rag_rewardbench"
DEFAULT_SUBSET = "all"  # the subset of a row that names none: counted in Overall, in no Table 2 column
OPTIONAL_FIELDS = ("chosen_model", "reject_model")
DUPLICATE = "duplicate of {} (same id, or same subset, prompt, chosen and reject)"
SYNTHETIC = "synthetic-"  # subset and id prefix of generated stand-in pairs (synthetic.py): never a result
PASSAGE_FIELDS = ("passages", "context")  # the RAG form's references, by either name
# The released prompt's layout around its references and question (Appendix D).
REFERENCES_HEADING = "## References"
QUESTION_LINE = "Using the references listed above, answer the following question in detail.\n## Question: {question}"
RESPONSE_LINE = "## Response:"

FIELDS = (
    Field("prompt", "text", "needed unless the row has `question`: the prompt as released (references, question, "
          "'## Response:'; Appendix D)",
          "the user turn both responses answer; 'Prompt:' in Table 6's judge prompt", required=False),
    Field("question", "text", "the user's question (the RAG form, when there is no `prompt`)",
          "rendered after '## Question:' below the references", required=False, unless="prompt"),
    Field("passages", "list of text or of {title, text}", "the retrieved passages (the RAG form)",
          "rendered as 'Reference [i] / Title: / Text:' under '## References'", required=False, unless="prompt"),
    Field("context", "list of text or of {title, text}", "another name for `passages`", "as `passages`",
          required=False, unless="prompt"),
    Field("chosen", "text", "the better response", "scored (or judged) against `reject`"),
    Field("reject", "text", "the worse response", "scored (or judged) against `chosen`"),
    Field("subset", "text", f"e.g. reason-hotpotqa; default '{DEFAULT_SUBSET}'",
          "its prefix before the first '-' picks the Table 2 column (helpful, reason, citation, harmless, abstain, "
          "conflict); any other subset counts in Overall only", required=False),
    Field("id", "text or integer", "the pair's own id; default a hash of the pair", "names the item in results",
          required=False),
    Field("chosen_model", "text", "the model that wrote `chosen`", "the report's self-preference bias",
          required=False),
    Field("reject_model", "text", "the model that wrote `reject`", "the report's self-preference bias",
          required=False),
)
EXAMPLES = (
    {"question": "Who wrote Hamlet?", "passages": [{"title": "Hamlet", "text": "Hamlet is a tragedy by William "
                                                    "Shakespeare."}],
     "chosen": "William Shakespeare wrote Hamlet [1].", "reject": "Christopher Marlowe wrote Hamlet."},
    {"prompt": "## References\nReference [1]\nTitle: Paris\nText: Paris is the capital of France.\nUsing the "
               "references listed above, answer the following question in detail.\n## Question: What is the "
               "capital of France?\n## Response:",
     "chosen": "Paris [1].", "reject": "Lyon.", "subset": "helpful-example", "id": "example-2"},
)


def is_synthetic(subset: str) -> bool:
    """Whether a subset holds generated stand-in pairs, which no reported accuracy may include."""
    return subset.startswith(SYNTHETIC)


def category(subset: str) -> str:
    """The Table 2 column of a subset: its prefix before the first '-' (e.g. 'reason-hotpotqa' -> 'reason')."""
    return subset.split("-", 1)[0]


def item_id(row: dict[str, Any]) -> str:
    """A stable id: the row's own `id` when it has one, else a hash of the pair (independent of file order)."""
    if row.get("id") not in (None, ""):
        return f"{BENCHMARK}/{row['id']}"
    text = "\0".join(str(row.get(field) or "") for field in ("subset", "prompt", "chosen", "reject"))
    return f"{BENCHMARK}/{hashlib.sha1(text.encode('utf-8')).hexdigest()[:16]}"


def rendered_prompt(question: str, passages: list[dict[str, str]]) -> str:
    """The released prompt's layout for a question and its passages ({title, text}, in order)."""
    references = [f"Reference [{k}]\n" + f"Title: {p.get('title', '')}".rstrip() + f"\nText: {p['text']}"
                  for k, p in enumerate(passages, 1)]
    return "\n".join([*([REFERENCES_HEADING, *references] if references else []),
                      QUESTION_LINE.format(question=question), RESPONSE_LINE])


def read_passages(value: Any, field: str) -> tuple[list[dict[str, str]], str | None]:
    """The RAG form's passages as {title, text}, or the problem naming the field (and the passage) at fault. A
    text that holds a JSON list (a CSV cell written by json.dumps) is that list; any other text is one passage."""
    if isinstance(value, str):
        if value.lstrip().startswith("["):
            try:
                value = json.loads(value)
            except ValueError:
                return [], f"field '{field}' starts like a JSON list but is not valid JSON"
        else:
            value = [value]
    if not isinstance(value, list):
        return [], f"field '{field}' is not a list of texts or of {{title, text}} objects"
    passages = []
    for k, passage in enumerate(value):
        if isinstance(passage, str):
            passage = {"text": passage}
        if not isinstance(passage, dict) or not isinstance(passage.get("text"), str):
            return [], f"field '{field}[{k}]' is neither text nor an object with a 'text'"
        if not isinstance(passage.get("title") or "", str):
            return [], f"field '{field}[{k}].title' is not text"
        passages.append({"title": passage.get("title") or "", "text": passage["text"]})
    return passages, None


def read_pair(record: Record) -> tuple[dict[str, Any], list[str]]:
    """One row's item, and every problem it has (an id that is not one, a required field missing, empty or not
    text, passages that are not passages), each naming its field."""
    row = dict(record.data or {})
    if row.get("subset") in (None, ""):
        row["subset"] = DEFAULT_SUBSET
    problems = [problem for problem in [id_problem(row)] if problem]
    if row.get("prompt") is None and row.get("question") is not None:
        passages, problem = [], None
        field = next((name for name in PASSAGE_FIELDS if row.get(name) is not None), None)
        if field is not None:
            passages, problem = read_passages(row[field], field)
        if problem:
            problems.append(problem)
        if not isinstance(row["question"], str) or not row["question"].strip():
            problems.append("field 'question' empty or not text")
        else:
            row["prompt"] = rendered_prompt(row["question"], passages)
    required = ("prompt", "chosen", "reject", "subset")
    for field in required:
        if not isinstance(row.get(field), str) or not row[field].strip():
            if field == "prompt" and row.get("question") is not None:
                continue  # named above, as the question
            problems.append(f"field '{field}' " + ("missing" if row.get(field) is None else "empty or not text")
                            + (" (or give `question` and `passages`)" if field == "prompt" and row.get(field) is None
                               else ""))
    subset = row["subset"] if isinstance(row.get("subset"), str) else ""
    item = {"item_id": item_id(row), "benchmark": BENCHMARK, "subset": subset,
            **{field: row.get(field) for field in ("prompt", "chosen", "reject")},
            **{field: str(row.get(field) or "") for field in OPTIONAL_FIELDS}}
    return item, problems


def load_items(path: str, columns: Columns | None = None) -> Iterator[Item]:
    """Every pair under `path`, its columns renamed by `columns` (field -> column); a bad row is an error item
    in place (records.items_or_errors)."""
    return items_or_errors(path, read_pair, DUPLICATE, BENCHMARK, columns=columns)
