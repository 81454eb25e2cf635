"""jobs.analysis.significance against hand-computed cases and an independent computation (scipy.stats)."""
import itertools
import random

import numpy as np
import pytest
import scipy.stats as st

from jobs.analysis.significance import holm, letter_groups, mcnemar_exact, paired_test, sign_flip_test


def _scipy_sign_flip(a, b, resamples=np.inf, seed=None) -> float:
    """scipy's paired permutation test: 'samples' swaps a[i] and b[i], i.e. flips the sign of d[i]."""
    return st.permutation_test((np.asarray(a, float), np.asarray(b, float)),
                               lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                               n_resamples=resamples, random_state=seed).pvalue


# ---- McNemar ------------------------------------------------------------------------------------------

def test_mcnemar_hand_computed():
    # b=0, c=3: 2 * P(X <= 0), X ~ Bin(3, 1/2) = 2/8.
    assert mcnemar_exact(0, 3) == 0.25
    # b=1, c=4: 2 * (1 + 5) / 32 = 0.375.
    assert mcnemar_exact(1, 4) == pytest.approx(0.375)
    # b=c: the tail already holds half the mass or more, capped at 1.
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)


@pytest.mark.parametrize("b,c", [(3, 10), (10, 3), (40, 61), (0, 1), (7, 7), (120, 180), (600, 700)])
def test_mcnemar_matches_scipy_binomtest(b, c):
    assert mcnemar_exact(b, c) == pytest.approx(st.binomtest(min(b, c), b + c, 0.5).pvalue, rel=1e-9)


def test_mcnemar_rejects_negative_counts():
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)


# ---- sign flip ----------------------------------------------------------------------------------------

def test_sign_flip_hand_computed():
    # d = (1, 1, 1): only the all-plus and all-minus vectors reach |sum| = 3: p = 2/8.
    assert sign_flip_test([1, 1, 1], [0, 0, 0]) == (0.25, True)
    # d = (0.5, 1): sums ±0.5 ± 1 = {1.5, 0.5, -0.5, -1.5}; |sum| >= 1.5 in 2 of 4.
    assert sign_flip_test([1, 1], [0.5, 0]) == (0.5, True)
    # d = (0.5, -1): observed |sum| = 0.5, every vector reaches it: p = 1.
    assert sign_flip_test([0.5, 0], [0, 1]) == (1.0, True)
    # zero differences change nothing.
    assert sign_flip_test([1, 1, 1, 0.5], [0, 0, 0, 0.5]) == (0.25, True)
    assert sign_flip_test([0.5, 1], [0.5, 1]) == (1.0, True)


@pytest.mark.parametrize("seed", range(6))
def test_sign_flip_matches_scipy_exact(seed):
    rng = np.random.default_rng(seed)
    values = [[0, 0.5, 1], [0, 1 / 3, 2 / 3, 1], None][seed % 3]
    n = 14
    a = rng.choice(values, n) if values else rng.random(n)
    b = rng.choice(values, n) if values else rng.random(n)
    if values is None:  # continuous: 2^n must stay <= flips for the enumeration
        a, b = a[:12], b[:12]
    p, exact = sign_flip_test(a, b)
    assert exact
    assert p == pytest.approx(_scipy_sign_flip(a, b), rel=1e-9)


def _reference_exact(a, b) -> float:
    """The exact sign-flip p by a different algorithm: item-by-item dynamic programming over exact fractions
    (every reachable sum with its probability), no binomial grouping, no floats until the end."""
    from fractions import Fraction

    d = [Fraction(x).limit_denominator(12) - Fraction(y).limit_denominator(12) for x, y in zip(a, b)]
    sums = {Fraction(0): Fraction(1)}
    for x in d:
        nxt: dict = {}
        for s, p in sums.items():
            for v in (s + x, s - x):
                nxt[v] = nxt.get(v, 0) + p / 2
        sums = nxt
    observed = abs(sum(d))
    return float(sum(p for s, p in sums.items() if abs(s) >= observed))


