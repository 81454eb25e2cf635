"""The queries a retrieval cell asks: one row per (task, strategy) from the released query files, and for our
own llm_rewrite the conversation so far, which a generative model turns into a standalone question."""
from __future__ import annotations

import re
from collections.abc import Sequence

from benchmarks.mtrag.common import domain
from benchmarks.mtrag.retrieval.data import BENCHMARK, load_qrels, load_queries, qrels_path, queries_path
from benchmarks.mtrag.retrieval.options import LLM_REWRITE, REWRITE_PROMPT, RewritePrompt
from benchmarks.row_types import Query

_USER_TAG = re.compile(r"\|user\|:\s*")
_LEAD = re.compile(r"^\s*(?:standalone question|rewritten question|rewrite|question)\s*:\s*", re.IGNORECASE)


def item_id(domain_name: str, tid: str, strategy: str) -> str:
    return f"{BENCHMARK}/{domain_name}/{tid}/{strategy}"


def query_rows(root: str, name: str, strategies: Sequence[str], limit: int | None = None
               ) -> tuple[list[Query], list[str]]:
    """One row per (task, strategy) of a domain, speaker tags stripped, and the loaders' problems.

    `limit` keeps the first N tasks of the qrels file, the same tasks for every strategy. An llm_rewrite row
    has `query` None and the user's `turns` until the rewriter has answered (`rewritten`).
    """
    d = domain(name)
    qrels = load_qrels(qrels_path(root, d))
    problems = list(qrels.problems)
    tasks = list(qrels.data)[:limit] if limit is not None else list(qrels.data)
    rows = []
    for strategy in strategies:
        if strategy == LLM_REWRITE:  # the conversation so far; the rewriter writes the query
            queries = load_queries(queries_path(root, d, "questions"))
            problems += queries.problems
            for tid in tasks:
                if tid in queries.data:
                    rows.append({"item_id": item_id(d, tid, strategy), "domain": d, "task_id": tid,
                                 "strategy": strategy, "query": None, "turns": user_turns(queries.data[tid])})
            continue
        queries = load_queries(queries_path(root, d, strategy), strip_tags=True)
        problems += queries.problems
        for tid in tasks:
            if tid not in queries.data:
                problems.append(f"{queries_path(root, d, strategy)}: no query for task {tid}")
                continue
            rows.append({"item_id": item_id(d, tid, strategy), "domain": d, "task_id": tid,
                         "strategy": strategy, "query": queries.data[tid]})
    return rows, problems


def user_turns(questions: str) -> list[str]:
    """The user turns of a released `questions` text (`|user|: ` before each), oldest first, a turn's own line
    breaks kept."""
    parts = _USER_TAG.split(questions)
    if len(parts) == 1:  # no tags: one turn a line
        return [line.strip() for line in questions.split("\n") if line.strip()]
    return [part.strip() for part in parts[1:] if part.strip()]


def rewrite_messages(turns: Sequence[str], prompt: RewritePrompt = REWRITE_PROMPT) -> list[dict[str, str]]:
    """The chat that asks a generative model to rewrite the last turn: system, each few-shot example as a
    user/assistant exchange, then this conversation."""
    def user(history: Sequence[str], question: str) -> str:
        listed = "\n".join(f"{i}. {h}" for i, h in enumerate(history, 1)) or "(none)"
        return prompt.user.format(history=listed, question=question)

    messages = [{"role": "system", "content": prompt.system}]
    for example in prompt.examples:
        messages.append({"role": "user", "content": user(example.history, example.question)})
        messages.append({"role": "assistant", "content": example.rewrite})
    messages.append({"role": "user", "content": user(list(turns[:-1]), turns[-1])})
    return messages


def clean_rewrite(text: str | None, last_turn: str) -> tuple[str, bool]:
    """(query, used_fallback): the first non-empty line of the model's answer without a leading label or
    quotes; the last turn itself where the model gave nothing usable (counted, never an error)."""
    for line in (text or "").splitlines():
        line = _LEAD.sub("", line).strip().strip('"').strip()
        if line:
            return line, False
    return last_turn, True


def rewritten(row: Query, text: str | None) -> tuple[Query, bool]:
    """An llm_rewrite row with the rewriter's question as its query (its turns dropped), and whether the
    answer was unusable and the last turn stands in."""
    query, fell_back = clean_rewrite(text, row["turns"][-1])
    return {**{k: v for k, v in row.items() if k != "turns"}, "query": query}, fell_back
