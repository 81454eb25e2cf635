"""What a sweep, a model and a benchmark are: the structured configs (OmegaConf reads them from YAML in
jobs.loading), and what changing each setting does to work already stored.

Each setting that does not change a model's answers says so next to itself (`metadata=RUN`, `METRICS` or
`PLAN`); every other setting is hashed into a cell's answers (jobs.sweep.cell.answers_hash), so a new setting
is safe by default: changing it asks again rather than reusing answers it may have changed.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from omegaconf import MISSING, OmegaConf

from benchmarks.boundary_types import JsonObject, Kwargs

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
    """One reward model or judge, and how to run it."""

    name: str = MISSING
    path: str = MISSING  # local folder, hub id, or a spec actors.model_store resolves ("pypi:...", "builtin:...")
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
    tensor_parallel_size: int = field(default=1, metadata=RUN)
    kv_cache_gib: int = field(default=1, metadata=RUN)  # vLLM on CPU: KV cache size
    # vLLM: skip graph compilation, which dominates an engine's start on CPU (docs/measurements.md, "Figures
    # moved from the code's comments")
    enforce_eager: bool = field(default=False, metadata=RUN)
    # vLLM: further engine arguments, passed as written after ours (the GPU prefill settings: enable_chunked_prefill,
    # enable_prefix_caching, max_num_batched_tokens, gpu_memory_utilization...); preflight checks the names
    engine_args: Kwargs = field(default_factory=dict)
    batch_size: int = field(default=16, metadata=RUN)
    min_actors: int = field(default=1, metadata=RUN)
    max_actors: int = field(default=1, metadata=RUN)
    num_cpus: float = field(default=1.0, metadata=RUN)
    num_gpus: float = field(default=0.0, metadata=RUN)
    max_new_tokens: int = 16  # generative: length of the text verdict
    # generative: which reading of the verdict scores (the other is still recorded): logprob | text; unset, the
    # benchmark's own, as its paper reads it (e.g. RAG-RewardBench: logprob after "Choose ")
    verdict: str | None = None
    chat_template: str | None = None  # overrides the tokenizer's template
    # discriminative on transformers: how the model's outputs become the score its card defines (a name in
    # jobs.engines.transformers.heads.HEADS: internlm2, eurus, starling, athene, inf_orm, nemotron, gpm, ...);
    # unset, a stock sequence classifier's raw logit
    head: str | None = None
    # let transformers (and vLLM) run code the model's repository ships: its tokenizer, its model class. Per
    # model on purpose: it executes that repository's Python on every worker that loads the model
    trust_remote_code: bool = False
    tokenizer: str | None = None  # transformers: the tokenizer's hub id or folder when the weights ship none
    # shown beside the model in reports (e.g. "smoke test: random weights")
    note: str = field(default="", metadata=RUN)
    # kind api: name of the environment variable holding the base URL
    api_base_env: str | None = field(default=None, metadata=RUN)
    # kind api: name of the environment variable holding the key (never the key)
    api_key_env: str | None = field(default=None, metadata=RUN)
    max_concurrency: int = field(default=8, metadata=RUN)  # kind api: requests in flight per actor
    # kind api: retries of a 408/409/429/5xx answer, a timeout or a broken connection, with exponential backoff
    max_retries: int = field(default=5, metadata=RUN)
    # kind api: seconds to wait for a connection or for the reply's next bytes before a try is given up and
    # retried
    timeout_s: float = field(default=120.0, metadata=RUN)
    # kind api: request parameters this endpoint names otherwise (our name -> its name) or rejects (-> null);
    # o1-style reasoning models: {max_tokens: max_completion_tokens, temperature: null, top_p: null}
    api_params: dict[str, str | None] = field(default_factory=dict)
    # engines openai_batch and anthropic_batch: seconds between polls of a submitted batch, and how long one run
    # waits for it before the cell fails; the batch goes on at the provider, manifest.json keeps its id and a
    # rerun polls it (25 h: the providers' 24 h window, and an hour for the results to be written)
    batch_poll_s: float = field(default=60.0, metadata=RUN)
    batch_max_wait_s: float = field(default=90000.0, metadata=RUN)
    # generative on vLLM: one Ray Serve deployment serves every cell of the sweep
    shared: bool = field(default=False, metadata=RUN)
    min_replicas: int = field(default=1, metadata=RUN)  # shared: replicas kept while idle
    max_replicas: int = field(default=1, metadata=RUN)  # shared: replicas under load
    # shared: requests in flight per replica before Serve adds one
    target_ongoing_requests: int = field(default=16, metadata=RUN)
    # shared: idle time before Serve removes a replica
    downscale_delay_s: float = field(default=60.0, metadata=RUN)
    # kind retriever: the engine's own settings (its folder's index.py: BM25 k1, b, method, stopwords; dense
    # query/passage prefixes, normalize, max_seq_length); they change the index and the rankings.
    retriever: Kwargs = field(default_factory=dict)


# The settings that name environment variables holding a model's credentials: the key, and the base URL, which
# may hold a user:password. Their values are secrets wherever a run stores or prints text (jobs.store.redaction),
# and their names are pasted into job scripts (jobs.cli.submit), so they are checked to be names (jobs.loading).
CREDENTIAL_FIELDS = tuple(f.name for f in fields(ModelConfig) if f.name.endswith("_env"))


def credential_variables(model: ModelConfig) -> list[str]:
    """The environment variables the model names for its credentials (CREDENTIAL_FIELDS)."""
    return [value for key in CREDENTIAL_FIELDS if (value := getattr(model, key))]


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
    """The schema's settings marked `what` ("run", "metrics", "plan"; unmarked ones change "answers")."""
    return frozenset(f.name for f in fields(schema) if f.metadata.get("changes", "answers") == what)


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
