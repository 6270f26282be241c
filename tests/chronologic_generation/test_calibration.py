"""Calibration of Bradley-Terry deltas into p_fit (paper A.2.2, section 8, C.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import expit

from histbench.eval.chronologic import calibration as cal


def test_intercept_is_pinned_so_the_average_ground_truth_scores_0_9():
    """A.2.2 / section 8: delta = 0 (as strong as the mean ground truth) maps to 0.9."""
    assert cal.pinned_intercept() == pytest.approx(math.log(9.0))
    for slope in (0.3, 1.0, 2.341, 7.0):
        assert cal.Calibration(slope=slope).p_fit(0.0) == pytest.approx(0.9)


def test_paper_worked_example_fixes_the_slope():
    """C.1: GPT-4o's answer to question 888, theta (delta) -1.65 -> p_fit 0.159."""
    slope = cal.slope_from_example(cal.PAPER_EXAMPLE_DELTA, cal.PAPER_EXAMPLE_P_FIT)
    assert slope == pytest.approx(2.3412, abs=5e-4)
    calibration = cal.Calibration(slope=slope)
    assert calibration.p_fit(-1.65) == pytest.approx(0.159, abs=1e-9)
    assert round(cal.Calibration(slope=2.341).p_fit(-1.65), 3) == 0.159
    # and a fitted calibration reproduces the example when the evidence implies that slope
    delta = np.array([-1.65])
    rng = np.random.default_rng(0)
    d = np.r_[rng.normal(-0.3, 0.8, 300), rng.normal(-2.5, 1.0, 300)]
    y = expit(cal.pinned_intercept() + slope * d)  # expected labels under the example's slope
    kinds = np.array(["ground_truth"] * 300 + ["distractor"] * 300, dtype=object)
    fitted = cal.fit_slope(d, y, np.ones(d.size))
    assert fitted == pytest.approx(slope, rel=1e-6)
    assert cal.Calibration(slope=fitted).p_fit(delta)[0] == pytest.approx(0.159, abs=1e-6)
    assert cal.fit_calibration(d, y, kinds, gt_weight_ratio=1.0).slope == pytest.approx(slope, rel=1e-6)


def test_ground_truth_evidence_weighs_23_times_the_distractors():
    kinds = ["ground_truth"] * 4 + ["distractor"] * 46
    w = cal.observation_weights(kinds)
    assert w[:4].sum() == pytest.approx(23 * w[4:].sum())
    assert np.all(w[4:] == 1.0)
    w2 = cal.observation_weights(kinds, gt_weight_ratio=5.0)
    assert w2[:4].sum() == pytest.approx(5 * w2[4:].sum())


def test_weighted_fit_maximises_the_weighted_likelihood_with_fractional_labels():
    delta = np.array([-0.4, 0.3, -1.2, 0.8, -2.0, -3.1, -1.5, -0.9])
    label = np.array([1, 1, 1, 1, 0, 0, 0.5, 0.75])  # partly acceptable distractors: answer_probabilities
    weight = np.array([5, 5, 5, 5, 1, 1, 1, 1], dtype=float)
    a = cal.pinned_intercept()

    def negative(b):
        p = expit(a + b * delta)
        return -(weight * (label * np.log(p) + (1 - label) * np.log(1 - p))).sum()

    expected = minimize_scalar(negative, bounds=(0.01, 20), method="bounded", options={"xatol": 1e-10}).x
    assert cal.fit_slope(delta, label, weight) == pytest.approx(expected, rel=1e-5)


def test_more_spread_among_held_out_ground_truths_gives_a_gentler_slope():
    rng = np.random.default_rng(5)
    distractors = rng.normal(-3.0, 1.0, 200)
    tight = cal.fit_calibration(np.r_[rng.normal(0, 0.2, 40), distractors], np.r_[np.ones(40), np.zeros(200)],
                                ["ground_truth"] * 40 + ["distractor"] * 200)
    loose = cal.fit_calibration(np.r_[rng.normal(-0.5, 1.5, 40), distractors], np.r_[np.ones(40), np.zeros(200)],
                                ["ground_truth"] * 40 + ["distractor"] * 200)
    assert loose.slope < tight.slope
    assert tight.n_ground_truth == 40 and tight.n_distractor == 200


def test_calibration_needs_both_kinds_of_evidence():
    with pytest.raises(ValueError, match="both acceptable"):
        cal.fit_slope([-1.0, 0.5], [1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError):
        cal.fit_slope([-1.0, 0.5], [1.0, 2.0], [1.0, 1.0])


def test_vectorised_bootstrap_slopes_equal_one_fit_per_resample():
    from histbench.eval.stats import bootstrap_counts

    rng = np.random.default_rng(2)
    delta = np.r_[rng.normal(-0.2, 0.7, 30), rng.normal(-2.8, 1.1, 90)]
    label = np.r_[np.ones(30), np.where(rng.random(90) < 0.1, 0.5, 0.0)]
    weight = cal.observation_weights(["ground_truth"] * 30 + ["distractor"] * 90)
    a = cal.pinned_intercept()
    start = cal.fit_slope(delta, label, weight)
    counts = bootstrap_counts(delta.size, 8, seed=1)
    slopes = cal.fit_slopes_bootstrap(delta, label, weight, counts, a, start)
    for row, slope in zip(counts, slopes, strict=True):
        assert slope == pytest.approx(cal.fit_slope(delta, label, weight * row), rel=1e-6)


def test_calibration_round_trips_through_json():
    c = cal.Calibration(slope=1.7, n_ground_truth=3, n_distractor=9)
    assert cal.Calibration.from_json(c.to_json()) == c
