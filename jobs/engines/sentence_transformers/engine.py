"""sentence_transformers: a dense retriever; the corpus is encoded by a Ray Data pool of PassageEncoder actors,
then stored exact or as a faiss HNSW graph (index.py) by one Ray task per domain."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from actors.hardware import resolve_dtype
from actors.retrievers import IndexMeta, RetrieverModel, store_index
from jobs.config import ModelConfig
from jobs.console.step_progress import step_progress
from jobs.engines.base import BIN, ORIGINAL, SAFETENSORS, TOKENIZER_FILES, Loads, Log, Retriever, register
from jobs.engines.sentence_transformers.index import DenseIndex, PassageEncoder
from jobs.store import RunRoot

if TYPE_CHECKING:
    from ray import ObjectRef


def encode_passages(corpora: dict[str, dict[str, dict[str, str]]], model: ModelConfig, worker: RetrieverModel,
                    log: Log = print) -> dict[str, tuple[list[str], Any]]:
    """{domain: (ids, float32 matrix)}: every domain's passages encoded in one pass through one Ray Data pool of
    PassageEncoder actors, so the encoders (and their model loads) are started once, not once per domain; the
    demo's passages take minutes on a small machine, so it says how far it is (docs/measurements.md, "Figures
    moved from the code's comments")."""
    import ray

    ids = {domain: list(corpus) for domain, corpus in corpora.items()}
    ds = ray.data.from_items([{"domain": domain, "pid": pid, "title": corpus[pid]["title"],
                               "text": corpus[pid]["text"]} for domain, corpus in corpora.items() for pid in ids[domain]])
    ds = ds.map_batches(PassageEncoder, fn_constructor_kwargs={"model": worker},
                        compute=ray.data.ActorPoolStrategy(min_size=model.min_actors, max_size=model.max_actors),
                        batch_size=model.batch_size, num_cpus=model.num_cpus, num_gpus=model.num_gpus)
    position = {domain: {pid: i for i, pid in enumerate(domain_ids)} for domain, domain_ids in ids.items()}
    matrices: dict[str, np.ndarray] = {}
    total = sum(map(len, ids.values()))
    with step_progress(f"index {model.name}: encoding", total, "passages", log) as progress:
        for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
            _place(batch, ids, position, matrices)
            progress.update(len(batch["pid"]))
    return {domain: (ids[domain], matrices[domain]) for domain in ids}


def _place(batch: dict[str, np.ndarray], ids: dict[str, list[str]], position: dict[str, dict[str, int]],
           matrices: dict[str, np.ndarray]) -> None:
    """A batch's embeddings into each domain's matrix, at its passages' rows."""
    embeddings = np.asarray(batch["embedding"], dtype=np.float32)
    for domain in set(map(str, batch["domain"])):
        rows = [i for i, d in enumerate(batch["domain"]) if str(d) == domain]
        if domain not in matrices:
            matrices[domain] = np.zeros((len(ids[domain]), embeddings.shape[1]), dtype=np.float32)
        matrices[domain][[position[domain][str(batch["pid"][i])] for i in rows]] = embeddings[rows]


def store_dense(cache: RunRoot, folder: str, spec: IndexMeta, ids: list[str], embeddings,
                encode_seconds: float) -> dict:
    start = time.perf_counter()
    ann = {k: v for k, v in spec["index"].items() if k != "kind"} if spec["index"]["kind"] == "hnsw" else None
    index = DenseIndex(ids, embeddings, ann=ann)
    graph = time.perf_counter() - start
    return store_index(cache, folder, index, {**spec, "encode_seconds": round(encode_seconds, 3),
                                              "graph_seconds": round(graph, 3),
                                              "build_seconds": round(encode_seconds + graph, 3)})


class SentenceTransformers(Retriever):
    name = "sentence_transformers"
    packages = ("sentence_transformers",)
    # Its modules' JSON configs (modules.json, 1_Pooling/config.json, ...) and vocab.txt beside the transformer's
    # files; not the ONNX or OpenVINO exports some repositories carry.
    hub_files = Loads(files=("*.json", "*.txt", "*.py") + TOKENIZER_FILES, weights=(SAFETENSORS, BIN),
                      ignore=(ORIGINAL, "consolidated*", "onnx/*", "openvino/*"))
    index = DenseIndex

    def index_spec(self, model: ModelConfig, n_passages: int, search: Any) -> IndexMeta:
        """The weights, and the dtype the encoder will run in on this machine's kind of device (not the setting
        that picks it); exact below the benchmark's `ann_threshold` passages, HNSW from it on."""
        ann = n_passages >= search.ann_threshold
        return {"path": model.path, "revision": model.revision,
                "dtype": resolve_dtype(model.dtype, "cuda" if model.num_gpus else "cpu"),
                "index": {"kind": "hnsw", **search.ann} if ann else {"kind": "exact"}}

    def build_indexes(self, cache: RunRoot, model: ModelConfig, worker: RetrieverModel,
                      missing: dict[str, tuple[IndexMeta, str]], passages: dict[str, dict[str, dict[str, str]]],
                      log: Log = print) -> dict[str, ObjectRef]:
        """The missing domains encoded in one pass (a progress line every 10 s), then stored by one Ray task
        each."""
        import ray

        start = time.perf_counter()
        encoded = encode_passages({domain: passages[domain] for domain in missing}, model, worker, log)
        seconds = time.perf_counter() - start
        task = ray.remote(num_cpus=model.num_cpus)(store_dense)
        return {domain: task.remote(cache, folder, spec, *encoded[domain], seconds)
                for domain, (spec, folder) in missing.items()}


register(SentenceTransformers())
