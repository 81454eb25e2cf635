"""The model registry: every conf/models/*.yaml, validated as a sweep validates the models it names."""
from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from jobs.config import (
    ConfigError,
    ModelConfig,
    SweepConfig,
    _check_choices,
    _load_yaml,
    _reason,
    _structured,
)


def list_models(conf_dir: Path) -> list[ModelConfig]:
    """Every model file in conf_dir/models, sorted by name; a bad file is a ConfigError naming it and the key.

    A file's `name` must equal its stem: sweeps name models by file, and results by `name`.
    """
    models = []
    for source in sorted((Path(conf_dir) / "models").glob("*.yaml")):
        node = _structured(ModelConfig, _load_yaml(source), str(source))
        try:
            model: ModelConfig = OmegaConf.to_object(node)
        except OmegaConfBaseException as e:
            raise ConfigError(f"{source}: key '{e.full_key}': {_reason(e)}") from None
        if model.name != source.stem:
            raise ConfigError(f"{source}: key 'name': '{model.name}' differs from the file name '{source.stem}'")
        _check_choices(SweepConfig(name="registry", models={model.name: model}), source)
        models.append(model)
    return models


def format_models(models: list[ModelConfig]) -> str:
    """A plain-text table: name, kind, engine, path, params_b, tp (tp is blank for API models)."""
    header = ("name", "kind", "engine", "path", "params_b", "tp")
    rows = [(m.name, m.kind, m.engine, m.path, "" if m.params_b is None else f"{m.params_b:g}",
             "" if m.engine == "http" else str(m.tensor_parallel_size)) for m in models]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = {4, 5}  # numbers
    lines = ["  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
