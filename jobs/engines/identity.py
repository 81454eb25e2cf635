"""A model's identity: one digest of everything that changes its answers, the answer store's key
(jobs.store.answers) across runs and model files.

Unlike a cell's answers_hash (jobs.sweep.cell), it leaves out the model file's name (two files for one model
share answers) and reads its weights by what they are, not where they are (actors.model_store.weights_identity):
a folder moved, or a hub model pinned to the commit it already had, keeps its answers.
"""
from __future__ import annotations

import hashlib
import json
import os
from urllib.parse import urlsplit

from actors.model_store import weights_identity
from jobs.config import RUN_SETTINGS, ModelConfig, to_dict
from jobs.engines.base import engine_of

WEIGHTS = ("path", "reference", "tokenizer")  # the settings that name weights or a tokenizer to load


def model_identity(model: ModelConfig) -> str:
    """The model's identity digest (16 hex digits)."""
    engine = engine_of(model)
    settings = {k: v for k, v in to_dict(model).items()
                if k not in RUN_SETTINGS and k != "name" and (v or k != "engine_args")}
    if engine.weights:
        revision = settings.pop("revision", None)  # read into the weights' own identity
        for key in WEIGHTS:
            if settings.get(key):
                settings[key] = weights_identity(settings[key], revision if key == "path" else None)
    if engine.remote:  # the same model name behind another endpoint may be another model
        settings["endpoint"] = urlsplit(os.environ.get(model.api_base_env or "", "")).hostname
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
