"""The vLLM engine's own sections of a model file: `vllm:` (how its engine is built) and `serve:` (a generative
judge shared by every cell of the sweep as one Ray Serve deployment).

jobs.config's ModelConfig nests them. This module imports nothing of jobs, so the config reads it without
loading the engine, and a worker loading it loads no driver code (tests/test_layout.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.boundary_types import Kwargs

# jobs.config's RUN marker (how fast or where it runs: stored answers are kept), written out here because this
# module imports nothing of jobs.
RUN = {"changes": "run"}


@dataclass
class VllmSettings:
    """`vllm:`; each key keeps its name in the flat view a cell's answers are hashed over (jobs.config)."""

    kv_cache_gib: int = field(default=1, metadata=RUN)  # on CPU: the KV cache's size
    # skip graph compilation, which dominates an engine's start on CPU (docs/measurements.md, "Figures moved
    # from the code's comments")
    enforce_eager: bool = field(default=False, metadata=RUN)
    # further engine arguments, passed as written after ours (the GPU prefill settings: enable_chunked_prefill,
    # enable_prefix_caching, max_num_batched_tokens, gpu_memory_utilization...); preflight checks the names.
    # Hashed: one may quantize, or change what is computed.
    engine_args: Kwargs = field(default_factory=dict)


@dataclass
class ServeSettings:
    """`serve:`, a generative judge on vLLM as one Ray Serve deployment for every cell of the sweep."""

    shared: bool = field(default=False, metadata=RUN)  # one deployment serves every cell of the sweep
    min_replicas: int = field(default=1, metadata=RUN)  # replicas kept while idle
    max_replicas: int = field(default=1, metadata=RUN)  # replicas under load
    target_ongoing_requests: int = field(default=16, metadata=RUN)  # in flight per replica before Serve adds one
    downscale_delay_s: float = field(default=60.0, metadata=RUN)  # idle time before Serve removes a replica
