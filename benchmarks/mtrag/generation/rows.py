"""A task's prediction row from all its answers (combine), and the encoder stage's BERTScores written into it
(text_pairs / add_text_pair_scores): RougeL here, Bert-Rec and Bert-KPrec from the stage, RB_alg from both."""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from benchmarks.mtrag.generation.options import IDK, RB_LLM, STATEMENTS, VERDICTS, Options
from benchmarks.mtrag.generation.passages import selected, setting_passages
from benchmarks.mtrag.generation.requests import request_id, response_of
from benchmarks.mtrag.generation.scores import (
    answerability_correct,
    condition_on_idk,
    faithfulness,
    idk_word,
    max_kprec,
    median_rating,
    parse_idk,
    parse_rating,
    parse_statement_verdicts,
    parse_statements,
    rb_alg,
    rouge_l,
)
from benchmarks.row_types import Answer, Item, Row


def combine(item: Item, answers: Iterable[Answer], options: Options) -> list[Row]:
    """The task's prediction row (a one-row list), or [] for a task outside the run.

    Every judgment is read from text. A failed judge request leaves its metric None and is named in
    `judge_errors`; the row fails (`error`) only when there is no response to score.
    """
    if not selected(item, options):
        return []
    by_id = {a["request_id"]: a for a in answers}
    row = _base_row(item, options)
    try:
        passages = setting_passages(item, options)
    except ValueError as e:
        return [{**row, "error": str(e)}]
    row["n_passages"] = len(passages)
    response, why, truncated = response_of(item, by_id, options)
    row["response_truncated"] = truncated
    if response is None:
        return [{**row, "error": why}]
    failures: list[str] = []

    def judged(variant: str, route: str) -> str | None:
        answer = by_id.get(request_id(item, variant, route))
        if answer is not None and (answer.get("error") or answer.get("text") is None):
            failures.append(f"{variant}@{route}: {answer.get('error') or 'no text'}")
            return None
        return None if answer is None else answer["text"]

    judges = options.judges
    ratings = {judge: parse_rating(text) for judge in judges.rb_llm if (text := judged(RB_LLM, judge)) is not None}
    idk_text = judged(IDK, judges.idk)
    idk = parse_idk(idk_text) if idk_text is not None else None
    rl_f, status, n_statements, n_supported = _faithfulness(judged(STATEMENTS, judges.ragas),
                                                            judged(VERDICTS, judges.ragas))
    answerability = item["answerability"]
    rb_llm = median_rating(ratings.values())
    row.update({
        "response": response, "rouge_l": rouge_l(response, item["reference"]),
        "rb_llm": rb_llm, "rb_llm_judges": list(ratings), "rb_llm_ratings": list(ratings.values()),
        "rb_llm_idk": _conditioned(rb_llm, answerability, idk),
        "rl_f": rl_f, "rl_f_status": status, "n_statements": n_statements, "n_supported": n_supported,
        "rl_f_idk": _conditioned(rl_f, answerability, idk),
        "idk": idk, "idk_word": None if idk_text is None else idk_word(idk_text),
        "correct": answerability_correct(answerability, idk),
        "judge_errors": "; ".join(failures) or None,
    })
    return [row]


def _base_row(item: Item, options: Options) -> Row:
    """Every column a row has, so error rows and scored rows share one schema."""
    keep = ("item_id", "benchmark", "subset", "task_id", "conversation_id", "collection", "answerability",
            "question_type", "multi_turn", "turn", "turn_group", "reference")
    return {**{k: item[k] for k in keep}, "setting": options.setting, "responses": options.responses,
            "n_passages": None, "response": None, "response_truncated": None, "rouge_l": None, "bert_encoder": None,
            "bert_recall": None, "bert_kprec": None, "rb_alg": None, "rb_alg_idk": None, "rb_llm": None,
            "rb_llm_judges": [], "rb_llm_ratings": [], "rb_llm_idk": None, "rl_f": None, "rl_f_status": "not_judged",
            "n_statements": None, "n_supported": None, "rl_f_idk": None, "idk": None, "idk_word": None,
            "correct": None, "judge_errors": None, "error": None}


