"""Bradley-Terry strengths and the C.1 worked example (paper 5.2.2, A.2.2, C.1).

data/bt_reference.json holds what the authors' own estimator gives on fixed tournaments:
bt/fit.py (PyMC ZeroSumNormal, sigma = 1, 4 chains x 500 draws) and bt/tau.py
(cut-inference candidate scoring), run outside the repository with PyMC 5.28.5 on
question 888's anchor tournament from their judgment log
(bt_judgments_anthropic_claude-sonnet-5__1.0__j-medium__pm-rationales.jsonl, phase "anchor")
and on twelve seeded synthetic tournaments of 4-8 options.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from histbench.eval.chronologic import bradley_terry as bt

from .conftest import reference

REF = reference("bt_reference.json")
Q888_ITEMS = ["gt0", "gt1", "d0", "d1", "d2", "d3"]
# question 888's anchor trials (first, second, choice) from the authors' judgment log
Q888 = [("gt0", "gt1", "B"), ("gt1", "gt0", "A"), ("gt0", "d0", "A"), ("d0", "gt0", "B"), ("gt0", "d1", "A"), ("d1", "gt0", "B"),
        ("gt0", "d2", "A"), ("d2", "gt0", "B"), ("gt0", "d3", "B"), ("d3", "gt0", "B"), ("gt1", "d0", "A"), ("d0", "gt1", "B"),
        ("gt1", "d1", "A"), ("d1", "gt1", "B"), ("gt1", "d2", "A"), ("d2", "gt1", "B"), ("gt1", "d3", "A"), ("d3", "gt1", "B"),
        ("d0", "d1", "B"), ("d1", "d0", "A"), ("d0", "d2", "A"), ("d2", "d0", "A"), ("d0", "d3", "B"), ("d3", "d0", "A"),
        ("d1", "d2", "A"), ("d2", "d1", "A"), ("d1", "d3", "B"), ("d3", "d1", "A"), ("d2", "d3", "B"), ("d3", "d2", "A")]


def wins_of(items, trials):
    index = {name: i for i, name in enumerate(items)}
    return [(index[a], index[b]) if choice == "A" else (index[b], index[a]) for a, b, choice in trials]


def test_c1_worked_example():
    """C.1: GPT-4o's answer beat the two weakest distractors (d0, d2) in both trials and lost to
    d1, d3 and the reference ground truth in both. The authors' estimator gives delta =
    -1.750 on this tournament (the paper prints -1.65); ours must be within 0.1."""
    posterior = bt.fit_posterior(6, wins_of(Q888_ITEMS, Q888), 1.0, seed=0)
    reference_gt = Q888_ITEMS.index(REF["q888"]["reference_gt"])
    outcomes = [(2, True)] * 2 + [(4, True)] * 2 + [(3, False)] * 2 + [(5, False)] * 2 + [(reference_gt, False)] * 2
    score = bt.score_candidate(posterior, outcomes, [0, 1])
    assert score.delta == pytest.approx(REF["q888"]["delta_mean"], abs=0.1)
    assert score.delta == pytest.approx(-1.65, abs=0.15)  # and close to the paper's figure
    theirs = np.array([REF["q888"]["theta_mean"][n] for n in Q888_ITEMS])
    assert np.abs(posterior.mean - theirs).max() < 0.06
    # the judgment layer's draws have the same centre
    assert score.delta_draws(2000, seed=3).mean() == pytest.approx(score.delta, abs=0.05)


def test_theta_ranks_agree_with_the_authors_estimator():
    ours, theirs = [], []
    for t, tournament in enumerate(REF["synthetic"]):
        posterior = bt.fit_posterior(len(tournament["items"]), wins_of(tournament["items"], tournament["pairs"]), 1.0, seed=t)
        assert abs(posterior.mean.sum()) < 1e-9  # sum-zero, as ZeroSumNormal
        assert np.abs(posterior.mean - np.array(tournament["theta_mean"])).max() < 0.07
        ours += list(posterior.mean)
        theirs += tournament["theta_mean"]
    assert spearmanr(ours, theirs).statistic >= 0.99


def test_a_sweep_has_a_finite_posterior():
    """Ford 1957 / Hunter 2004: one group beating the other has no finite MLE; the prior keeps it finite."""
    wins = [(i, j) for i in (0, 1) for j in (2, 3)] * 2
    posterior = bt.fit_posterior(4, wins, 1.0, seed=1)
    theta = posterior.mean
    assert np.all(np.isfinite(theta)) and theta[0] > theta[2] and abs(theta).max() < 3
    assert posterior.effective_size > 1000
    wider = bt.fit_posterior(4, wins, 3.0, seed=1).mean
    assert wider[0] - wider[2] > theta[0] - theta[2]  # the gap of a sweep is set by the prior


def test_leave_one_out_scores_the_held_out_option_against_the_rest():
    wins = wins_of(Q888_ITEMS, Q888)
    d3 = 5
    outcomes = [(l_, True) for w, l_ in wins if w == d3] + [(w, False) for w, l_ in wins if l_ == d3]
    held = bt.leave_one_out(6, wins, d3, outcomes, [0, 1], 1.0, seed=2)
    assert held.n_trials == 10 and held.delta < 0.5
    with pytest.raises(ValueError, match="only ground truth"):
        bt.leave_one_out(3, [(0, 1), (0, 2)], 0, [(1, True)], [0], 1.0)


def test_bad_input():
    with pytest.raises(ValueError, match="against itself"):
        bt.fit_posterior(3, [(1, 1)])
    with pytest.raises(ValueError, match="outside"):
        bt.fit_posterior(3, [(0, 3)])
    with pytest.raises(ValueError, match="at least one comparison"):
        bt.score_candidate(bt.fit_posterior(2, [(0, 1)]), [], [0])