@pytest.mark.parametrize("values", [[0, 0.5, 1], [0, 1 / 3, 2 / 3, 1]])
def test_sign_flip_lattice_is_exact_for_many_items(values):
    """Hundreds of both-order judgments (0 / 0.5 / 1) or means over 3 runs: exact, where 2^n is far too many
    sign vectors to enumerate."""
    rng = np.random.default_rng(7)
    a = rng.choice(values, 160)
    b = rng.choice(values, 160, p=[0.35] + [0.65 / (len(values) - 1)] * (len(values) - 1))
    p, exact = sign_flip_test(a, b)
    assert exact
    assert 1e-4 < p < 0.9  # neither trivially significant nor trivially not
    assert p == pytest.approx(_reference_exact(a, b), rel=1e-9, abs=1e-15)


def test_sign_flip_monte_carlo_for_continuous_outcomes():
    rng = np.random.default_rng(3)
    a, b = rng.random(120), rng.random(120) * 0.93
    p, exact = sign_flip_test(a, b, seed_key="m1/m2")
    assert not exact
    assert p == sign_flip_test(a, b, seed_key="m1/m2")[0]  # seeded from the pair's names: reproducible
    assert p != sign_flip_test(a, b, seed_key="m1/m3")[0]
    reference = _scipy_sign_flip(a, b, resamples=10_000, seed=2)
    assert 0.01 < reference < 0.99  # a p-value where Monte Carlo error is visible, not a 0-or-1 case
    assert abs(p - reference) < 5 * np.sqrt(reference * (1 - reference) * 2 / 10_000)


def test_sign_flip_monte_carlo_never_zero_and_detects_a_large_difference():
    rng = np.random.default_rng(4)
    a = rng.random(200) + 0.5
    b = rng.random(200)
    p, exact = sign_flip_test(a, b, seed_key="x")
    assert not exact and p == 1 / 10_001


def test_sign_flip_length_mismatch():
    with pytest.raises(ValueError):
        sign_flip_test([1, 0], [1])


def test_paired_test_picks_the_test_and_counts_discordant_items():
    binary = paired_test([1, 1, 0, 1, 0], [0, 1, 1, 0, 0])
    assert (binary.test, binary.n, binary.a_only, binary.b_only) == ("mcnemar_exact", 5, 2, 1)
    assert binary.p_value == mcnemar_exact(2, 1)
    fractional = paired_test([1, 0.5, 0, 1], [0.5, 0.5, 1, 0])
    assert (fractional.test, fractional.a_only, fractional.b_only) == ("sign_flip_exact", 2, 1)
    assert fractional.p_value == pytest.approx(_scipy_sign_flip([1, 0.5, 0, 1], [0.5, 0.5, 1, 0]))


# ---- Holm ---------------------------------------------------------------------------------------------

def test_holm_hand_computed():
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1 -> max(0.06, 0.04) = 0.06; input order kept.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([]) == []


def test_holm_matches_its_definition_on_random_inputs():
    rng = random.Random(0)
    for _ in range(50):
        p = [rng.random() ** 3 for _ in range(rng.randint(1, 12))]
        m = len(p)
        order = sorted(range(m), key=p.__getitem__)
        for k, i in enumerate(order):  # adjusted p_(k) = max_{j<=k} min(1, (m - j) p_(j))
            expected = max(min(1.0, (m - j) * p[order[j]]) for j in range(k + 1))
            assert holm(p)[i] == pytest.approx(expected)


# ---- letter groups ------------------------------------------------------------------------------------

def test_letter_groups_hand_computed():
    assert letter_groups(["A", "B", "C"], {frozenset("AC")}) == {"A": "a", "B": "ab", "C": "b"}
    assert letter_groups(["A", "B", "C"], set()) == {"A": "a", "B": "a", "C": "a"}
    every = {frozenset(p) for p in itertools.combinations("ABC", 2)}
    assert letter_groups(["A", "B", "C"], every) == {"A": "a", "B": "b", "C": "c"}
    # A differs from C and D, B from D: groups {A,B}, {B,C}, {C,D}.
    assert letter_groups(list("ABCD"), {frozenset("AC"), frozenset("AD"), frozenset("BD")}) == \
        {"A": "a", "B": "ab", "C": "bc", "D": "c"}


