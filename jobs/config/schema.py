"""Sweep configuration: YAML files validated by dataclass schemas (OmegaConf structured configs).

A sweep names benchmarks and models; each name is a file in conf/benchmarks/ or conf/models/ (or an inline
mapping). Composition happens first, then `key=value` overrides, so any key of the composed sweep can be
overridden on the command line: `models.smollm2_judge.batch_size=4`, `storage.root=s3://bucket/runs`.
An unknown key or a value of the wrong type is a ConfigError that names the key and the file.
"""
from __future__ import annotations

import base64
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from actors.heads import HEADS
from actors.sampling import SAMPLING_PARAMS
from benchmarks.hub import check_url, is_hub
from benchmarks.options import OptionsError, typed_options
from benchmarks.protocol import UnknownBenchmark, benchmark


class ConfigError(ValueError):
    """A configuration problem, with the file and key it concerns in the message."""


@dataclass
class ModelConfig:
    """One reward model or judge, and how to run it."""

    name: str = MISSING
    path: str = MISSING  # local folder, hub id, or a spec actors.model_store resolves ("pypi:...", "builtin:...")
    # discriminative | generative | implicit | api (a generative judge behind an HTTP API) | retriever
    kind: str = MISSING
    # vllm | transformers (for heads vLLM cannot load) | http (kind api, and only it) | bm25 and
    # sentence_transformers (kind retriever, and only they) | stand_in (instant echo answers: tests, dry runs)
    engine: str = "vllm"
    revision: Optional[str] = None  # hub revision (branch, tag or commit) of path
    params_b: Optional[float] = None  # parameters in billions, for `ragjudge plan`
    reference: Optional[str] = None  # implicit RMs: the reference model (same forms as path)
    # float32 | bfloat16 | float16 | auto (the checkpoint's own) | bfloat16-if-native (bfloat16 where the GPU or
    # CPU computes it natively, float32 elsewhere: actors.hardware)
    dtype: str = "float32"
    max_model_len: int = 2048
    tensor_parallel_size: int = 1
    kv_cache_gib: int = 1  # vLLM on CPU: KV cache size
    enforce_eager: bool = False  # vLLM: skip graph compilation (engine start ~30 s instead of ~170 s on CPU)
    # vLLM: further engine arguments, passed as written after ours (the GPU prefill settings: enable_chunked_prefill,
    # enable_prefix_caching, max_num_batched_tokens, gpu_memory_utilization...); preflight checks the names
    engine_args: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 16
    min_actors: int = 1
    max_actors: int = 1
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    max_new_tokens: int = 16  # generative: length of the text verdict
    # generative: which reading of the verdict scores (the other is still recorded): logprob | text; unset, the
    # benchmark's own, as its paper reads it (e.g. RAG-RewardBench: logprob after "Choose ")
    verdict: Optional[str] = None
    chat_template: Optional[str] = None  # overrides the tokenizer's template
    # discriminative on transformers: how the model's outputs become the score its card defines (a name in
    # actors.heads.HEADS: internlm2, eurus, starling, athene, inf_orm, nemotron, gpm, ...); unset, a stock
    # sequence classifier's raw logit
    head: Optional[str] = None
    # let transformers (and vLLM) run code the model's repository ships: its tokenizer, its model class. Per
    # model on purpose: it executes that repository's Python on every worker that loads the model
    trust_remote_code: bool = False
    tokenizer: Optional[str] = None  # transformers: the tokenizer's hub id or folder when the weights ship none
    note: str = ""  # shown beside the model in reports (e.g. "smoke test: random weights")
    api_base_env: Optional[str] = None  # kind api: name of the environment variable holding the base URL
    api_key_env: Optional[str] = None  # kind api: name of the environment variable holding the key (never the key)
    max_concurrency: int = 8  # kind api: requests in flight per actor
    # kind api: retries of a 408/409/429/5xx answer, a timeout or a broken connection, with exponential backoff
    max_retries: int = 5
    # kind api: seconds to wait for a connection or for the reply's next bytes before a try is given up and
    # retried
    timeout_s: float = 120.0
    # kind api: request parameters this endpoint names otherwise (our name -> its name) or rejects (-> null);
    # o1-style reasoning models: {max_tokens: max_completion_tokens, temperature: null, top_p: null}
    api_params: dict[str, Optional[str]] = field(default_factory=dict)
    shared: bool = False  # generative on vLLM: one Ray Serve deployment serves every cell of the sweep
    min_replicas: int = 1  # shared: replicas kept while idle
    max_replicas: int = 1  # shared: replicas under load
    target_ongoing_requests: int = 16  # shared: requests in flight per replica before Serve adds one
    downscale_delay_s: float = 60.0  # shared: idle time before Serve removes a replica
    # kind retriever: the engine's own settings (actors.retrievers: BM25 k1, b, method, stopwords; dense
    # query/passage prefixes, normalize, max_seq_length); they change the index and the rankings.
    retriever: dict[str, Any] = field(default_factory=dict)


