"""The model registry: every conf/models/*.yaml, validated as a sweep validates the models it names."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from jobs.config.schema import ConfigError, ModelConfig, load_model


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
             "" if m.engine == "http" else str(m.tensor_parallel_size),
             *(("no" if problems[m.name] else "yes", "; ".join(problems[m.name])) if readiness else ()))
            for m in models]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = {4, 5}  # numbers
    lines = ["  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
