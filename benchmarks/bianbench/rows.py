"""Bi'anBench prediction rows: one per sampled run of an item (`combine`), and the paper's judge ensemble, a
majority vote over several judges' rows (`ensemble`)."""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from benchmarks.bianbench.fields import BENCHMARK, label_of, language_of, split_of, task_name
from benchmarks.bianbench.options import Options
from benchmarks.bianbench.parsing import logprob_verdict, parse_reasoning, parse_verdict
from benchmarks.bianbench.prompts import template_for, templates_in_force
from benchmarks.row_types import Answer, Item, Row

VERDICTS = ("text", "logprob")
DEFAULT_VERDICT = "text"  # the paper's protocol: the verdict written after the reasoning


def combine(item: Item, answers: Iterable[Answer], kind: str, options: Options,
            verdict: str | None = None) -> list[Row]:
    """One prediction row per run.

    `prediction` is always the verdict parsed from the text (the paper's protocol: reasoning, then verdict);
    `logprob_prediction` is the verdict-first log-prob reading (None for API models). `correct` scores the
    path `verdict` names ("text", the default, or "logprob"); an ERROR or missing verdict counts as wrong. A
    failed request (e.g. context overflow) or a missing prompt template makes an error row with `correct` None.
    """
    verdict = DEFAULT_VERDICT if verdict is None else verdict
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be 'text' or 'logprob', not {verdict!r}")
    by_variant = {a["variant"]: a for a in answers}
    has_template = bool(template_for(templates_in_force(options), item))
    rows = []
    for run in range(int(options.sampling.runs)):
        answer = by_variant.get(f"run{run}")
        row: dict[str, Any] = {
            "item_id": item["item_id"], "benchmark": BENCHMARK, "split": item["split"], "task": item["task"],
            "subset": item["subset"], "language": item["language"], "type": item.get("type") or "", "run": run,
            "label": item["label"], "verdict": verdict, "prediction": None, "logprob_prediction": None,
            "reasoning": None, "text": None, "correct": None, "text_correct": None, "logprob_correct": None,
            "truncated": bool(answer and answer.get("truncated")),
            "n_tokens": int((answer or {}).get("n_tokens") or 0), "error": None,
        }
        if not has_template:
            row["error"] = (f"no prompt template for ({item['task']}, {item['language']}): "
                            f"options.templates.{item['task']}.{item['language']} missing")
        elif answer is None:
            row["error"] = f"no answer for request run{run}"
        elif answer.get("error"):
            row["error"] = str(answer["error"])
        else:
            text = answer.get("text")
            row.update(text=text, prediction=parse_verdict(text), reasoning=parse_reasoning(text),
                       logprob_prediction=logprob_verdict(answer.get("candidate_logprobs")))
            row["text_correct"] = 1.0 if row["prediction"] == item["label"] else 0.0
            if row["logprob_prediction"] is not None:
                row["logprob_correct"] = 1.0 if row["logprob_prediction"] == item["label"] else 0.0
            row["correct"] = row["text_correct"] if verdict == "text" else (row["logprob_correct"] or 0.0)
        rows.append(row)
    return rows


def ensemble(rows_by_model: dict[str, list[Row]]) -> list[Row]:
    """Majority vote of several judges per item, as rows in the prediction schema (model "ensemble(a,b,c)").

    Each judge's vote on an item is the majority of its runs' text verdicts (`prediction`); ERROR verdicts and
    failed rows do not vote, and a tie between PASS and FAIL runs makes the judge abstain. The ensemble's
    verdict is the majority of the judges' votes; a tie goes to the vote of the first judge in
    `rows_by_model` order that voted (order them by priority, as the paper's GPT-4o > Qwen2.5-72B >
    GPT-4o-mini). No vote at all gives ERROR (counted wrong); an item whose every row failed gives an error row.
    """
    name = f"ensemble({','.join(rows_by_model)})"
    by_item: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for model, rows in rows_by_model.items():
        for row in rows:
            by_item[row["item_id"]][model].append(row)
    out = []
    for item_id in sorted(by_item):
        judged = by_item[item_id]
        rows = [r for model in rows_by_model for r in judged.get(model, [])]
        first = rows[0]
        votes = {model: _majority(r.get("prediction") for r in judged.get(model, []) if not r.get("error"))
                 for model in rows_by_model}
        labels = {label_of(r) for r in rows} - {None}
        row: dict[str, Any] = {
            "item_id": item_id, "benchmark": BENCHMARK, "model": name, "split": split_of(first),
            "task": task_name(first.get("task")) or first.get("task"), "subset": first.get("subset") or "",
            "language": language_of(first), "type": first.get("type") or "", "run": 0,
            "label": labels.pop() if len(labels) == 1 else None, "verdict": "text",
            "votes": "; ".join(f"{model}={vote or '-'}" for model, vote in votes.items()),
            "prediction": None, "logprob_prediction": None, "reasoning": None, "text": None, "correct": None,
            "text_correct": None, "logprob_correct": None, "error": None,
        }
        cast = [vote for vote in votes.values() if vote]
        if all(r.get("error") for r in rows):
            row["error"] = "every judge's rows for this item failed"
        elif row["label"] is None:
            row["error"] = "the judges' rows give no gold label, or different ones"
        else:
            row["prediction"] = (_majority(cast) or cast[0]) if cast else "ERROR"
            row["correct"] = row["text_correct"] = 1.0 if row["prediction"] == row["label"] else 0.0
        out.append(row)
    return out


def _majority(verdicts: Iterable[str | None]) -> str | None:
    counts = Counter(v for v in verdicts if v in ("PASS", "FAIL"))
    if counts["PASS"] == counts["FAIL"]:
        return None
    return "PASS" if counts["PASS"] > counts["FAIL"] else "FAIL"
