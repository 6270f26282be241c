"""Likelihood metrics pinned on hand-computed questions (paper 5.1: choice by mean per-token
log-likelihood, probabilities = softmax of the means; Table 3 as the authors' code computes
it: accuracy against the first-ranked ground truth, cross-validated Platt Brier), with
variable option counts, two ground truths and ties. The numbers of the authors' own code on
stored log-likelihoods are pinned in test_authors_table3.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from histbench.eval.chronologic.metrics import (
    OptionTable,
    aggregate,
    calibrated_brier,
    fit_platt,
    random_choice_score,
    score_question,
)


def _q(number, rtype, answers, probs):
    return {"question_number": number, "reasoning_type": rtype, "answer_strings": answers, "answer_probabilities": probs}


# A: 4 options, one ground truth (index 0)
QA = _q(1, "knowledge", ["aaaa", "bb", "c", "dddddddd"], [1.0, 0.0, 0.0, 0.0])
LL_A, TOK_A = [-4.0, -3.0, -6.0, -8.0], [4, 1, 3, 2]          # means -1, -3, -2, -4
# B: 6 options, two ground truths (0, 1) and one partly acceptable distractor
QB = _q(2, "constrained_generation", ["xx", "yyyy", "z", "w", "vvvvvvvv", "uuu"], [1.0, 1.0, 0.5, 0.0, 0.0, 0.0])
LL_B, TOK_B = [-2.0, -4.0, -6.0, -2.0, -4.0, -6.0], [1, 2, 3, 1, 2, 3]  # every mean is -2: a six-way tie
# C: 8 options, the ground truth loses to option 5
QC = _q(3, "sentence_cloze", [f"option {i}" for i in range(8)], [1.0] + [0.0] * 7)
LL_C, TOK_C = [-1.0] * 5 + [-0.5] + [-1.0] * 2, [1] * 8


def test_four_options_one_ground_truth():
    s = score_question(QA, LL_A, TOK_A)
    assert s.mean_loglik == [-1.0, -3.0, -2.0, -4.0]
    e = [math.exp(-1), math.exp(-3), math.exp(-2), math.exp(-4)]
    p = [v / sum(e) for v in e]
    assert s.probabilities == pytest.approx(p, abs=1e-12)
    assert s.choice == 0 and s.acc == 1.0 and s.acc_any == 1.0 and s.tied == 1
    assert s.choice_sum == 1 and s.acc_sum == 0.0  # highest summed LL is option 1 (-3)
    # per character: -1, -1.5, -6, -1 -> options 0 and 3 tie; one of the two is a ground truth
    assert s.choice_norm == 0 and s.acc_norm == 0.5
    expected = ((p[0] - 1) ** 2 + p[1] ** 2 + p[2] ** 2 + p[3] ** 2) / 4
    assert s.brier_softmax == pytest.approx(expected, abs=1e-12)
    assert s.brier_softmax == pytest.approx(0.0478833, abs=1e-6)
    assert s.brier_softmax_sum == pytest.approx(4 * expected, abs=1e-12)
    assert s.brier_softmax_graded == pytest.approx(expected, abs=1e-12)  # graded target = one-hot here
    assert s.p_truth == pytest.approx(p[0])


def test_six_options_two_ground_truths_and_a_full_tie():
    s = score_question(QB, LL_B, TOK_B)
    assert s.probabilities == pytest.approx([1 / 6] * 6)
    # the authors' rule takes numpy's argmax, the first of the tied options: option 0, the
    # first-ranked ground truth; "any ground truth, ties shared" gives 2 of 6
    assert s.tied == 6 and s.choice == 0 and s.acc == 1.0
    assert s.acc_any == pytest.approx(2 / 6)
    assert s.acc_sum == 0.5                                    # options 0 and 3 tie at -2
    assert s.choice_norm == 4 and s.acc_norm == 0.0            # -0.5 per character wins
    # target 1/2 on each ground truth: (2 (1/6 - 1/2)^2 + 4 (1/6)^2) / 6 = 1/18
    assert s.brier_softmax == pytest.approx(1 / 18)
    assert s.brier_softmax_sum == pytest.approx(1 / 3)
    # graded target [1, 1, .5, 0, 0, 0] / 2.5
    assert s.brier_softmax_graded == pytest.approx((2 * (1 / 6 - 0.4) ** 2 + (1 / 6 - 0.2) ** 2 + 3 * (1 / 6) ** 2) / 6)
    assert s.brier_softmax_graded == pytest.approx(0.0322222, abs=1e-6)
    assert s.p_truth == pytest.approx(1 / 3)


def test_choosing_the_second_ground_truth_is_wrong_in_table3():
    """The authors' accuracy compares the choice with the ground truth the release ranks
    first (np.argmax of answer_probabilities): questions 765 and 888 of the public sample
    change verdict this way."""
    s = score_question(QB, [-3.0, -1.0, -6.0, -2.0, -4.0, -6.0], [1] * 6)
    assert s.choice == 1 and s.acc == 0.0 and s.acc_any == 1.0
    # the first maximum of answer_probabilities decides, wherever it is
    q = _q(9, "knowledge", ["a", "b", "c"], [0.0, 1.0, 1.0])
    assert score_question(q, [-2.0, -1.0, -3.0], [1] * 3).acc == 1.0
    assert score_question(q, [-2.0, -3.0, -1.0], [1] * 3).acc == 0.0


def test_eight_options_wrong_choice():
    s = score_question(QC, LL_C, TOK_C)
    z = 7 * math.exp(-1) + math.exp(-0.5)
    p0, p5 = math.exp(-1) / z, math.exp(-0.5) / z
    assert s.choice == 5 and s.acc == 0.0 and s.acc_any == 0.0 and s.acc_sum == 0.0
    assert s.brier_softmax == pytest.approx(((p0 - 1) ** 2 + p5 ** 2 + 6 * p0 ** 2) / 8)


def test_ties_share_the_credit_in_the_secondary_accuracy():
    """Option 0 is always a ground truth in the release: acc_any never lets a tie default
    to it; acc (Table 3) keeps the authors' argmax."""
    q = _q(4, "knowledge", ["a", "b", "c", "d", "e"], [1.0, 0.0, 0.0, 0.0, 0.0])
    s = score_question(q, [-1.0, -1.0, -5.0, -5.0, -5.0], [1] * 5)
    assert s.choice == 0 and s.tied == 2 and s.acc_any == 0.5 and s.acc == 1.0


