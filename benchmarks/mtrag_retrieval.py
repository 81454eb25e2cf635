"""mtRAG retrieval (seeds/mtrag.txt, PROTOCOLS.md 3): retrievers x query strategies, scored as the authors' script
scores them (benchmarks.mtrag.ir_metrics). Pure Python: which files to read, which queries to ask, how to lay
out the results; jobs.retrieval runs the retrievers (actors.retrievers) on a Ray cluster.

A cell is (this benchmark, one retriever). For every strategy it writes a run in the official task format,
per-query scores and a metrics.json with the script's collections/all layout plus the first/later-turn split;
the cell's metrics hold one such block per strategy, and `table_text` lays them out as the paper's Table 3
(Recall and nDCG at 1, 3, 5, 10; one row per strategy and retriever).

Data (`data` of the benchmark config): folders or files holding, for each domain, a corpus
(`<domain>.jsonl`, `.jsonl.gz` or the official `.jsonl.zip`) and a retrieval folder (`<domain>/qrels.tsv` and
`<domain>/<strategy>.jsonl`, or the official `<domain>/qrels/dev.tsv` and `<domain>/<domain>_<strategy>.jsonl`).
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchmarks.mtrag.ir_metrics import K_VALUES, MEASURES
from benchmarks.mtrag.retrieval import (
    DOMAINS,
    STRATEGIES,
    domain,
    load_qrels,
    load_queries,
    qrels_path,
    queries_path,
    turn_group,
)
from benchmarks.options import unknown_keys

BENCHMARK = "mtrag_retrieval"
KINDS = ("retriever",)
LLM_REWRITE = "llm_rewrite"  # our own: a generative model of the registry rewrites the last turn
ALL_STRATEGIES = (*STRATEGIES, LLM_REWRITE)
STRATEGY_TITLES = {"lastturn": "Last Turn", "rewrite": "Query Rewrite", "questions": "Questions",
                   LLM_REWRITE: "LLM Rewrite (ours)"}
_USER_TAG = re.compile(r"\|user\|:\s*")

# Our few-shot rewrite prompt (PROTOCOLS.md 3: "prompt of our own, few-shot, in config"). The examples are
# made up, not taken from mtRAG, so no test conversation leaks into the prompt. {history} lists the earlier
# user turns, one per line and numbered; {question} is the last one.
REWRITE_PROMPT: dict[str, Any] = {
    "system": ("You rewrite the last question of a conversation into a standalone question that can be understood "
               "without the conversation. Keep its meaning, replace pronouns and vague references with what they "
               "refer to in the earlier questions, add nothing else. Answer with the rewritten question only."),
    "user": "Earlier questions:\n{history}\nLast question: {question}",
    "examples": [
        {"history": ["Who wrote the novel Dune?"], "question": "When was it published?",
         "rewrite": "When was the novel Dune published?"},
        {"history": ["How do I open a savings account?", "What documents do I need?"],
         "question": "Can I do it online?", "rewrite": "Can I open a savings account online?"},
        {"history": ["What is a virtual server?"], "question": "how much per month",
         "rewrite": "How much does a virtual server cost per month?"},
    ],
}
CORPUS_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zip")

DEFAULTS: dict[str, Any] = {
    "domains": list(DOMAINS),
    "strategies": ["lastturn", "rewrite", "questions"],  # the released query files
    "top_k": 10,  # the script scores @1, 3, 5, 10
    "ann_threshold": 100_000,  # dense: passages from which on a faiss HNSW index replaces exact search
    "ann": {"m": 32, "ef_construction": 200, "ef_search": 256},  # HNSW graph degree and search breadth
    # llm_rewrite: the generative model (a conf/models name, or a model mapping) and its prompt
    "rewriter": None,
    "rewrite_prompt": REWRITE_PROMPT,
    "rewrite_max_tokens": 64,
}


def check_options(options: Mapping[str, Any] | None) -> list[str]:
    """Each problem with the benchmark's options, naming the key."""
    options = dict(options or {})
    problems = unknown_keys(options, DEFAULTS, "options")
    merged = {**DEFAULTS, **options}
    for name in merged["domains"] or []:
        try:
            domain(name)
        except ValueError as e:
            problems.append(f"options.domains: {e}")
    if not merged["domains"]:
        problems.append("options.domains: name at least one domain")
    for strategy in merged["strategies"] or []:
        if strategy not in ALL_STRATEGIES:
            problems.append(f"options.strategies: unknown strategy {strategy!r} (known: {', '.join(ALL_STRATEGIES)})")
    if LLM_REWRITE in (merged["strategies"] or []) and not merged["rewriter"]:
        problems.append("options.rewriter: llm_rewrite needs a generative model (a conf/models name or a mapping)")
    prompt = merged["rewrite_prompt"]
    if not isinstance(prompt, Mapping) or not all(isinstance(prompt.get(k), str) for k in ("system", "user")):
        problems.append("options.rewrite_prompt: expected a mapping with text `system` and `user` (and `examples`)")
    elif "{question}" not in prompt["user"]:
        problems.append("options.rewrite_prompt.user: must contain {question}")
    if not merged["strategies"]:
        problems.append("options.strategies: name at least one strategy")
    for key in ("top_k", "ann_threshold"):
        if not isinstance(merged[key], int) or isinstance(merged[key], bool) or merged[key] < 1:
            problems.append(f"options.{key}: expected a positive integer, got {merged[key]!r}")
    if isinstance(merged["top_k"], int) and merged["top_k"] < max(K_VALUES):
        problems.append(f"options.top_k: {merged['top_k']} is below {max(K_VALUES)}, the deepest cut scored")
    unknown_ann = set(merged["ann"] or {}) - set(DEFAULTS["ann"])
    if unknown_ann:
        problems.append(f"options.ann: unknown keys {', '.join(sorted(unknown_ann))} (known: m, ef_construction, "
                        "ef_search)")
    return problems


