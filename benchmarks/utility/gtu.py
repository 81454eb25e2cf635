"""GTU answer generation on selected evidence (seeds/utility_judgments.txt Section 5, Table 4).

An item with gold answers (a GTU row), under options.answer (default true), gets a second round once its
judgments are in: the generator answers the question once per evidence source, with the passages in the
order listed (original indices; the request's `permutation`):

- none: no passage (closed book); dense: every candidate, in retrieval order; ground_truth: the labelled
  passages, in retrieval order. A GTU row need not have one among its candidates, and the paper's
  ground-truth evidence for those is not in the row: its ground_truth source is an error row, not an answer;
- each set condition (pointwise, listwise-set): its voted selection, in retrieval order;
- each listwise-set condition with k > 1 also as `<condition>/<k>-sampling`: metrics.k_sampling_evidence of
  its k shuffles (as many passages as the most frequent selection holds, most votes first); with k = 1 it
  equals the selection and is left out;
- each rank condition (pairwise, listwise-rank): the top m of its voted ranking. The paper hands set and rank
  forms the same number of passages ("to ensure fairness"); the set conditions of one item may select
  different numbers, so m is ONE number per item, the same for every rank condition: the mean size of the
  item's set selections (set conditions that did not fail), rounded half up (0 when they all select
  nothing: then the rank forms answer closed book, as those sets do). options.answer_m fixes m instead, and
  is needed when no set form is configured.

A source without evidence (no labelled passage, its judgments failed, or no m) gets no request and a QA row
with the error, so its n counts only the questions it could answer.
Answers are scored as generated, with SQuAD normalisation inside the metrics: factoid datasets (NQ,
HotpotQA, rows without a dataset) by EM and token F1, best over the gold answers, correct = F1; MSMARCO-QA
(non-factoid) by ROUGE-L (best over gold answers) and sentence BLEU-1..4 (all gold answers as references),
correct = ROUGE-L. QA rows have form "qa" and condition "qa/<source>", so they never mix with judgment rows.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.formatting import mean
from benchmarks.row_types import Answer, Item, Row
from benchmarks.stats import bootstrap_ci
from benchmarks.utility.metrics import bleu, exact_match, rouge_l, token_f1, top_m
from benchmarks.utility.prompts import SET_FORMS, answer_prompt

FIXED_SOURCES = ("none", "dense", "ground_truth")
VARIANT = "answer/"  # + source: the variant of an answer request
CONDITION = "qa/"  # + source: the condition of a QA row
FACTOID_METRICS = ("em", "f1")
NON_FACTOID_METRICS = ("rouge_l", "bleu_1", "bleu_2", "bleu_3", "bleu_4")
TITLES = {"em": "EM", "f1": "F1", "rouge_l": "ROUGE-L", "bleu_1": "BLEU-1", "bleu_2": "BLEU-2",
          "bleu_3": "BLEU-3", "bleu_4": "BLEU-4"}


@dataclass(frozen=True)
class Evidence:
    """What one source hands the generator: original passage indices in prompt order, or why it cannot."""

    source: str
    passages: tuple[int, ...] | None
    m: int | None = None  # rank sources: the number of top-ranked passages taken
    problem: str | None = None


def wants_answers(item: Mapping[str, Any], answer: bool) -> bool:
    """GTU rows (with gold answers) are answered unless options.answer is false; GTI rows never are."""
    return bool(answer and item.get("answers"))


def is_factoid(dataset: str | None) -> bool:
    """MSMARCO-QA (any spelling) asks for sentences; NQ, HotpotQA and rows without a dataset for short
    answers."""
    return not re.sub(r"[^a-z]", "", (dataset or "").lower()).startswith("msmarco")


def evidence_size(judgment_rows: Sequence[Mapping[str, Any]], answer_m: int | None) -> int | None:
    """m for the rank sources of one item (module docstring); None when nothing sizes it."""
    if answer_m is not None:
        return answer_m
    sizes = [len(r["selected"]) for r in judgment_rows if r["form"] in SET_FORMS and not r["error"]]
    return math.floor(sum(sizes) / len(sizes) + 0.5) if sizes else None


def evidence_sources(item: Mapping[str, Any], judgment_rows: Sequence[Mapping[str, Any]], k: int,
                     answer_m: int | None) -> list[Evidence]:
    """Every evidence source of an item, fixed sources first, then the judgment conditions in config order."""
    labels = item["labels"]
    gold = tuple(i for i, label in enumerate(labels) if label)
    out = [Evidence("none", ()), Evidence("dense", tuple(range(len(labels)))),
           Evidence("ground_truth", gold or None, problem=None if gold else "no labelled passage among the "
                    "candidates: the ground-truth evidence is not in the row")]
    m = evidence_size(judgment_rows, answer_m)
    for row in judgment_rows:
        key, failed = row["condition"], f"judgments failed ({row['error']})" if row["error"] else None
        if row["form"] in SET_FORMS:
            out.append(Evidence(key, None if failed else tuple(row["selected"]), problem=failed))
            if row["form"] == "listwise_set" and k > 1:
                sampled = None if failed else tuple(row["k_sampling_evidence"])
                out.append(Evidence(f"{key}/{k}-sampling", sampled, problem=failed))
        elif failed or m is None:
            out.append(Evidence(key, None, m, failed or "no set condition to size ranked evidence by (the "
                                                        "paper's fairness rule): set options.answer_m"))
        else:
            out.append(Evidence(key, tuple(top_m(row["ranking"], m)), m))
    return out


def answer_messages(item: Mapping[str, Any], evidence: Evidence, prompts: Mapping[str, Any]
                    ) -> list[dict[str, str]]:
    """The answer-generation prompt of one source: factoid or non-factoid by the row's dataset."""
    shown = [item["passages"][i] for i in evidence.passages or ()]
    return answer_prompt(item["question"], shown, is_factoid(item.get("dataset")), prompts)