def test_letter_groups_separate_exactly_the_significant_pairs():
    """On random significance patterns: a significant pair never shares a letter, and a non-significant
    pair always does (the groups are the maximal sets of mutually indistinguishable models)."""
    rng = random.Random(1)
    for _ in range(100):
        models = [f"m{i}" for i in range(rng.randint(2, 9))]
        different = {frozenset(p) for p in itertools.combinations(models, 2) if rng.random() < 0.4}
        groups = letter_groups(models, different)
        for x, y in itertools.combinations(models, 2):
            shared = set(groups[x]) & set(groups[y])
            assert bool(shared) == (frozenset((x, y)) not in different), (groups, x, y)


def test_letter_groups_beyond_52_groups_stay_unambiguous():
    models = [f"m{i}" for i in range(60)]
    every = {frozenset(p) for p in itertools.combinations(models, 2)}
    groups = letter_groups(models, every)
    assert len(set(groups.values())) == 60
    assert groups["m0"] == "a0" and groups["m59"] == "h1"


# ---- each rule against its nearest wrong variant (issue 64) -------------------------------------------

def test_the_errors_name_the_counts_and_the_lengths():
    with pytest.raises(ValueError, match=r"non-negative, got 2, -3"):
        mcnemar_exact(2, -3)
    with pytest.raises(ValueError, match=r"same length, got 2 and 1"):
        sign_flip_test([1, 0], [1])
    with pytest.raises(ValueError, match=r"same length, got 1 and 2"):
        paired_test([1], [1, 0])


M = 0.1234567  # no multiple of 1/q for q <= 12: Monte Carlo past 13 items


def test_monte_carlo_p_is_a_fixed_value_of_its_seed_and_ties_count_as_extreme():
    """16 items of equal magnitude, 12 of them up: the exact p is 2 P(K >= 12), K ~ Bin(16, 1/2) = 5034/65536
    = 0.0768, and 4.4% of the sign vectors tie the observed |sum| exactly (they count). The seeded estimate is
    a fixed number of its pair's key, another key's differs, and no key is the empty key."""
    a, b = [M] * 12 + [0] * 4, [0] * 12 + [M] * 4
    p, exact = sign_flip_test(a, b, seed_key="m1/m2")
    assert not exact and p == pytest.approx(808 / 10_001, abs=1e-15)  # 807 of 10,000 flips as extreme
    assert abs(p - 5034 / 65536) < 3 * np.sqrt(0.0768 * 0.9232 / 10_000)
    assert sign_flip_test(a, b, seed_key="m1/m3")[0] == pytest.approx(807 / 10_001, abs=1e-15)
    assert sign_flip_test(a, b)[0] == sign_flip_test(a, b, seed_key="")[0] != p
    assert paired_test(a, b).p_value == sign_flip_test(a, b, seed_key="")[0]


def test_monte_carlo_with_flips_not_a_multiple_of_its_batch_draws_exactly_flips():
    """Half the items up: every sign vector reaches |sum| = 0, so p = (1 + flips) / (1 + flips) = 1, never more."""
    a, b = [M] * 8 + [0] * 8, [0] * 8 + [M] * 8
    assert sign_flip_test(a, b, seed_key="k", flips=2500) == (1.0, False)
    assert sign_flip_test(a, b, seed_key="k", flips=999) == (1.0, False)


def test_enumeration_up_to_exactly_flips_sign_vectors():
    rng = np.random.default_rng(0)
    d = rng.random(4)  # continuous, all up: 2 of 16 vectors reach |sum|
    assert sign_flip_test(d, [0] * 4, flips=16) == (0.125, True)  # 2^4 = 16 <= 16: enumerated
    assert sign_flip_test(d, [0] * 4, flips=15)[1] is False


