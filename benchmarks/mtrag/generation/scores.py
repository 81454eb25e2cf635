"""mtRAG generation scores on one response (seeds/mtrag.txt sections 6.3, 8 and Appendix F;
docs/protocols.md 3).

Pure functions: the judges' texts come in already answered, the BERTScore encoder runs elsewhere (an actor
stage, actors.bertscore, rescaling through the bert-score package) and hands its numbers to `rb_alg`. Where
the authors' script (IBM/mt-rag-benchmark, scripts/evaluation) and docs/protocols.md differ, docs/protocols.md
wins and the difference is said in the docstring.
"""
from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Iterable
from functools import cache
from typing import Any

# "Unanswerable" for IDK conditioning and answerability accuracy: the paper's "no" row (section 6.3.3); the
# authors' script treats CONVERSATIONAL turns like unanswerable ones (a good answer is not an answer).
EXPECT_IDK = ("UNANSWERABLE", "CONVERSATIONAL")
EXPECT_ANSWER = ("ANSWERABLE", "PARTIAL")
UNDERSPECIFIED = "UNDERSPECIFIED"  # MTRAG-UN only: neither row; reported on its own (docs/protocols.md 3)
ANSWERABILITY = EXPECT_ANSWER + EXPECT_IDK + (UNDERSPECIFIED,)

_NUMBER = r"([-+]?\d+(?:\.\d+)?)"
# The three rating forms of docs/protocols.md 3, most specific first; the first form found decides.
_RATINGS = (
    re.compile(r"Rating:\s*\[\[\s*" + _NUMBER + r"\s*\]\]", re.IGNORECASE),
    re.compile(r"Rating:\s*" + _NUMBER, re.IGNORECASE),
    # A number that starts right after a digit never begins a leftmost match (the match would start at that
    # digit), so such starts are refused at once: without the lookbehind a long run of digits costs a scan
    # per digit, quadratic in its length (docs/measurements.md, "Figures moved from the code's comments"); the
    # matches found are the same.
    re.compile(r"((?:[-+]|(?<!\d))\d+(?:\.\d+)?)\s*out of\s*10\b", re.IGNORECASE),
)
# A judge that repeats the prompt's format line ('for example: "Rating: [[5]]"') must not be read as a 5.
_ECHOED_EXAMPLE = re.compile(r"for example:.*$", re.IGNORECASE | re.MULTILINE)
_FIRST_WORD = re.compile(r"[A-Za-z]+")
IDK_LABELS = {"yes": 1.0, "no": 0.0, "partial": 0.5}


# ---- reference-based scores


def rouge_l(prediction: str, reference: str) -> float:
    """ROUGE-L F-measure of rouge-score, no stemming, its default tokenizer (lower-case, [^a-z0-9]+ -> space),
    as the authors' script gets it through `evaluate`'s rouge."""
    return float(_rouge().score(reference, prediction)["rougeL"].fmeasure)


@cache
def _rouge() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def rb_alg(bert_recall: float, rouge_l: float, bert_kprec_max: float | None) -> float:
    """RB_alg: harmonic mean of R = (Bert-Rec + 1)/2, L = RougeL and E = (max Bert-KPrec + 1)/2.

    BERTScore values come rescaled, as BERTScore gives them; `bert_kprec_max` is None when the task has no
    passages, and then E = 0. Any of R, L, E being 0 gives 0 (the harmonic mean's limit), as in the script.
    """
    r = (bert_recall + 1.0) / 2.0
    e = 0.0 if bert_kprec_max is None else (bert_kprec_max + 1.0) / 2.0
    if r == 0 or rouge_l == 0 or e == 0:
        return 0.0
    return 3.0 * r * rouge_l * e / (r * rouge_l + r * e + rouge_l * e)


def max_kprec(values: Iterable[float | None]) -> float | None:
    """Bert-KPrec of a response: its best precision against any one passage; None with no passages.

    A passage without a score counts as 0, as the authors' script reads a missing value.
    """
    scores = [0.0 if v is None else float(v) for v in values]
    return max(scores) if scores else None


# ---- LLM judges


def parse_rating(text: str | None) -> float:
    """RB_llm rating of one judge in [0.1, 1]: 'Rating: [[x]]', else 'Rating: x', else 'x out of 10', divided
    by 10; the last occurrence of the first form found counts (a judge rates at the end). Unparseable, or x
    outside (0, 10], gives 0.5, the protocol's neutral value.

    The authors' script tries more forms ('[x]', 'Score: x', ...) and keeps the first occurrence;
    docs/protocols.md names these three.
    """
    cleaned = _ECHOED_EXAMPLE.sub("", text or "")
    for pattern in _RATINGS:
        found = pattern.findall(cleaned)
        if found:
            x = float(found[-1])
            return x / 10.0 if 0 < x <= 10 else 0.5
    return 0.5


