"""Deterministic garbage for the loaders' tests (issue 16, "garbage in").

Three families, each a list of (kind, bytes) so a test can say which input did what:
- line garbage: one line of a JSONL or TSV file that no loader can use (random bytes, invalid UTF-8, JSON
  that is not an object or is cut off, nesting deeper than the JSON parser recurses, an integer too long to
  convert, NUL bytes). Random lines come from fixed seeds.
- field garbage: a good row with one field replaced by a value of the wrong type, NaN, an infinity, blank text
  or a lone UTF-16 surrogate (valid JSON, but no UTF-8 writer can store it).
- file garbage: an empty file, a file of blank lines, a broken or cut-off gzip, a Parquet or JSON file that is
  not one, a folder where a file is expected.
"""
from __future__ import annotations

import gzip
import json
import random
from typing import Any

SEEDS = (0, 1, 2, 3)
RANDOM_LINES_PER_SEED = 25
HUGE = 10 * 1024 * 1024  # a 10 MB string


def random_lines() -> list[tuple[str, bytes]]:
    """Random byte strings of 1 to 300 bytes, newline-free so each stays one line."""
    out = []
    for seed in SEEDS:
        rng = random.Random(seed)
        for i in range(RANDOM_LINES_PER_SEED):
            raw = rng.randbytes(rng.randint(1, 300)).replace(b"\n", b"\x80").replace(b"\r", b"\x81")
            out.append((f"random_bytes[seed={seed},{i}]", raw))
    return out


FIXED_LINES: tuple[tuple[str, bytes], ...] = (
    ("invalid_utf8_latin1", b'{"text": "caf\xe9 cr\xe8me", "id": "latin1"}'),
    ("invalid_utf8_cut_multibyte", b'{"text": "\xe4\xb8", "id": "cut"}'),
    ("invalid_utf8_lone_continuation", b"\x80\x80\x80"),
    ("invalid_utf8_overlong", b'{"text": "\xc0\xaf"}'),
    ("nul_bytes", b"\x00" * 64),
    ("json_list", b"[1, 2, 3]"),
    ("json_string", b'"just a string"'),
    ("json_number", b"42"),
    ("json_null", b"null"),
    ("json_true", b"true"),
    ("json_cut_off", b'{"id": "cut-off", "text": "no closing'),
    ("json_trailing_garbage", b'{"id": "x"} trailing'),
    ("json_deep_nesting", b"[" * 100_000 + b"]" * 100_000),
    ("json_deep_object_nesting", b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
    ("json_integer_too_long", b'{"id": 1' + b"0" * 5000 + b"}"),
    ("json_float_overflow", b"1e999999"),
    ("just_a_tab", b"\tx\t"),
)


def line_garbage() -> list[tuple[str, bytes]]:
    """Every line-garbage input: the fixed kinds, then the seeded random ones."""
    return list(FIXED_LINES) + random_lines()


# Values that replace one field of a good row. NaN and the infinities are JSON extensions Python reads and
# writes; "\ud800" is a JSON escape that decodes to a lone surrogate.
FIELD_VALUES: tuple[tuple[str, Any], ...] = (
    ("list", [1, None]),
    ("object", {"a": 1}),
    ("bool", True),
    ("null", None),
    ("nan", float("nan")),
    ("infinity", float("inf")),
    ("minus_infinity", float("-inf")),
    ("empty", ""),
    ("blank", " \t "),
    ("lone_surrogate", "\ud800"),
)


def field_garbage(row: dict[str, Any], fields: tuple[str, ...], id_field: str,
                  fresh_id: Any) -> list[tuple[str, str, bytes]]:
    """(kind, field, line) for each field and value: a copy of `row` under a fresh id (so it can never be a
    duplicate of a good row) with that field replaced; the id field itself is replaced in place."""
    out = []
    for field in fields:
        for name, value in FIELD_VALUES:
            if field == id_field and name in ("null", "empty", "blank"):
                continue  # a row without an id is a good row: the loaders give it one
            bad = {**row, id_field: fresh_id(len(out))}
            bad[field] = value
            out.append((f"{field}={name}", field, json.dumps(bad).encode("utf-8")))
    return out


def json_line(row: dict[str, Any]) -> bytes:
    return json.dumps(row, ensure_ascii=False).encode("utf-8")


def interleave(good: list[bytes], bad: list[bytes]) -> tuple[bytes, list[int], list[int]]:
    """A file's bytes with good and bad lines alternating (bad lines left over come before the last good
    one), and the 1-based line numbers of the good and of the bad lines."""
    lines: list[tuple[bool, bytes]] = []
    good_left, bad_left = list(good), list(bad)
    while good_left or bad_left:
        if good_left and (len(good_left) > 1 or not bad_left):
            lines.append((True, good_left.pop(0)))
        if bad_left:
            lines.append((False, bad_left.pop(0)))
    numbered = list(enumerate(lines, 1))
    return (b"".join(line + b"\n" for _, line in lines),
            [i for i, (ok, _) in numbered if ok], [i for i, (ok, _) in numbered if not ok])


def cut_gzip(lines: list[bytes]) -> bytes:
    """A gzip of the lines cut off near its end, as an interrupted download leaves it."""
    whole = gzip.compress(b"".join(line + b"\n" for line in lines))
    return whole[: len(whole) - 12]


def file_garbage() -> list[tuple[str, str, bytes | None]]:
    """(kind, file name suffix, content; None for a folder) of whole files no loader can read rows from."""
    rng = random.Random(7)
    return [
        ("empty_file", ".jsonl", b""),
        ("blank_lines_only", ".jsonl", b"\n  \n\t\n"),
        ("random_bytes_as_gzip", ".jsonl.gz", rng.randbytes(512)),
        ("gzip_of_random_bytes", ".jsonl.gz", gzip.compress(rng.randbytes(512))),
        ("random_bytes_as_json", ".json", rng.randbytes(512)),
        ("empty_json", ".json", b""),
        ("random_bytes_as_parquet", ".parquet", rng.randbytes(512)),
        ("folder_named_like_a_file", ".jsonl", None),
    ]
