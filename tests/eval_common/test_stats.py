"""eval/stats.py against direct computations and scipy/statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from histbench.eval import stats


def test_bootstrap_counts_rows_sum_to_n_and_are_seeded():
    counts = stats.bootstrap_counts(7, 50, seed=3)
    assert counts.shape == (50, 7) and (counts.sum(axis=1) == 7).all()
    assert (stats.bootstrap_counts(7, 50, seed=3) == counts).all()
    assert not (stats.bootstrap_counts(7, 50, seed=4) == counts).all()


def test_bootstrap_means_match_explicit_resamples():
    rng = np.random.default_rng(0)
    values = rng.normal(size=9)
    counts = stats.bootstrap_counts(9, 20, seed=1)
    expected = [np.repeat(values, row).mean() for row in counts]
    assert np.allclose(stats.bootstrap_means(values, counts), expected)


def test_bootstrap_means_skip_nan_items():
    values = np.array([1.0, np.nan, 3.0])
    counts = np.array([[1, 1, 1], [0, 3, 0], [2, 0, 1]])
    means = stats.bootstrap_means(values, counts)
    assert means[0] == 2.0 and np.isnan(means[1]) and means[2] == pytest.approx(5 / 3)


def test_bootstrap_mean_interval_contains_estimate_and_narrows_with_n():
    small = stats.bootstrap_mean(np.arange(10.0), 2000, seed=0)
    large = stats.bootstrap_mean(np.tile(np.arange(10.0), 50), 2000, seed=0)
    assert small.estimate == large.estimate == 4.5
    assert small.low < 4.5 < small.high
    assert (large.high - large.low) < (small.high - small.low) / 3


def test_bootstrap_statistic_median_vectorised():
    values = np.array([5.0, 1.0, 3.0, 9.0, 7.0])
    result = stats.bootstrap_statistic(lambda v: np.median(v, axis=-1), (values,), 500, seed=2)
    assert result.estimate == 5.0 and 1.0 <= result.low <= result.high <= 9.0


def test_wilson_matches_closed_form():
    k, n, z = 7, 20, 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    interval = stats.wilson_interval(k, n)
    assert interval.estimate == pytest.approx(0.35)
    assert interval.low == pytest.approx(centre - half) and interval.high == pytest.approx(centre + half)


def test_mcnemar_exact_is_a_two_sided_binomial_test():
    assert stats.mcnemar_exact(0, 0) == 1.0
    assert stats.mcnemar_exact(2, 10) == pytest.approx(binomtest(2, 12, 0.5).pvalue)
    assert stats.mcnemar_exact(1, 9) == pytest.approx(0.021484375)  # 2 * (1 + 10) / 2**10
