"""The per-model analysis on a hand-built benchmark, and its bootstrap machinery."""

from __future__ import annotations

import numpy as np
import pytest

from histbench.builders.chronoculture.distance import normalised_wasserstein, shift_category
from histbench.eval import stats
from histbench.eval.chronoculture import metrics as m
from histbench.eval.chronoculture.analysis import CellBatch, analyse, resample_counts, weighted_medians
from histbench.eval.chronoculture.data import (
    Predictions,
    benchmark_from_records,
    frozen_gold_predictions,
    static_predictions,
    uniform_predictions,
)

OPTIONS = ["Yes", "Not sure", "No"]


def _pair(pair_id, g_old, g_new, survey="WVS", region="Western", topic="Politics"):
    d_h = float(normalised_wasserstein(g_old, g_new))
    pair = {
        "pair_id": pair_id, "survey": survey, "question_id": pair_id, "question_text": "?", "topic": topic,
        "topic_category": "Government, democracy, and institutions", "country_name": "Testland", "region": region,
        "option_labels": OPTIONS, "option_values": [1.0, 2.0, 3.0], "G_old": g_old, "G_new": g_new, "d_h": d_h,
        "shift_category": shift_category(d_h), "shift_category_tighter": shift_category(d_h, "tighter"),
        "shift_category_looser": shift_category(d_h, "looser"), "year_old": 2000, "year_new": 2020,
    }
    undated = {"pair_id": pair_id, "years": [{"year": 2000, "gold": g_old}, {"year": 2020, "gold": g_new}]}
    return pair, undated


