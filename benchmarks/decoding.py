"""Bytes into text lines and JSON objects, one line at a time, so that garbage costs only its own line: a line
that is not UTF-8, a gzip that breaks off, JSON nested deeper than the parser recurses, an integer too long to
convert, a lone surrogate that no UTF-8 writer can store. Every failure is a value ("why"), never an
exception, for the loaders to put in an error row that names the file and the row.
"""
from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterable, Iterator
from typing import IO, Any

from benchmarks.object_store import is_object_path, open_object

Line = tuple[int, str | None, str | None]  # (1-based line number, text or None, why not)


def decoded_lines(stream: Iterable[bytes]) -> Iterator[Line]:
    """Each line of a binary stream as (number, text, None), or (number, None, why) for a line that is not
    UTF-8 and, last, for the line where the stream broke off (a cut-off or corrupt gzip). A byte-order mark
    on line 1 is dropped."""
    number = 0
    try:
        for number, raw in enumerate(stream, 1):
            try:
                yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8"), None
            except UnicodeDecodeError as e:
                yield number, None, f"not valid UTF-8 (byte {raw[e.start]:#04x} at column {e.start + 1})"
    except (OSError, EOFError, zlib.error) as e:
        yield number + 1, None, f"unreadable from this line on ({type(e).__name__}: {e})"


def open_data(source: str) -> IO[bytes]:
    """A data file's bytes: a local path, or an s3:// object (benchmarks.object_store)."""
    return open_object(source) if is_object_path(source) else open(source, "rb")


def file_lines(source: str) -> Iterator[Line]:
    """decoded_lines of a plain or .gz file."""
    with open_data(source) as raw:  # bundled data keeps large files compressed
        yield from decoded_lines(gzip.GzipFile(fileobj=raw) if source.endswith(".gz") else raw)


def json_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """A JSON text as (object, None), or (None, why): not JSON, not an object, or holding text UTF-8 cannot
    store."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        return None, json_problem(e)
    return as_object(data)


def json_problem(e: ValueError | RecursionError) -> str:
    """Why json.loads failed: a syntax error, nesting deeper than the parser recurses, or an integer of more
    digits than Python converts (sys.get_int_max_str_digits)."""
    if isinstance(e, json.JSONDecodeError):
        why = e.msg
    else:
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e).split(":")[0]
    return f"not valid JSON ({why})"


def as_object(data: Any) -> tuple[dict[str, Any] | None, str | None]:
    """A parsed JSON value as (object, None) when it is an object UTF-8 can store, else (None, why)."""
    if not isinstance(data, dict):
        return None, "not a JSON object"
    field = unstorable_field(data)
    if field is not None:
        return None, f"field {field!r} holds a lone surrogate (\\ud800-\\udfff), which UTF-8 cannot store"
    return data, None


def unstorable_field(data: dict[str, Any]) -> str | None:
    """The first field whose name or value holds text UTF-8 cannot encode: JSON lets a lone surrogate through
    as an escape, and Parquet and every UTF-8 writer reject it later, far from the row."""
    for key, value in data.items():
        pending = [key, value]
        while pending:
            item = pending.pop()
            if isinstance(item, str):
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return str(key).encode("utf-8", "backslashreplace").decode("utf-8")
            elif isinstance(item, dict):
                pending.extend(item.keys())
                pending.extend(item.values())
            elif isinstance(item, list):
                pending.extend(item)
    return None


def quoted(value: Any, limit: int = 80) -> str:
    """repr(value) for a message, cut to `limit` characters: a 10 MB garbage value must not make a 10 MB
    error."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"
