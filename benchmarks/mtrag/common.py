"""What both mtRAG benchmarks share: task ids, collection (domain) names, line readers that report bad lines,
and runs in the official task format (retrieval writes them, generation's RAG settings read them).

Upstream spells the same things two ways (task ids `<conv><::><turn>` and `<conv>::<turn>`; collections
`mt-rag-ibmcloud-elser-512-100-20240502` and `cloud`/`ibmcloud`). `task_id` and `domain` map both to one
spelling (the qrels' ids, the short domain names); run rows are kept as written and normalised where they
are scored.

Readers never stop on a bad line: it is logged, skipped and listed in `Loaded.problems` as "file:line: why",
so a caller can count and report it; so are a line that is not UTF-8, where a cut-off gzip stops, an empty
file and a folder (benchmarks.decoding). A missing file raises FileNotFoundError naming the path.
"""
from __future__ import annotations

import json
import logging
import math
import os
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from benchmarks.decoding import Line, decoded_lines, file_lines, json_object, quoted

log = logging.getLogger(__name__)

DOMAINS = ("clapnq", "cloud", "fiqa", "govt")
# The long names the official task files and scoring script use.
COLLECTIONS = {
    "clapnq": "mt-rag-clapnq-elser-512-100-20240503",
    "cloud": "mt-rag-ibmcloud-elser-512-100-20240502",
    "fiqa": "mt-rag-fiqa-beir-elser-512-100-20240501",
    "govt": "mt-rag-govt-elser-512-100-20240611",
}
_ALIASES = {"clapnq": "clapnq", "cloud": "cloud", "ibmcloud": "cloud", "fiqa": "fiqa", "govt": "govt"}
SEPARATOR = "<::>"

T = TypeVar("T")


@dataclass
class Loaded(Generic[T]):
    """What a loader read, and the problems it met ("file:line: why"): malformed lines, each skipped, and a
    qrels file's missing header line."""

    data: T
    problems: list[str] = field(default_factory=list)


# ---- ids and names


def domain(collection: str) -> str:
    """The short domain name (clapnq, cloud, fiqa, govt) of a long or short collection name."""
    name = collection.strip().lower()
    if name.startswith("mt-rag-"):
        name = name.removeprefix("mt-rag-").split("-", 1)[0]
    if name not in _ALIASES:
        raise ValueError(f"unknown mtRAG collection {quoted(collection)}: expected one of {', '.join(DOMAINS)}, "
                         f"ibmcloud, or a long name such as {COLLECTIONS['clapnq']}")
    return _ALIASES[name]


def task_id(raw: str) -> str:
    """`<conversation><::><turn>` (the qrels' spelling) from either upstream spelling; others unchanged."""
    if SEPARATOR not in raw and "::" in raw:
        conversation, _, turn_number = raw.rpartition("::")
        return f"{conversation}{SEPARATOR}{turn_number}"
    return raw


def turn(tid: str) -> int:
    """The 1-based turn number in a task id (either spelling)."""
    _, sep, number = task_id(tid).rpartition(SEPARATOR)
    if not sep or not number.isdigit():
        raise ValueError(f"task id {quoted(tid)}: expected <conversation_id><::><turn number>")
    return int(number)


def turn_group(tid: str) -> str:
    """Table 4's split: "first" for turn 1, "later" for every turn after it."""
    return "first" if turn(tid) == 1 else "later"


# ---- runs in the official task format: {task_id, Collection, contexts: [{document_id, score, text, title}]}


def read_run(path: str) -> Loaded[list[dict[str, Any]]]:
    """The rows of a run file, as written; rows the scorer cannot use are skipped and listed.

    A usable row has a text task_id, a known Collection and a list of contexts, each with a text
    document_id and a finite numeric score (text and title are optional for scoring). The released
    sample_data spells the field `collection`; such a row gets `Collection` set from it.
    """
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for where, obj in json_objects(path, ("task_id",), problems):
        if "Collection" not in obj and "collection" in obj:
            obj["Collection"] = obj["collection"]
        problem = _run_row_problem(obj)
        if problem:
            report(problems, f"{where}: {problem}")
        else:
            rows.append(obj)
    return Loaded(rows, problems)


