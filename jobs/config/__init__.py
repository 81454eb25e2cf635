"""What a sweep, a model and a benchmark are: the structured configs, the meaning of a model's kind, and what
changing each setting does to stored work. Reading them from conf/ YAML is jobs.loading's."""
from jobs.config.schema import (
    CREDENTIAL_FIELDS,
    ENGINE_START_S,
    ENSEMBLE_RULES,
    KINDS,
    METRIC_SETTINGS,
    MOVED,
    PLAN_SETTINGS,
    RETRY_S,
    RUN_SETTINGS,
    SECTIONS,
    BenchmarkConfig,
    ClusterConfig,
    ConfigError,
    EnsembleConfig,
    ModelConfig,
    StorageConfig,
    SweepConfig,
    credential_variables,
    engine_task,
    ensemble_name,
    flat_settings,
    protocol_kind,
    setting,
    to_dict,
)

__all__ = ["CREDENTIAL_FIELDS", "ENGINE_START_S", "ENSEMBLE_RULES", "KINDS", "METRIC_SETTINGS", "MOVED", "PLAN_SETTINGS",
           "RETRY_S", "RUN_SETTINGS", "SECTIONS", "BenchmarkConfig", "ClusterConfig", "ConfigError", "EnsembleConfig",
           "ModelConfig", "StorageConfig", "SweepConfig", "credential_variables", "engine_task", "ensemble_name",
           "flat_settings", "protocol_kind", "setting", "to_dict"]
