"""Bradley-Terry MAP strengths, frozen anchors and leave-one-out (paper A.2.2, section 8, C.1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from histbench.eval.chronologic import bradley_terry as bt


def test_alpha_is_the_gaussian_prior_of_choix_penalty():
    # choix minimises NLL + alpha * sum(theta^2); a N(0, sd^2) prior adds sum(theta^2) / (2 sd^2)
    assert bt.alpha_from_prior_sd(2.5) == pytest.approx(1 / (2 * 6.25))
    with pytest.raises(ValueError):
        bt.alpha_from_prior_sd(0)


def test_sweep_has_no_finite_mle_but_the_prior_keeps_strengths_finite():
    """Section 8 / A.2.2: when one group beats every member of the other, the MLE is infinite."""
    import choix

    wins = [(i, j) for i in range(2) for j in range(2, 6)] * 2  # two ground truths sweep four distractors, both orders
    with pytest.raises(ValueError):  # choix's unpenalised iterative fit breaks down on such graphs
        choix.ilsr_pairwise(6, wins, alpha=0.0)
    theta = bt.fit_strengths(6, wins)
    assert np.all(np.isfinite(theta))
    assert theta[:2].min() > theta[2:].max()
    assert theta.mean() == pytest.approx(0.0, abs=1e-9)  # the penalised fit is centred
    # a weaker prior (larger sd) spreads the separated groups further apart, finitely
    wide = bt.fit_strengths(6, wins, prior_sd=10.0)
    assert np.isfinite(wide).all() and (wide[0] - wide[5]) > (theta[0] - theta[5])


def test_one_item_sweeping_everything():
    wins = [(0, j) for j in range(1, 5)] * 2 + [(1, 2), (2, 3), (3, 4)]
    theta = bt.fit_strengths(5, wins)
    assert np.isfinite(theta[0]) and theta[0] == theta.max()
    assert 1.0 < theta[0] < 10.0


def test_choix_fit_minimises_our_written_out_posterior():
    rng = np.random.default_rng(3)
    wins = [tuple(rng.permutation(6)[:2]) for _ in range(40)]
    theta = bt.fit_strengths(6, wins, prior_sd=1.7)
    direct = minimize(bt.neg_log_posterior, np.zeros(6), args=(wins, 1.7), method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose(theta, direct, atol=1e-5)


def test_recovers_known_strengths_from_simulated_comparisons():
    rng = np.random.default_rng(11)
    truth = np.array([-2.0, -1.0, -0.3, 0.4, 1.1, 1.8])
    wins = []
    for i, j in itertools.permutations(range(6), 2):
        for _ in range(150):
            p = 1 / (1 + np.exp(-(truth[i] - truth[j])))
            wins.append((i, j) if rng.random() < p else (j, i))
    theta = bt.fit_strengths(6, wins)
    # strengths are identified up to a shift; the prior centres them
    np.testing.assert_allclose(theta - theta.mean(), truth - truth.mean(), atol=0.15)


def test_candidate_with_frozen_anchors_is_the_one_dimensional_map():
    anchors = np.array([1.8, 1.2, 0.1, -1.0, -2.1])
    outcomes = [(0, False), (0, False), (1, False), (1, True), (2, True), (2, False), (3, True), (3, True), (4, True), (4, True)]

    def negative(t):
        sign = np.array([1.0 if won else -1.0 for _, won in outcomes])
        opp = anchors[[i for i, _ in outcomes]]
        return np.logaddexp(0, -sign * (t[0] - opp)).sum() + t[0] ** 2 / (2 * 2.5**2)

    expected = minimize(negative, [0.0], method="BFGS", options={"gtol": 1e-10}).x[0]
    theta = bt.fit_candidate(anchors, outcomes)
    assert theta == pytest.approx(expected, abs=1e-6)
    # the anchors are not moved by scoring a candidate, and delta is measured from their ground truths
    assert bt.candidate_delta(theta, anchors, [0, 1]) == pytest.approx(theta - 1.5)


def test_candidate_that_beats_or_loses_to_every_anchor_stays_finite():
    anchors = [1.0, 0.0, -1.0]
    top = bt.fit_candidate(anchors, [(i, True) for i in range(3)] * 2)
    bottom = bt.fit_candidate(anchors, [(i, False) for i in range(3)] * 2)
    assert np.isfinite(top) and np.isfinite(bottom)
    assert top > 1.0 and bottom < -1.0
    middle = bt.fit_candidate(anchors, [(0, False), (0, False), (1, True), (1, False), (2, True), (2, True)])
    assert bottom < middle < top


def test_paper_example_shape_candidate_between_distractors():
    """C.1: an answer that beats the two weakest distractors in both trials and loses to the
    stronger options in both trials lands below the ground truths (negative delta)."""
    # options: 2 ground truths, strong distractor d1, d2, d3, weak d4, d5 (as in question 888's shape)
    order = [0, 1, 2, 3, 4, 5]
    wins = [(order[i], order[j]) for i, j in itertools.permutations(range(6), 2) if i < j]
    anchors = bt.fit_strengths(6, wins)
    outcomes = [(k, False) for k in (0, 1, 2, 3) for _ in range(2)] + [(k, True) for k in (4, 5) for _ in range(2)]
    theta = bt.fit_candidate(anchors, outcomes)
    delta = bt.candidate_delta(theta, anchors, [0, 1])
    assert anchors[4] < theta < anchors[3]
    assert delta < 0


def test_leave_one_out_refits_without_the_held_out_option():
    wins = [(i, j) for i, j in itertools.permutations(range(5), 2) if i < j]
    held = bt.leave_one_out(5, wins, held_out=1, ground_truths=[0, 1])
    # anchors without option 1: options 0, 2, 3, 4 fitted from their own comparisons
    rest = [(a, b) for a, b in wins if 1 not in (a, b)]
    remap = {0: 0, 2: 1, 3: 2, 4: 3}
    anchors = bt.fit_strengths(4, [(remap[a], remap[b]) for a, b in rest])
    outcomes = [(remap[b], True) for a, b in wins if a == 1] + [(remap[a], False) for a, b in wins if b == 1]
    theta = bt.fit_candidate(anchors, outcomes)
    assert held.theta == pytest.approx(theta)
    assert held.delta == pytest.approx(theta - anchors[0])
    assert held.n_trials == 4
    with pytest.raises(ValueError, match="only ground truth"):
        bt.leave_one_out(5, wins, held_out=0, ground_truths=[0])
