"""Loading mtRAG generation tasks in the official task format (the released reference.jsonl, MTRAG-UN's tasks,
the authors' sample responses); a bad row is an error item naming file, row and field."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from benchmarks.columns import Field
from benchmarks.decoding import quoted
from benchmarks.mtrag.common import domain, task_id
from benchmarks.mtrag.generation.options import BENCHMARK
from benchmarks.mtrag.generation.scores import ANSWERABILITY
from benchmarks.options import is_int
from benchmarks.records import Columns, error_item, read_items
from benchmarks.row_types import Item

NA = "N/A"  # a task without a question type or multi-turn label


FIELDS = (
    Field("task_id", "text", "the task's id (task_id, or its other spelling)", "names the item"),
    Field("Collection", "text", "the corpus (long or short name: clapnq, cloud, fiqa, govt)", "the domain breakdown"),
    Field("collection", "text", "another spelling of `Collection`", "as `Collection`", required=False,
          unless="Collection"),
    Field("input", "list of {speaker, text}", "the conversation, the user's turn last",
          "the Appendix D.2 prompt's conversation"),
    Field("contexts", "list of {text, document_id, title}", "the reference passages", "the Reference setting's "
          "passages and RAGAS's context"),
    Field("targets", "list of {text}", "the reference answer first", "RougeL, Bert-Rec, Bert-KPrec, RB_llm"),
    Field("answerability", "ANSWERABLE | UNANSWERABLE | PARTIAL | CONVERSATIONAL", "the task's answerability "
          "(top level, else the last turn's enrichments)", "the IDK conditioning and the Appendix I breakdown"),
    Field("Question Type", "text or list", "the question type (top level or enrichments); default N/A",
          "the Appendix I breakdown", required=False),
    Field("Multi-Turn", "text or list", "the multi-turn type (top level or enrichments); default N/A",
          "the Appendix I breakdown", required=False),
    Field("turn", "integer", "the turn number; default counted from `input`", "first vs later turns",
          required=False),
    Field("conversation_id", "text", "the conversation's id", "kept in the item's row", required=False),
    Field("predictions", "list of {text}", "a response someone else generated (responses-given mode)",
          "judged instead of the model's own answer", required=False),
    Field("retrieved_contexts", "list of {text, document_id, title}", "retrieved passages, best first",
          "the Reference+RAG and Full RAG settings' passages", required=False),
)


def load_items(path: str, columns: Columns | None = None) -> Iterator[Item]:
    """Tasks in the official generation-task format (JSONL/JSON/Parquet, or a folder of them); bad rows come
    out as error items, in place, naming file, row and field.

    Read per task: task_id (both id spellings), Collection (or collection; long or short names), input turns
    (speaker user/agent, text; the last one the user's), contexts (text; document_id, title), targets[0].text
    (the reference answer), answerability, Question Type and Multi-Turn (top level, else the last turn's
    enrichments; a missing type reads "N/A"), turn (else counted from the input), optional predictions[0].text
    (responses-given mode) and optional retrieved_contexts (passages for the RAG settings, best first).
    """
    for record, item, problem in read_items(path, lambda r: _read_row(r.data), "field 'task_id': duplicate of {}",
                                            columns=columns):
        yield item if problem is None else error_item(BENCHMARK, record, problem, item.get("subset", ""))


def _read_row(row: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """One row's item fields and what is wrong with it (each problem names its field)."""
    problems: list[str] = []
    raw_id = row.get("task_id")
    tid = task_id(raw_id.strip()) if isinstance(raw_id, str) and raw_id.strip() else ""
    if not tid:
        problems.append("field 'task_id' missing or not text")
    collection = row.get("Collection", row.get("collection"))
    domain_name = ""
    try:
        domain_name = domain(collection) if isinstance(collection, str) else ""
        if not domain_name:
            problems.append("field 'Collection' missing or not text")
    except ValueError as e:
        problems.append(f"field 'Collection': {e}")
    turns = _turns(row.get("input"), problems)
    enrichments = _last_enrichments(row.get("input"))
    labels = _labels(row, enrichments, "answerability")
    answerability = labels[0].upper() if labels else ""
    if not labels:
        problems.append("field 'answerability' missing (top level or the last turn's enrichments)")
    elif answerability not in ANSWERABILITY:
        problems.append(f"field 'answerability': {quoted(labels[0])} is not one of {', '.join(ANSWERABILITY)}")
    number = _turn_number(row.get("turn"), turns, problems)
    reference = _first_text(row.get("targets"), "targets", problems, required=True)
    prediction = _first_text(row.get("predictions"), "predictions", problems, required=False)
    item = {
        "item_id": f"{BENCHMARK}/{tid}", "benchmark": BENCHMARK, "subset": answerability, "task_id": tid,
        "conversation_id": row.get("conversation_id") if isinstance(row.get("conversation_id"), str) else "",
        "collection": domain_name, "answerability": answerability,
        "question_type": "+".join(sorted(_labels(row, enrichments, "Question Type"))) or NA,
        "multi_turn": "+".join(sorted(_labels(row, enrichments, "Multi-Turn"))) or NA,
        "turn": number, "turn_group": "first" if number == 1 else "later", "turns": turns,
        "passages": _passages_field(row.get("contexts"), "contexts", problems, required=True),
        "retrieved": _passages_field(row.get("retrieved_contexts"), "retrieved_contexts", problems, required=False),
        "reference": reference, "prediction": prediction,
    }
    return item, problems


def _turns(value: Any, problems: list[str]) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        problems.append("field 'input' missing or not a non-empty list of turns")
        return []
    turns = []
    for i, t in enumerate(value):
        if not isinstance(t, dict) or t.get("speaker") not in ("user", "agent"):
            problems.append(f"field 'input[{i}].speaker' is not user or agent")
        elif not isinstance(t.get("text"), str):
            problems.append(f"field 'input[{i}].text' missing or not text")
        else:
            turns.append({"speaker": t["speaker"], "text": t["text"]})
    if len(turns) == len(value) and (turns[-1]["speaker"] != "user" or not turns[-1]["text"].strip()):
        problems.append(f"field 'input[{len(value) - 1}]': the last turn must be the user's question")
    return turns


def _last_enrichments(value: Any) -> dict[str, Any]:
    if isinstance(value, list) and value and isinstance(value[-1], dict):
        enrichments = value[-1].get("enrichments")
        return enrichments if isinstance(enrichments, dict) else {}
    return {}


def _labels(row: dict[str, Any], enrichments: dict[str, Any], key: str) -> list[str]:
    """A label list at the top level or in the last turn's enrichments (key in any case); a bare string
    counts as a one-element list; NaN (pandas' missing value in the released files) or null as missing."""
    for source in (row, enrichments):
        for name, value in source.items():
            if name.lower() != key.lower():
                continue
            values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            labels = [v.strip() for v in values if isinstance(v, str) and v.strip()]
            if labels:
                return labels
    return []


def _turn_number(value: Any, turns: list[dict[str, str]], problems: list[str]) -> int:
    counted = sum(1 for t in turns if t["speaker"] == "user")
    if value is None:
        return counted
    if is_int(value) and value >= 1:
        return value
    if isinstance(value, str) and value.strip().isdigit() and int(value) >= 1:
        return int(value)
    problems.append(f"field 'turn': {quoted(value)} is not a turn number")
    return counted


def _first_text(value: Any, field: str, problems: list[str], required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, list) or not value or not isinstance(value[0], dict) \
            or not isinstance(value[0].get("text"), str) or not value[0]["text"].strip():
        problems.append(f"field '{field}[0].text' missing or not text")
        return None
    return value[0]["text"]


def _passages_field(value: Any, field: str, problems: list[str], required: bool) -> list[dict[str, str]] | None:
    if value is None and not required:
        return None
    if not isinstance(value, list):
        problems.append(f"field '{field}' missing or not a list")
        return []
    passages = []
    for i, p in enumerate(value):
        if not isinstance(p, dict) or not isinstance(p.get("text"), str) or not p["text"].strip():
            problems.append(f"field '{field}[{i}].text' missing or not text")
            continue
        passages.append({"document_id": str(p.get("document_id") or ""), "title": str(p.get("title") or ""),
                         "text": p["text"]})
    return passages
