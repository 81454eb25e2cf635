"""A model's identity: one digest of everything that changes its answers, the answer store's key
(jobs.store.answers) across runs and model files.

Unlike a cell's answers_hash (jobs.sweep.cell), it leaves out the model file's name (two files for one model
share answers) and names weights by what they are, as manifest.json records them (jobs.engines.weights): a
folder by its hash, wherever it lies; a hub repository by the commit of its cached snapshot, so a model pinned
to the commit it already had keeps its answers. Weights not there yet (not cached, not made) are named as
written, revision included. It is taken over the model's flat view (jobs.config.flat_settings), so a
setting that moved into an engine's section keeps the identity it had.
"""
from __future__ import annotations

import hashlib
import json

from jobs.config import RUN_SETTINGS, ModelConfig, flat_settings
from jobs.engines.weights import weights_record


def model_identity(model: ModelConfig) -> str:
    """The model's identity digest (16 hex digits)."""
    settings = {k: v for k, v in flat_settings(model).items()
                if k not in RUN_SETTINGS and k != "name" and (v or k != "engine_args")}
    record = weights_record(model)
    for key, loaded in record.items():
        what = loaded.get("commit") or loaded.get("hash") if isinstance(loaded, dict) else None
        if what:
            settings[key] = what
            if key == "path":
                settings.pop("revision", None)  # the commit says it
    if "api_host" in record:  # the same model name behind another endpoint may be another model
        settings["endpoint"] = record["api_host"]
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