@pytest.mark.parametrize(("n", "k"), [(4, 1), (5, 1), (6, 2), (8, 1)])
def test_random_choice_baseline(n, k):
    """Uniform over n options: expected accuracy 1/n under the Table 3 rule (the chance
    term of the authors' skill score, r = 1) and k/n for any ground truth; softmax Brier =
    (k (1/n - 1/k)^2 + (n - k)/n^2) / n, i.e. (1 - 1/n)/n with one ground truth."""
    q = _q(5, "knowledge", [f"o{i}" for i in range(n)], [1.0] * k + [0.0] * (n - k))
    s = random_choice_score(q)
    assert s.acc == pytest.approx(1 / n)
    assert s.acc_any == pytest.approx(k / n) and s.acc_sum == pytest.approx(k / n) and s.acc_norm == pytest.approx(k / n)
    assert s.brier_softmax == pytest.approx((k * (1 / n - 1 / k) ** 2 + (n - k) / n ** 2) / n)
    if k == 1:
        assert s.brier_softmax == pytest.approx((1 - 1 / n) / n)
    if n == 5:
        assert s.brier_softmax == pytest.approx(0.16)


def test_bad_inputs_are_errors():
    from histbench.core.errors import EvalError

    with pytest.raises(EvalError, match="question 1: 3 scores for 4 options"):
        score_question(QA, [-1.0] * 3, [1] * 3)
    with pytest.raises(EvalError, match="option 2 was scored over 0 tokens"):
        score_question(QA, [-1.0] * 4, [1, 1, 0, 1])
    with pytest.raises(EvalError, match="option 1 has log-likelihood nan"):
        score_question(QA, [-1.0, float("nan"), -1.0, -1.0], [1] * 4)


