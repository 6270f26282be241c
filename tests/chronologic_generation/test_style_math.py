"""Date bins, soft targets, CRPS, conformal percentiles and the f score (paper A.1.1, A.1.2, section 8)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm, wasserstein_distance

from histbench.builders.core.errors import SourceError
from histbench.eval.chronologic.style import conformal, dating
from histbench.eval.chronologic.style import corpus as C


def test_thirty_six_ten_year_bins_from_1680_to_2040():
    assert dating.N_BINS == 36
    assert dating.EDGES[0] == 1680 and dating.EDGES[-1] == 2040
    assert dating.CENTRES[0] == 1685 and dating.CENTRES[-1] == 2035


def test_soft_targets_are_a_renormalised_gaussian_with_sigma_15():
    t = dating.soft_targets([1883])[0]
    assert t.sum() == pytest.approx(1.0)
    assert np.argmax(t) == (1883 - 1680) // 10
    raw = norm.cdf((dating.EDGES[1:] - 1883) / 15) - norm.cdf((dating.EDGES[:-1] - 1883) / 15)
    np.testing.assert_allclose(t, raw / raw.sum())
    # one bin off carries far more mass than ten bins off (ordinality through the target)
    k = np.argmax(t)
    assert t[k + 1] > 100 * t[k + 10]
    # the bins reach two decades past the corpus (1700-2020), so renormalising a truncated bump
    # pulls the corpus's edge labels inward by under 3 years, and interior labels not at all
    for year in (1700, 2020):
        edge = dating.soft_targets([year])[0]
        assert edge.sum() == pytest.approx(1.0) and abs(dating.mean_date(edge[None])[0] - year) < 3.0
    assert dating.mean_date(dating.soft_targets([1883]))[0] == pytest.approx(1883, abs=1e-6)
    with pytest.raises(ValueError):
        dating.soft_targets([1650])


def test_crps_is_exact_for_histogram_distributions():
    uniform_bin = np.zeros((1, 36))
    uniform_bin[0, 20] = 1.0
    centre = dating.CENTRES[20]
    # CRPS of U(a, b) at its centre is (b - a) / 12
    assert dating.crps(uniform_bin, [centre])[0] == pytest.approx(10 / 12)
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(36), 3)
    truth = np.array([1700.3, 1883.0, 2039.9])
    xs = np.linspace(1600, 2100, 1_000_001)
    for p, y, got in zip(probs, truth, dating.crps(probs, truth), strict=True):
        cdf = np.interp(xs, dating.EDGES, np.r_[0, np.cumsum(p)])
        assert got == pytest.approx(np.trapezoid((cdf - (xs >= y)) ** 2, xs), rel=1e-4)
    # a sharper distribution on the right bin scores better than a flat one
    flat = np.full((1, 36), 1 / 36)
    assert dating.crps(dating.soft_targets([1883]), [1883])[0] < dating.crps(flat, [1883])[0]


def test_wasserstein_to_uniform_matches_scipy():
    rng = np.random.default_rng(1)
    grid = (np.arange(200_000) + 0.5) / 200_000
    for sample in (rng.random(7), rng.beta(5, 1, 60), np.array([0.5])):
        assert conformal.wasserstein_to_uniform(sample) == pytest.approx(wasserstein_distance(sample, grid), abs=1e-6)
    assert conformal.wasserstein_to_uniform(np.zeros(9)) == pytest.approx(0.5)
    assert conformal.wasserstein_to_uniform(np.ones(4)) == pytest.approx(0.5)
    rows = rng.random((3, 11))
    np.testing.assert_allclose(conformal.wasserstein_to_uniform(rows), [conformal.wasserstein_to_uniform(r) for r in rows])


def test_f_rescales_divergence_against_the_authentic_baseline():
    """A.1.1: f = 100 * (1 - max(0, W - W0) / (0.5 - W0))."""
    assert conformal.fidelity(0.04, 0.04) == 100.0
    assert conformal.fidelity(0.02, 0.04) == 100.0  # no better than authentic text
    assert conformal.fidelity(0.5, 0.04) == pytest.approx(0.0)
    assert conformal.fidelity(0.27, 0.04) == pytest.approx(50.0)
    with pytest.raises(ValueError):
        conformal.fidelity(0.3, 0.5)


def test_w0_is_the_divergence_of_authentic_samples_of_the_same_size():
    rng = np.random.default_rng(2)
    pool = rng.random(20_000)
    small, large = conformal.expected_w0(pool, 20, draws=400), conformal.expected_w0(pool, 500, draws=400)
    assert 0 < large < small < 0.2  # shrinks with the sample size
    # for uniform percentiles, E[W1] ~ sqrt(2 / pi) * integral sqrt(x(1-x)) dx / sqrt(n) = sqrt(2 pi) / (8 sqrt(n))
    assert large == pytest.approx(np.sqrt(2 * np.pi) / (8 * np.sqrt(500)), rel=0.06)


def test_sentence_and_word_rules_of_section_8():
    assert conformal.word_count("126 wine gallons") == 3
    assert conformal.word_count("  -- a , b ") == 2
    assert not conformal.is_sentence("126 wine gallons")
    assert not conformal.is_sentence("if we mortgaged the farm.")
    assert not conformal.is_sentence("Liebig.")
    assert conformal.is_sentence("The real cause of the flow is the ventricular stroke.")
    assert conformal.is_sentence("“But, Eurie, what did you think?”")
    assert not conformal.is_sentence("The real cause of the flow is the ventricular stroke")


def test_windows_are_ten_years_and_one_length_bin():
    dates = np.array([1870, 1880, 1890, 1891, 1880, 1880])
    words = np.array([10, 10, 10, 10, 200, 10])
    ref = conformal.Reference(dates, words, edges=[20, 40, 60, 80, 100], values={"v": np.arange(6.0)})
    assert ref.window(1880, 0).tolist() == [0, 1, 2, 5]  # 1891 is 11 years off; the 200-word passage is in bin 5
    assert ref.window(1880, 0, exclude=1).tolist() == [0, 2, 5]
    pct, size = ref.place("v", 2.0, 1880, 12, min_window=3)
    assert size == 4 and pct == pytest.approx((2 + 0.5) / 4)  # below: 0, 1; equal: 2
    assert ref.place("v", 2.0, 1880, 12, min_window=5) == (None, 4)
    assert conformal.length_bin([19, 20, 21, 100, 150], [20, 40, 60, 80, 100]).tolist() == [0, 1, 1, 5, 5]


def test_length_bins_default_to_reference_sextiles():
    edges = conformal.length_bin_edges(np.arange(1, 601))
    assert edges.size == 5
    counts = np.bincount(conformal.length_bin(np.arange(1, 601), edges), minlength=6)
    assert counts.min() >= 99 and counts.max() <= 101
    with pytest.raises(ValueError, match="distinct length bins"):
        conformal.length_bin_edges(np.full(50, 12))


def test_authentic_passages_placed_in_their_own_windows_look_uniform():
    rng = np.random.default_rng(4)
    n = 3000
    dates = rng.integers(1831, 1931, n)
    words = rng.integers(8, 300, n)
    residual = rng.normal(0, 12, n)
    ref = conformal.Reference(dates, words, conformal.length_bin_edges(words), {"date": residual})
    pool = ref.self_percentiles("date", max_pool=600, seed=0)
    assert pool.size == 600
    assert conformal.wasserstein_to_uniform(pool) < 0.04
    # a model that always sounds 30 years too modern lands near the top of every window
    modern = [ref.place("date", 30.0, 1880, 50)[0] for _ in range(5)]
    assert min(modern) > 0.95


def test_grouped_split_never_lets_an_author_or_volume_cross():
    frame = pd.DataFrame({"author": [f"a{i // 10}" for i in range(200)], "volume": [f"v{i // 5}" for i in range(200)]})
    frame.loc[5, "volume"] = "shared"
    frame.loc[150, "volume"] = "shared"  # links two authors' groups
    groups = C.connected_groups(frame["author"], frame["volume"])
    assert len(set(groups)) == 19 and groups[5] == groups[150]
    split = C.grouped_split(frame, 0.2, 0.2, seed=3)
    for column in ("author", "volume"):
        assert frame.assign(split=split).groupby(column)["split"].nunique().max() == 1
    assert set(split) == {"train", "validation", "test"}
    given = frame.assign(split=["test"] * 200)
    assert set(C.grouped_split(given)) == {"test"}


def test_corpus_errors_name_the_file_and_field(tmp_path):
    pd.DataFrame({"text": ["x"], "date": [1850]}).to_parquet(tmp_path / "a.parquet")
    with pytest.raises(SourceError, match="lacks column"):
        C.read_dated_corpus(tmp_path / "a.parquet")
    pd.DataFrame({"text": ["x"], "label": [3], "author": ["a"], "volume": ["v"]}).to_parquet(tmp_path / "b.parquet")
    with pytest.raises(SourceError, match="label must be 1"):
        C.read_authenticity_corpus(tmp_path / "b.parquet")
    with pytest.raises(SourceError, match="unknown corpus format"):
        C.read_table(tmp_path / "a.txt") if (tmp_path / "a.txt").write_text("x") else None
