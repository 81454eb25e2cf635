"""A benchmark's `options`: typed through its frozen dataclass (typed_options), plus the small checks its
cross-field rules use (the YAML may hand over OmegaConf containers, and YAML booleans are ints)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

T = TypeVar("T")


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


class OptionsError(ValueError):
    """An option the schema rejects; `key` is its dotted path under `options`."""

    def __init__(self, key: str, reason: str):
        super().__init__(f"options.{key}: {reason}" if key else f"options: {reason}")
        self.key, self.reason = key, reason


def typed_options(schema: type[T], raw: Mapping[str, Any] | None) -> T:
    """A benchmark's options as its frozen dataclass: OmegaConf merges the config's mapping into the schema,
    so an unknown key, a wrong type or a value outside a Literal fails here with its key named."""
    raw = plain(raw or {})
    try:
        return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), raw))
    except OmegaConfBaseException as e:
        key = e.full_key or ""
        # A merge of a word into a mapping (`bertscore: minilm`) names no key: find it one key at a time.
        for name in [] if key else list(raw):
            try:
                OmegaConf.merge(OmegaConf.structured(schema), {name: raw[name]})
            except OmegaConfBaseException:
                key = name
                break
        raise OptionsError(key, str(e).splitlines()[0]) from None
