"""Likelihood metrics pinned on hand-computed questions (paper 5.1: choice by mean per-token
log-likelihood, probabilities = softmax of the means; Brier over each question's own
options, Table 3 scale), with variable option counts, two ground truths and ties."""

from __future__ import annotations

import math

import numpy as np
import pytest

from histbench.eval.chronologic.metrics import aggregate, random_choice_score, score_question


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
    assert s.choice == 0 and s.acc == 1.0 and s.tied == 1
    assert s.choice_sum == 1 and s.acc_sum == 0.0  # highest summed LL is option 1 (-3)
    # per character: -1, -1.5, -6, -1 -> options 0 and 3 tie; one of the two is a ground truth
    assert s.choice_norm == 0 and s.acc_norm == 0.5
    expected = ((p[0] - 1) ** 2 + p[1] ** 2 + p[2] ** 2 + p[3] ** 2) / 4
    assert s.brier == pytest.approx(expected, abs=1e-12)
    assert s.brier == pytest.approx(0.0478833, abs=1e-6)
    assert s.brier_sum == pytest.approx(4 * expected, abs=1e-12)
    assert s.brier_graded == pytest.approx(expected, abs=1e-12)  # graded target = one-hot here
    assert s.p_truth == pytest.approx(p[0])


def test_six_options_two_ground_truths_and_a_full_tie():
    s = score_question(QB, LL_B, TOK_B)
    assert s.probabilities == pytest.approx([1 / 6] * 6)
    assert s.tied == 6 and s.acc == pytest.approx(2 / 6)       # 2 of 6 tied options are ground truths
    assert s.acc_sum == 0.5                                    # options 0 and 3 tie at -2
    assert s.choice_norm == 4 and s.acc_norm == 0.0            # -0.5 per character wins
    # target 1/2 on each ground truth: (2 (1/6 - 1/2)^2 + 4 (1/6)^2) / 6 = 1/18
    assert s.brier == pytest.approx(1 / 18)
    assert s.brier_sum == pytest.approx(1 / 3)
    # graded target [1, 1, .5, 0, 0, 0] / 2.5
    assert s.brier_graded == pytest.approx((2 * (1 / 6 - 0.4) ** 2 + (1 / 6 - 0.2) ** 2 + 3 * (1 / 6) ** 2) / 6)
    assert s.brier_graded == pytest.approx(0.0322222, abs=1e-6)
    assert s.p_truth == pytest.approx(1 / 3)


def test_eight_options_wrong_choice():
    s = score_question(QC, LL_C, TOK_C)
    z = 7 * math.exp(-1) + math.exp(-0.5)
    p0, p5 = math.exp(-1) / z, math.exp(-0.5) / z
    assert s.choice == 5 and s.acc == 0.0 and s.acc_sum == 0.0
    assert s.brier == pytest.approx(((p0 - 1) ** 2 + p5 ** 2 + 6 * p0 ** 2) / 8)


def test_tie_never_favours_the_first_option():
    """Option 0 is always a ground truth in the release: a tie must not default to it."""
    q = _q(4, "knowledge", ["a", "b", "c", "d", "e"], [1.0, 0.0, 0.0, 0.0, 0.0])
    s = score_question(q, [-1.0, -1.0, -5.0, -5.0, -5.0], [1] * 5)
    assert s.choice == 0 and s.tied == 2 and s.acc == 0.5


@pytest.mark.parametrize(("n", "k"), [(4, 1), (5, 1), (6, 2), (8, 1)])
def test_random_choice_baseline(n, k):
    """Uniform over n options: accuracy k/n; Brier = (k (1/n - 1/k)^2 + (n - k)/n^2) / n,
    i.e. (1 - 1/n)/n with one ground truth (0.16 for five options, the scale of Table 3)."""
    q = _q(5, "knowledge", [f"o{i}" for i in range(n)], [1.0] * k + [0.0] * (n - k))
    s = random_choice_score(q)
    assert s.acc == pytest.approx(k / n) and s.acc_sum == pytest.approx(k / n) and s.acc_norm == pytest.approx(k / n)
    assert s.brier == pytest.approx((k * (1 / n - 1 / k) ** 2 + (n - k) / n ** 2) / n)
    if k == 1:
        assert s.brier == pytest.approx((1 - 1 / n) / n)
    if n == 5:
        assert s.brier == pytest.approx(0.16)


def test_bad_inputs_are_errors():
    from histbench.builders.core.errors import EvalError

    with pytest.raises(EvalError, match="question 1: 3 scores for 4 options"):
        score_question(QA, [-1.0] * 3, [1] * 3)
    with pytest.raises(EvalError, match="option 2 was scored over 0 tokens"):
        score_question(QA, [-1.0] * 4, [1, 1, 0, 1])
    with pytest.raises(EvalError, match="option 1 has log-likelihood nan"):
        score_question(QA, [-1.0, float("nan"), -1.0, -1.0], [1] * 4)


def test_aggregate_means_scopes_and_intervals():
    scores = [score_question(QA, LL_A, TOK_A), score_question(QB, LL_B, TOK_B), score_question(QC, LL_C, TOK_C)]
    out = aggregate(scores, n_resamples=500, seed=3)
    overall = out["acc"]["overall"]
    assert overall["estimate"] == pytest.approx((1 + 1 / 3 + 0) / 3) and overall["n"] == 3
    assert overall["low"] <= overall["estimate"] <= overall["high"]
    assert out["brier"]["overall"]["estimate"] == pytest.approx(np.mean([s.brier for s in scores]))
    assert out["acc"]["group:cloze"]["estimate"] == 0.0 and out["acc"]["group:cloze"]["n"] == 1
    assert out["acc"]["group:knowledge"]["estimate"] == 1.0
    assert out["acc"]["type:constrained_generation"]["estimate"] == pytest.approx(1 / 3)
    assert "type:abstention" not in out["acc"]
    # one question in a scope: its interval collapses onto it
    assert out["acc"]["group:cloze"]["low"] == out["acc"]["group:cloze"]["high"] == 0.0
    assert aggregate(scores, n_resamples=500, seed=3) == out  # seeded
