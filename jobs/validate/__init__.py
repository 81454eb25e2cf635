"""`ragjudge validate`: whether each model of a sweep scores the same on every path it could be scored on."""
from jobs.validate.scoring_paths import validate_sweep, validation_benchmarks, validation_samples

__all__ = ["validate_sweep", "validation_benchmarks", "validation_samples"]
