"""The transformers engine's own section of a model file, `transformers:`.

jobs.config's ModelConfig nests it. This module imports nothing of jobs, so the config reads it without
loading the engine, and a worker loading it loads no driver code (tests/test_layout.py).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TransformersSettings:
    """`transformers:`; each key keeps its name in the flat view a cell's answers are hashed over (jobs.config)."""

    # kind discriminative: how the model's outputs become the score its card defines (a name in
    # jobs.engines.transformers.heads.HEADS: internlm2, eurus, starling, athene, inf_orm, nemotron, gpm, ...);
    # unset, a stock sequence classifier's raw logit
    head: str | None = None
