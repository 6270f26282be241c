"""Date bins, soft targets, CRPS, conformal percentiles and the f score (paper A.1.1, A.1.2, section 8)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm, wasserstein_distance

from histbench.core.errors import SourceError
from histbench.eval.chronologic.style import conformal, dating
from histbench.eval.chronologic.style import corpus as C

from .conftest import reference


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


def test_published_ledger_identities():
    """The authors' ledger (results/freegen/chronologic_scores_1.0.csv), Qwen2.5 72B: W1 0.43229,
    W0 0.010641 -> period fidelity 13.8356 (Table 4: 13.8); their e1_period_fidelity gives the same."""
    checks = REF["ledger_checks"]
    got = conformal.fidelity(checks["qwen72b"]["w1"], checks["qwen72b"]["w0"])
    assert got == pytest.approx(checks["qwen72b"]["fidelity"], abs=1e-9) and got == pytest.approx(13.835639738191485)
    # authenticity is one-sided: centred on the authentic centre scores 100, below it too
    # (histbench's former two-sided score gave 51.9 for answers centred on the authentic median)
    assert conformal.authenticity_score(0.5, 0.5) == checks["authenticity_at_centre"] == 100.0
    assert conformal.authenticity_score(0.3, 0.49) == checks["authenticity_below_centre"] == 100.0
    assert conformal.authenticity_score(1.0, 0.49) == 0.0
    # GPT-4o 2024-08-06 in the ledger: T_E2 0.97088, authenticity 5.72097 -> mu0 0.4945
    t, score = 0.9708785887278902, 5.720970836780137
    mu0 = (t - (1 - score / 100)) / (score / 100)
    assert 0.49 < mu0 < 0.5 and conformal.authenticity_score(t, mu0) == pytest.approx(score)


REF = reference("style_reference.json")


def _reference():
    rows = REF["reference"]
    return conformal.Reference([r["date"] for r in rows], [r["n_words"] for r in rows], [r["volume_id"] for r in rows],
                               {"date": [r["e1_signed_residual"] for r in rows], "authenticity": [r["e2_p_synthetic"] for r in rows]},
                               {"date": REF["edges"], "authenticity": REF["edges"]})


def test_percentiles_windows_and_null_equal_the_authors_typicality():
    """data/style_reference.json: the authors' typicality.py on a fixed synthetic reference
    (400 passages, 100 volumes) and 25 answers: strictly-lower percentiles in +-10 year,
    same-length-bin windows, leave-one-volume-out percentiles of the reference itself,
    pseudo-models matched on the answers' (decade, length bin) profile with
    random.Random(20260809) (300 draws), and the three scores."""
    from collections import Counter

    ref = _reference()
    np.testing.assert_allclose(ref.own_percentiles("date"), REF["lovo_q_e1"], atol=1e-12)
    np.testing.assert_allclose(ref.own_percentiles("authenticity"), REF["lovo_q_e2"], atol=1e-12)
    q1, q2, corrected, profile = [], [], [], Counter()
    for answer, theirs in zip(REF["answers"], REF["placed"], strict=True):
        residual = answer["e1_mean"] - answer["true_date"]
        date = ref.place("date", residual, answer["true_date"], answer["n_words"])
        auth = ref.place("authenticity", answer["p_synthetic"], answer["true_date"], answer["n_words"])
        assert date["percentile"] == pytest.approx(theirs["q_e1"], abs=1e-12) and date["window"] == theirs["window"]
        assert auth["percentile"] == pytest.approx(theirs["q_e2"], abs=1e-12)
        assert date["window_mean"] == pytest.approx(theirs["window_mean"])
        q1.append(date["percentile"])
        q2.append(auth["percentile"])
        corrected.append(residual - date["window_mean"])
        profile[(conformal.decade(answer["true_date"]), int(conformal.length_bin([answer["n_words"]], REF["edges"])[0]))] += 1
    assert conformal.wasserstein_to_uniform(q1) == pytest.approx(REF["W1"], abs=1e-12)
    w0 = conformal.null_baseline(ref, "date", profile, REF["null_draws"])["value"]
    mu0 = conformal.null_baseline(ref, "authenticity", profile, REF["null_draws"])["value"]
    assert w0 == pytest.approx(REF["W0"], abs=1e-12) and mu0 == pytest.approx(REF["mu0"], abs=1e-12)
    assert conformal.fidelity(REF["W1"], w0) == pytest.approx(REF["period_fidelity"], abs=1e-9)
    assert conformal.authenticity_score(np.mean(q2), mu0) == pytest.approx(REF["authenticity_fidelity"], abs=1e-9)
    assert np.mean(corrected) == pytest.approx(REF["drift_years"], abs=1e-9)  # error in years, window bias removed


def test_ties_do_not_count_for_the_candidate():
    assert conformal.percentile_in([1.0, 2.0, 2.0, 3.0], 2.0) == 0.25
    assert np.isnan(conformal.percentile_in([], 2.0))


def test_word_and_sentence_rules():
    assert conformal.word_count("126 wine gallons") == 3
    assert conformal.word_count("  -- a , b ") == 4  # whitespace tokens, as the authors count
    assert not conformal.is_sentence("126 wine gallons")
    assert conformal.is_sentence("The real cause of the flow is the ventricular stroke.")
    assert conformal.is_sentence("“But, Eurie, what did you think?”")


def test_frozen_length_bins_on_log_word_counts():
    """typicality.length_bin: k cut points <= log(max(n, 1)); the authors' frozen edges."""
    edges = conformal.default_length_edges()
    assert edges["date"][0] == pytest.approx(2.833213344056216) and len(edges["authenticity"]) == 5
    e = edges["authenticity"]  # exp: 15, 25, 35, 50, 76 words
    assert conformal.length_bin([1, 14, 15, 24, 25, 49, 50, 75, 76, 500], e).tolist() == [0, 0, 1, 1, 2, 3, 4, 4, 5, 5]
    ref = conformal.Reference([1870, 1880, 1890, 1891, 1880], [20, 20, 20, 20, 200], ["a", "a", "b", "c", "d"],
                              {"date": [1.0, 2.0, 3.0, 4.0, 5.0]}, {"date": e})
    assert ref.window("date", 1880, 1).tolist() == [0, 1, 2]  # 1891 is 11 years off; 200 words is another bin
    assert ref.window("date", 1880, 1, exclude_volume="a").tolist() == [2]


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
