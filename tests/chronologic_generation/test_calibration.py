"""Calibration of Bradley-Terry distances into p_fit (paper A.2.2, C.1, section 8).

data/calibration_reference.json: fixed leave-one-out evidence (180 records over 40
questions, two ground truths on every fourth question, a partly acceptable 0.5 distractor
on every fifth) and the slope the authors' bt/calibrate.py fit_calibration gives on it
with their production settings (pin_p=0.9, class_balance=True, l2=0.01), run outside the
repository.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from histbench.eval.chronologic import calibration as cal

from .conftest import reference

REF = reference("calibration_reference.json")


def evidence():
    records = REF["records"]
    kinds = [cal.GROUND_TRUTH if r["source"] == "ground_truth" else cal.DISTRACTOR for r in records]
    return [r["delta_mean"] for r in records], [r["label"] for r in records], kinds, [r["qid"] for r in records]


def test_class_balanced_slope_equals_the_authors():
    delta, label, kinds, _ = evidence()
    fit = cal.fit_calibration(delta, label, kinds)
    theirs = REF["class_balance"]["slope"]
    assert fit.slope == pytest.approx(theirs, rel=1e-6)  # the bar is 2%
    assert fit.intercept == pytest.approx(math.log(9)) and fit.p_fit(0.0) == pytest.approx(0.9)
    assert (fit.weighting, fit.ridge, fit.n_ground_truth, fit.n_distractor) == ("class-balance", 0.01, 20, 160)


def test_the_23_to_1_reading_stays_an_option():
    """histbench's earlier reading (ground truths together 23 x the distractors, no ridge)
    gives a much flatter slope on the same evidence (the issue measured 1.006 against 2.112)."""
    delta, label, kinds, _ = evidence()
    ratio = cal.fit_calibration(delta, label, kinds, weighting="ratio")
    assert ratio.slope < 0.5 * REF["class_balance"]["slope"]
    assert ratio.weighting == "ratio" and ratio.gt_weight_ratio == 23.0 and ratio.ridge == 0.0
    w = cal.record_weights(np.array(kinds) == cal.GROUND_TRUTH, None, "ratio")
    assert w[np.array(kinds) == cal.GROUND_TRUTH].sum() == pytest.approx(23 * 160)


def test_class_weights_sum_to_n():
    """bt/calibrate.class_weights: equal total weight per class, total n."""
    is_gt = np.array([True, False, False, False])
    w = cal.record_weights(is_gt)
    assert w.tolist() == [2.0, 2 / 3, 2 / 3, 2 / 3]
    assert cal.record_weights(np.array([False, False])).tolist() == [1.0, 1.0]  # one class: flat


def test_paper_worked_example_fixes_a_slope():
    """C.1: delta -1.65 -> p_fit 0.159 under the pinned intercept gives b = 2.341."""
    b = cal.slope_from_example(cal.PAPER_EXAMPLE_DELTA, cal.PAPER_EXAMPLE_P_FIT)
    assert b == pytest.approx(2.341, abs=1e-3)
    assert cal.Calibration(slope=b).p_fit(-1.65) == pytest.approx(0.159, abs=1e-9)


def test_calibration_draws_are_a_cluster_bootstrap():
    delta, label, kinds, clusters = evidence()
    fit = cal.fit_calibration(delta, label, kinds)
    draws = cal.calibration_draws(delta, label, kinds, clusters, fit, n_draws=300, seed=1)
    assert len(draws) == 300 and np.all(draws > 0)
    assert np.median(draws) == pytest.approx(fit.slope, rel=0.15)
    assert draws.std() > 0.05
    again = cal.calibration_draws(delta, label, kinds, clusters, fit, n_draws=300, seed=1)
    assert np.array_equal(draws, again)


def test_bad_evidence():
    with pytest.raises(ValueError, match="both acceptable"):
        cal.fit_calibration([0.1, -1.0], [1.0, 1.0], [cal.GROUND_TRUTH, cal.DISTRACTOR])
    with pytest.raises(ValueError, match="weighting"):
        cal.fit_calibration([0.1, -1.0], [1.0, 0.0], [cal.GROUND_TRUTH, cal.DISTRACTOR], weighting="other")
    with pytest.raises(ValueError, match="kind"):
        cal.fit_calibration([0.1, -1.0], [1.0, 0.0], ["x", cal.DISTRACTOR])
