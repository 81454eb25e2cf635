"""Who answers a cell's requests: one module per engine (vllm, transformers, http, openai_batch and anthropic_batch
(batch.py holds what those two share), stand_in, and the retrievers bm25 and sentence_transformers), each an Engine
registered by name (base.py); the sweep's engine host (one start per distinct engine), what engines hold on the
cluster, and the checks before any engine starts (preflight) or on `ragjudge models` (readiness). A new engine is
one module (or package) here ending in `register(...)`: every module of this package is imported below, so no
list names them."""
import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):  # each engine's module registers its engine as it is imported
    importlib.import_module(f"{__name__}.{_module.name}")

from jobs.engines.answering import answer_requests
from jobs.engines.base import ENGINES, Engine, Retriever, engine_of, register, resolved
from jobs.engines.demand import Demand, Need, cell_need, engine_demand
from jobs.engines.errors import headline, retryable
from jobs.engines.host import EngineHost, engine_name, engine_names, last_starts
from jobs.engines.prefetch import Prefetch, WeightsUnavailable, ahead_of_engines
from jobs.engines.preflight import (
    PreflightError,
    largest_gpu_node,
    make_built_in_models,
    model_problems,
    unmade_problems,
)
from jobs.engines.readiness import Machine, why_not
from jobs.engines.rows import dataset_rows
from jobs.engines.weights import HubWeights, hub_weights, unpinned, weight_specs, weights_record

__all__ = ["ENGINES", "Demand", "Engine", "EngineHost", "HubWeights", "Machine", "Need", "Prefetch", "PreflightError",
           "Retriever", "WeightsUnavailable", "ahead_of_engines", "answer_requests", "cell_need", "dataset_rows",
           "engine_demand", "engine_name", "engine_names", "engine_of", "headline", "hub_weights", "largest_gpu_node",
           "last_starts", "make_built_in_models", "model_problems", "register", "resolved", "retryable", "unmade_problems",
           "unpinned", "weight_specs", "weights_record", "why_not"]
