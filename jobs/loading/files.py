"""Reading conf/ YAML into the structured configs (OmegaConf): where names resolve, and errors that name the file
and the key."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from benchmarks.paths import PROJECT_ROOT
from jobs.config import MOVED, ConfigError, ModelConfig

PROJECT_CONF = PROJECT_ROOT / "conf"  # the project's own benchmarks, models, sweeps


def own_conf(sweep_file: Path) -> Path | None:
    """The sweep's own conf folder: the conf/ it lives in (conf/sweeps/x.yaml), else a conf/ beside it."""
    here = sweep_file.resolve().parent
    if here.name == "sweeps" and here.parent.name == "conf":
        return here.parent
    return here / "conf" if (here / "conf").is_dir() else None


def conf_folders(sweep_file: Path) -> list[Path]:
    """Where a sweep's names resolve, in order: its own conf folder, then the project's conf/."""
    own = own_conf(sweep_file)
    return list(dict.fromkeys([own, PROJECT_CONF] if own else [PROJECT_CONF]))


def structured(schema: type, data: Any, source: str) -> DictConfig:
    """`data` typed by `schema`; a model's key that moved into an engine's section fails naming its new place."""
    if schema is ModelConfig and isinstance(data, Mapping | DictConfig):
        data = with_reasoning_block(data)
        for key in data:
            if key in MOVED:
                raise ConfigError(f"{source}: key 'models.{data.get('name', '?')}.{key}': {moved(str(key))}")
    try:
        return OmegaConf.merge(OmegaConf.structured(schema), data)
    except OmegaConfBaseException as e:
        raise ConfigError(f"{source}: key '{e.full_key}': {reason(e)}") from None


def with_reasoning_block(model: Any) -> Any:
    """A model's settings with `reasoning: true` as the block with its defaults and `false` as none (in a model
    file or a `models.NAME.reasoning=true` override)."""
    if not isinstance(model.get("reasoning"), bool):
        return model
    return {**model, "reasoning": {} if model["reasoning"] else None}


def moved(key: str) -> str:
    """Why an old flat model key is refused: where it went (no fallback, so no file means two things)."""
    return f"moved to {MOVED[key]}"


def moved_override(full_key: str) -> str | None:
    """The moved key a `models.NAME.KEY=...` override names, if it names one."""
    parts = str(full_key).split(".")
    return parts[2] if len(parts) == 3 and parts[0] == "models" and parts[2] in MOVED else None


def reason(e: OmegaConfBaseException) -> str:
    return str(e).splitlines()[0]


def load_yaml(path: Path) -> DictConfig:
    if not path.exists():
        raise ConfigError(f"{path}: no such config file")
    loaded = OmegaConf.load(path)
    if not isinstance(loaded, DictConfig):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return loaded
