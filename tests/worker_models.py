"""Worker records for tests: a model's settings as its engine's workers get them (actors.worker_model)."""
from __future__ import annotations

from typing import Any

from actors.worker_model import WorkerModel
from jobs.config import ModelConfig, to_dict


def worker(**settings: Any) -> WorkerModel:
    """The record of a model file that sets `settings` and leaves every other setting at its default."""
    return WorkerModel.of(to_dict(ModelConfig(**{"name": "m", "path": "p", "kind": "generative", **settings})))


def worker_of(model: ModelConfig, **changes: Any) -> WorkerModel:
    """The record of a loaded model file, with `changes` (a test's own paths, a retry count)."""
    return WorkerModel.of({**to_dict(model), **changes})
