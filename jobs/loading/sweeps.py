"""A sweep file composed and validated: benchmark and model names become their conf/ files, then `key=value`
overrides apply, so any key of the composed sweep can be overridden on the command line
(`models.smollm2_judge.batch_size=4`, `storage.root=s3://bucket/runs`). An unknown key or a value of the wrong
type is a ConfigError that names the key and the file."""
from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from benchmarks.boundary_types import JsonObject
from jobs.config import BenchmarkConfig, ConfigError, ModelConfig, SweepConfig, credential_variables, to_dict
from jobs.loading.checks import (
    check_columns,
    check_data,
    check_data_present,
    check_ensembles,
    check_models,
    check_options,
    check_storage,
)
from jobs.loading.files import (
    PROJECT_CONF,
    conf_folders,
    load_yaml,
    moved,
    moved_override,
    own_conf,
    reason,
    structured,
    with_reasoning_block,
)
from jobs.loading.names import check_name
from jobs.store.redaction import declare_secret_variables


def _compose_entries(entries: Any, folder: str, schema: type, sweep_file: Path, key: str,
                     confs: list[Path]) -> tuple[JsonObject, dict[str, Path]]:
    """Names become the file <conf>/<folder>/<name>.yaml of the first conf folder that has it; mappings are
    taken inline. Returns the entries and, per name, the file it came from (the sweep for inline ones)."""
    out: JsonObject = {}
    sources: dict[str, Path] = {}
    for entry in entries or []:
        if isinstance(entry, str):
            source = next((c / folder / f"{entry}.yaml" for c in confs if (c / folder / f"{entry}.yaml").exists()),
                          None)
            if source is None:
                raise ConfigError(f"{sweep_file}: {key}: '{entry}' is neither a mapping nor a file "
                                  f"{folder}/{entry}.yaml in {' or '.join(str(c) for c in confs)}")
            node = structured(schema, load_yaml(source), str(source))
        else:
            source, node = sweep_file, structured(schema, entry, f"{sweep_file} ({key})")
        if node.name in out:
            raise ConfigError(f"{sweep_file}: {key}: '{node.name}' appears twice")
        out[node.name], sources[node.name] = node, source
    return out, sources


SHIPPED = "shipped:"  # a sweep carried inside a job's command line: "shipped:" + base64 of its composed YAML


def ship_sweep(path: str | os.PathLike) -> str:
    """The sweep at `path` composed into one self-contained YAML (every benchmark and model inline, data
    paths inside the project relative to it), as a word for a job's command line that load_sweep reads back
    on a machine without the file."""
    sweep = load_sweep(path)
    def shipped(p: str) -> str:
        return str(Path(p).relative_to(PROJECT_CONF.parent)) if Path(p).is_relative_to(PROJECT_CONF.parent) else p
    for bench in sweep.benchmarks.values():
        bench.data = [shipped(p) for p in bench.data]
        bench.plan_sample = bench.plan_sample and shipped(bench.plan_sample)
    composed = to_dict(sweep)
    composed.pop("conf")
    composed["benchmarks"], composed["models"] = list(composed["benchmarks"].values()), list(composed["models"].values())
    return SHIPPED + base64.urlsafe_b64encode(OmegaConf.to_yaml(composed).encode()).decode()


