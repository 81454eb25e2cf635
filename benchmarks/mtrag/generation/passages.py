"""Which tasks a run covers and the passages a task's generator and judges see in the configured setting
(Reference: the task's own; Reference+RAG: those, then retrieved ones up to `top_k`; Full RAG: the top
`top_k` retrieved, from a run file or the task's retrieved_contexts)."""
from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from benchmarks.mtrag.common import read_run, task_id
from benchmarks.mtrag.generation.options import Options, wanted_tasks
from benchmarks.paths import project_path
from benchmarks.row_types import Item


def selected(item: Mapping[str, Any], options: Options) -> bool:
    """Whether the task is part of the run: in `task_ids` (when given) and within `max_reference_passages`."""
    wanted, limit = wanted_tasks(options), options.max_reference_passages
    return (wanted is None or item["task_id"] in wanted) and (limit is None or len(item["passages"]) <= limit)


def setting_passages(item: Mapping[str, Any], options: Options) -> list[dict[str, str]]:
    """The passages the generator sees in the configured setting, in prompt order; the judges and Bert-KPrec
    use the same ones. ValueError (naming the task and the source) when a RAG setting has no retrieved
    passages for the task, or one without text."""
    if options.setting == "reference":
        return list(item["passages"])
    if options.retrieved_file:
        retrieved = _retrieved_file(options.retrieved_file).get(item["task_id"])
        source = f"options.retrieved_file {options.retrieved_file}"
    else:
        retrieved, source = item.get("retrieved"), "the task's field 'retrieved_contexts'"
    if retrieved is None:
        raise ValueError(f"task {item['task_id']}: setting {options.setting} needs retrieved passages, and {source} "
                         "has none for it")
    if options.setting == "full_rag":
        chosen = retrieved[: options.top_k]
    else:  # reference_rag: the reference passages, then retrieved ones they lack, up to top_k in all
        known = {p["document_id"] for p in item["passages"] if p["document_id"]}
        extra = [p for p in retrieved if not p["document_id"] or p["document_id"] not in known]
        chosen = list(item["passages"]) + extra[: max(0, options.top_k - len(item["passages"]))]
    empty = next((p["document_id"] or "?" for p in chosen if not p["text"].strip()), None)
    if empty is not None:
        raise ValueError(f"task {item['task_id']}: retrieved passage {empty} in {source} has no text")
    return chosen


@functools.lru_cache(maxsize=4)
def _retrieved_file(path: str) -> dict[str, list[dict[str, str]]]:
    """Task id -> retrieved passages of a run file in the official task format, in the order written (a run
    lists each ranking best first); rows the run reader cannot use are skipped (and logged by it)."""
    rows = read_run(str(project_path(path))).data
    return {task_id(row["task_id"]): [{"document_id": c["document_id"], "title": str(c.get("title") or ""),
                                       "text": str(c.get("text") or "")} for c in row["contexts"]]
            for row in rows}


def check_items(items: Iterable[Item], options: Options) -> list[str]:
    """What the data lacks for these options, found before any engine starts: task ids not in the data,
    responses-given tasks without predictions, RAG-setting tasks without retrieved passages."""
    items = [i for i in items if not i.get("error")]
    problems = []
    wanted = wanted_tasks(options)
    if wanted is not None:
        missing = sorted(wanted - {i["task_id"] for i in items})
        if missing:
            problems.append(f"options.task_ids: {len(missing)} task id(s) not in the data, e.g. {missing[0]}")
    chosen = [i for i in items if selected(i, options)]
    if options.responses == "given":
        lacking = [i["task_id"] for i in chosen if i["prediction"] is None]
        if lacking:
            problems.append(f"options.responses: given, but {len(lacking)} task(s) have no predictions[0].text, "
                            f"e.g. {lacking[0]}")
    unusable = []
    for item in chosen:
        try:
            setting_passages(item, options)
        except ValueError as e:
            unusable.append(str(e))
    if unusable:
        problems.append(f"options.setting: {options.setting}: {len(unusable)} task(s) without usable retrieved "
                        f"passages, e.g. {unusable[0]}")
    return problems