# Four pairs worked out by hand (3 options, positions 1..3, W = sum |dF| / 2):
#   A stable       G (.5,.3,.2) -> (.5,.3,.2)    d_h = 0
#   B very strong  G (1,0,0)    -> (0,0,1)       d_h = 1
#   C strong       G (.6,.2,.2) -> (.5,.2,.3)    d_h = (.1 + .1)/2 = 0.10 (boundary: strong)
#   D moderate     G (.5,.3,.2) -> (.45,.3,.25)  d_h = 0.05
G = {
    "A": ([0.5, 0.3, 0.2], [0.5, 0.3, 0.2]),
    "B": ([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
    "C": ([0.6, 0.2, 0.2], [0.5, 0.2, 0.3]),
    "D": ([0.5, 0.3, 0.2], [0.45, 0.3, 0.25]),
}
# Model predictions (undated, old, new):
#   A repeats the gold everywhere; B: undated = old = G_old, new = G_new (separated);
#   C: the older gold everywhere; D: undated (0,0,1) is K = min(.65, .60) = .60 away -> filtered out.
P = {
    "A": ([0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [0.5, 0.3, 0.2]),
    "B": ([1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
    "C": ([0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.6, 0.2, 0.2]),
    "D": ([0.0, 0.0, 1.0], [0.5, 0.3, 0.2], [0.5, 0.3, 0.2]),
}


@pytest.fixture
def hand():
    rows = [_pair(name, *G[name]) for name in G]
    bench = benchmark_from_records([r[0] for r in rows], [r[1] for r in rows])
    arrays = [np.array([P[name][j] for name in G]) for j in range(3)]
    preds = Predictions("hand", "model", p_old=arrays[1], p_new=arrays[2], p_undated=arrays[0])
    return bench, preds


def test_hand_built_categories(hand):
    bench, _ = hand
    assert bench.categories["default"].tolist() == [m.STABLE, m.VERY_STRONG, m.STRONG, m.MODERATE]
    assert bench.d_h == pytest.approx([0.0, 1.0, 0.1, 0.05])


def test_knowledge_filter_drops_the_worst_quarter_b2(hand):
    """B.2: four combinations in one survey x 2-years group -> floor(0.75 * 4) = 3 kept; D (K = 0.6) goes."""
    bench, preds = hand
    a = analyse(bench, preds, resamples=0)
    assert a.k_score == pytest.approx([0.0, 0.0, 0.0, 0.6])
    assert a.retained.tolist() == [True, True, True, False]
    assert a.counts["excluded_by_filter"] == 1 and a.counts["analysed"] == 3


def test_rf1_cells_42_c2(hand):
    """4.2: A both (0, 0); B both (0, 0); C d_old = 0, d_new = 0.10 -> both at tau 0.10, older only at 0.05."""
    a = analyse(hand[0], hand[1], resamples=0)
    assert a.cell("rf1.default.tau0.10.all.both").estimate == 1.0
    assert a.cell("rf1.default.tau0.05.strong.older_only").estimate == 1.0
    assert a.cell("rf1.default.tau0.05.all.older_accurate").estimate == 1.0
    assert a.cell("rf1.default.tau0.05.all.newer_accurate").estimate == pytest.approx(2 / 3)
    assert a.cell("rf1.default.tau0.05.all.one_only").n == 3


def test_alignment_cells_c3(hand):
    """C.3: B is separated, C (older gold for both years) is older-aligned; A (stable) is not counted."""
    a = analyse(hand[0], hand[1], resamples=0)
    assert a.cell("align.default.shifted.separated").estimate == 0.5
    assert a.cell("align.default.shifted.older_aligned").estimate == 0.5
    assert a.cell("align.default.shifted.same_period").estimate == 0.5
    assert a.cell("align.default.shifted.reversed").estimate == 0.0
    assert a.cell("align.default.shifted.separated").n == 2


def test_rf2_cells_43_d3(hand):
    """4.3/D.3: C has identical predictions (zero shift); B moves all the way: r = 1, cosine 1;
    A is stable and keeps its prediction (preserves)."""
    a = analyse(hand[0], hand[1], resamples=0)
    assert a.cell("rf2.default.strong.zero_shift").estimate == 1.0
    assert a.cell("rf2.default.very_strong.zero_shift").estimate == 0.0
    assert a.cell("rf2.default.very_strong.median_ratio").estimate == pytest.approx(1.0)
    assert a.cell("rf2.default.very_strong.median_cosine").estimate == pytest.approx(1.0)
    assert np.isnan(a.cell("rf2.default.strong.median_ratio").estimate)  # only a zero-shift pair
    assert a.cell("rf2.default.strong.median_ratio_all").estimate == 0.0  # D.2 includes it as r = 0
    assert a.cell("stable.default.all.preserves").estimate == 1.0


def test_rf3_cells_44_e1_e3(hand):
    """4.4: A is equally close to both years (tie -> oldest); B and C's undated = G_old -> oldest.
    Benefit of naming the newer year: A 0, B W(und, G_new) - 0 = 1, C 0.1 - 0.1 = 0."""
    a = analyse(hand[0], hand[1], resamples=0)
    assert a.cell("rf3.default_period.all.oldest").estimate == 1.0
    assert a.counts["default_period_ties"] == 1
    assert a.cell("rf3.equal_choice.two.newest").estimate == 0.5
    assert a.cell("rf3.benefit.new.all.mean").estimate == pytest.approx(1 / 3)
    assert a.cell("rf3.benefit.new.all.helped").estimate == pytest.approx(1 / 3)
    assert a.cell("rf3.benefit.new.all.unchanged").estimate == pytest.approx(2 / 3)
    assert a.cell("rf3.benefit.new.all.identical").estimate == pytest.approx(2 / 3)
    assert a.cell("rf3.benefit.old.all.mean").estimate == 0.0


def test_invalid_dated_prediction_is_counted_and_excluded(hand):
    bench, preds = hand
    preds.p_new[0] = np.nan
    a = analyse(bench, preds, resamples=0)
    assert a.counts["excluded_invalid_dated"] == 1 and a.counts["analysed"] == 2
    preds.p_undated[1] = np.nan
    a = analyse(bench, preds, resamples=0)
    assert a.counts["excluded_invalid_undated"] == 1
    # 3 scored combinations -> floor(2.25) = 2 kept (A and C, K = 0); A's new answer is invalid
    assert a.counts["retained"] == 2 and a.counts["analysed"] == 1


def test_reference_predictors_c1(hand):
    """C.1: uniform and static references on a model's own pairs; the static one repeats the undated answer."""
    bench, preds = hand
    model = analyse(bench, preds, resamples=0)
    static = analyse(bench, static_predictions(preds), resamples=0, pairs=model.retained, parts=("rf1",))
    assert static.counts["analysed"] == 3
    # static: B's undated = G_old -> d_new = 1 (older only); C's undated = G_old -> d_new = 0.1 (both)
    assert static.cell("rf1.default.tau0.10.very_strong.older_only").estimate == 1.0
    uniform = analyse(bench, uniform_predictions(bench), resamples=0, pairs=model.retained, parts=("rf1",))
    # uniform vs A's gold (.5,.3,.2): F (1/3, 2/3) vs (.5, .8): (1/6 + 2/15)/2 = 0.15 -> not accurate
    assert uniform.cell("rf1.default.tau0.10.stable.neither").estimate == 1.0
    frozen = analyse(bench, frozen_gold_predictions(bench, "oldest"), retention=1.0, resamples=0)
    assert frozen.cell("align.default.shifted.older_aligned").estimate == 1.0


def test_cell_batch_matches_explicit_resamples():
    """Bootstrap means and medians equal those of the explicitly resampled values."""
    rng = np.random.default_rng(3)
    n, b = 41, 200
    values = rng.normal(size=n)
    subset = rng.random(n) < 0.6
    batch = CellBatch(n)
    batch.mean("mean", values, subset)
    batch.median("median", values, subset)
    cells = batch.compute(resamples=b, seed=7)
    indices = stats.bootstrap_indices(n, b, 7)
    assert (resample_counts(n, b, 7) == np.stack([np.bincount(r, minlength=n) for r in indices])).all()
    means, medians = [], []
    for drawn in indices:
        drawn = drawn[subset[drawn]]
        means.append(values[drawn].mean())
        medians.append(np.median(values[drawn]))
    low, high = np.percentile(means, [2.5, 97.5])
    assert cells["mean"].estimate == pytest.approx(values[subset].mean())
    assert (cells["mean"].low, cells["mean"].high) == pytest.approx((low, high), rel=1e-5)
    low, high = np.percentile(medians, [2.5, 97.5])
    assert cells["median"].estimate == pytest.approx(np.median(values[subset]))
    assert (cells["median"].low, cells["median"].high) == pytest.approx((low, high))
    assert cells["mean"].n == int(subset.sum())


def test_weighted_medians_even_and_odd_and_empty():
    values = np.array([1.0, 2.0, 5.0, 9.0])
    counts = np.array([[1, 1, 1, 1], [0, 3, 0, 0], [2, 0, 0, 1], [0, 0, 0, 0]])
    out = weighted_medians(values, counts)
    assert out[:3].tolist() == [3.5, 2.0, 1.0] and np.isnan(out[3])


def test_bootstrap_interval_is_seeded(hand):
    bench, preds = hand
    a1 = analyse(bench, preds, resamples=300, seed=5, retention=1.0)
    a2 = analyse(bench, preds, resamples=300, seed=5, retention=1.0)
    key = "rf1.default.tau0.05.all.both"
    assert a1.cell(key) == a2.cell(key)
    assert a1.cell(key).low <= a1.cell(key).estimate <= a1.cell(key).high


def test_default_period_uses_every_retained_combination_44(hand):
    """4.4: every retained question x country combination -- also those whose dated answers are
    invalid (they leave the analysed pairs, not the default-period table). B's dated answers are
    broken: 2 pairs analysed, but the default period still counts A, B and C (it counted 2 before)."""
    bench, preds = hand
    preds.p_old[1] = np.nan
    a = analyse(bench, preds, resamples=0)
    assert a.counts["analysed"] == 2 and a.counts["retained"] == 3
    assert a.counts["default_period_combinations"] == 3
    assert a.cell("rf3.default_period.all.oldest").n == 3
    assert a.cell("rf3.default_period.all.oldest").estimate == 1.0
    # the benefit of naming a year needs dated answers: analysed pairs only
    assert a.cell("rf3.benefit.old.all.mean").n == 2
    # a retained combination without a valid undated answer cannot exist (K needs it); D is filtered out
    assert a.cell("rf3.equal_choice.two.oldest").n == 3


def test_default_period_intervals_resample_combinations_44(hand):
    bench, preds = hand
    preds.p_undated[2] = [0.5, 0.2, 0.3]   # C's undated = G_new -> newest; K = 0, still retained
    a = analyse(bench, preds, resamples=400, seed=1)
    newest = a.cell("rf3.default_period.all.newest")
    assert newest.estimate == pytest.approx(1 / 3) and newest.n == 3
    # a share of the 3 combinations is a proportion: Wilson's interval over them (issue 43), 1/3 ->
    # [0.0615, 0.7923] (scipy's binomtest(1, 3).proportion_ci("wilson")); the percentile bootstrap
    # gave [0, 1] (no C in 29.6% of resamples, only C in 3.7%)
    assert newest.method == "Wilson"
    assert (round(newest.low, 4), round(newest.high, 4)) == (0.0615, 0.7923)
    # a mean over the combinations keeps the bootstrap
    assert a.cell("rf3.benefit.old.all.mean").method == "percentile bootstrap"


def test_table7_retained_pairs_by_level_b2(hand):
    """Table 7: the filter at 100/75/50/25% on one survey x 2-years group of 4: floor(4 p) kept,
    K ties (A, B, C all 0) in dataset order: 4 (all), 3 (A B C), 2 (A B), 1 (A)."""
    from histbench.eval.chronoculture.reporting import TABLE7_LEVELS, prepare, table7

    bench, preds = hand
    (entry,) = prepare(bench, [preds], resamples=0)
    counts = entry.retained_by_level
    assert tuple(counts) == TABLE7_LEVELS
    assert counts[1.0] == {"stable": 1, "moderate": 1, "strong": 1, "very_strong": 1, "total": 4}
    assert counts[0.75] == {"stable": 1, "moderate": 0, "strong": 1, "very_strong": 1, "total": 3}
    assert counts[0.5] == {"stable": 1, "moderate": 0, "strong": 0, "very_strong": 1, "total": 2}
    assert counts[0.25] == {"stable": 1, "moderate": 0, "strong": 0, "very_strong": 0, "total": 1}
    assert "| hand | 25% | 1 | 0 | 0 | 0 | 1 |" in table7([entry])


def test_retention_variants_have_intervals_f2(benchmark):
    """F.2's 50% and 100% rows come with bootstrap intervals (every one was NaN before)."""
    from histbench.eval.chronoculture.reporting import prepare

    rng = np.random.default_rng(0)

    options = np.arange(benchmark.width)[None, :] < benchmark.k[:, None]

    def noisy(g):
        p = np.where(options, np.clip(g + rng.normal(0, 0.05, g.shape), 0, None) + 1e-3, 0.0)
        return p / p.sum(axis=1, keepdims=True)

    preds = Predictions("noisy", "model", noisy(benchmark.g_old), noisy(benchmark.g_new),
                        noisy((benchmark.g_old + benchmark.g_new) / 2))
    (entry,) = prepare(benchmark, [preds], resamples=200, seed=0, references=False)
    for level in (0.5, 1.0):
        a = entry.retention_variants[level]
        assert a.retention == level
        for key in ("rf1.default.tau0.10.all.both", "rf2.default.strong.zero_shift", "rf3.benefit.old.all.mean",
                    "rf3.default_period.all.newest", "stable.default.all.preserves"):
            cell = a.cell(key)
            assert np.isfinite(cell.low) and np.isfinite(cell.high) and cell.low <= cell.estimate <= cell.high, (level, key)
    assert entry.retention_variants[1.0].counts["analysed"] > entry.retention_variants[0.5].counts["analysed"]


def test_no_filter_at_100_percent_keeps_pairs_without_an_undated_answer_f2_f3(hand):
    """At 100% nothing is filtered (F.2's 100% row; F.3's unfiltered sample): B, whose undated
    answer is invalid, stays in RF1/RF2 and leaves only the RF3 cells, which need that answer. Below 100%, K cannot rank B: it is not retained."""
    bench, preds = hand
    preds.p_undated[1] = np.nan
    full = analyse(bench, preds, retention=1.0, resamples=0)
    assert full.counts["retained"] == 4 and full.counts["analysed"] == 4
    assert full.counts["excluded_invalid_undated"] == 1
    assert full.cell("rf1.default.tau0.10.very_strong.both").n == 1           # B is analysed
    assert full.cell("rf2.default.very_strong.zero_shift").estimate == 0.0
    assert full.cell("rf3.benefit.old.very_strong.mean").n == 0               # ... but not for naming a year
    assert full.cell("rf3.benefit.new.all.helped").n == 3
    assert full.counts["default_period_combinations"] == 3
    filtered = analyse(bench, preds, retention=0.75, resamples=0)
    assert not filtered.retained[1] and filtered.cell("rf1.default.tau0.10.very_strong.both").n == 0