def load_sweep(path: str | os.PathLike, overrides: list[str] | tuple[str, ...] = ()) -> SweepConfig:
    """Compose and validate a sweep. A relative data path is relative to the folder that holds the conf/ of
    the file that names it (the project root for the project's own benchmarks, and for a shipped sweep)."""
    if str(path).startswith(SHIPPED):
        sweep_file = PROJECT_CONF / "sweeps" / "shipped.yaml"  # names and paths resolve in the project
        raw = OmegaConf.create(base64.urlsafe_b64decode(str(path)[len(SHIPPED):]).decode())
    else:
        sweep_file = Path(path)
        raw = load_yaml(sweep_file)
    confs = conf_folders(sweep_file)
    raw, overrides = _with_entry_lists(raw, list(overrides), sweep_file)
    composed = OmegaConf.to_container(raw, resolve=False)
    composed["benchmarks"], bench_sources = _compose_entries(raw.get("benchmarks"), "benchmarks", BenchmarkConfig,
                                                             sweep_file, "benchmarks", confs)
    composed["models"], _ = _compose_entries(raw.get("models"), "models", ModelConfig, sweep_file, "models", confs)
    composed["conf"] = [str(c) for c in confs]
    cfg = structured(SweepConfig, composed, str(sweep_file))
    if overrides:
        try:
            given = OmegaConf.to_container(OmegaConf.from_dotlist(list(overrides)))
            if isinstance(given.get("models"), dict):
                given["models"] = {name: with_reasoning_block(model) if isinstance(model, dict) else model
                                   for name, model in given["models"].items()}
            cfg = OmegaConf.merge(cfg, given)
        except OmegaConfBaseException as e:
            why = moved(key) if (key := moved_override(e.full_key)) else reason(e)
            raise ConfigError(f"command line override of {sweep_file}: key '{e.full_key}': {why}") from None
        except yaml.YAMLError as e:
            raise ConfigError(f"command line overrides {' '.join(overrides)}: not YAML values "
                              f"({str(e).splitlines()[0]})") from None
    try:
        sweep: SweepConfig = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as e:
        raise ConfigError(f"{sweep_file}: key '{e.full_key}': {reason(e)}") from None
    own = own_conf(sweep_file)
    sweep_root = own.parent if own else sweep_file.resolve().parent
    for name, bench in sweep.benchmarks.items():
        source = bench_sources.get(name, sweep_file).resolve()
        for label in dict.fromkeys((name, bench.name)):
            check_name(label, "benchmark", "benchmarks", source)
        root = source.parent.parent.parent if source != sweep_file.resolve() else sweep_root
        bench.data = [_from_root(root, p) for p in bench.data]
        bench.plan_sample = bench.plan_sample and _from_root(root, bench.plan_sample)
        check_data(bench, str(source), name)
        check_options(bench, str(source), name)
        check_columns(bench, str(source), name)
    check_models(sweep.models, sweep_file)
    check_storage(sweep.storage, sweep_file)
    check_ensembles(sweep.ensembles, sweep.models, sweep.benchmarks, sweep_file)
    for name, bench in sweep.benchmarks.items():
        check_data_present(bench, str(bench_sources.get(name, sweep_file).resolve()), name)
    # Whatever the sweep does next (run, validate, submit), its models' credentials are secrets from here on.
    declare_secret_variables(name for model in sweep.models.values() for name in credential_variables(model))
    return sweep


ENTRY_LISTS = ("benchmarks", "models")  # the sweep keys whose value is a list of names or mappings


def _with_entry_lists(raw: Any, overrides: list[str], sweep_file: Path) -> tuple[Any, list[str]]:
    """The sweep with `models=[a,b]` or `benchmarks=[x, {name: y, ...}]` overrides put in place of its lists
    before their entries are composed, and the other overrides, which apply to the composed sweep."""
    rest = []
    for override in overrides:
        key, sep, _ = override.partition("=")
        if not sep or key.strip() not in ENTRY_LISTS:
            rest.append(override)
            continue
        try:
            value = OmegaConf.from_dotlist([override])[key.strip()]
        except (OmegaConfBaseException, yaml.YAMLError) as e:
            raise ConfigError(f"command line override '{override}': not a YAML value ({reason(e)})") from None
        if not OmegaConf.is_list(value):
            raise ConfigError(f"command line override '{override}': {key} takes a list, e.g. {key}=[a,b] or "
                              f"{key}=[{{name: x, ...}}]")
        raw = OmegaConf.merge(raw, {key.strip(): None})
        raw[key.strip()] = value
    return raw, rest


def _from_root(root: Path, path: str) -> str:
    return path if "://" in path or os.path.isabs(path) else str(root / path)
