"""Model families (conf/model_families.yaml): which responses a judge would call its own, by a table of name
patterns rather than by guessing from substrings, so a reader can see and correct every assignment."""
from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from pathlib import Path

from omegaconf import OmegaConf

from jobs.config import ConfigError
from jobs.loading.files import PROJECT_CONF, load_yaml

FAMILIES = PROJECT_CONF / "model_families.yaml"

Families = dict[str, tuple[str, ...]]  # family -> glob patterns, in the file's order


def load_families(path: Path = FAMILIES) -> Families:
    """The family table; a family whose patterns are not a list of text is a ConfigError naming the key."""
    table = OmegaConf.to_container(load_yaml(path))
    out: Families = {}
    for family, patterns in table.items():
        if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
            raise ConfigError(f"{path}: key '{family}': expected a list of name patterns, got {patterns!r}")
        out[str(family)] = tuple(patterns)
    return out


def family_of(names: Iterable[str | None], families: Families) -> str | None:
    """The family of the first of `names` (a model's name, then other names of it) that a family's pattern
    matches, families in the table's order; None when none does."""
    for name in names:
        if not name:
            continue
        for family, patterns in families.items():
            if any(fnmatch.fnmatchcase(name.lower(), p.lower()) for p in patterns):
                return family
    return None


def model_names(name: str, path: str | None = None) -> list[str]:
    """The names a model is known by, most specific first: its name, its path, the path's last part."""
    return [name, *([path, path.rstrip("/").rsplit("/", 1)[-1]] if path else [])]
