"""Paired tests between models scored on the same items, Holm's correction and compact letter groups.

Two models of a benchmark answer the same items, so their difference is tested on the items both scored
(paired), not as two independent proportions: the per-item correlation is large (easy items are easy for
everyone), and a paired test sees differences an unpaired one misses. Pure Python + numpy, no Ray.

- binary outcomes (every per-item value 0 or 1): exact McNemar, two-sided, on the discordant items;
- fractional outcomes (a both-order judge scores 0 / 0.5 / 1, an item's runs are averaged): a paired sign-flip
  permutation test on the per-item differences;
- Holm-Bonferroni over all pairs of a benchmark, then letter groups: models sharing a letter are not
  significantly different after Holm.
"""
from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.stats import stable_seed

FLIPS = 10_000  # random sign vectors when the exact null distribution is not computed
MAX_DENOMINATOR = 12  # outcomes that are multiples of 1/q (q <= 12) get the exact lattice distribution
MAX_LATTICE = 4_000_001  # most points of that distribution (32 MB of float64)


@dataclass(frozen=True)
class PairTest:
    """One paired comparison: `a_only` items where a did better than b, `b_only` the reverse."""

    n: int
    a_only: int
    b_only: int
    test: str  # mcnemar_exact | sign_flip_exact | sign_flip_monte_carlo
    p_value: float


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar: p = min(1, 2 P(X <= min(b, c))), X ~ Binomial(b + c, 1/2); 1 when b + c = 0.

    b, c: discordant counts (only A right, only B right). Integer arithmetic, so large counts lose nothing.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got {b}, {c}")
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(_binomial_coefficients(n)[: min(b, c) + 1]) / 2**n)


def _binomial_coefficients(n: int) -> list[int]:
    """C(n, 0..n) as exact integers, each from the previous one (a product and an exact division)."""
    row = [1]
    for k in range(n):
        row.append(row[-1] * (n - k) // (k + 1))
    return row


def _lattice(magnitudes: np.ndarray) -> tuple[int, np.ndarray] | None:
    """(q, integer units) with magnitudes == units / q for a small denominator q, or None (continuous values).

    Per-item means of 0/1 outcomes over 2 orders or 3 runs are multiples of 1/2, 1/3, 1/6: their sums live
    on a lattice, and the sign-flip distribution over it can be computed exactly by convolution."""
    for q in range(1, MAX_DENOMINATOR + 1):
        scaled = magnitudes * q
        units = np.round(scaled)
        if np.all(np.abs(scaled - units) < 1e-9) and units.sum() * 2 + 1 <= MAX_LATTICE:
            return q, units.astype(np.int64)
    return None


def _binomial_half(n: int) -> np.ndarray:
    """P(K = k) for K ~ Binomial(n, 1/2), k = 0..n, each term exactly rounded (integer numerators)."""
    total = 2**n
    return np.array([c / total for c in _binomial_coefficients(n)])  # int / int: correctly rounded


def _lattice_p(units: np.ndarray, observed: int) -> float:
    """P(|sum s_i u_i| >= |observed|) for fair signs s_i, exactly: items with equal u flip as a binomial
    count, so the distribution of the sum is a convolution of one strided binomial per distinct u."""
    pmf = np.ones(1)
    for u, n in zip(*np.unique(units, return_counts=True)):
        kernel = np.zeros(2 * int(u) * int(n) + 1)
        kernel[:: 2 * int(u)] = _binomial_half(int(n))  # k flips up: sum = u * (2k - n), offset by u * n
        if pmf.size * kernel.size > 5e7:
            size = pmf.size + kernel.size - 1
            pmf = np.fft.irfft(np.fft.rfft(pmf, size) * np.fft.rfft(kernel, size), size).clip(0.0)
        else:
            pmf = np.convolve(pmf, kernel)
    sums = np.arange(pmf.size) - pmf.size // 2
    return min(1.0, float(pmf[np.abs(sums) >= abs(observed)].sum()))


def sign_flip_test(a: Sequence[float], b: Sequence[float], seed_key: str = "",
                   flips: int = FLIPS) -> tuple[float, bool]:
    """Two-sided paired sign-flip permutation test of mean(a - b) = 0; returns (p, exact).

    Under the null each item's difference is as likely to have the other sign, so |sum(d)| is compared with
    |sum(s_i d_i)| over all sign vectors s. Items with d = 0 change nothing and are dropped (the p-value is
    the same with them). Exact when 2^n <= `flips` (all sign vectors enumerated) or when the differences are
    multiples of 1/q for q <= 12 (0 / 0.5 / 1 judges, means over 3 runs: the exact distribution by
    convolution); otherwise `flips` random sign vectors from a generator seeded with `seed_key` (the pair's
    names, so a report is reproducible), with p = (1 + #{|T*| >= |T|}) / (1 + flips), never 0.
    """
    if len(a) != len(b):
        raise ValueError(f"paired samples must have the same length, got {len(a)} and {len(b)}")
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    d = d[d != 0]
    if d.size == 0:
        return 1.0, True
    magnitudes = np.abs(d)
    lattice = _lattice(magnitudes)
    if lattice is not None:
        q, _ = lattice
        units = np.round(d * q).astype(np.int64)
        return _lattice_p(np.abs(units), int(units.sum())), True
    observed = abs(float(d.sum()))
    tolerance = 1e-9 * max(1.0, float(magnitudes.sum()))  # float sums of the same terms in another order
    if 2 ** d.size <= flips:
        signs = 1 - 2 * ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1)
        sums = np.abs(signs @ magnitudes)
        return float(np.mean(sums >= observed - tolerance)), True
    rng = np.random.default_rng(stable_seed("sign_flip", seed_key))
    # Random bytes are the signs, 8 items per byte: a table holds each byte value's sum of its 8 items'
    # magnitudes, so a sign vector's sum is one lookup per 8 items instead of a multiply per item.
    groups = (d.size + 7) // 8
    padded = np.zeros(groups * 8)
    padded[: d.size] = magnitudes
    byte_bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(float)  # 256 x 8
    table = padded.reshape(groups, 8) @ byte_bits.T  # groups x 256: the items flipped up, summed
    total, extreme = float(magnitudes.sum()), 0
    for start in range(0, flips, 1000):  # 1000 sign vectors at a time bounds memory for long item lists
        random_bytes = rng.integers(0, 256, size=(min(1000, flips - start), groups), dtype=np.uint8)
        up = table[np.arange(groups), random_bytes].sum(axis=1)
        extreme += int((np.abs(2 * up - total) >= observed - tolerance).sum())
    return (1 + extreme) / (1 + flips), False


