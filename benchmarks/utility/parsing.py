"""Reading a judge's verdict from its text (docs/protocols.md 4). Pure and tolerant of the decoration models
add (markdown bold, quotes, brackets, "is" for ":"), strict about meaning: an answer that only echoes the
requested format, or says nothing parseable, is None, a counted outcome and never an exception.

Ids are positions in the prompt (Passage-0 ... Passage-(n-1), [0] ... [n-1]); the caller maps them back.
"""
from __future__ import annotations

import re

_DECORATION = r"[\s*\"'`\[\(]*"
# The last "judgment: yes|no"; "yes/no" (the format echoed back) is no verdict.
_JUDGMENT = re.compile(r"\bjudgment\s*\**\s*(?::|\bis\b)" + _DECORATION + r"(yes|no)\b(?!\s*/)", re.IGNORECASE)
# The last "choice: Passage-0|1"; "Passage-0 or Passage-1" (the format echoed back) is no verdict.
_CHOICE = re.compile(r"\bchoice\s*\**\s*(?::|\bis\b)" + _DECORATION + r"passage\s*[-_ ]?\s*([01])\b"
                     r"(?!\**\s*(?:or|/)\s*\**\s*passage)", re.IGNORECASE)
_SELECTION = re.compile(r"\bselection\s*\**\s*:", re.IGNORECASE)
_RANK = re.compile(r"\brank\s*\**\s*:", re.IGNORECASE)
_BRACKETED = re.compile(r"\[\s*(\d+)\s*\]")
_NUMBER = re.compile(r"\d+")
_EMPTY = re.compile(r"\[\s*\]|\bnone\b|\bno passages?\b", re.IGNORECASE)


def parse_judgment(text: str | None) -> int | None:
    """Pointwise: 1 for the last 'My judgment: yes', 0 for '... no', None without one."""
    matches = _JUDGMENT.findall(text or "")
    return None if not matches else int(matches[-1].lower() == "yes")


def parse_choice(text: str | None) -> int | None:
    """Pairwise: 0 or 1 from the last 'My choice: Passage-0/1', None without one."""
    matches = _CHOICE.findall(text or "")
    return int(matches[-1]) if matches else None


def _after_last(pattern: re.Pattern[str], text: str) -> str | None:
    """The rest of the line after the pattern's last match, or the next non-empty line when that is blank."""
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    rest = text[matches[-1].end():].split("\n")
    return next((line for line in rest if line.strip()), "")


def _ids(numbers: list[str], n: int) -> list[int]:
    """Distinct in-range ids in the order given. A number too long for int() (over 4,300 digits) is out of
    range too."""
    out: list[int] = []
    for number in numbers:
        try:
            i = int(number)
        except ValueError:
            continue
        if i < n and i not in out:
            out.append(i)
    return out


def parse_selection(text: str | None, n: int) -> list[int] | None:
    """Listwise-set: the ids in the last 'My selection: [...]' line ('Passage-3', '[3]', '3', commas or
    spaces), in-range and distinct; [] for an explicit empty selection; None when there is none to read."""
    segment = _after_last(_SELECTION, text or "")
    if segment is None:
        return None
    segment = segment.strip(" \t*`'\"")
    if segment.startswith("[") and "]" in segment:
        segment = segment[: segment.rindex("]") + 1]
    numbers = _NUMBER.findall(segment)
    if numbers:
        return _ids(numbers, n)
    return [] if _EMPTY.search(segment) and "<" not in segment else None


def parse_rank(text: str | None, n: int) -> list[int] | None:
    """Listwise-rank: the ids of the last 'My rank: [i]>[j]>...' line, best first, deduplicated, out-of-range
    ids dropped; bare numbers are read when no id is bracketed. None when nothing usable is left."""
    segment = _after_last(_RANK, text or "")
    if segment is None:
        return None
    ranking = _ids(_BRACKETED.findall(segment) or _NUMBER.findall(segment), n)
    return ranking or None
