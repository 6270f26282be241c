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


# --------------------------------------------------------------------------- issue 43: one method per kind of metric


def test_wilson_at_0_of_4_and_4_of_4_has_width_and_matches_scipy():
    """Wilson (1927) score interval, the method of every proportion: 0/4 is [0, 0.4899] and 4/4
    is [0.5101, 1] (known values), never the percentile bootstrap's [0, 0]; scipy's binomtest
    proportion_ci(method="wilson") agrees."""
    none, every = stats.wilson_interval(0, 4), stats.wilson_interval(4, 4)
    assert (none.low, round(none.high, 4)) == (0.0, 0.4899)
    assert (round(every.low, 4), every.high) == (0.5101, 1.0)
    for k, n in ((0, 4), (4, 4), (7, 20), (1, 3), (12, 12)):
        ours = stats.wilson_interval(k, n)
        theirs = binomtest(k, n).proportion_ci(method="wilson")
        assert ours.low == pytest.approx(theirs.low, abs=1e-12) and ours.high == pytest.approx(theirs.high)
        assert (ours.method, ours.n) == ("Wilson", n) and ours.low <= k / n <= ours.high
    low, high = stats.wilson_intervals([0, 7, 3], [4, 20, 0])
    assert low[1] == pytest.approx(stats.wilson_interval(7, 20).low) and np.isnan(low[2]) and np.isnan(high[2])


def test_proportion_interval_is_wilson_and_refuses_what_is_not_a_proportion():
    interval = stats.proportion_interval([0, 0, 0, 0])
    assert interval.to_json() == {"estimate": 0.0, "low": 0.0, "high": pytest.approx(0.48989, abs=1e-5),
                                  "method": "Wilson", "n": 4}
    assert stats.proportion_interval([1, np.nan, 0]).n == 2
    with pytest.raises(ValueError):
        stats.proportion_interval([0.5, 1.0])


def test_a_bootstrap_names_its_method_and_n_and_says_when_every_resample_is_the_same():
    constant = stats.bootstrap_mean(np.full(4, 0.25), 200, seed=0)
    assert (constant.low, constant.high, constant.method, constant.n, constant.constant) == \
        (0.25, 0.25, "percentile bootstrap", 4, True)
    varied = stats.bootstrap_mean(np.arange(5.0), 200, seed=0)
    assert not varied.constant and varied.to_json()["method"] == "percentile bootstrap"
    assert stats.bootstrap_statistic(lambda v: np.median(v, axis=-1), (np.ones(3),), 50).constant


def test_format_ci_names_the_method_and_n_and_never_prints_a_zero_width_interval():
    from histbench.core.markdown import format_ci

    assert format_ci(0.35, 0.181, 0.567, method="Wilson", n=20) == "0.350 [0.181, 0.567] (Wilson, n=20)"
    assert format_ci(0.0, 0.0, 0.0, 1, True, method="percentile bootstrap", n=4, constant=True) == \
        "0.0 (every resample 0.0; percentile bootstrap, n=4)"
    assert format_ci(1.0, 1.0, 1.0, 1, True, n=4) == "100.0 (95% of resamples 100.0; n=4)"
    assert format_ci(0.5, 0.4, 0.6) == "0.500 [0.400, 0.600]"


def test_an_interval_of_no_width_as_shown_is_said_in_words():
    """The demo's Chronologic random baseline printed "20.0 [20.0, 20.0]": resampled means of equal
    values differ by float rounding (0.19999999999999998 and 0.2); both count as every resample the same."""
    from histbench.core.markdown import format_ci
    from histbench.eval.chronologic.report import _cell

    assert stats.all_equal(np.array([0.2, 0.19999999999999998, 0.2])) and not stats.all_equal(np.array([0.2, 0.21]))
    assert format_ci(0.2, 0.19999999999999998, 0.2, 1, True) == "20.0 (95% of resamples 20.0)"
    cell = {"estimate": 0.2, "low": 0.19999999999999998, "high": 0.2, "n": 3, "constant": True}
    assert _cell(cell, 100, 1, with_n=True) == "20.0 (every resample 20.0; n=3)"
    assert _cell({**cell, "low": 0.1, "constant": False}, 100, 1, with_n=True) == "20.0 [10.0, 20.0] (n=3)"