def is_binary(values: Sequence[float] | np.ndarray) -> bool:
    """Whether every outcome is exactly 0 or 1 (McNemar applies)."""
    values = np.asarray(values, dtype=float)
    return bool(np.all((values == 0.0) | (values == 1.0)))


def paired_test(a: Sequence[float], b: Sequence[float], seed_key: str = "") -> PairTest:
    """The test the outcomes call for, on per-item values aligned by item (a[i] and b[i]: the same item)."""
    if len(a) != len(b):
        raise ValueError(f"paired samples must have the same length, got {len(a)} and {len(b)}")
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a_only, b_only = int((x > y).sum()), int((y > x).sum())
    if is_binary(x) and is_binary(y):
        return PairTest(len(a), a_only, b_only, "mcnemar_exact", mcnemar_exact(a_only, b_only))
    p, exact = sign_flip_test(a, b, seed_key)
    return PairTest(len(a), a_only, b_only, "sign_flip_exact" if exact else "sign_flip_monte_carlo", p)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order: the k-th smallest of m is multiplied by
    (m - k + 1), then made monotone (an adjusted p never falls below that of a smaller raw p) and capped at 1.
    Rejecting adjusted p < alpha controls the family-wise error rate over all pairs at alpha."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _labels(count: int) -> list[str]:
    letters = string.ascii_lowercase + string.ascii_uppercase
    if count <= len(letters):
        return list(letters[:count])
    return [f"{letters[i % len(letters)]}{i // len(letters)}" for i in range(count)]


def letter_groups(models: Sequence[str], different: set[frozenset[str]]) -> dict[str, str]:
    """Compact letter display (Piepho 2004, insert and absorb): models that share a letter are not
    significantly different; every significant pair shares none.

    `models` in display order (best first): letters are handed out in that order, so the best model gets
    "a". `different` holds the significant pairs. Starting from one group of all models, each significant
    pair splits every group holding both (one copy without each), and groups contained in another are
    absorbed. The result is the set of maximal groups of mutually indistinguishable models. Past 52 groups
    the labels get a number (a1, b1, ...) and are joined with spaces.
    """
    position = {m: i for i, m in enumerate(models)}
    columns: list[frozenset[str]] = [frozenset(models)] if models else []
    for pair in sorted(different, key=lambda p: sorted(position[m] for m in p)):
        x, y = sorted(pair, key=position.__getitem__)
        split: list[frozenset[str]] = []
        for column in columns:
            if x in column and y in column:
                split += [column - {x}, column - {y}]
            else:
                split.append(column)
        unique = list(dict.fromkeys(c for c in split if c))
        columns = [c for c in unique if not any(c < other for other in unique)]
    columns.sort(key=lambda c: sorted(position[m] for m in c))
    labels = _labels(len(columns))
    sep = "" if all(len(label) == 1 for label in labels) else " "
    return {m: sep.join(label for label, c in zip(labels, columns) if m in c) for m in models}
