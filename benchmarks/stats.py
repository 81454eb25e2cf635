"""Uncertainty for every reported accuracy (docs/protocols.md 5): percentile bootstrap over items, seeded."""
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
    rng = np.random.default_rng(stable_seed(seed_key))
    return _percentiles(_resampled_means(values, rng, resamples), level)


def bootstrap_diff_ci(
    a: Sequence[float], b: Sequence[float], seed_key: str, resamples: int = 1000, level: float = 0.95
) -> list[float] | None:
    """Percentile interval of mean(a) - mean(b) where a and b are disjoint sets of items (e.g. pairs whose
    chosen response is longer, and those where it is shorter): each set is resampled on its own, so the sizes
    of the two stay as observed. None when either is empty or `resamples` is 0. Canonical order, as above."""
    if len(a) == 0 or len(b) == 0 or resamples <= 0:
        return None
    rng = np.random.default_rng(stable_seed(seed_key))
    return _percentiles(_resampled_means(a, rng, resamples) - _resampled_means(b, rng, resamples), level)


DRAWS = 1 << 22  # resampled indices held at once (32 MiB): 1,000 resamples of a million items would be 8 GB


def _resampled_means(values: Sequence[float], rng: np.random.Generator, resamples: int) -> np.ndarray:
    """The means of `resamples` resamples, drawn DRAWS indices at a time: a generator's integers come in the
    same sequence whether drawn at once or in consecutive pieces, so the means are the same either way."""
    data = np.asarray(values, dtype=float)
    at_once = max(1, DRAWS // len(data))
    return np.concatenate([data[rng.integers(0, len(data), size=(min(at_once, resamples - done), len(data)))].mean(axis=1)
                           for done in range(0, resamples, at_once)])


def _percentiles(statistics: np.ndarray, level: float) -> list[float]:
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(statistics, [tail, 1.0 - tail])
    return [float(lo), float(hi)]
