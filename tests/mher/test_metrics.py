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


def _slow_cluster(values, entities, n_resamples, seed, estimator):
    persons = sorted({p for item in entities for p in item})
    samples = []
    for row in stats.bootstrap_indices(len(persons), n_resamples, seed):
        draws = {p: int((row == i).sum()) for i, p in enumerate(persons)}
        if estimator == "distinct-items":
            weights = [1.0 if any(draws[p] for p in set(item)) else 0.0 for item in entities]
        else:
            weights = [np.mean([draws[p] for p in set(item)]) for item in entities]
        samples.append(np.dot(weights, values) / sum(weights) if sum(weights) else np.nan)
    return np.array(samples)


@pytest.mark.parametrize("estimator", ["distinct-items", "draw-weighted"])
def test_cluster_bootstrap_matches_a_slow_reference(estimator):
    values = np.array([1.0, 0.0, 1.0, -1.0, 1.0, 0.0])
    entities = [("A", "A"), ("A", "B"), ("B", "B"), ("C", "D"), ("D", "D"), ("C", "A")]
    fast = M.cluster_bootstrap(values, entities, n_resamples=3000, seed=4, chunk=700, estimator=estimator)
    samples = _slow_cluster(values, entities, 3000, 4, estimator)
    assert fast["bootstrap_mean"] == pytest.approx(np.nanmean(samples))
    assert (fast["low"], fast["high"]) == pytest.approx(tuple(np.nanpercentile(samples, [2.5, 97.5])))
    assert fast["estimate"] == pytest.approx(values.mean()) and fast["entities"] == 4
    both = M.cluster_bootstrap(np.column_stack([values, -values]), entities, n_resamples=3000, seed=4,
                               estimator=estimator)
    assert both[0] == pytest.approx(fast) and both[1]["bootstrap_mean"] == pytest.approx(-fast["bootstrap_mean"])


def _table6_like(seed: int = 0):
    """108 paired items (54 same, 54 different) over 60 persons of unequal popularity, the
    shape of the paper's paired TEST subset (section 7.4)."""
    rng = np.random.default_rng(seed)
    weights = rng.pareto(1.5, 60) + 1
    weights /= weights.sum()
    same = [(f"P{rng.choice(60, p=weights)}",) * 2 for _ in range(54)]
    different = [tuple(f"P{i}" for i in rng.choice(60, 2, replace=False, p=weights)) for _ in range(54)]
    return same + different


def test_distinct_items_estimator_has_the_paper_table6_signature():
    """Why `distinct-items` is the paper's estimator (docs/mher.md, section 7.4, Table 6).
    Every one of Table 6's ten interval limits is a fraction k/m with m between 71 and 84
    (Terra 53/81 and 59/78, Sol 70/76 and 73/76, Qwen 5/71 ...), i.e. a mean gain over a set
    of about 81 distinct items: 108 items, each drawn when one of its persons is, enter with
    probability 1-(1-1/E)^E (same pairs) or 1-(1-2/E)^E (different pairs), 81 on average.
    Estimators that keep multiplicity (or average per person) have no such denominators.
    Counting each item once also narrows the interval below the item bootstrap's, as
    Table 6's are (0.47-0.58 of Table 4's widths); the draw-weighted one is wider."""
    paper = {"Terra": (65.43, 75.64), "Luna": (90.48, 96.30), "Sol": (92.11, 96.05), "Gemini": (73.33, 80.77),
             "Qwen3-8B": (7.04, 16.67)}

    def denominators(percent, lo=60, hi=100):
        return [m for m in range(lo, hi) if any(round(100 * k / m, 2) == percent for k in range(-m, m + 1))]

    assert all(denominators(v, 70, 92) for limits in paper.values() for v in limits)
    entities = _table6_like()
    rng = np.random.default_rng(1)
    gains = np.zeros(108)
    gains[rng.permutation(108)[:73]] = 1.0                         # Terra: 73 W->C, no C->W
    result = M.cluster_bootstrap(gains, entities, n_resamples=50_000, seed=0)
    item = M.paired_bootstrap(np.column_stack([gains, np.zeros(108)]), [(0, 1)], n_resamples=50_000)
    item_width = item["differences"][0]["high"] - item["differences"][0]["low"]
    width = result["high"] - result["low"]
    assert width < 0.85 * item_width                               # Table 6: 0.47-0.58 of the pair CI
    weighted = M.cluster_bootstrap(gains, entities, n_resamples=50_000, seed=0, estimator="draw-weighted")
    assert weighted["high"] - weighted["low"] > width


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


def test_block_drawn_counts_are_the_tallies_of_the_index_resamples():
    """The paired and cluster bootstraps draw their resamples block by block; the blocks
    are the same resamples as one draw of bootstrap_indices (and bootstrap_counts)."""
    index = stats.bootstrap_indices(13, 2_500, seed=9)
    tallies = np.stack([np.bincount(row, minlength=13) for row in index])
    blocks = np.concatenate(list(stats.iter_bootstrap_counts(13, 2_500, seed=9, chunk=700)))
    assert (blocks == tallies).all() and (stats.bootstrap_counts(13, 2_500, seed=9) == tallies).all()
    correct = (np.random.default_rng(2).random((13, 3)) < 0.6).astype(float)
    whole = M.paired_bootstrap(correct, [(2, 0)], counts=stats.bootstrap_counts(13, 2_500, seed=9))
    assert M.paired_bootstrap(correct, [(2, 0)], n_resamples=2_500, seed=9) == whole