def qa_rows(base: Mapping[str, Any], item: Item, by_variant: Mapping[str, Answer],
            sources: Sequence[Evidence]) -> list[Row]:
    """One QA row per evidence source: the evidence, the generated answer, its scores (module docstring)."""
    factoid, gold = is_factoid(item.get("dataset")), list(item["answers"])
    rows = []
    for evidence in sources:
        variant = VARIANT + evidence.source
        answer = by_variant.get(variant)
        row: dict[str, Any] = {
            **base, "condition": CONDITION + evidence.source, "form": "qa", "source": evidence.source,
            "dataset": item.get("dataset"), "factoid": factoid,
            "evidence": None if evidence.passages is None else list(evidence.passages),
            "n_evidence": None if evidence.passages is None else len(evidence.passages), "m": evidence.m,
            "n_requests": int(evidence.passages is not None), "answer": (answer or {}).get("text"),
            "gold_answers": gold, **{name: None for name in (*FACTOID_METRICS, *NON_FACTOID_METRICS)},
            "correct": None, "truncated": bool(answer and answer.get("truncated")),
            "n_tokens": int((answer or {}).get("n_tokens") or 0),
        }
        row["error"] = evidence.problem or (answer or {}).get("error") or (
            f"no answer for request {variant}" if answer is None else None)
        if row["error"] is None:
            text = answer.get("text") or ""
            if factoid:
                row["em"], row["f1"] = exact_match(text, gold), token_f1(text, gold)
                row["correct"] = row["f1"]
            else:
                row["rouge_l"] = rouge_l(text, gold)
                row["bleu_1"], row["bleu_2"], row["bleu_3"], row["bleu_4"] = bleu(text, gold)
                row["correct"] = row["rouge_l"]
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------- reducing

