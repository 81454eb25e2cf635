"""What a sweep, a model and a benchmark are: the structured configs, their loading from conf/, the model registry."""
from jobs.config.registry import format_models, list_models
from jobs.config.schema import (
    PROJECT_CONF,
    RETRY_S,
    BenchmarkConfig,
    ConfigError,
    ModelConfig,
    StorageConfig,
    SweepConfig,
    conf_folders,
    load_model,
    load_sweep,
    ship_sweep,
    to_dict,
)

__all__ = ["PROJECT_CONF", "RETRY_S", "BenchmarkConfig", "ConfigError", "ModelConfig", "StorageConfig", "SweepConfig",
           "conf_folders", "format_models", "list_models", "load_model", "load_sweep", "ship_sweep", "to_dict"]