@dataclass
class BenchmarkConfig:
    """One benchmark: which module implements it and where its data is."""

    name: str = MISSING
    module: str = MISSING  # benchmarks.<module>
    # files or folders; relative: to the folder that holds the naming file's conf/; or a Hugging Face Hub
    # repository, hf://datasets/owner/name[@revision][/path/in/repo], through its cache (benchmarks.hub)
    data: list[str] = MISSING
    limit: Optional[int] = None  # first N items of each path, for quick looks
    size: Optional[int] = None  # items in the full benchmark, for `ragjudge plan` when the data is not here
    plan_sample: Optional[str] = None  # a local file of representative items whose lengths `plan` scales to size
    bootstrap_resamples: int = 1000
    # The benchmark's options as written (prompts, sampling, runs...); load_sweep types them through the
    # benchmark's Options dataclass, so a missing or wrong key fails with its name before anything runs.
    options: dict[str, Any] = field(default_factory=dict)


RETRY_S = 300.0  # storage.retry_s: how long a storage call is tried again before the cell fails


@dataclass
class StorageConfig:
    root: str = "results"  # local path or s3://bucket/prefix
    run: str = MISSING  # the run folder under root; the same run name resumes
    endpoint_url: Optional[str] = None  # S3-compatible endpoint; else AWS_ENDPOINT_URL
    flush_every: int = 64  # answered requests per stored part while a cell runs
    # A driver's lease on the run (lease.json, jobs.store.lease) is stale this long after its last heartbeat.
    lease_timeout_s: float = 120.0
    # After SIGTERM or SIGINT the driver stores its answered requests and exits; past this it exits anyway
    # (jobs.sweep.interrupt). Slurm's warning signal comes this plus 60 s before the time limit (deploy/slurm.sbatch).
    grace_s: float = 30.0
    # A read or write of the run that fails on a fault that may pass (the object store down or restarting, a
    # connection reset or timed out, HTTP 5xx) is tried again, waits doubling from 0.5 s to 15 s, for this
    # long; then the cell fails, naming the file, and a rerun resumes (jobs.store.retry). A full disk fails
    # at once.
    retry_s: float = RETRY_S


@dataclass
class ClusterConfig:
    address: Optional[str] = None  # Ray address; else RAY_ADDRESS; else a local cluster
    num_cpus: Optional[int] = None  # local cluster only