# --------------------------------------------------------------------------- Table 3 Brier


def _five_questions(lls):
    """Five questions (one per fold) with fractional targets, as released."""
    probs = [[1.0, 0.0, 0.0, 0.0], [1.0, 0.5, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0],
             [1.0, 0.0, 0.0, 0.0, 0.0]]
    types = ["knowledge", "sentence_cloze", "constrained_generation", "phrase_cloze", "inference"]
    return [score_question(_q(i + 1, t, [f"o{j}" for j in range(len(p))], p), ll, [1] * len(p))
            for i, (t, p, ll) in enumerate(zip(types, probs, lls, strict=True))]


def test_fit_platt_equals_statsmodels_glm_with_fractional_targets():
    """The vectorised Newton fit gives the weighted maximum-likelihood logistic fit that
    statsmodels' Binomial GLM gives (fractional targets, frequency weights)."""
    import statsmodels.api as sm

    rng = np.random.default_rng(0)
    x = rng.normal(-2, 0.7, 60)
    y = np.where(rng.random(60) < 1 / (1 + np.exp(-(1.5 * x + 2))), 1.0, 0.0)
    y[::7] = 0.5
    weights = np.stack([np.ones(60), rng.integers(0, 4, 60).astype(float)])
    ours = fit_platt(x, y, weights)
    for row, w in zip(ours, weights, strict=True):
        glm = sm.GLM(y, sm.add_constant(x), family=sm.families.Binomial(), freq_weights=w).fit(tol=1e-13)
        assert row == pytest.approx([glm.params[1], glm.params[0]], abs=1e-7)


def test_calibrated_brier_with_one_log_likelihood_for_all_is_the_base_rate():
    """Section 6.1 / the authors' platt_scale_cv: with the same mean log-likelihood for every
    option (the random-choice baseline) the fitted q of a fold is the mean released target
    of the other folds' options, and each question scores (1/n) sum (q - y)^2."""
    scores = _five_questions([[0.0] * n for n in (4, 5, 6, 4, 5)])
    table = OptionTable.of(scores)
    got = calibrated_brier(table, np.ones((1, 5)), "newton")[0]
    targets = [np.asarray(s.answer_probabilities) for s in scores]
    for i, y in enumerate(targets):
        others = np.concatenate([t for j, t in enumerate(targets) if j != i])
        assert got[i] == pytest.approx(np.mean((others.mean() - y) ** 2), abs=1e-10)
    # a resample's counts weight the training options of every fold
    counts = np.array([[2.0, 0.0, 1.0, 1.0, 1.0]])
    got = calibrated_brier(table, counts, "newton")[0]
    q3 = np.average(np.concatenate([targets[0], targets[2], targets[4]]),
                    weights=np.concatenate([np.full(4, 2.0), np.ones(6), np.ones(5)]))
    assert got[3] == pytest.approx(np.mean((q3 - targets[3]) ** 2), abs=1e-10)