def qa_measures(row: Mapping[str, Any]) -> dict[str, float | None]:
    """What the reducers track per QA row: the answer scores, error and truncation, the evidence size."""
    error = bool(row.get("error"))
    out: dict[str, float | None] = {"correct": row.get("correct"), "error": float(error),
                                    "truncated": float(bool(row.get("truncated")))}
    out.update({name: row[name] for name in (*FACTOID_METRICS, *NON_FACTOID_METRICS)
                if row.get(name) is not None})
    if not error:
        out["evidence_size"] = row.get("n_evidence")
    return out


def summarize_qa(groups: dict[str, dict[str, list[tuple[str, float]]]], subsets_of: Mapping[str, set[str]],
                 seed: str, resamples: int) -> dict[str, Any]:
    """metrics.json "qa": per evidence source and dataset, the macro mean over questions of each answer metric
    with its 95% bootstrap interval, the error and truncation rates and the mean number of passages handed
    over. No pooled "all": factoid and non-factoid datasets have different metrics."""
    out: dict[str, Any] = {}
    for condition in sorted(subsets_of, key=_source_order):
        source = condition[len(CONDITION):]
        cells = {}
        for subset in sorted(subsets_of[condition]):
            cell_key = f"{condition}|{subset}"
            correct = _values(groups, "correct", cell_key)
            cell: dict[str, Any] = {
                "n": len(correct), "correct": mean(correct),
                "correct_ci95": bootstrap_ci(correct, f"{seed}/{cell_key}/correct", resamples)}
            for name in (*FACTOID_METRICS, *NON_FACTOID_METRICS):
                if scores := _values(groups, name, cell_key):
                    cell[name] = mean(scores)
                    cell[f"{name}_ci95"] = bootstrap_ci(scores, f"{seed}/{cell_key}/{name}", resamples)
            for name in ("error", "truncated"):
                cell[f"{name}_rate"] = mean(_values(groups, name, cell_key))
            cell["evidence_size"] = mean(_values(groups, "evidence_size", cell_key))
            cells[subset] = cell
        out[source] = {"subsets": cells}
    return out


def _values(groups: dict[str, dict[str, list[tuple[str, float]]]], measure: str, cell_key: str
            ) -> list[float]:
    """One cell's values of a measure, in item-id order (the reducer sorts them)."""
    return [v for _, v in groups.get(measure, {}).get(cell_key, [])]


def _source_order(condition: str) -> tuple[int, str]:
    """none, dense, ground_truth, then the judgment conditions alphabetically (Table 4 order, roughly)."""
    source = condition[len(CONDITION):]
    return (FIXED_SOURCES.index(source) if source in FIXED_SOURCES else len(FIXED_SOURCES), source)


# ---------------------------------------------------------------------------------------------- tables

def qa_table(metrics: Sequence[Mapping[str, Any]], cell_text: Callable[[Mapping[str, Any], str], str]
             ) -> list[list[str]]:
    """Table 4 as rows of cells: one row per model x evidence source; per dataset EM, F1 (factoid) or ROUGE-L,
    BLEU-1..4 (non-factoid), each cell_text(cell, metric), then the mean number of passages handed over.
    [] without QA rows."""
    entries = [(m, source, entry) for m in metrics for source, entry in (m.get("qa") or {}).items()]
    if not entries:
        return []
    subsets = sorted({s for _, _, e in entries for s in e["subsets"]})
    names = {s: [n for n in (*FACTOID_METRICS, *NON_FACTOID_METRICS)
                 if any(n in e["subsets"].get(s, {}) for _, _, e in entries)] for s in subsets}
    head = ["Model", "Evidence"] + [f"{s} {TITLES.get(n, n)}" for s in subsets
                                    for n in (*names[s], "passages")]
    rows = []
    for m, source, entry in entries:
        cells = []
        for s in subsets:
            cell = entry["subsets"].get(s, {})
            size = cell.get("evidence_size")
            cells += [cell_text(cell, n) for n in names[s]] + ["-" if size is None else f"{size:.1f}"]
        rows.append([m.get("model", "?"), source, *cells])
    return [head, *rows]
