"""Reading sweeps and models from conf/ YAML: composition, overrides, validation (each engine's rules, from
jobs.engines), shipping a sweep inside a job's command line, and the model registry."""
from jobs.loading.checks import require_data, unread_column_lines
from jobs.loading.files import PROJECT_CONF, conf_folders
from jobs.loading.models import format_models, list_models, load_model, model_file
from jobs.loading.pins import pin_revision
from jobs.loading.sweeps import load_sweep, ship_sweep

__all__ = ["PROJECT_CONF", "conf_folders", "format_models", "list_models", "load_model", "load_sweep", "model_file",
           "pin_revision", "require_data", "ship_sweep",
           "unread_column_lines"]