@dataclass
class SweepConfig:
    name: str = MISSING
    benchmarks: dict[str, BenchmarkConfig] = field(default_factory=dict)
    models: dict[str, ModelConfig] = field(default_factory=dict)
    storage: StorageConfig = field(default_factory=StorageConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    max_concurrent_cells: int = 0  # cells running at once; 0: as many as the cluster's CPUs and GPUs hold
    # Set by load_sweep: the conf folders names resolve in, first match wins (one beside the sweep, then the
    # project's own); a routed judge that is no model of the sweep is looked up there too.
    conf: list[str] = field(default_factory=list)


PROJECT_CONF = Path(__file__).resolve().parents[2] / "conf"  # the project's own benchmarks, models, sweeps


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


def _structured(schema: type, data: Any, source: str) -> DictConfig:
    try:
        return OmegaConf.merge(OmegaConf.structured(schema), data)
    except OmegaConfBaseException as e:
        raise ConfigError(f"{source}: key '{e.full_key}': {_reason(e)}") from None


def _reason(e: OmegaConfBaseException) -> str:
    return str(e).splitlines()[0]


def _load_yaml(path: Path) -> DictConfig:
    if not path.exists():
        raise ConfigError(f"{path}: no such config file")
    loaded = OmegaConf.load(path)
    if not isinstance(loaded, DictConfig):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return loaded


def _compose_entries(entries: Any, folder: str, schema: type, sweep_file: Path, key: str,
                     confs: list[Path]) -> tuple[dict[str, Any], dict[str, Path]]:
    """Names become the file <conf>/<folder>/<name>.yaml of the first conf folder that has it; mappings are
    taken inline. Returns the entries and, per name, the file it came from (the sweep for inline ones)."""
    out: dict[str, Any] = {}
    sources: dict[str, Path] = {}
    for entry in entries or []:
        if isinstance(entry, str):
            source = next((c / folder / f"{entry}.yaml" for c in confs if (c / folder / f"{entry}.yaml").exists()),
                          None)
            if source is None:
                raise ConfigError(f"{sweep_file}: {key}: '{entry}' is neither a mapping nor a file "
                                  f"{folder}/{entry}.yaml in {' or '.join(str(c) for c in confs)}")
            node = _structured(schema, _load_yaml(source), str(source))
        else:
            source, node = sweep_file, _structured(schema, entry, f"{sweep_file} ({key})")
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
        raw = _load_yaml(sweep_file)
    confs = conf_folders(sweep_file)
    composed = OmegaConf.to_container(raw, resolve=False)
    composed["benchmarks"], bench_sources = _compose_entries(raw.get("benchmarks"), "benchmarks", BenchmarkConfig,
                                                             sweep_file, "benchmarks", confs)
    composed["models"], _ = _compose_entries(raw.get("models"), "models", ModelConfig, sweep_file, "models", confs)
    composed["conf"] = [str(c) for c in confs]
    cfg = _structured(SweepConfig, composed, str(sweep_file))
    if overrides:
        try:
            cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(list(overrides)))
        except OmegaConfBaseException as e:
            raise ConfigError(f"command line override of {sweep_file}: key '{e.full_key}': {_reason(e)}") from None
    try:
        sweep: SweepConfig = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as e:
        raise ConfigError(f"{sweep_file}: key '{e.full_key}': {_reason(e)}") from None
    own = own_conf(sweep_file)
    sweep_root = own.parent if own else sweep_file.resolve().parent
    for name, bench in sweep.benchmarks.items():
        source = bench_sources.get(name, sweep_file).resolve()
        root = source.parent.parent.parent if source != sweep_file.resolve() else sweep_root
        bench.data = [_from_root(root, p) for p in bench.data]
        bench.plan_sample = bench.plan_sample and _from_root(root, bench.plan_sample)
        _check_data(bench, str(source), name)
        _check_options(bench, str(source), name)
    _check_choices(sweep, sweep_file)
    return sweep


def _check_options(bench: BenchmarkConfig, source: str, name: str) -> None:
    """The benchmark exists and its options type-check (its Options dataclass) and agree with each other."""
    try:
        spec = benchmark(bench.module)
    except UnknownBenchmark as e:
        raise ConfigError(f"{source}: key 'benchmarks.{name}.module': {e}") from None
    try:
        problems = spec.problems(typed_options(spec.Options, bench.options))
    except OptionsError as e:
        key = ".".join(filter(None, ["benchmarks", name, "options", e.key]))
        raise ConfigError(f"{source}: key '{key}': {e.reason}") from None
    if problems:
        raise ConfigError(f"{source}: benchmark '{name}': " + "; ".join(problems))


def _check_data(bench: BenchmarkConfig, source: str, name: str) -> None:
    """hf:// data paths are well formed (benchmarks.hub); they are fetched when a sweep runs, not here."""
    for path in filter(is_hub, bench.data):
        try:
            check_url(path)
        except ValueError as e:
            raise ConfigError(f"{source}: key 'benchmarks.{name}.data': {e}") from None


def _from_root(root: Path, path: str) -> str:
    return path if "://" in path or os.path.isabs(path) else str(root / path)


