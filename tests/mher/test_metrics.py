"""Metrics and statistics (sections 5.5-5.6) against scipy / statsmodels / scikit-learn,
slow reference implementations, and numbers printed in the paper."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest, spearmanr
from sklearn.metrics import brier_score_loss, f1_score, log_loss
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from histbench.eval import stats
from histbench.eval.mher import metrics as M


def test_table2_exact_normalised_match_numbers():
    """Table 2: exact normalized match = 48.42% accuracy, macro-F1 .326 on 316 TEST items
    (158 same, 158 different) when it says `same` only on the 5 identical-surface
    different pairs (section 8.1) and never on a same pair."""
    gold = np.array([M.SAME] * 158 + [M.DIFFERENT] * 158)
    action = np.array([M.DIFFERENT] * 158 + [M.SAME] * 5 + [M.DIFFERENT] * 153)
    m = M.binary_metrics(gold, action)
    assert round(100 * m["accuracy"], 2) == 48.42
    assert round(m["macro_f1"], 3) == 0.326


def test_table3_abstention_and_selective_accuracy():
    """Table 3, GPT-5.6 Terra: 35.13% accuracy, 63.61% abstention, 96.52% selective accuracy
    on 316 items = 111 correct, 201 ambiguous, 4 wrong decisions."""
    gold = np.array([M.SAME] * 158 + [M.DIFFERENT] * 158)
    action = np.full(316, M.AMBIGUOUS)
    action[:60] = M.SAME                     # 60 correct same
    action[158:209] = M.DIFFERENT            # 51 correct different
    action[209:213] = M.SAME                 # 4 false merges
    m = M.binary_metrics(gold, action)
    assert (m["correct"], m["abstentions"], m["decided"]) == (111, 201, 115)
    assert round(100 * m["accuracy"], 2) == 35.13
    assert round(100 * m["abstention"], 2) == 63.61
    assert round(100 * m["selective_accuracy"], 2) == 96.52
    assert m["macro_f1"] == pytest.approx(f1_score(gold, action, labels=[0, 1], average="macro"))


def test_section_6_3_qwen_mcnemar_and_bonferroni():
    """6.3: 23 W->C and 9 C->W give exact McNemar p = .0201, about .100 after Bonferroni over 5 models."""
    before = np.array([False] * 23 + [True] * 9 + [True] * 72 + [False] * 4)
    after = np.array([True] * 23 + [False] * 9 + [True] * 72 + [False] * 4)
    t = M.transitions(before, after)
    assert (t["W->C"], t["C->W"], t["C->C"], t["W->W"]) == (23, 9, 72, 4)
    assert round(t["mcnemar_p"], 4) == 0.0201
    assert t["mcnemar_p"] == pytest.approx(mcnemar([[72, 9], [23, 4]], exact=True).pvalue)
    assert t["mcnemar_p"] == pytest.approx(binomtest(9, 32, 0.5).pvalue)
    assert round(M.bonferroni([t["mcnemar_p"]], m=5)[0], 3) == 0.100
    assert round(100 * before.mean(), 2) == 75.00 and round(100 * after.mean(), 2) == 87.96


@pytest.mark.parametrize(("k", "n"), [(0, 10), (7, 20), (95, 108), (108, 108), (1, 3)])
def test_wilson_matches_statsmodels(k, n):
    gold = np.zeros(n, dtype=int)
    action = np.array([0] * k + [1] * (n - k))
    m = M.binary_metrics(gold, action)
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert (m["accuracy_low"], m["accuracy_high"]) == pytest.approx((low, high))


def test_macro_f1_counts_abstention_as_a_miss_only():
    gold = np.array([0, 0, 1, 1])
    action = np.array([0, 2, 1, 2])
    # same: P=1 R=1/2 F1=2/3; different: P=1 R=1/2 F1=2/3
    assert M.macro_f1(gold, action) == pytest.approx(2 / 3)


def test_brier_and_log_loss_match_scikit_learn():
    rng = np.random.default_rng(3)
    probs = rng.dirichlet([1, 1, 1], size=40)
    gold = rng.integers(0, 2, size=40)
    m = M.binary_metrics(gold, probs.argmax(axis=1), probs)
    assert m["brier"] == pytest.approx(brier_score_loss(gold, probs, labels=[0, 1, 2]))
    assert m["log_loss"] == pytest.approx(log_loss(gold, probs, labels=[0, 1, 2]))
    assert m["mean_p_gold"] == pytest.approx(probs[np.arange(40), gold].mean())
    # ambiguous mass is penalised when the relation is known
    certain = M.binary_metrics([0], [2], [[0.0, 0.0, 1.0]])
    assert certain["brier"] == 2.0 and certain["log_loss"] == pytest.approx(-np.log(np.finfo(float).eps))


def test_paired_bootstrap_matches_a_slow_reference():
    rng = np.random.default_rng(1)
    correct = (rng.random((12, 4)) < [0.3, 0.5, 0.8, 0.6]).astype(float)
    counts = stats.bootstrap_counts(12, 500, seed=7)
    fast = M.paired_bootstrap(correct, [(2, 0), (3, 1)], counts=counts)
    slow_means = np.array([[np.repeat(correct[:, j], row).mean() for j in range(4)] for row in counts])
    for j, acc in enumerate(fast["accuracy"]):
        low, high = np.nanpercentile(slow_means[:, j], [2.5, 97.5])
        assert (acc["low"], acc["high"]) == pytest.approx((low, high))
        assert acc["estimate"] == pytest.approx(correct[:, j].mean())
    for diff, (a, b) in zip(fast["differences"], [(2, 0), (3, 1)], strict=True):
        deltas = slow_means[:, a] - slow_means[:, b]
        assert (diff["low"], diff["high"]) == pytest.approx(tuple(np.percentile(deltas, [2.5, 97.5])))
        assert diff["bootstrap_mean"] == pytest.approx(deltas.mean())


def test_paired_bootstrap_is_seeded_and_uses_200000_by_default():
    correct = np.array([[0, 1], [1, 1], [0, 0], [1, 1], [0, 1]], dtype=float)
    first = M.paired_bootstrap(correct, [(1, 0)], n_resamples=2000, seed=5)
    assert first == M.paired_bootstrap(correct, [(1, 0)], n_resamples=2000, seed=5)
    assert M.DEFAULT_BOOTSTRAP == 200_000


def test_cluster_bootstrap_matches_a_slow_reference():
    values = np.array([1.0, 0.0, 1.0, -1.0, 1.0, 0.0])
    entities = [("A", "A"), ("A", "B"), ("B", "B"), ("C", "D"), ("D", "D"), ("C", "A")]
    fast = M.cluster_bootstrap(values, entities, n_resamples=3000, seed=4, chunk=1000)
    persons = ["A", "B", "C", "D"]
    samples = []
    for number in range(3):
        idx = stats.bootstrap_indices(4, 1000, 4 + number)
        for row in idx:
            draws = {p: int((row == i).sum()) for i, p in enumerate(persons)}
            weights = [np.mean([draws[p] for p in set(item)]) for item in entities]
            samples.append(np.dot(weights, values) / sum(weights) if sum(weights) else np.nan)
    samples = np.array(samples)
    assert fast["bootstrap_mean"] == pytest.approx(np.nanmean(samples))
    assert (fast["low"], fast["high"]) == pytest.approx(tuple(np.nanpercentile(samples, [2.5, 97.5])))
    assert fast["estimate"] == pytest.approx(values.mean()) and fast["entities"] == 4


def test_thinning_and_leave_one_entity_out():
    values = np.array([1.0, 0.0, 1.0, -1.0, 1.0])
    entities = [("A", "A"), ("A", "B"), ("B", "C"), ("C", "C"), ("D", "D")]
    thin = M.one_pair_per_entity(values, entities, repetitions=300, seed=0)
    assert 2 <= thin["mean_items"] <= 4 and -1 <= thin["low"] <= thin["mean"] <= thin["high"] <= 1
    loo = M.leave_one_entity_out(values, entities)
    assert loo["per_entity"]["A"] == pytest.approx(np.mean([1.0, -1.0, 1.0]))
    assert loo["per_entity"]["D"] == pytest.approx(np.mean([1.0, 0.0, 1.0, -1.0]))
    assert loo["min"] == min(loo["per_entity"].values()) and loo["max"] == max(loo["per_entity"].values())


def test_prominence_spearman_is_entity_macro():
    correct = [1, 1, 0, 1, 0, 0, 1, 0]
    persons = ["h1", "h1", "h2", "m1", "m1", "m2", "t1", "t2"]
    strata = ["head", "head", "head", "mid", "mid", "mid", "long-tail", "long-tail"]
    result = M.prominence_spearman(correct, persons, strata)
    x = [2, 2, 1, 1, 0, 0]
    y = [1.0, 0.0, 0.5, 0.0, 1.0, 0.0]
    expected = spearmanr(x, y)
    assert result["rho"] == pytest.approx(expected.statistic) and result["p"] == pytest.approx(expected.pvalue)
    assert result["entities"] == 6 and result["by_stratum"]["head"] == pytest.approx(0.5)


def test_unresolved_summary():
    """7.3: ten items all ambiguous -> abstention share 100%, over-resolution 0%."""
    probs = np.tile([0.1, 0.1, 0.8], (10, 1))
    u = M.unresolved_summary(np.full(10, M.AMBIGUOUS), probs)
    assert u == {"n": 10, "ambiguous": 10, "abstention_share": 1.0, "over_resolution": 0.0,
                 "mean_p_ambiguous": pytest.approx(0.8)}