def test_float_ties_within_the_tolerance_and_real_differences_beyond_it():
    """Magnitudes 0.3, 0.3, 0.3, 0.3 - e: vectors of |sum| 0.6 - e fall 2e short of the observed 0.6 + e.
    The tolerance is 1e-9 times the magnitudes' sum: 2e = 1.5e-9 is past it at sum 1.2 (p = 4/16), within it
    at sum 12 (magnitudes 3, 3, 3, 3 - 2e-9: 2e = 4e-9, p = 10/16)."""
    assert sign_flip_test([0.3, 0.3, 0.3, -(0.3 - 0.75e-9)], [0] * 4) == (0.25, True)
    assert sign_flip_test([3, 3, 3, -(3 - 2e-9)], [0] * 4) == (0.625, True)


def test_the_lattice_covers_denominators_up_to_12_and_no_further():
    twelfths = np.array([5, 1, 7, 11] * 5) / 12  # 20 items: only the lattice is exact
    assert sign_flip_test(twelfths, np.zeros(20)) == (pytest.approx(2 / 2**20), True)
    thirteenths = np.array([5, 1, 7, 11] * 5) / 13
    assert sign_flip_test(thirteenths, np.zeros(20), seed_key="x") == (pytest.approx(1 / 10_001), False)


def test_the_lattice_size_bound_is_inclusive(monkeypatch):
    """Units summing to S need 2S + 1 points: exact at 2S + 1 = MAX_LATTICE, Monte Carlo one unit past."""
    from jobs.analysis import significance

    monkeypatch.setattr(significance, "MAX_LATTICE", 201)
    assert sign_flip_test([1] * 13 + [87], [0] * 14) == (pytest.approx(2 / 2**14), True)  # S = 100
    assert sign_flip_test([1] * 13 + [88], [0] * 14, seed_key="x")[1] is False  # S = 101


def test_the_lattice_by_fft_for_long_item_lists_matches_binomials():
    """5,000 differences of ±1 (2,550 up) and 2,500 of ±2 (1,260 up): the convolution of the second kernel
    is done by FFT (10,001 x 10,001 points); the reference sums the two binomials' joint pmf."""
    d = np.array([1] * 2550 + [-1] * 2450 + [2] * 1260 + [-2] * 1240, float)
    p, exact = sign_flip_test(d, np.zeros(d.size))
    k1, k2 = np.arange(5001), np.arange(2501)
    joint = np.outer(st.binom.pmf(k1, 5000, 0.5), st.binom.pmf(k2, 2500, 0.5))
    sums = (2 * k1 - 5000)[:, None] + 2 * (2 * k2 - 2500)[None, :]
    assert exact and p == pytest.approx(joint[np.abs(sums) >= 140].sum(), rel=1e-9)
    assert p == pytest.approx(0.2564128321750, abs=1e-12)


def test_paired_test_names_a_monte_carlo_test_and_seeds_it_with_its_key():
    a, b = [M] * 12 + [0] * 4, [0] * 12 + [M] * 4
    test = paired_test(a, b, seed_key="m1/m2")
    assert (test.test, test.n, test.a_only, test.b_only) == ("sign_flip_monte_carlo", 16, 12, 4)
    assert test.p_value == pytest.approx(808 / 10_001, abs=1e-15)


def test_letter_groups_take_single_letters_up_to_52_groups():
    models = [f"m{i}" for i in range(52)]
    groups = letter_groups(models, {frozenset(p) for p in itertools.combinations(models, 2)})
    assert groups["m0"] == "a" and groups["m25"] == "z" and groups["m26"] == "A" and groups["m51"] == "Z"


def test_letter_groups_past_52_join_a_models_labels_with_spaces():
    """54 models, each indistinguishable only from its neighbours: 53 groups {m_i, m_i+1}, numbered labels."""
    models = [f"m{i}" for i in range(54)]
    different = {frozenset((models[i], models[j])) for i in range(54) for j in range(i + 2, 54)}
    groups = letter_groups(models, different)
    assert (groups["m0"], groups["m1"], groups["m52"], groups["m53"]) == ("a0", "a0 b0", "Z0 a1", "a1")
