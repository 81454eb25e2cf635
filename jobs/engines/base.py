"""What an engine is to the sweep: one class per engine (jobs/engines/<name>/engine.py), registered by name.

An engine owns everything about itself: the model kinds it runs, the model settings only it reads, the
packages it imports, whether it loads weights here, what it holds on the cluster, its checks before a run and
on `ragjudge models`, and how it answers a list of requests. The rest of jobs/ asks `engine_of(model)` and
never branches on an engine's name, so adding an engine is one folder whose engine.py registers it.
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeAlias

from actors.built_in_models import resolve_model
from actors.engine_ledger import RequestUsage
from actors.retrievers import Index, IndexMeta, RetrieverModel
from actors.worker_model import WorkerModel
from benchmarks.boundary_types import Kwargs
from benchmarks.protocol import Answer, Request
from benchmarks.row_types import REQUEST_KEYS, answer_keys
from jobs.config import ModelConfig, engine_task, flat_settings
from jobs.store.manifest import BatchEntry

if TYPE_CHECKING:
    from ray import ObjectRef
    from ray.data import Dataset

Log = Callable[[str], None]
# What an engine's `answer` is handed: a list, or, for an engine that `streams`, a Ray dataset of requests
Requests: TypeAlias = "list[Request] | Dataset"
Demand = dict[str, float]


@dataclass(frozen=True)
class Loads:
    """The files of a Hugging Face Hub repository an engine reads, as huggingface_hub's allow_patterns (fnmatch: `*`
    crosses folders): every file `files` matches and, of the weight formats in `weights` (the weight files' pattern
    first, then its index), only the first one the repository has, in the order the engine prefers them (its
    safetensors, not a .bin copy of them); nothing `ignore` matches (a checkpoint's `original/` release)."""

    files: tuple[str, ...]
    weights: tuple[tuple[str, ...], ...] = ()
    ignore: tuple[str, ...] = ()

    def patterns(self) -> tuple[str, ...]:
        """Every pattern it may read, whichever weight format a repository has."""
        return self.files + tuple(pattern for form in self.weights for pattern in form)

    def select(self, names: Sequence[str]) -> list[str]:
        """The files of a repository holding `names` that it reads, in their order."""
        from huggingface_hub.utils import filter_repo_objects  # the matching snapshot_download applies

        kept = list(filter_repo_objects(names, ignore_patterns=list(self.ignore) or None))
        form = next((form for form in self.weights if any(filter_repo_objects(kept, allow_patterns=form[0]))), ())
        return list(filter_repo_objects(kept, allow_patterns=[*self.files, *form]))


# What a model's config and tokenizer are read from. *.py: a repository's own classes, run with trust_remote_code.
CONFIG_FILES = ("config.json", "generation_config.json", "*.py")
TOKENIZER_FILES = ("tokenizer*", "special_tokens_map.json", "added_tokens.json", "vocab*", "merges.txt",
                   "*.tiktoken", "chat_template.*")
SAFETENSORS = ("*.safetensors", "*.safetensors.index.json")
BIN = ("*.bin", "*.bin.index.json")
ORIGINAL = "original/*"  # a Meta-format copy of the weights beside the Hugging Face one
# transformers' from_pretrained: safetensors, else PyTorch .bin; never Mistral's consolidated copy
CHECKPOINT = Loads(files=CONFIG_FILES + TOKENIZER_FILES, weights=(SAFETENSORS, BIN),
                   ignore=(ORIGINAL, "consolidated*"))
# A `tokenizer:` repository: its tokenizer, and config.json, where AutoTokenizer finds the tokenizer's class when
# tokenizer_config.json names none.
TOKENIZER = Loads(files=("config.json", "*.py") + TOKENIZER_FILES, ignore=(ORIGINAL,))


class Servers(Protocol):
    """What an engine asks of the sweep's engine host (jobs.engines.host.EngineHost, which starts engines
    through this registry, so it is named here by what it does)."""

    start_s: float  # cluster.engine_start_s: how long an engine (or a shared judge's deployment) may take to start

    def local(self, model: ModelConfig, worker: WorkerModel, path: str) -> tuple[WorkerModel, str]: ...

    def server(self, model: ModelConfig, worker: WorkerModel, path: str, task: str) -> str: ...

    def asked(self, model: ModelConfig, usage: RequestUsage) -> None: ...


class BatchSlot(Protocol):
    """Where an engine that sends a cell's requests as one provider batch keeps that batch (its id and state:
    manifest.json, per cell and route), so a resumed run polls it instead of submitting it again."""

    def get(self) -> BatchEntry | None: ...

    def set(self, entry: BatchEntry) -> None: ...


class Engine:
    """The defaults are those of an engine that loads weights and answers in this cluster's actors."""

    name: ClassVar[str]
    kinds: ClassVar[frozenset[str]] = frozenset({"discriminative", "generative", "implicit"})
    # The sections of a model file this engine reads (jobs.config SECTIONS, and `retriever`), each declared beside
    # its engine's code (e.g. jobs/engines/vllm/settings.py); one set on a model of an engine that does not read
    # it is a config error (jobs.loading.checks), and own_setting_problems checks what is set in them.
    sections: ClassVar[frozenset[str]] = frozenset()
    separate_tokenizer: ClassVar[bool] = False  # loads a model's `tokenizer:` apart from its weights
    # Seconds one start of this engine takes on CPU, for `ragjudge plan`; None: it starts no engine on the
    # cluster that the plan counts. Each engine's figure comes from docs/measurements.md, "45 engines in one
    # sweep", which holds the command and the machine.
    cpu_start_s: ClassVar[float | None] = None
    packages: ClassVar[tuple[str, ...]] = ()  # imported to run (actors/): `ragjudge models` checks them
    weights: ClassVar[bool] = True  # path, reference and tokenizer name weights this cluster loads
    hub_files: ClassVar[Loads] = CHECKPOINT  # what it reads of a hub repository that `path` or `reference` names
    remote: ClassVar[bool] = False  # answered by a service outside the cluster (no GPUs, no tensor parallelism)
    prefills: ClassVar[bool] = True  # a judge's verdict can be read from log-probs after a prefill
    # generates after a request's `continue_text` in the opened assistant turn (a thinking budget needs it)
    continues_turns: ClassVar[bool] = False
    runs_reasoning_parsers: ClassVar[bool] = False  # splits a trace with vLLM's parser named by reasoning.parser
    answers: ClassVar[bool] = True  # answers requests (a retriever indexes and searches instead)
    hosted: ClassVar[bool] = False  # a long-lived engine of the sweep's EngineHost (jobs.engines.host)
    shares: ClassVar[bool] = False  # a generative judge may be one Ray Serve deployment for the sweep
    submits: ClassVar[bool] = False  # sends requests as a provider's batch, kept in a BatchSlot across runs
    streams: ClassVar[bool] = False  # answers a Ray dataset of requests too (a cell's first round, one stream)
    # why `ragjudge validate` cannot score its models two ways; None: it can
    unvalidated: ClassVar[str | None] = None
    reads: ClassVar[frozenset[str]] = REQUEST_KEYS  # the request keys it reads, checked as requests enter it

    def writes(self, model: ModelConfig) -> frozenset[str]:
        """The keys of each answer it returns for the model, checked as answers leave it (a failed answer, with
        its `error`, needs only the identity keys): the task's columns, and the reference's for an implicit RM
        with a reference model."""
        return answer_keys(engine_task(model), reference=model.kind == "implicit" and bool(model.reference))

    def own_setting_problems(self, model: ModelConfig) -> list[tuple[str, str]]:
        """(key, why) for settings of this engine's own sections that do not fit the model (e.g. its kind); the
        key as a model file writes it, `section.key`."""
        return []

    def loads(self, key: str) -> Loads:
        """What it reads of the hub repository a weight key (path, reference, tokenizer) names: `ragjudge fetch`
        and run's prefetch download only that, and a snapshot holding it counts as cached."""
        return TOKENIZER if key == "tokenizer" else self.hub_files

    def preflight(self, model: ModelConfig) -> list[str]:
        """What fails the model's cells before its engine starts, beyond its weights (checked for every engine)."""
        return []

    def readiness(self, model: ModelConfig, machine: Any, gpus: float) -> list[str]:
        """Why this machine (jobs.engines.readiness.Machine) cannot run the model, which needs `gpus`, now."""
        return []

    def ranks(self, model: ModelConfig) -> int:
        """Placement bundles (processes) one replica of the model's engine holds."""
        return 1

    def rank_demand(self, model: ModelConfig) -> Demand:
        """CPUs and GPUs one rank holds."""
        return {"CPU": model.num_cpus, "GPU": model.num_gpus}

    def server_names(self, model: ModelConfig) -> list[str]:
        """The host's engines the model's requests go to (none for an engine outside the host)."""
        return [self.server_name(model)] if self.hosted and not model.serve.shared else []

    def server_name(self, model: ModelConfig, reference: bool = False) -> str:
        """The name (after the sweep's prefix) of the host's engine for the model, or for its reference
        weights: model files whose names are equal share one engine."""
        return f"{model.name}-score"

    def server_actor(self, worker: WorkerModel, path: str, task: str, name: str, ledger: str
                     ) -> tuple[type, tuple[Any, ...]]:
        """The host's engine: the actor class and its arguments."""
        raise NotImplementedError(f"engine '{self.name}' has no engine in the host")

    def placement(self, model: ModelConfig, worker: WorkerModel) -> tuple[Kwargs, Any]:
        """The engine actor's Ray options and the placement group they use, if any."""
        return {"num_cpus": model.num_cpus, "num_gpus": model.num_gpus}, None

    def compiles(self, model: ModelConfig) -> bool:
        """Whether a start of the engine compiles and captures graphs (`ragjudge plan`'s start time)."""
        return False

    def reference_path(self, model: ModelConfig) -> tuple[str, int | None] | str:
        """`ragjudge validate`'s second path: (its name, the padded batch size or None for one at a time), or
        why the model has none."""
        return "transformers, one at a time", None

    def answer(self, requests: Requests, model: ModelConfig, log: Log, host: Servers) -> Iterator[Answer]:
        """The model's answers to `requests`, one per request, as they come (an engine that `submits` batches
        takes a fifth argument, the BatchSlot where it keeps them)."""
        raise NotImplementedError


_REGISTERED: dict[str, Engine] = {}


def register(engine: Engine) -> Engine:
    """Make `engine` the one that runs models whose `engine` is its name."""
    _REGISTERED[engine.name] = engine
    return engine


@functools.cache
def _discover() -> None:
    """Import each engine folder's engine.py (jobs/engines/<name>/engine.py, ending in `register(...)`) once, at
    the first lookup rather than when jobs.engines is imported: a worker that imports its own engine's modules
    (jobs.engines.vllm.server) then imports nothing of the driver's."""
    for folder in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if folder.ispkg:
            importlib.import_module(f"{__package__}.{folder.name}.engine")


def engines() -> dict[str, Engine]:
    """Every registered engine by name: those of this package's folders and any registered elsewhere."""
    _discover()
    return _REGISTERED


def engine_of(model: ModelConfig) -> Engine:
    """The engine the model runs on (its name is checked when the config is loaded: jobs.loading)."""
    try:
        return engines()[model.engine]
    except KeyError:
        raise ValueError(f"model '{model.name}': no engine '{model.engine}' "
                         f"(engines: {', '.join(sorted(engines()))})") from None


def worker_model(model: ModelConfig) -> WorkerModel:
    """What the model's workers read of it, with local folders for the weights this cluster loads."""
    worker = WorkerModel.of(flat_settings(model))
    if model.reasoning is not None:  # the delimiters a name stands for, which workers cannot look up
        start, end = model.reasoning.pair()
        worker = replace(worker, reasoning={**worker.reasoning, "start": start, "end": end})
    if not engine_of(model).weights:
        return worker
    return replace(worker, path=resolve_model(model.path),
                   reference=resolve_model(model.reference) if model.reference else None)


class Retriever(Engine):
    """An engine that indexes corpora and searches them (jobs.flow.ranked runs it) instead of answering
    requests."""

    kinds = frozenset({"retriever"})
    sections = frozenset({"retriever"})
    answers = False
    index: ClassVar[type[Index]]  # what it builds and its searchers load (its folder's index.py)

    def worker_model(self, model: ModelConfig) -> RetrieverModel:
        """What its workers read of the model, its weights (if it has any) a local folder."""
        return RetrieverModel(index=self.index, path=resolve_model(model.path) if self.weights else model.path,
                              settings=model.retriever, batch_size=model.batch_size, dtype=model.dtype,
                              revision=model.revision)

    def index_spec(self, model: ModelConfig, n_passages: int, search: Any) -> IndexMeta:
        """What an index depends on beyond the corpus and the retriever's settings (its hash names the cache
        folder); `search` is the benchmark's SearchSettings."""
        raise NotImplementedError

    def build_indexes(self, cache: Any, model: ModelConfig, worker: RetrieverModel,
                      missing: dict[str, tuple[IndexMeta, str]], passages: dict[str, dict[str, dict[str, str]]],
                      log: Log = print) -> dict[str, ObjectRef]:
        """Start building each missing domain's index (domain -> (spec, folder in the `cache` RunRoot)) from its
        passages; domain -> the Ray reference of the stored index's meta. `log` gets its progress lines."""
        raise NotImplementedError
