"""Model files: one loaded by name or inline (`load_model`), and the model registry, every conf/models/*.yaml
validated as a sweep validates the models it names."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from jobs.config import ConfigError, ModelConfig, credential_variables
from jobs.engines.base import engine_of
from jobs.loading.checks import check_models
from jobs.loading.files import PROJECT_CONF, load_yaml, reason, structured
from jobs.store.redaction import declare_secret_variables


def load_model(spec: str | Mapping[str, Any], where: str, conf_dirs: Sequence[Path] = (PROJECT_CONF,)
               ) -> ModelConfig:
    """One validated model: a name (conf/models/<name>.yaml in the first of `conf_dirs` that has it) or a
    mapping given inline at `where` (e.g. "options.rewriter")."""
    if isinstance(spec, str):
        source = model_file(spec, conf_dirs) or Path(conf_dirs[0]) / "models" / f"{spec}.yaml"
        node, where = structured(ModelConfig, load_yaml(source), str(source)), str(source)
    else:
        node = structured(ModelConfig, dict(spec), where)
    try:
        model: ModelConfig = OmegaConf.to_object(node)
    except OmegaConfBaseException as e:
        raise ConfigError(f"{where}: key '{e.full_key}': {reason(e)}") from None
    check_models({model.name: model}, Path(where))
    declare_secret_variables(credential_variables(model))  # a routed judge's key is as secret as a sweep model's
    return model


def model_file(name: str, conf_dirs: Sequence[Path | str]) -> Path | None:
    """conf/models/<name>.yaml in the first of `conf_dirs` that has it, or None."""
    return next((d / "models" / f"{name}.yaml" for d in map(Path, conf_dirs) if (d / "models" / f"{name}.yaml").exists()),
                None)


def list_models(conf_dir: Path) -> list[ModelConfig]:
    """Every model file in conf_dir/models, sorted by name; a bad file is a ConfigError naming it and the key.

    A file's `name` must equal its stem: sweeps name models by file, and results by `name`.
    """
    models = []
    for source in sorted((Path(conf_dir) / "models").glob("*.yaml")):
        model = load_model(source.stem, str(source), [Path(conf_dir)])
        if model.name != source.stem:
            raise ConfigError(f"{source}: key 'name': '{model.name}' differs from the file name '{source.stem}'")
        models.append(model)
    return models


def format_models(models: list[ModelConfig], problems: Mapping[str, list[str]] | None = None) -> str:
    """A plain-text table: name, kind, engine, path, params_b, tp (blank for API models), and with `problems`
    (model name -> why it cannot run here: jobs.engines.readiness) a `ready` and a `why not` column."""
    readiness = problems is not None
    header = ("name", "kind", "engine", "path", "params_b", "tp", *(("ready", "why not") if readiness else ()))
    rows = [(m.name, m.kind, m.engine, m.path, "" if m.params_b is None else f"{m.params_b:g}",
             "" if engine_of(m).remote else str(m.tensor_parallel_size),
             *(("no" if problems[m.name] else "yes", "; ".join(problems[m.name])) if readiness else ()))
            for m in models]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = {4, 5}  # numbers
    lines = ["  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
