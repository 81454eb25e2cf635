"""The sweep `ragjudge eval` runs: one model, read from the forms a user has it in (a folder, a hub id, a built-in,
an API model), its kind read from its config.json where the user gives none, and the benchmarks it names, each
with the user's own data and column mapping. Every entry is written out whole (inline mappings, absolute paths),
so the sweep file it becomes runs the same from any folder."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from actors.built_in_models import resolve_model
from benchmarks.boundary_types import JsonObject
from benchmarks.columns import mapping_problems
from benchmarks.protocol import Benchmark, benchmark, benchmark_names
from jobs.config import BenchmarkConfig, ConfigError, to_dict
from jobs.engines.preflight import make_built_in_models
from jobs.loading.files import PROJECT_CONF, load_yaml, structured

DEFAULTS = PROJECT_CONF / "eval.yaml"  # the benchmark run when none is named, and the one --data is read as
CPU_MAX_MODEL_LEN = 4096  # a longer context on CPU reserves more KV cache than the CPU engine's default holds
ARCHITECTURE_KINDS = (("ForSequenceClassification", "discriminative"), ("ForCausalLM", "generative"),
                      ("ForConditionalGeneration", "generative"))


@dataclass(frozen=True)
class EvalRequest:
    """What the user typed: the model, its benchmarks, and how their data is read."""

    model: str
    benchmarks: tuple[str, ...] = ()
    kind: str | None = None
    reference: str | None = None
    data: tuple[str, ...] = ()
    columns: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    api_base_env: str | None = None
    api_key_env: str | None = None


def model_entry(request: EvalRequest) -> tuple[JsonObject, str]:
    """The model's sweep entry, and a line saying what it is, where its kind came from and how to change it."""
    spec = request.model
    registry = PROJECT_CONF / "models" / f"{spec}.yaml"
    if spec.startswith("http:"):
        if not request.api_base_env:
            raise ConfigError(f"{spec}: an API model needs --api-base-env VAR (the environment variable holding its "
                              "base URL) and usually --api-key-env VAR (the one holding its key)")
        entry = {"name": request.name or _name(spec[len("http:"):]), "path": spec[len("http:"):], "kind": "api",
                 "engine": "http", "api": {"base_env": request.api_base_env,
                                           **({"key_env": request.api_key_env} if request.api_key_env else {})}}
        return entry, f"{spec} through the OpenAI-compatible API at ${request.api_base_env}, as a generative judge"
    if "/" not in spec and ":" not in spec and registry.exists() and not Path(spec).exists():
        entry = {**load_yaml(registry), **_given(request)}
        return entry, f"conf/models/{spec}.yaml (kind {entry['kind']})"
    path, revision = _path(spec)
    try:
        config = _config_json(path, revision)
    except ConfigError:
        if not request.kind:
            raise
        config = {}  # the kind was given: the context stays at the CPU limit
    kind, why = (request.kind, "--kind") if request.kind else _kind(path, config)
    entry = {"name": _name(spec), "path": path, "kind": kind, **({"revision": revision} if revision else {}),
             **_hardware(config), **_given(request)}
    other = ", ".join(k for k in ("discriminative", "generative", "implicit") if k != kind)
    return entry, f"{spec}, kind {kind} ({why}; --kind {other} to change it)"


def eval_sweep(request: EvalRequest, model: JsonObject) -> JsonObject:
    """The sweep (without its storage) of one model on the requested benchmarks, each entry whole."""
    defaults = load_yaml(DEFAULTS)
    names = list(request.benchmarks) or [str(defaults.data_benchmark if request.data else defaults.benchmark)]
    if request.data and len(names) > 1:
        raise ConfigError(f"--data is one benchmark's data; {len(names)} benchmarks were named ({', '.join(names)})")
    entries = []
    for name in names:
        entry = _benchmark_entry(name)
        if request.data:
            entry["data"] = [absolute(path) for path in request.data]
            entry["name"] = _name(Path(request.data[0].rstrip("/")).name.split(".")[0]) or entry["name"]
            entry.pop("size", None)
        if request.columns:
            spec = benchmark(entry["module"])
            if not isinstance(spec, Benchmark):
                raise ConfigError(f"--columns: benchmark '{name}' is scored on rankings and reads no columns")
            if problems := mapping_problems(spec.fields, request.columns):
                raise ConfigError("; ".join(f"--{p}" for p in problems))
            entry["columns"] = dict(request.columns)
        entries.append(entry)
    return {"benchmarks": entries, "models": [model]}