def median_rating(ratings: Iterable[float]) -> float | None:
    """RB_llm over several judges: the median of their ratings (section 6.3.1); None with no rating."""
    values = list(ratings)
    return float(statistics.median(values)) if values else None


def parse_idk(text: str | None) -> float | None:
    """IDK judge label from the first word of its output: yes 1, no 0, partial 0.5; anything else None.

    None (unknown) leaves metrics raw (docs/protocols.md 3). The authors' script reads any other word as 0.5.
    """
    word = idk_word(text)
    return IDK_LABELS.get(word) if word else None


def idk_word(text: str | None) -> str:
    """The first word of the IDK judge's output, lower-case ('' for none), kept beside the label for audit."""
    match = _FIRST_WORD.search(text or "")
    return match.group(0).lower() if match else ""


def condition_on_idk(value: float, answerability: str, idk: float | None) -> float:
    """A metric conditioned on answerability and the IDK label (section 6.3.3, docs/protocols.md 3).

    UNANSWERABLE, CONVERSATIONAL: 1 if IDK = yes, else 0. ANSWERABLE, PARTIAL: 0 if IDK = yes, else the raw
    value. IDK = partial (0.5) goes with "no", as in the paper's table (columns "no, partial" | "yes") and the
    authors' script. Unknown IDK (None) leaves the raw value. UNDERSPECIFIED (MTRAG-UN) keeps the raw value:
    the IDK judge says nothing about a clarifying answer, which the MTRAG-UN script scores with a separate
    clarification judge; those tasks are reported on their own, never in the paper's tables.
    """
    label = answerability.strip().upper()
    if label not in ANSWERABILITY:
        raise ValueError(f"unknown answerability {answerability!r}: expected one of {', '.join(ANSWERABILITY)}")
    if idk is None or label == UNDERSPECIFIED:
        return value
    if label in EXPECT_IDK:
        return 1.0 if idk == 1 else 0.0
    return 0.0 if idk == 1 else value


def answerability_correct(answerability: str, idk: float | None) -> float | None:
    """1 when the response's IDK = yes exactly when the task is unanswerable (or conversational), else 0;
    None when the IDK label is unknown or the task is UNDERSPECIFIED (no answerability to predict)."""
    label = answerability.strip().upper()
    if idk is None or label == UNDERSPECIFIED:
        return None
    return 1.0 if (idk == 1) == (label in EXPECT_IDK) else 0.0


def answerability_accuracy(tasks: Iterable[tuple[str, float | None]]) -> float | None:
    """Ans. Acc. over (answerability, IDK label) pairs: the share answered right among those that count."""
    scored = [c for c in (answerability_correct(a, idk) for a, idk in tasks) if c is not None]
    return sum(scored) / len(scored) if scored else None


# ---- RAGAS faithfulness (RL_F)


def parse_statements(text: str | None) -> list[str] | None:
    """Statements from the extraction judge: a JSON object {"statements": [...]} (or a bare JSON list) anywhere
    in the text, e.g. in a ```json fence; blank statements dropped. None when no such JSON is found."""
    for value in _json_values(text):
        items = value.get("statements") if isinstance(value, dict) else value
        if isinstance(items, list) and all(isinstance(s, str) for s in items):
            return [s.strip() for s in items if s.strip()]
    return None


def parse_statement_verdicts(text: str | None) -> list[int] | None:
    """Verdicts (1 supported, 0 not) from the verdict judge's JSON {"statements": [{"statement", "reason",
    "verdict"}, ...]} (or a bare list of such objects). A verdict is 0 or 1 (also "0"/"1", true/false); any
    other value makes the output unparseable (None)."""
    for value in _json_values(text):
        entries = value.get("statements") if isinstance(value, dict) else value
        if not isinstance(entries, list) or not all(isinstance(e, dict) and "verdict" in e for e in entries):
            continue
        verdicts = [_verdict(e["verdict"]) for e in entries]
        if all(v is not None for v in verdicts):
            return verdicts  # type: ignore[return-value]
    return None


def faithfulness(verdicts: list[int] | None) -> float:
    """RL_F: supported statements / judged statements, as RAGAS computes it; NaN for no statements (or no
    verdicts), which is reported and never averaged as 0."""
    if not verdicts:
        return math.nan
    return sum(verdicts) / len(verdicts)


def _verdict(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value in (0, 1):
        return value
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return int(value.strip())
    return None


def _json_values(text: str | None) -> Iterable[Any]:
    """Every JSON object or array that starts somewhere in the text, in order (a judge wraps its JSON in
    prose or fences)."""
    decoder = json.JSONDecoder()
    source = text or ""
    for start, char in enumerate(source):
        if char in "{[":
            try:
                value, _ = decoder.raw_decode(source, start)
            except (ValueError, RecursionError):  # not JSON here, nested too deeply, or an integer too long
                continue
            yield value
