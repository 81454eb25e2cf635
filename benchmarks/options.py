"""Checking a benchmark's `options`: the YAML may hand over OmegaConf containers, and YAML booleans are ints."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def plain(value: Any) -> Any:
    """Plain dicts and lists (a config may hand over OmegaConf containers or tuples)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(v) for v in value]
    return value


def unknown_keys(given: Mapping[str, Any], known: Sequence[str] | Mapping[str, Any], where: str) -> list[str]:
    """One problem per key of `given` (the mapping at `where`, e.g. "options.judges") that `known` lacks."""
    return [f"{where}.{key}: unknown key (known: {', '.join(known)})" for key in given if key not in known]


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
