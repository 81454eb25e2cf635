"""Worker records for tests: a model's settings as its engine's workers get them (actors.worker_model)."""
from __future__ import annotations

from typing import Any

from actors.worker_model import WorkerModel
from jobs.config import ModelConfig, flat_settings


def worker(**settings: Any) -> WorkerModel:
    """The record of a model file that sets `settings` (the record's own names, its flat view: `kv_cache_gib`,
    not `vllm.kv_cache_gib`) and leaves every other setting at its default."""
    return WorkerModel.of({**flat_settings(ModelConfig(name="m", path="p", kind="generative")), **settings})


def worker_of(model: ModelConfig, **changes: Any) -> WorkerModel:
    """The record of a loaded model file, with `changes` (a test's own paths, a retry count)."""
    return WorkerModel.of({**flat_settings(model), **changes})
