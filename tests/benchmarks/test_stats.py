"""benchmarks.stats: the bootstrap intervals every reported accuracy and gap carries."""
import numpy as np
import pytest

from benchmarks import stats
from benchmarks.stats import bootstrap_ci, bootstrap_diff_ci, stable_seed


def test_bootstrap_ci_is_unchanged_by_sharing_its_resampling():
    # the interval of issue 15's leaderboard, recomputed by hand from the same seeded generator
    values = [1.0, 0.0, 1.0, 1.0, 0.0]
    rng = np.random.default_rng(stable_seed("k"))
    means = np.asarray(values)[rng.integers(0, 5, size=(200, 5))].mean(axis=1)
    assert bootstrap_ci(values, "k", 200) == pytest.approx(list(np.quantile(means, [0.025, 0.975])))


def test_difference_of_two_disjoint_sets():
    # constant sets: every resample gives 1 - 0.25
    assert bootstrap_diff_ci([1.0, 1.0, 1.0], [0.25, 0.25], "k") == [0.75, 0.75]
    # a = {1, 0}: resampled means 0, 0.5, 1 (p = 1/4, 1/2, 1/4); b = {0}: so the gap spans [0, 1]
    assert bootstrap_diff_ci([1.0, 0.0], [0.0], "k") == [0.0, 1.0]
    # the sign follows a - b
    assert bootstrap_diff_ci([0.0], [1.0, 0.0], "k") == [-1.0, 0.0]
    assert bootstrap_diff_ci([1.0, 0.0], [0.0, 1.0], "same") == bootstrap_diff_ci([1.0, 0.0], [0.0, 1.0], "same")


def test_no_interval_for_an_empty_set_or_no_resamples():
    assert bootstrap_diff_ci([], [1.0], "k") is None
    assert bootstrap_diff_ci([1.0], [], "k") is None
    assert bootstrap_diff_ci([1.0], [0.0], "k", resamples=0) is None


def test_resamples_drawn_in_pieces_give_the_interval_drawn_at_once(monkeypatch):
    # 1,000 resamples of 5,000 items are 5 million indices; drawn 4,096 at a time (not even a whole resample
    # of 5,000 per piece: one resample a piece), the interval is the one of a single draw, bit for bit
    values = list(np.random.default_rng(3).random(5_000))
    rng = np.random.default_rng(stable_seed("big"))
    means = np.asarray(values)[rng.integers(0, 5_000, size=(1000, 5_000))].mean(axis=1)
    at_once = list(np.quantile(means, [0.025, 0.975]))
    monkeypatch.setattr(stats, "DRAWS", 4_096)
    assert bootstrap_ci(values, "big", 1000) == at_once
    monkeypatch.setattr(stats, "DRAWS", 3 * 5_000 + 7)  # three resamples a piece, the last piece one
    assert bootstrap_ci(values, "big", 1000) == at_once
