"""Giving the pages the driver freed back to the system, between the steps of a cell that each read a shard.

A shard's items, requests and answers are mostly long strings and large dicts, which CPython takes from the
C allocator, and glibc's keeps what they free in its heaps for reuse. Shard after shard the heaps fragment and
the driver's RSS grows although its live memory does not, and glibc's `malloc_trim` after each shard gives
most of that back (docs/measurements.md, "The driver at a million requests"). Neither Python nor psutil exposes it,
hence ctypes; a C library without it (musl, macOS) is left as it is.
"""
from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None where the process's C library has none."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def trim_heap() -> None:
    """Return the C allocator's free pages to the system; a call costs tens of milliseconds, so once a shard
    (docs/measurements.md, "The driver at a million requests")."""
    if (trim := _malloc_trim()) is not None:
        trim(0)