def _benchmark_entry(name: str) -> JsonObject:
    """A benchmark of conf/benchmarks/ (or a benchmark module, on its full data) as a whole entry, its data
    paths absolute."""
    source = PROJECT_CONF / "benchmarks" / f"{name}.yaml"
    if not source.exists():
        known = sorted(p.stem for p in (PROJECT_CONF / "benchmarks").glob("*.yaml"))
        raise ConfigError(f"--benchmark {name}: no conf/benchmarks/{name}.yaml (known: {', '.join(known)}; modules: "
                          f"{', '.join(benchmark_names())})")
    entry = to_dict(structured(BenchmarkConfig, load_yaml(source), str(source)))
    entry["data"] = [path if "://" in path or os.path.isabs(path) else str(PROJECT_CONF.parent / path)
                     for path in entry["data"]]
    return {key: value for key, value in entry.items() if value not in (None, {}, [])}


def _path(spec: str) -> tuple[str, str | None]:
    """(path, revision) of a model spec: a folder (made absolute), hf:ORG/NAME[@REV], or a built-in as it is."""
    if spec.startswith("hf:"):
        repo, _, revision = spec[len("hf:"):].partition("@")
        if repo.count("/") != 1:
            raise ConfigError(f"{spec}: a hub model is hf:ORG/NAME[@REVISION]")
        return repo, revision or None
    if spec.startswith(("builtin:", "pypi:")):
        return spec, None
    if Path(spec).is_dir():
        return str(Path(spec).resolve()), None
    raise ConfigError(f"{spec}: not a model folder here, hf:ORG/NAME, builtin:NAME, pypi:PACKAGE, http:NAME or a "
                      f"name in {PROJECT_CONF / 'models'}")


def _kind(path: str, config: JsonObject) -> tuple[str, str]:
    """The kind a model's config.json architecture says, and where it was read."""
    architectures = config.get("architectures") or []
    for suffix, kind in ARCHITECTURE_KINDS:
        if any(str(a).endswith(suffix) for a in architectures):
            return kind, f"config.json: {', '.join(architectures)}"
    raise ConfigError(f"{path}: its config.json names no architecture ragjudge knows the kind of "
                      f"({', '.join(architectures) or 'none'}); give --kind discriminative, generative or implicit")


def _config_json(path: str, revision: str | None) -> JsonObject:
    """The model's config.json: from its folder (a built-in one made first), else from the Hub or its cache."""
    built_in = path.startswith(("builtin:", "pypi:"))
    if built_in and (failed := make_built_in_models([], also=[path])):  # said as a sweep says it
        raise ConfigError(failed[path])
    folder = Path(resolve_model(path)) if built_in else Path(path)
    if folder.is_dir():
        file = folder / "config.json"
    else:
        from huggingface_hub import hf_hub_download

        try:
            file = Path(hf_hub_download(path, "config.json", revision=revision))
        except Exception as e:  # noqa: BLE001 - offline, gated or missing: the user can name the kind instead
            raise ConfigError(f"hf:{path}: its config.json could not be read ({type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''}); give --kind") from None
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{file}: not a readable config.json ({e}); give --kind") from None


def _hardware(config: JsonObject) -> JsonObject:
    """The settings this machine needs: a GPU each where there is one, else vLLM's CPU engine without graph
    compilation (minutes per start on CPU) and a context no longer than the model's own (its config.json) or
    CPU_MAX_MODEL_LEN."""
    import torch

    if torch.cuda.is_available():
        return {"num_gpus": 1}
    return {"vllm": {"enforce_eager": True},
            "max_model_len": min(CPU_MAX_MODEL_LEN, int(config.get("max_position_embeddings") or CPU_MAX_MODEL_LEN))}


def absolute(path: str) -> str:
    """A local path made absolute (so a written sweep runs from any folder); a URL as it is."""
    return path if "://" in path else str(Path(path).resolve())


def _given(request: EvalRequest) -> JsonObject:
    """What the user set on the command line, over what the model's entry says."""
    return {**({"name": request.name} if request.name else {}), **({"kind": request.kind} if request.kind else {}),
            **({"reference": _path(request.reference)[0]} if request.reference else {})}


def _name(spec: str) -> str:
    """A model or benchmark name from what the user typed: its last path part, without a scheme or revision,
    in letters, digits, '_', '-' and '.'."""
    base = re.sub(r"^(hf|builtin|pypi|http):", "", spec).split("@")[0].rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", base).strip("._") or "model"