def _check_choices(sweep: SweepConfig, sweep_file: Path) -> None:
    choices = {"kind": ("discriminative", "generative", "implicit", "api", "retriever"),
               "engine": ("vllm", "transformers", "http", "stand_in", "bm25", "sentence_transformers"),
               "verdict": ("logprob", "text"), "head": tuple(sorted(HEADS))}
    retrieval_engines = ("bm25", "sentence_transformers")
    for name, model in sweep.models.items():
        for key, allowed in choices.items():
            unset = key in ("verdict", "head") and getattr(model, key) is None
            if getattr(model, key) not in allowed and not unset:
                raise ConfigError(f"{sweep_file}: key 'models.{name}.{key}': '{getattr(model, key)}' is not one of "
                                  f"{', '.join(allowed)}")
        if (model.kind == "api") != (model.engine == "http"):
            key, value = ("engine", model.engine) if model.kind == "api" else ("kind", model.kind)
            raise ConfigError(f"{sweep_file}: key 'models.{name}.{key}': '{value}' does not go with "
                              f"{'kind api' if model.kind == 'api' else 'engine http'}: kind api runs on engine http "
                              "and engine http runs only kind api")
        if (model.kind == "retriever") != (model.engine in retrieval_engines):
            key, value = ("engine", model.engine) if model.kind == "retriever" else ("kind", model.kind)
            raise ConfigError(f"{sweep_file}: key 'models.{name}.{key}': '{value}' does not go with "
                              f"{'kind retriever' if model.kind == 'retriever' else f'engine {model.engine}'}: "
                              f"kind retriever runs on engine {' or '.join(retrieval_engines)}, and they run "
                              "only kind retriever")
        _check_model_extras(model, name, sweep_file)


# vLLM arguments that ModelConfig holds under their own names; engine_args must not set them a second way.
_OWN_ENGINE_KEYS = ("model", "dtype", "max_model_len", "tensor_parallel_size", "enforce_eager", "revision",
                    "trust_remote_code", "tokenizer")


def _check_model_extras(model: ModelConfig, name: str, sweep_file: Path) -> None:
    """Keys that only one engine reads must not sit on a model whose engine would ignore them."""
    where = f"{sweep_file}: key 'models.{name}"
    if model.head is not None and (model.kind, model.engine) != ("discriminative", "transformers"):
        raise ConfigError(f"{where}.head': a score head is read by the transformers engine for kind "
                          f"discriminative, not kind {model.kind} on engine {model.engine}")
    if model.tokenizer is not None and model.engine != "transformers":
        raise ConfigError(f"{where}.tokenizer': only engine transformers loads a separate tokenizer, "
                          f"not engine {model.engine}")
    if model.engine_args and model.engine != "vllm":
        raise ConfigError(f"{where}.engine_args': only engine vllm takes engine arguments, not engine {model.engine}")
    for key in model.engine_args:
        if key in _OWN_ENGINE_KEYS:
            raise ConfigError(f"{where}.engine_args.{key}': set by the model file's own key '{key}', not here")
    if model.api_params and model.kind != "api":
        raise ConfigError(f"{where}.api_params': only kind api sends request parameters, not kind {model.kind}")
    for key, value in model.api_params.items():
        if key not in SAMPLING_PARAMS:
            raise ConfigError(f"{where}.api_params.{key}': not a request parameter; one of "
                              f"{', '.join(SAMPLING_PARAMS)}")
        if value is not None and not value.strip():
            raise ConfigError(f"{where}.api_params.{key}': an empty name; null drops the parameter")


def load_model(spec: str | Mapping[str, Any], where: str, conf_dirs: Sequence[Path] = (PROJECT_CONF,)
               ) -> ModelConfig:
    """One validated model: a name (conf/models/<name>.yaml in the first of `conf_dirs` that has it) or a
    mapping given inline at `where` (e.g. "options.rewriter")."""
    if isinstance(spec, str):
        source = next((d / "models" / f"{spec}.yaml" for d in conf_dirs if (d / "models" / f"{spec}.yaml").exists()),
                      Path(conf_dirs[0]) / "models" / f"{spec}.yaml")
        node, where = _structured(ModelConfig, _load_yaml(source), str(source)), str(source)
    else:
        node = _structured(ModelConfig, dict(spec), where)
    try:
        model: ModelConfig = OmegaConf.to_object(node)
    except OmegaConfBaseException as e:
        raise ConfigError(f"{where}: key '{e.full_key}': {_reason(e)}") from None
    _check_choices(SweepConfig(name="model", models={model.name: model}), Path(where))
    return model


def to_dict(obj: Any) -> dict[str, Any]:
    """A plain dict of a config dataclass, for manifests, hashes and Ray actor arguments."""
    return OmegaConf.to_container(OmegaConf.structured(obj), resolve=True)
