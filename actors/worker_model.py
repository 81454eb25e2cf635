"""What an engine's workers read of a model file, as one frozen record.

The driver builds it once from the model's config (jobs.engines.base.worker_model), from its flat view (the
common keys and each engine section's keys under their flat names, jobs.config.flat_settings: a worker reads
`kv_cache_gib`, not `vllm.kv_cache_gib`), with its weights as local folders where this cluster loads them, and hands it to the engine's actors and Ray Data stages; a worker reads
attributes, never keys, so a setting it needs but the record lacks fails where the record is written, not in a
worker an hour into a sweep. Where the driver swaps a hub spec for its downloaded snapshot it makes a changed
copy (dataclasses.replace).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class WorkerModel:
    name: str
    kind: str
    path: str  # its weights: a local folder once resolved, else as the model file names them
    revision: str | None  # pins `path` only (built_in_models.revision_for)
    reference: str | None  # an implicit RM's reference model
    tokenizer: str | None  # a tokenizer of its own (the transformers engine)
    chat_template: str | None
    trust_remote_code: bool
    head: str | None  # how a reward model's score is read (jobs/engines/transformers/heads.py)
    dtype: str
    max_model_len: int
    max_new_tokens: int
    # a thinking judge's reasoning block (jobs.config.reasoning.ReasoningSettings' fields); None: it does not think
    reasoning: Mapping[str, Any] | None
    # where and how wide it runs
    batch_size: int
    min_actors: int
    max_actors: int
    num_cpus: float
    num_gpus: float
    tensor_parallel_size: int
    kv_cache_gib: int
    enforce_eager: bool
    engine_args: Mapping[str, Any]  # vLLM's engine arguments as the model file writes them (any of vLLM's)
    # an API judge
    api_base_env: str | None
    api_key_env: str | None
    api_params: Mapping[str, str | None]
    max_concurrency: int
    max_retries: int
    timeout_s: float
    batch_poll_s: float
    batch_max_wait_s: float
    # a shared Serve judge
    min_replicas: int
    max_replicas: int
    target_ongoing_requests: int
    downscale_delay_s: float

    @property
    def enable_thinking(self) -> bool | None:
        """What the chat template is asked of thinking (reasoning.enable_thinking); None: its default."""
        return (self.reasoning or {}).get("enable_thinking")

    @property
    def trace_field(self) -> str | None:
        """The API reply's message field that carries the trace (reasoning.api_field); None: none is read."""
        return (self.reasoning or {}).get("api_field")

    @property
    def reasoning_parser(self) -> str | None:
        """vLLM's reasoning parser that splits the trace (reasoning.parser); None: the delimiters do."""
        return (self.reasoning or {}).get("parser")

    @property
    def trace_end(self) -> str | None:
        """The end delimiter of a thinking judge's trace (reasoning.end, which the driver sets to the pair the
        settings name: jobs.engines.base.worker_model); None: it does not think."""
        return (self.reasoning or {}).get("end")

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> WorkerModel:
        """The record of a model's settings as a plain mapping (its config's to_dict); other keys are left."""
        settings = {"reasoning": None, **settings}  # the flat view leaves out a reasoning block that is not set
        missing = [f.name for f in fields(cls) if f.name not in settings]
        if missing:
            raise KeyError(f"model settings lack {', '.join(missing)}")
        return cls(**{f.name: settings[f.name] for f in fields(cls)})