def test_calibration_of_a_fold_never_sees_its_own_questions():
    """Folds are question positions mod 5 (release order): changing the log-likelihoods of
    question 1 changes the fits that score the other questions, never its own fit."""
    base = [[-1.0, -2.5, -3.0, -2.0], [-0.5, -1.0, -2.0, -2.5, -3.0], [-1.0, -1.2, -2.0, -3.0, -2.2, -2.9],
            [-2.0, -1.0, -3.0, -2.5], [-0.2, -3.0, -2.0, -2.1, -1.5]]
    changed = [list(row) for row in base]
    changed[0] = [-4.0, -0.1, -0.2, -0.3]
    one = calibrated_brier(OptionTable.of(_five_questions(base)), np.ones((1, 5)), "newton")[0]
    two = calibrated_brier(OptionTable.of(_five_questions(changed)), np.ones((1, 5)), "newton")[0]
    assert not np.allclose(one[1:], two[1:])
    # question 1's own fit is unchanged: only its own options' values moved
    table = OptionTable.of(_five_questions(base))
    train = table.fold != 0
    fit = fit_platt(table.x[train], table.y[train], np.ones((1, int(train.sum()))))[0]
    q = 1 / (1 + np.exp(-(fit[0] * np.array(changed[0]) + fit[1])))
    assert two[0] == pytest.approx(np.mean((q - np.array([1.0, 0, 0, 0])) ** 2), abs=1e-9)


def test_a_fold_without_both_kinds_of_target_falls_back_to_the_sigmoid():
    """The authors' fallback: training options that are all above (or all below) 0.5 cannot
    be calibrated; the fold's questions then score q = sigmoid(mean log-likelihood)."""
    scores = _five_questions([[-1.0, -2.0, -3.0, -4.0], [-1.0] * 5, [-2.0] * 6, [-1.5] * 4, [-1.0] * 5])
    table = OptionTable.of(scores)
    counts = np.array([[3.0, 0.0, 0.0, 0.0, 0.0]])  # only question 1 drawn: fold 0 has no training weight
    got = calibrated_brier(table, counts, "newton")[0]
    x0 = np.array([-1.0, -2.0, -3.0, -4.0])
    assert got[0] == pytest.approx(np.mean((1 / (1 + np.exp(-x0)) - np.array([1.0, 0, 0, 0])) ** 2))


def test_bootstrap_draws_the_authors_resamples():
    """bootstrap_evaluate draws, per resample, rng.integers(0, n, size=n) from one
    np.random.default_rng(); histbench's bootstrap_counts with the same seed holds exactly
    those resamples, so a seeded run of their code sees the same questions."""
    from histbench.eval.stats import bootstrap_counts

    for n in (24, 100, 866):
        rng = np.random.default_rng(11)
        theirs = np.stack([np.bincount(rng.integers(0, n, size=n), minlength=n) for _ in range(30)])
        assert (bootstrap_counts(n, 30, 11) == theirs).all()


def test_aggregate_means_scopes_and_intervals():
    scores = [score_question(QA, LL_A, TOK_A), score_question(QB, LL_B, TOK_B), score_question(QC, LL_C, TOK_C)]
    out = aggregate(scores, n_resamples=500, seed=3, platt_fit="newton")
    overall = out["acc_any"]["overall"]
    assert overall["estimate"] == pytest.approx((1 + 1 / 3 + 0) / 3) and overall["n"] == 3
    assert overall["low"] <= overall["estimate"] <= overall["high"]
    assert out["acc"]["overall"]["estimate"] == pytest.approx(2 / 3)
    assert out["acc"]["overall"]["low"] <= out["acc"]["overall"]["median"] <= out["acc"]["overall"]["high"]
    assert out["brier_softmax"]["overall"]["estimate"] == pytest.approx(np.mean([s.brier_softmax for s in scores]))
    assert out["brier"]["overall"]["estimate"] == pytest.approx(
        calibrated_brier(OptionTable.of(scores), np.ones((1, 3)), "newton")[0].mean())
    assert out["acc"]["group:cloze"]["estimate"] == 0.0 and out["acc"]["group:cloze"]["n"] == 1
    assert out["acc"]["group:knowledge"]["estimate"] == 1.0
    assert out["acc_any"]["type:constrained_generation"]["estimate"] == pytest.approx(1 / 3)
    assert "type:abstention" not in out["acc"]
    # one question in a scope: its interval collapses onto it
    assert out["acc"]["group:cloze"]["low"] == out["acc"]["group:cloze"]["high"] == 0.0
    assert aggregate(scores, n_resamples=500, seed=3, platt_fit="newton") == out  # seeded