def _run_row_problem(row: dict[str, Any]) -> str | None:
    if not isinstance(row.get("Collection"), str):
        return "field 'Collection' missing or not text"
    try:
        domain(row["Collection"])
    except ValueError as e:
        return f"field 'Collection': {e}"
    contexts = row.get("contexts")
    if not isinstance(contexts, list):
        return "field 'contexts' missing or not a list"
    for i, ctx in enumerate(contexts):
        if not isinstance(ctx, dict) or not isinstance(ctx.get("document_id"), str) or not ctx["document_id"]:
            return f"field 'contexts[{i}].document_id' missing or not text"
        score = ctx.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            return f"field 'contexts[{i}].score' missing or not a finite number"
    return None


def run_row(tid: str, collection: str, ranking: Iterable[tuple[str, float]],
            corpus: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, Any]:
    """One run row in the official format: the long collection name the official script expects, and the
    ranking's (document id, score) pairs in order, with title and text from the corpus when given."""
    contexts = []
    for pid, score in ranking:
        passage = corpus.get(pid, {}) if corpus is not None else {}
        contexts.append({"document_id": pid, "score": float(score), "text": passage.get("text", ""),
                         "title": passage.get("title", "")})
    return {"task_id": task_id(tid), "Collection": COLLECTIONS[domain(collection)], "contexts": contexts}


def write_jsonl(path: str, rows: Iterable[Mapping[str, Any]]) -> int:
    """Write rows as JSON lines (UTF-8, one object a line); returns how many."""
    n = 0
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


# ---- reading lines


def report(problems: list[str], message: str) -> None:
    """Log a problem and list it."""
    log.warning("%s", message)
    problems.append(message)


def numbered_lines(path: str, problems: list[str]) -> Iterator[tuple[str, int, str]]:
    """(where, 1-based line number, line without its newline) of a plain, .gz, or one-member .zip file. A line
    that is not UTF-8, the line where a cut-off or corrupt file stops, a corrupt zip, a folder and an empty
    file are problems; the lines around them are still read."""
    if os.path.isdir(path):
        report(problems, f"{path}:1: a folder, not a file: nothing read")
        return
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    if path.endswith(".zip"):
        try:
            with zipfile.ZipFile(path) as z:
                members = [n for n in z.namelist() if n.endswith((".jsonl", ".tsv")) and "__MACOSX" not in n]
                if len(members) != 1:
                    raise ValueError(f"{path}: expected one .jsonl or .tsv member, found {members or 'none'}")
                with z.open(members[0]) as raw:
                    yield from _numbered(f"{path}:{members[0]}", decoded_lines(raw), problems)
        except zipfile.BadZipFile as e:
            report(problems, f"{path}:1: not a readable zip file ({e})")
    else:
        yield from _numbered(path, file_lines(path), problems)


def _numbered(where: str, lines: Iterable[Line], problems: list[str]) -> Iterator[tuple[str, int, str]]:
    empty = True
    for number, line, problem in lines:
        empty = empty and line is not None and not line.strip()
        if line is None:
            report(problems, f"{where}:{number}: {problem}")
        else:
            yield where, number, line.rstrip("\r\n")
    if empty:
        report(problems, f"{where}:1: no rows in this file")


def json_objects(path: str, required: tuple[str, ...], problems: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """("file:line", object) for each JSON line that is an object with text in each required field; the first
    required field is the row's id and must not be blank."""
    for where, number, line in numbered_lines(path, problems):
        if not line.strip():
            continue
        at = f"{where}:{number}"
        obj, problem = json_object(line)
        if obj is None:
            report(problems, f"{at}: {problem}")
            continue
        missing = next((f for f in required if not isinstance(obj.get(f), str)), None)
        if missing is None and not obj[required[0]].strip():
            missing = required[0]
        if missing:
            report(problems, f"{at}: field '{missing}' missing or not text")
            continue
        yield at, obj
