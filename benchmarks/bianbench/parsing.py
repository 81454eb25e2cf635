"""Reading a judge's verdict: parsed from its text (the paper's protocol, docs/protocols.md 2) or from the
candidates' log-probs after the prefill (parse-free)."""
from __future__ import annotations

import ast
import json
import re
from typing import Any

from benchmarks.bianbench.fields import LABELS

_VERDICT_KEYS = ("score", "判断")
_REASONING_KEYS = ("reasoning", "推理过程")
# "SCORE": "PASS" outside a parseable object (truncated or malformed JSON, or no braces at all). A quoted value
# must be closed: a verdict cut off mid-word is not read.
_KEY_VALUE = re.compile(r"""(?<!\w)(?:score|判断)["']?\s*[:：]\s*(["']?)\s*(pass|fail|通过|失败)\s*\1(?!\w)""",
                        re.IGNORECASE)
# The last resort: a verdict word on its own (no letter, digit or CJK character beside it). Upper case only for
# PASS/FAIL: "does not pass" or "fail to mention" in prose are not verdicts.
_STANDALONE = re.compile(r"(?<!\w)(PASS|FAIL|通过|失败)(?!\w)")


def parse_verdict(text: str | None) -> str:
    """PASS, FAIL or ERROR from a judge's output (docs/protocols.md 2).

    In order: the last JSON object (```json fences, single quotes and surrounding prose are fine) whose
    SCORE / 判断 (any case) holds PASS / FAIL / 通过 / 失败 (any case); else the last "SCORE": "<verdict>" pair
    in the text, which reads a complete verdict from JSON cut off later on; else the last standalone
    PASS / FAIL / 通过 / 失败; else ERROR.
    """
    text = text or ""
    for obj in reversed(_json_objects(text)):
        verdict = _verdict_of(_field(obj, _VERDICT_KEYS))
        if verdict:
            return verdict
    pairs = _KEY_VALUE.findall(text)
    if pairs:
        return LABELS[pairs[-1][1].upper()]
    words = _STANDALONE.findall(text)
    return LABELS[words[-1]] if words else "ERROR"


def parse_reasoning(text: str | None) -> str | None:
    """The REASONING / 推理过程 of the last JSON object that has one (a list of points joined by newlines).
    Values JSON cannot write (a Python literal's set, bytes or complex number) are written as Python does."""
    for obj in reversed(_json_objects(text or "")):
        value = _field(obj, _REASONING_KEYS)
        if isinstance(value, list):
            return "\n".join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
                             for v in value)
        if value is not None:
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return None


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level {...} in the text that parses as JSON or as a Python literal (single quotes), in order.

    Objects inside a parsed one are not listed separately; a '{' that does not start a parseable object is
    skipped and the search goes on inside it. json.JSONDecoder.raw_decode alone would miss single-quoted
    objects, hence the small quote-aware brace matcher.
    """
    found: list[dict[str, Any]] = []
    start = text.find("{")
    while start >= 0:
        end = _closing_brace(text, start)
        obj = _parse_object(text[start:end]) if end else None
        if obj is not None:
            found.append(obj)
            start = text.find("{", end)
        else:
            start = text.find("{", start + 1)
    return found


def _closing_brace(text: str, start: int) -> int | None:
    """The index just past the '}' closing the '{' at `start`, skipping braces in quoted strings; None if cut off."""
    depth, quote, i = 0, None, start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _parse_object(span: str) -> dict[str, Any] | None:
    try:
        value = json.loads(span)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser recurses
        try:
            value = ast.literal_eval(span)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


def _field(obj: dict[str, Any], names: tuple[str, ...]) -> Any:
    for key, value in obj.items():
        if isinstance(key, str) and key.strip().lower() in names:
            return value
    return None


def _verdict_of(value: Any) -> str | None:
    return LABELS.get(value.strip().strip("\"'*.。!").strip().upper()) if isinstance(value, str) else None


def logprob_verdict(logprobs: list[float | None] | None) -> str | None:
    """PASS or FAIL from the candidates' log-probs [PASS-word, FAIL-word]; a candidate outside the engine's
    top-k (None) loses to one inside it; both missing or equal: no verdict."""
    lp_pass, lp_fail = (list(logprobs) + [None, None])[:2] if logprobs is not None else (None, None)
    if lp_pass is None and lp_fail is None:
        return None
    if lp_fail is None or (lp_pass is not None and lp_pass > lp_fail):
        return "PASS"
    if lp_pass is None or lp_fail > lp_pass:
        return "FAIL"
    return None
