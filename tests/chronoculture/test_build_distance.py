"""Normalised Wasserstein distance W (appendix A.3) and shift categories (Table 1, F.1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import wasserstein_distance

from histbench.builders.chronoculture.distance import (
    SHIFT_BOUNDARIES,
    normalised_wasserstein,
    shift_category,
)


def test_a3_extremes_and_hand_computed_value():
    """A.3: all mass moved from a_1 to a_K is the maximum distance 1; W is W_1 / (a_K - a_1)."""
    assert normalised_wasserstein([1, 0, 0, 0], [0, 0, 0, 1]) == pytest.approx(1.0)
    assert normalised_wasserstein([0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0]) == 0.0
    # F_p = (.5, .8, 1), F_q = (.2, .5, .9): |diffs| = .3 + .3 + .1 = .7, over a_K - a_1 = 3
    assert normalised_wasserstein([0.5, 0.3, 0.2, 0.0], [0.2, 0.3, 0.4, 0.1]) == pytest.approx(0.7 / 3)


def test_option_values_change_the_gaps():
    """With option values (a_j) given, gaps a_{j+1} - a_j weight the CDF differences (eq. 7-8)."""
    p, q = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    assert normalised_wasserstein(p, q) == pytest.approx(0.5)
    assert normalised_wasserstein(p, q, values=[0, 1, 4]) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="strictly increasing"):
        normalised_wasserstein(p, q, values=[1, 1, 2])


@settings(max_examples=60, deadline=None)
@given(k=st.integers(2, 11), seed=st.integers(0, 10_000), spaced=st.booleans())
def test_matches_scipy_wasserstein(k, seed, spaced):
    """The vectorised W equals scipy.stats.wasserstein_distance / (a_K - a_1), in batch and alone."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=5)
    q = rng.dirichlet(np.ones(k), size=5)
    values = np.cumsum(rng.uniform(0.5, 3, k)) if spaced else np.arange(1, k + 1)
    batch = normalised_wasserstein(p, q, values if spaced else None)
    for i in range(5):
        expected = wasserstein_distance(values, values, p[i], q[i]) / (values[-1] - values[0])
        assert batch[i] == pytest.approx(expected, abs=1e-12)
        assert normalised_wasserstein(p[i], q[i], values if spaced else None) == pytest.approx(expected, abs=1e-12)


def test_rejects_mismatched_or_single_option():
    with pytest.raises(ValueError):
        normalised_wasserstein([1.0], [1.0])
    with pytest.raises(ValueError):
        normalised_wasserstein([0.5, 0.5], [0.2, 0.3, 0.5])


@pytest.mark.parametrize(
    ("d", "default", "tighter", "looser"),
    [
        (0.0, "stable", "stable", "stable"),
        (0.02, "stable", "stable", "stable"),
        (0.025, "stable", "moderate", "stable"),
        (0.03, "stable", "moderate", "stable"),
        (0.0301, "moderate", "moderate", "stable"),
        (0.04, "moderate", "moderate", "stable"),
        (0.075, "moderate", "strong", "moderate"),
        (0.0999, "moderate", "strong", "moderate"),
        (0.10, "strong", "strong", "moderate"),
        (0.125, "strong", "strong", "strong"),
        (0.15, "strong", "very_strong", "strong"),
        (0.1999, "strong", "very_strong", "strong"),
        (0.20, "very_strong", "very_strong", "strong"),
        (0.25, "very_strong", "very_strong", "very_strong"),
        (1.0, "very_strong", "very_strong", "very_strong"),
    ],
)
def test_table1_and_f1_boundaries(d, default, tighter, looser):
    """Table 1: stable <= 0.03 < moderate < 0.10 <= strong < 0.20 <= very strong; F.1 tighter/looser sets."""
    assert SHIFT_BOUNDARIES == {"default": (0.03, 0.10, 0.20), "tighter": (0.02, 0.075, 0.15),
                                "looser": (0.04, 0.125, 0.25)}
    assert shift_category(d) == default
    assert shift_category(d, "tighter") == tighter
    assert shift_category(d, "looser") == looser


def test_boundary_distances_computed_in_floating_point_keep_their_category():
    """A distance that is exactly 0.10 in exact arithmetic but not in floats is still 'strong'."""
    p = [0.7, 0.2, 0.1]
    q = [0.5, 0.4, 0.1]  # |F diff| = 0.2 at a_1, 0 at a_2: W = 0.2 / 2 = 0.1
    d = normalised_wasserstein(p, q)
    assert d == pytest.approx(0.1)
    assert shift_category(d) == "strong"
    assert shift_category([d, 0.03 + 1e-15, 0.2 - 1e-15]) == ["strong", "stable", "very_strong"]
