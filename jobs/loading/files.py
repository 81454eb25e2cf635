"""Reading conf/ YAML into the structured configs (OmegaConf): where names resolve, and errors that name the file
and the key."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from benchmarks.paths import PROJECT_ROOT
from jobs.config import ConfigError

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
    try:
        return OmegaConf.merge(OmegaConf.structured(schema), data)
    except OmegaConfBaseException as e:
        raise ConfigError(f"{source}: key '{e.full_key}': {reason(e)}") from None


def reason(e: OmegaConfBaseException) -> str:
    return str(e).splitlines()[0]


def load_yaml(path: Path) -> DictConfig:
    if not path.exists():
        raise ConfigError(f"{path}: no such config file")
    loaded = OmegaConf.load(path)
    if not isinstance(loaded, DictConfig):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return loaded
