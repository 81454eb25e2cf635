"""Names that later steps paste or split, checked where a config loads: environment variable names go into the
Slurm script and the RayJob (jobs.cli.submit), and benchmark and model names into cell keys ("benchmark/model",
split at the first '/'), file partitions and report lines."""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from jobs.config import CREDENTIAL_FIELDS, ConfigError, ModelConfig, setting

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
LINE_BREAKING = ("Cc", "Zl", "Zp")  # control characters (newline, tab, escape...), line and paragraph separators


def has_control(text: str) -> bool:
    """Whether `text` holds a line break or another control character."""
    return any(unicodedata.category(c) in LINE_BREAKING for c in text)


def check_name(name: str, what: str, key: str, source: str | Path) -> None:
    """A benchmark's or model's name (`what`) at `key` of `source` is one line of text, and a benchmark's holds no
    '/': it ends the benchmark in a cell key, while a model's '/' (a hub id, org/name) stays inside its part.
    Dots, spaces and unicode are names: partitions encode them (jobs.store.layout.partition_value)."""
    if not name:
        why = "is empty"
    elif has_control(name):
        why = "holds a line break or another control character"
    elif what == "benchmark" and "/" in name:
        why = "holds '/', which separates the benchmark from the model in cell keys ('benchmark/model')"
    else:
        return
    raise ConfigError(f"{source}: key '{key}': {what} name {name!r} {why}")


def check_env_names(model: ModelConfig, where: str) -> None:
    """Each `*_env` setting of the model (its `api:` section's) names an environment variable, so it is one shell word and one line;
    `where` is "SOURCE: key 'models.NAME"."""
    for key in CREDENTIAL_FIELDS:
        value = setting(model, key)
        if value is not None and not ENV_NAME.fullmatch(value):
            raise ConfigError(f"{where}.{key}': {value!r} is not an environment variable name (letters, digits "
                              "and '_', not starting with a digit)")