def _faithfulness(statements_text: str | None, verdicts_text: str | None) -> tuple[float | None, str, int | None,
                                                                                   int | None]:
    """(RL_F, status, statements, supported). NaN RL_F: no statements, or a judge output that does not parse
    (RAGAS gives NaN there too); None: not judged (no answer, or a failed request)."""
    if statements_text is None:
        return None, "not_judged", None, None
    statements = parse_statements(statements_text)
    if statements is None:
        return math.nan, "statements_unparsed", None, None
    if not statements:
        return math.nan, "no_statements", 0, None
    if verdicts_text is None:
        return None, "not_judged", len(statements), None
    verdicts = parse_statement_verdicts(verdicts_text)
    if verdicts is None:
        return math.nan, "verdicts_unparsed", len(statements), None
    return faithfulness(verdicts), "scored", len(statements), sum(verdicts)


def _conditioned(value: float | None, answerability: str, idk: float | None) -> float | None:
    """IDK-conditioned value; a missing raw value still conditions to 1 or 0 where IDK alone decides."""
    out = condition_on_idk(math.nan if value is None else value, answerability, idk)
    return None if math.isnan(out) and value is None else out


def text_pairs(item: Mapping[str, Any], row: Mapping[str, Any], options: Options) -> list[dict[str, str]]:
    """What the encoder stage scores for a row: the response against the reference (Bert-Rec) and against
    each passage of the setting (Bert-KPrec); [] for a row without a response."""
    if row.get("error") or row.get("response") is None:
        return []
    references = [item["reference"]] + [p["text"] for p in setting_passages(item, options)]
    return [{"pair_id": _pair_id(row, i), "candidate": row["response"], "reference": reference}
            for i, reference in enumerate(references)]


def _pair_id(row: Mapping[str, Any], index: int) -> str:
    """Pair 0 is the response against the reference (Bert-Rec); pair i > 0 against passage i (Bert-KPrec)."""
    return f"{row['item_id']}#bert_recall" if index == 0 else f"{row['item_id']}#bert_kprec/{index - 1}"


def add_text_pair_scores(row: Row, scores: Mapping[str, Mapping[str, float]], encoder: str) -> Row:
    """The row with its pairs' BERTScores (`scores`: pair id -> precision, recall, f1; NaN for a pair with an
    empty side) read into `add_bert_scores`."""
    if row.get("error") or row.get("response") is None:
        return dict(row)
    recall = scores[_pair_id(row, 0)]["recall"]
    kprecs = [scores[_pair_id(row, i)]["precision"] for i in range(1, row["n_passages"] + 1)]
    return add_bert_scores(row, None if math.isnan(recall) else recall,
                           [None if math.isnan(v) else v for v in kprecs], encoder)


def add_bert_scores(row: Row, bert_recall: float | None, bert_kprecs: Iterable[float | None],
                    encoder: str) -> Row:
    """The row with the encoder stage's numbers: Bert-Rec against the reference, Bert-KPrec (max over the
    passages; none for no passages), RB_alg and its IDK-conditioned value, and which encoder gave them
    (e.g. "microsoft/deberta-xlarge-mnli@40, rescaled"). A missing Bert-Rec (an empty response or reference)
    leaves RB_alg None, unless RougeL is 0, which makes RB_alg 0 whatever the rest."""
    if row.get("error"):
        return dict(row)
    kprec = max_kprec(bert_kprecs)
    if bert_recall is None:
        value = 0.0 if row["rouge_l"] == 0 else None
    else:
        value = rb_alg(bert_recall, row["rouge_l"], kprec)
    return {**row, "bert_encoder": encoder, "bert_recall": bert_recall, "bert_kprec": kprec, "rb_alg": value,
            "rb_alg_idk": _conditioned(value, row["answerability"], row["idk"])}
