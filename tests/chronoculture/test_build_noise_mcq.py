"""Sampling noise (appendix F.4) and the modal-answer variant (paper 3.6, appendix A.5)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from histbench.builders.chronoculture.countries import CountryTable
from histbench.builders.chronoculture.pairs import (
    MCQ_MARGIN,
    NOISE_DRAWS,
    NOISE_RESPONDENTS,
    Cell,
    build_records,
    mode_index,
    pair_noise,
    pair_rng,
    sampling_noise,
    top_two_margin,
)
from histbench.builders.chronoculture.prompts import PromptTemplates
from histbench.builders.chronoculture.registry import Option, Question
from histbench.core.resources import Resources

SOURCES = Resources.default().source_dir("chronoculture")


def test_f4_constants():
    """F.4: 200 draws of two samples of 500 respondents (the benchmark's minimum sample size)."""
    assert (NOISE_DRAWS, NOISE_RESPONDENTS) == (200, 500)
    assert MCQ_MARGIN == 0.10


def test_sampling_noise_equals_an_independent_simulation():
    """Median and 95th percentile of W between two multinomial samples of 500 from G_old, 200 times."""
    g_old = np.array([0.1, 0.4, 0.3, 0.2])
    median, p95 = sampling_noise(g_old, [1, 2, 3, 4], np.random.default_rng(7))
    rng = np.random.default_rng(7)
    draws = rng.multinomial(500, g_old, size=(200, 2)) / 500
    positions = np.arange(1, 5)
    distances = [wasserstein_distance(positions, positions, a, b) / 3 for a, b in draws]
    assert median == pytest.approx(np.median(distances), abs=1e-12)
    assert p95 == pytest.approx(np.percentile(distances, 95), abs=1e-12)
    assert 0 < median < p95 < 0.1


def test_noise_seed_depends_on_build_seed_and_pair_only():
    a = sampling_noise([0.5, 0.5], None, pair_rng(0, "wvs_A165__CAN"))
    assert a == sampling_noise([0.5, 0.5], None, pair_rng(0, "wvs_A165__CAN"))
    assert a != sampling_noise([0.5, 0.5], None, pair_rng(1, "wvs_A165__CAN"))
    assert a != sampling_noise([0.5, 0.5], None, pair_rng(0, "wvs_A165__DEU"))


# (G_old, option values, pair id, build seed) -> (median, p95) as float.hex(), computed pair by pair
# (one noise_distances call per pair) before the noise of all pairs was computed at once
PINNED_NOISE = [
    (([0.1, 0.4, 0.3, 0.2], None, "wvs_A165__CAN", 0), ("0x1.26e978d4fdf3bp-6", "0x1.4237fa89e60f0p-5")),
    (([0.5, 0.5], None, "issp_x__DEU", 0), ("0x1.6872b020c49bap-6", "0x1.fcb923a29c775p-5")),
    (([0.05, 0.1, 0.15, 0.2, 0.2, 0.1, 0.05, 0.05, 0.05, 0.05], None, "wvs_A170__JPN", 7),
     ("0x1.16872b020c49cp-6", "0x1.063c2a6a96471p-5")),
    (([0.2, 0.3, 0.5], [1, 2, 4], "issp_v__USA", 0), ("0x1.31d5acb6f4651p-6", "0x1.9fe16aa1edb41p-5")),
    (([1.0, 0, 0, 0, 0], None, "issp_deg__GBR", 3), ("0x0.0p+0", "0x0.0p+0")),
    (([0.3, 0.0, 0.7], [0, 5, 10], "wvs_E__FRA", 11), ("0x1.0624dd2f1a9fcp-6", "0x1.aacd9e83e4256p-5")),
]


def test_noise_of_all_pairs_at_once_gives_the_numbers_of_one_pair_at_a_time():
    """F.4 computed for every pair together (pair_noise) draws each pair from its own seeded generator
    and gives, bit for bit, the numbers the pair-by-pair computation gave (pinned) and gives now."""
    for (gold, values, pid, seed), pinned in PINNED_NOISE:
        [(median, p95)] = pair_noise([np.array(gold)], [values], [pid], seed).tolist()
        assert (median.hex(), p95.hex()) == pinned
        assert (median, p95) == sampling_noise(gold, values, pair_rng(seed, pid))
    rng = np.random.default_rng(5)
    golds = [rng.dirichlet(np.ones(k)) for k in rng.choice([2, 3, 4, 5, 7, 10], 300)]
    values = [None if i % 3 else list(range(1, len(g) + 1)) for i, g in enumerate(golds)]
    ids = [f"q{i % 17}__{i}" for i in range(len(golds))]
    together = pair_noise(golds, values, ids, 9).tolist()
    assert together == [list(sampling_noise(g, v, pair_rng(9, pid))) for g, v, pid in zip(golds, values, ids, strict=True)]
    assert pair_noise(golds[::-1], values[::-1], ids[::-1], 9).tolist() == together[::-1]


def test_a5_mode_and_margin_are_numpy_argmax_and_sorted_difference():
    """A.5's mode (the first option of a tie, as numpy's argmax) and the margin of the two largest
    proportions (the float numpy's sort gives), on plain lists as the build passes them."""
    rng = np.random.default_rng(3)
    golds = [rng.dirichlet(np.ones(k)) for k in rng.choice([2, 3, 5, 10], 200)]
    golds += [np.array([0.4, 0.4, 0.2]), np.array([0.2, 0.4, 0.4]), np.array([0.5, 0.5]), np.full(4, 0.25)]
    for gold in golds:
        top = np.sort(gold)
        assert mode_index(gold.tolist()) == int(np.argmax(gold))
        assert top_two_margin(gold.tolist()) == top_two_margin(gold) == float(top[-1] - top[-2])
    assert [mode_index(g) for g in ([0.4, 0.4, 0.2], [0.2, 0.4, 0.4])] == [0, 1]


def _question(qid="issp_q", k=4):
    options = tuple(Option(f"option {i + 1}", (float(i + 1),), float(i + 1)) for i in range(k))
    return Question(id=qid, survey="ISSP", topic="Role of Government",
                    category="Social inequality, work, and economic values", text="A question?",
                    options=options, invalid_codes=(8.0, 9.0), sources=())


def _records(pairs_spec, **kwargs):
    """pairs_spec: {alpha3: (G_old, G_new)} for one ISSP question -> (configs, stats)."""
    question = _question()
    cells = {
        (question.id, alpha): [Cell(1990, None, np.array(old), 600, "f:v"), Cell(2016, None, np.array(new), 700, "g:v")]
        for alpha, (old, new) in pairs_spec.items()
    }
    countries = CountryTable.load(SOURCES / "countries.csv")
    templates = PromptTemplates.load(SOURCES / "prompts.yaml")
    return build_records(cells, {question.id: question}, countries.by_alpha3, templates, seed=0, newer_wave=None,
                         **kwargs)


def test_a5_modal_variant_filters_and_labels():
    """A.5: >= 10-point top-two margin in both years; stable pairs, and strong/very strong pairs whose mode
    changes; moderate pairs excluded."""
    spec = {
        "AUS": ([0.60, 0.20, 0.10, 0.10], [0.60, 0.20, 0.10, 0.10]),  # stable, clear mode -> kept
        "AUT": ([0.36, 0.34, 0.20, 0.10], [0.34, 0.36, 0.20, 0.10]),  # stable, mode flips, margin 2 points
        "BEL": ([0.40, 0.30, 0.20, 0.10], [0.40, 0.30, 0.20, 0.10]),  # margin exactly 10 points -> kept
        "CAN": ([0.60, 0.20, 0.10, 0.10], [0.45, 0.30, 0.15, 0.10]),  # moderate (0.0667) -> excluded
        "DEU": ([0.70, 0.15, 0.10, 0.05], [0.45, 0.25, 0.18, 0.12]),  # strong (0.157), same mode -> excluded
        "FRA": ([0.60, 0.25, 0.10, 0.05], [0.10, 0.20, 0.25, 0.45]),  # very strong, mode changes -> kept
    }
    configs, stats = _records(spec)
    pairs = {p["country_iso3"]: p for p in configs["pairs"]}
    assert [pairs[c]["shift_category"] for c in spec] == ["stable", "stable", "stable", "moderate", "strong", "very_strong"]
    mcq = {r["country_iso3"]: r for r in configs["mcq"]}
    assert sorted(mcq) == ["AUS", "BEL", "FRA"]
    fra = mcq["FRA"]
    assert (fra["mode_old"], fra["mode_new"], fra["answer_old"], fra["answer_new"]) == (0, 3, "A", "D")
    assert (fra["mode_label_old"], fra["mode_label_new"], fra["mode_changed"]) == ("option 1", "option 4", True)
    assert fra["margin_old"] == pytest.approx(0.35) and fra["margin_new"] == pytest.approx(0.20)
    assert fra["option_letters"] == ["A", "B", "C", "D"]
    user = fra["messages_old"][1]["content"]
    assert "1990" in user and "A. option 1" in user and "D. option 4" in user
    assert fra["messages_new"][1]["content"] == user.replace("1990", "2016")
    assert stats["mcq"]["excluded"] == {"margin_below_10_points": 1, "moderate_shift": 1, "shifted_mode_unchanged": 1}
    assert stats["mcq"]["by_shift_category"] == {"stable": 2, "very_strong": 1}


def test_3_6_mode_change_shares_over_all_pairs():
    """3.6: share of shifted pairs keeping their mode, share of stable pairs changing it (paper 68.2% / 8.5%)."""
    spec = {
        "AUS": ([0.60, 0.20, 0.10, 0.10], [0.60, 0.20, 0.10, 0.10]),  # stable, same mode
        "AUT": ([0.36, 0.34, 0.20, 0.10], [0.34, 0.36, 0.20, 0.10]),  # stable, mode changes
        "CAN": ([0.60, 0.20, 0.10, 0.10], [0.45, 0.30, 0.15, 0.10]),  # moderate, same mode
        "DEU": ([0.70, 0.15, 0.10, 0.05], [0.45, 0.25, 0.18, 0.12]),  # strong, same mode
        "FRA": ([0.60, 0.25, 0.10, 0.05], [0.10, 0.20, 0.25, 0.45]),  # very strong, mode changes
    }
    _, stats = _records(spec)
    mode = stats["mode_change"]
    assert (mode["shifted_pairs"], mode["shifted_pairs_same_mode"]) == (3, 2)
    assert mode["shifted_pairs_same_mode_share"] == pytest.approx(2 / 3, abs=1e-4)
    assert (mode["stable_pairs"], mode["stable_pairs_mode_changed"]) == (2, 1)
    assert mode["stable_pairs_mode_changed_share"] == 0.5


def test_noise_columns_and_above_p95_flag():
    spec = {"AUS": ([0.25, 0.25, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25]),
            "FRA": ([0.60, 0.25, 0.10, 0.05], [0.10, 0.20, 0.25, 0.45])}
    configs, stats = _records(spec)
    pairs = {p["country_iso3"]: p for p in configs["pairs"]}
    assert pairs["AUS"]["above_noise_p95"] is False and pairs["FRA"]["above_noise_p95"] is True
    for pair in pairs.values():
        assert 0 < pair["noise_median"] <= pair["noise_p95"] < 0.1
    assert stats["noise"]["share_above_own_p95_by_category"] == {"stable": 0.0, "very_strong": 1.0}
    # fewer draws are allowed (recorded as a build option) and change the estimate
    fewer, _ = _records(spec, noise_draws=20)
    assert fewer["pairs"][0]["noise_p95"] != configs["pairs"][0]["noise_p95"]


def test_records_come_in_the_schema_column_order():
    """build_records writes every config's columns in its schema's order (the builder then
    leaves the records as they are)."""
    configs, _ = _records({"AUS": ([0.2, 0.3, 0.3, 0.2], [0.21, 0.3, 0.3, 0.19]),
                           "FRA": ([0.7, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7])})
    for name, records in configs.items():
        order = list(Resources.default().schema("chronoculture", name)["properties"])
        assert records and all(list(record) == order for record in records), name
