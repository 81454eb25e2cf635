"""Checks a cell must pass before it starts: a wrong model id or a missing key should cost seconds, not the
minutes of an engine start, and should fail that cell alone with a message naming the model and the key."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable

from actors.built_in_models import (
    MADE,
    SMOLLM2,
    TINY_CLASSIFIER,
    builtin_problem,
    made_as,
    resolve_model,
    why_make,
)
from jobs.config import ModelConfig
from jobs.console.step_progress import elapsed_lines, stderr_to_log
from jobs.engines.base import engine_of
from jobs.engines.weights import cached, gated_problem, hub_weights_of, source_of, weight_specs

# What making a built-in model takes, as the progress line says it (docs/measurements.md, "Small costs the
# reference text states").
MAKING = {SMOLLM2: "SmolLM2-135M-Instruct from its GGUF: once per machine, ~35 s",
          TINY_CLASSIFIER: "the tiny random classifier from SmolLM2's tokenizer: once per machine, ~1 s"}


class PreflightError(ValueError):
    """A cell that cannot start; the message lists each problem with the config key it concerns."""


def largest_gpu_node() -> float:
    """GPUs on the best-equipped node of the connected Ray cluster (0 on a CPU cluster)."""
    import ray

    return max((node["Resources"].get("GPU", 0.0) for node in ray.nodes() if node["Alive"]), default=0.0)


def weight_problems(model: ModelConfig, hub: bool) -> dict[str, str]:
    """Per key of WEIGHT_KEYS, why what it names is not here: an unknown or uninstalled built-in model, a
    missing folder, or, when `hub`, a hub id without a snapshot in the Hugging Face cache (else a hub id is
    taken to be fetched when the model loads)."""
    offline = " and HF_HUB_OFFLINE=1" if os.environ.get("HF_HUB_OFFLINE") == "1" else ""
    problems = {}
    for key, spec in weight_specs(model).items():
        source = source_of(spec)
        if source == "built-in":
            problem = builtin_problem(spec)
        elif source == "folder":
            problem = None if os.path.isdir(os.path.expanduser(spec)) else f"no such model folder '{spec}'"
        elif hub and cached(hub_weights_of(model, key)) is None:
            problem = f"'{spec}' is not in the local Hugging Face cache{offline}"
        else:
            problem = None
        if problem:
            problems[key] = problem
    return problems


def model_problems(model: ModelConfig, gpus_per_node: float) -> list[str]:
    """Everything wrong with a model config that can be known before loading it."""
    engine = engine_of(model)
    if engine.remote:  # nothing of it runs here but its client
        return engine.preflight(model)
    problems = []
    offline = os.environ.get("HF_HUB_OFFLINE") == "1"  # online, a hub id not cached is fetched when it loads
    problems += [f"models.{model.name}.{key}: {problem}"
                 for key, problem in weight_problems(model, hub=offline).items()]
    if not offline:
        problems += gated_problems(model)
    if model.serve.shared and (model.kind != "generative" or not engine.shares):
        problems.append(f"models.{model.name}.serve.shared: only generative judges on vLLM can be shared, "
                        f"not kind {model.kind} on {model.engine}")
    problems += engine.preflight(model)
    template = model.chat_template
    if template and "{" not in template and not os.path.isfile(template):
        problems.append(f"models.{model.name}.chat_template: no such template file '{template}'")
    if model.num_gpus > 0 and model.tensor_parallel_size > gpus_per_node:
        problems.append(f"models.{model.name}.tensor_parallel_size: {model.tensor_parallel_size} GPUs on one node "
                        f"are needed, the largest node of this cluster has {gpus_per_node:g}")
    return problems


def gated_problems(model: ModelConfig) -> list[str]:
    """The model's hub repositories not in the Hugging Face cache that this machine may not fetch (gated, and no
    token or a token without access): a cell fails on them before its engine takes a GPU, never hours later."""
    problems = []
    for key, spec in weight_specs(model).items():
        if (source_of(spec) == "hub" and cached(weights := hub_weights_of(model, key)) is None
                and (problem := gated_problem(weights))):
            problems.append(f"models.{model.name}.{key}: {problem}")
    return problems


def make_built_in_models(models: Iterable[ModelConfig], log: Callable[[str], None] = print,
                         also: Iterable[str] = ()) -> dict[str, str]:
    """Make, in this process and one at a time, each built-in model that the models' weight keys (and the specs
    in `also`, e.g. an encoder) name and that is not made yet (or was made by other package versions), before
    any cell or engine asks for it: cells then get finished local folders. Returns spec -> why it could not be
    made, for the cells that need it to fail with."""
    specs = {spec for model in models for spec in weight_specs(model).values()} | set(also)
    failed: dict[str, str] = {}
    made = sorted((spec for spec in specs if made_as(spec)), key=lambda spec: (list(MADE).index(made_as(spec)), spec))
    for spec in made:  # SmolLM2 before what it is made into
        why = why_make(spec)
        if why is None:
            continue
        log(f"making {MAKING[made_as(spec)]}{'' if spec in MADE else f' ({spec})'} ({why})")
        start = time.perf_counter()
        try:
            with elapsed_lines(f"still making {spec}", log), stderr_to_log("transformers"):
                folder = resolve_model(spec)
        except Exception as e:  # noqa: BLE001 - the cells that need it fail with this; the others run
            failed[spec] = f"could not make {spec}: {type(e).__name__}: {e}"
            log(failed[spec])
            continue
        log(f"made {spec} in {time.perf_counter() - start:.1f} s: {folder}")
    return failed


def unmade_problems(model: ModelConfig, failed: dict[str, str]) -> list[str]:
    """The model's keys that name a built-in model that could not be made, as preflight problems."""
    return [f"models.{model.name}.{key}: {failed[spec]}" for key, spec in weight_specs(model).items()
            if spec in failed]
