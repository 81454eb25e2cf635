"""Uncertainty for every reported accuracy (PROTOCOLS.md 5): percentile bootstrap over items, seeded."""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np


def stable_seed(*parts: str) -> int:
    """A seed derived from names (item ids, group names), identical across processes and Python versions.

    Python's hash() is salted per process, so it cannot be used for reproducible seeds.
    """
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")


def bootstrap_ci(
    values: Sequence[float], seed_key: str, resamples: int = 1000, level: float = 0.95
) -> list[float] | None:
    """Percentile interval of the mean, items resampled with replacement; None for no items, or with
    `resamples` 0 (a config's bootstrap_resamples: 0 turns intervals off).

    The caller passes values in a canonical order (sorted by item id), so the interval does not depend on the
    order in which shards finished.
    """
    if len(values) == 0 or resamples <= 0:
        return None
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(stable_seed(seed_key))
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return [float(lo), float(hi)]


def mean(values: Sequence[float]) -> float | None:
    """The arithmetic mean; None for no values (a metric with nothing to average is reported as missing)."""
    return sum(values) / len(values) if len(values) else None
