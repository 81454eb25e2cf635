"""transformers: the scorer for what vLLM cannot load (score heads of a model card's own, remote code, a
separate tokenizer), one engine per model file in the host (jobs.engines.transformers.scorers.ScorerServer)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from actors.worker_model import WorkerModel
from benchmarks.boundary_types import Kwargs
from benchmarks.protocol import Answer
from jobs.config import ModelConfig
from jobs.engines.base import Demand, Engine, Log, Requests, Servers, register, worker_model
from jobs.engines.rows import LIGHT, as_dataset, dataset_rows, merge_parts
from jobs.engines.transformers.scorers import ScorerServer, ask

HEAD = "a score head is read by the transformers engine for kind discriminative"


class Transformers(Engine):
    name = "transformers"
    sections = frozenset({"transformers"})  # jobs/engines/transformers/settings.py
    separate_tokenizer = True
    # the median start of its engines on CPU (docs/measurements.md, "45 engines in one sweep")
    cpu_start_s = 36.7
    packages = ("torch", "transformers")
    hosted = True
    streams = True
    continues_turns = True

    def rank_demand(self, model: ModelConfig) -> Demand:
        """One actor holding every GPU its weights are split over (`tensor_parallel_size` whole ones: layers in
        turn, jobs.engines.transformers.devices), or the share of one GPU a model on one device asks for."""
        if model.tensor_parallel_size == 1 or not model.num_gpus:
            return {"CPU": model.num_cpus, "GPU": model.num_gpus}
        return {"CPU": model.num_cpus, "GPU": max(model.num_gpus, 1.0) * model.tensor_parallel_size}

    def placement(self, model: ModelConfig, worker: WorkerModel) -> tuple[Kwargs, Any]:
        demand = self.rank_demand(model)
        return {"num_cpus": demand["CPU"], "num_gpus": demand["GPU"]}, None

    def own_setting_problems(self, model: ModelConfig) -> list[tuple[str, str]]:
        head = model.transformers.head
        return [("transformers.head", HEAD)] if head is not None and model.kind != "discriminative" else []

    def reference_path(self, model: ModelConfig) -> tuple[str, int | None] | str:
        """Padded batches of its batch size (jobs.engines.transformers.padded_batch): the engine itself never pads,
        so this is where padding bugs show."""
        if model.kind == "discriminative" and model.transformers.head not in (None, "classifier"):
            return f"head {model.transformers.head!r} scores one unpadded sequence at a time; it has no padded path"
        return f"transformers, padded batches of {model.batch_size}", model.batch_size

    def server_actor(self, worker: WorkerModel, path: str, task: str, name: str, ledger: str
                     ) -> tuple[type, tuple[Any, ...]]:
        """The scorer reads the model file's kind and head, so its engine stays the file's own."""
        return ScorerServer, (worker, name, ledger)

    def answer(self, requests: Requests, model: ModelConfig, log: Log, host: Servers) -> Iterator[Answer]:
        worker = worker_model(model)
        worker, path = host.local(model, worker, worker.path)  # hub weights: their snapshot, once fetched
        server = host.server(model, worker, path, "score")
        ds = as_dataset(requests).map_batches(ask, batch_size=model.batch_size, **LIGHT, fn_kwargs={"server": server})
        return merge_parts(dataset_rows(ds))


register(Transformers())
