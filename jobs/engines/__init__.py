"""Who answers a cell's requests: the engine registry, the sweep's engine host (one start per distinct engine),
what engines hold on the cluster, and the checks before any engine starts (preflight) or on `ragjudge models`
(readiness)."""
from jobs.engines.demand import Demand, Need, cell_need, engine_demand
from jobs.engines.host import EngineHost, engine_name, engine_names
from jobs.engines.preflight import (
    PreflightError,
    largest_gpu_node,
    make_built_in_models,
    model_problems,
    unmade_problems,
    weight_specs,
)
from jobs.engines.readiness import Machine, why_not
from jobs.engines.registry import RUN_SETTINGS, answer_requests, dataset_rows, resolved

__all__ = ["RUN_SETTINGS", "Demand", "EngineHost", "Machine", "Need", "PreflightError", "answer_requests",
           "cell_need", "dataset_rows", "engine_demand", "engine_name", "engine_names", "largest_gpu_node",
           "make_built_in_models", "model_problems", "resolved", "unmade_problems", "weight_specs", "why_not"]