def settings(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options with defaults filled in and domain names made short; ValueError if check_options objects."""
    problems = check_options(options)
    if problems:
        raise ValueError("; ".join(problems))
    merged = {**DEFAULTS, **dict(options or {})}
    merged["ann"] = {**DEFAULTS["ann"], **dict(merged["ann"] or {})}
    merged["domains"] = list(dict.fromkeys(domain(d) for d in merged["domains"]))
    merged["strategies"] = list(dict.fromkeys(merged["strategies"]))
    return merged


# ---- where the files are


def corpus_file(data: Sequence[str], name: str) -> str:
    """The corpus of a domain among the data paths: a file named `<domain>.jsonl[.gz|.zip]`, or one in a folder."""
    d = domain(name)
    wanted = [d + suffix for suffix in CORPUS_SUFFIXES]
    for path in data:
        if os.path.isfile(path) and os.path.basename(path) in wanted:
            return path
        for folder in (path, os.path.join(path, "passage_level")):  # the official corpora/passage_level/
            for file in wanted:
                if os.path.isfile(os.path.join(folder, file)):
                    return os.path.join(folder, file)
    raise FileNotFoundError(f"no corpus for {d} ({' or '.join(wanted)}) in the benchmark's data: {', '.join(data)}")


def retrieval_root(data: Sequence[str], name: str) -> str:
    """The data folder holding the domain's qrels (`<domain>/qrels.tsv` or `<domain>/qrels/dev.tsv`)."""
    for path in data:
        if os.path.isdir(path):
            try:
                qrels_path(path, name)
                return path
            except FileNotFoundError:
                continue
    raise FileNotFoundError(f"no qrels for {domain(name)} in the benchmark's data: {', '.join(data)}")


# ---- queries


def query_rows(root: str, name: str, strategies: Sequence[str], limit: int | None = None
               ) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per (task, strategy) of a domain, speaker tags stripped, and the loaders' problems.

    `limit` keeps the first N tasks of the qrels file, the same tasks for every strategy.
    """
    d = domain(name)
    qrels = load_qrels(qrels_path(root, d))
    problems = list(qrels.problems)
    tasks = list(qrels.data)[:limit] if limit is not None else list(qrels.data)
    rows = []
    for strategy in strategies:
        if strategy == LLM_REWRITE:  # the conversation so far; jobs.retrieval asks the rewriter for the query
            queries = load_queries(queries_path(root, d, "questions"))
            problems += queries.problems
            for tid in tasks:
                if tid in queries.data:
                    rows.append({"item_id": f"{BENCHMARK}/{d}/{tid}/{strategy}", "domain": d, "task_id": tid,
                                 "strategy": strategy, "query": None, "turns": user_turns(queries.data[tid])})
            continue
        queries = load_queries(queries_path(root, d, strategy), strip_tags=True)
        problems += queries.problems
        for tid in tasks:
            if tid not in queries.data:
                problems.append(f"{queries_path(root, d, strategy)}: no query for task {tid}")
                continue
            rows.append({"item_id": f"{BENCHMARK}/{d}/{tid}/{strategy}", "domain": d, "task_id": tid,
                         "strategy": strategy, "query": queries.data[tid]})
    return rows, problems


def user_turns(questions: str) -> list[str]:
    """The user turns of a released `questions` text (`|user|: ` before each), oldest first, a turn's own line
    breaks kept."""
    parts = _USER_TAG.split(questions)
    if len(parts) == 1:  # no tags: one turn a line
        return [line.strip() for line in questions.split("\n") if line.strip()]
    return [part.strip() for part in parts[1:] if part.strip()]


def rewrite_messages(turns: Sequence[str], prompt: Mapping[str, Any] = REWRITE_PROMPT) -> list[dict[str, str]]:
    """The chat that asks a generative model to rewrite the last turn: system, each few-shot example as a
    user/assistant exchange, then this conversation."""
    def user(history: Sequence[str], question: str) -> str:
        listed = "\n".join(f"{i}. {h}" for i, h in enumerate(history, 1)) or "(none)"
        return prompt["user"].format(history=listed, question=question)

    messages = [{"role": "system", "content": prompt["system"]}]
    for example in prompt.get("examples") or []:
        messages.append({"role": "user", "content": user(example["history"], example["question"])})
        messages.append({"role": "assistant", "content": example["rewrite"]})
    messages.append({"role": "user", "content": user(list(turns[:-1]), turns[-1])})
    return messages


_LEAD = re.compile(r"^\s*(?:standalone question|rewritten question|rewrite|question)\s*:\s*", re.IGNORECASE)


def clean_rewrite(text: str | None, last_turn: str) -> tuple[str, bool]:
    """(query, used_fallback): the first non-empty line of the model's answer without a leading label or
    quotes; the last turn itself where the model gave nothing usable (counted, never an error)."""
    for line in (text or "").splitlines():
        line = _LEAD.sub("", line).strip().strip('"').strip()
        if line:
            return line, False
    return last_turn, True


def prediction_rows(per_query: Iterable[Mapping[str, Any]], rankings: Mapping[str, Mapping[str, Any]],
                    strategy: str) -> list[dict[str, Any]]:
    """Item rows for the predictions partition: one per (task, strategy), with its ranking and its eight scores
    (None where the qrels do not judge the task). There is no notion of `correct` here."""
    rows = []
    for scored in per_query:
        tid = scored["task_id"]
        ranking = rankings[tid]
        d = domain(scored["Collection"])
        row = {"item_id": f"{BENCHMARK}/{d}/{tid}/{strategy}", "benchmark": BENCHMARK, "subset": d,
               "strategy": strategy, "task_id": tid, "turn": turn_group(tid), "query": ranking["query"],
               "document_ids": list(ranking["document_ids"]), "scores": [float(s) for s in ranking["scores"]],
               "correct": None, "error": None}
        row.update({m: scored["retriever_scores"].get(m) for m in MEASURES})
        rows.append(row)
    return rows


# ---- Table 3


def table_rows(metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """(strategy, retriever, the eight "all" numbers) for each strategy of each cell, strategies in the paper's
    order (last turn, rewrite, questions), retrievers in the order given."""
    rows = []
    order = {s: i for i, s in enumerate(("lastturn", "rewrite", "questions", LLM_REWRITE))}
    for cell in metrics:
        for strategy, block in (cell.get("strategies") or {}).items():
            rows.append({"strategy": strategy, "retriever": cell.get("model", "?"),
                         **{m: (block.get("all") or {}).get(m) for m in MEASURES}})
    return sorted(rows, key=lambda r: order.get(r["strategy"], len(order)))


def table_text(metrics: list[dict[str, Any]]) -> str:
    """The paper's Table 3 layout: Recall and nDCG at 1, 3, 5, 10 per retriever x strategy (the "all" row)."""
    header = ["Strategy", "Retriever"] + [f"R@{k}" for k in K_VALUES] + [f"nDCG@{k}" for k in K_VALUES]
    lines = [header]
    for row in table_rows(metrics):
        lines.append([STRATEGY_TITLES.get(row["strategy"], row["strategy"]), row["retriever"]]
                     + [_num(row[f"recall_{k}"]) for k in K_VALUES] + [_num(row[f"ndcg_cut_{k}"]) for k in K_VALUES])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = [" | ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths)))
            for line in lines]
    text.insert(1, "-+-".join("-" * w for w in widths))
    return "mtRAG retrieval (Table 3 layout; all domains, weighted as the authors' script)\n" + "\n".join(text)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
