"""What each rank of a vLLM engine runs as and holds, read in the rank's own process.

A tensor-parallel engine that ran on one rank would score exactly as one on two, so nothing in its answers
shows that its ranks ran. vLLM mixes RankReport into its worker class (the engine argument
worker_extension_cls, which jobs.engines.vllm.server sets), so `collective_rpc("rank_report")` asks every rank at
once: its rank, the world size, its process and how many weights it holds (a share of the sharded layers).
Its own module: each rank's process imports it, and nothing else of ours.
"""
from __future__ import annotations

import os
from typing import Any

WORKER_EXTENSION = "jobs.engines.vllm.ranks.RankReport"


def weights_held(model: Any) -> int:
    """The model's weights on this rank, counted by the shapes its layers were built with: vLLM's CPU build
    packs a linear layer's weight for its GEMM kernel and leaves an empty parameter in its place
    (vllm.model_executor.layers.utils.dispatch_cpu_unquantized_gemm, for bfloat16 weights), which
    `parameters()` would count as nothing."""
    held = 0
    for layer in model.modules():
        for name, parameter in layer.named_parameters(recurse=False):
            if name == "weight" and parameter.numel() == 0 and hasattr(layer, "output_partition_sizes"):
                held += sum(layer.output_partition_sizes) * getattr(layer, "input_size_per_partition",
                                                                     layer.input_size)
            else:
                held += parameter.numel()
    return held


class RankReport:
    """A mixin of vLLM's worker, whose `rank`, `parallel_config` and `get_model` it reads."""

    def rank_report(self: Any) -> dict[str, int]:
        return {"rank": int(self.rank), "world_size": int(self.parallel_config.world_size), "pid": os.getpid(),
                "weights": weights_held(self.get_model())}
