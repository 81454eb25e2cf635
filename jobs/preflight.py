"""Checks a cell must pass before it starts: a wrong model id or a missing key should cost seconds, not the
minutes of an engine start, and should fail that cell alone with a message naming the model and the key."""
from __future__ import annotations

import dataclasses
import os

from actors.model_store import MINILM, SMOLLM2, TINY_CLASSIFIER
from jobs.config import ModelConfig

_BUILT_IN = (SMOLLM2, MINILM, TINY_CLASSIFIER)


class PreflightError(ValueError):
    """A cell that cannot start; the message lists each problem with the config key it concerns."""


def largest_gpu_node() -> float:
    """GPUs on the best-equipped node of the connected Ray cluster (0 on a CPU cluster)."""
    import ray

    return max((node["Resources"].get("GPU", 0.0) for node in ray.nodes() if node["Alive"]), default=0.0)


def _model_source_problem(name: str, key: str, spec: str) -> str | None:
    if spec.startswith(("pypi:", "builtin:")):
        return None if spec in _BUILT_IN else f"models.{name}.{key}: unknown built-in model '{spec}'"
    if spec.startswith(("/", "./", "../", "~")):
        path = os.path.expanduser(spec)
        return None if os.path.isdir(path) else f"models.{name}.{key}: no such model folder '{spec}'"
    if os.environ.get("HF_HUB_OFFLINE") == "1":  # a hub id can only be checked offline, in the local cache
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(spec, "config.json"), str):
            return f"models.{name}.{key}: '{spec}' is not in the local Hugging Face cache and HF_HUB_OFFLINE=1"
    return None


def vllm_engine_arguments() -> frozenset[str] | None:
    """The names vLLM's EngineArgs takes; None where this process has no vLLM (a cluster's driver may not): the
    engine then rejects an unknown name when it starts."""
    try:
        from vllm.engine.arg_utils import EngineArgs
    except ImportError:
        return None
    return frozenset(f.name for f in dataclasses.fields(EngineArgs))


def model_problems(model: ModelConfig, gpus_per_node: float) -> list[str]:
    """Everything wrong with a model config that can be known before loading it."""
    from actors.http_engine import api_credentials
    from jobs.config import to_dict

    problems = []
    if model.engine == "http":
        try:
            api_credentials(to_dict(model))
        except ValueError as exc:
            problems.append(str(exc))
        return problems
    for key in ("path", "reference"):
        spec = getattr(model, key)
        if model.engine == "bm25" and key == "path":  # a lexical index has no weights to find
            continue
        if spec and (problem := _model_source_problem(model.name, key, spec)):
            problems.append(problem)
    if model.shared and (model.kind != "generative" or model.engine != "vllm"):
        problems.append(f"models.{model.name}.shared: only generative judges on vLLM can be shared, "
                        f"not kind {model.kind} on {model.engine}")
    known = vllm_engine_arguments() if model.engine_args else None
    problems += [f"models.{model.name}.engine_args.{key}: not an argument of vLLM's engine"
                 for key in model.engine_args if known is not None and key not in known]
    template = model.chat_template
    if template and "{" not in template and not os.path.isfile(template):
        problems.append(f"models.{model.name}.chat_template: no such template file '{template}'")
    if model.num_gpus > 0 and model.tensor_parallel_size > gpus_per_node:
        problems.append(f"models.{model.name}.tensor_parallel_size: {model.tensor_parallel_size} GPUs on one node "
                        f"are needed, the largest node of this cluster has {gpus_per_node:g}")
    return problems
