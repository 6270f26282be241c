"""ChronoCulture metric functions pinned on small inputs worked out by hand.

Each test names the section of the ChronoCulture paper (Saha, Khurana, Huang and Huang) it checks.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from histbench.eval.chronoculture import metrics as m

THREE = np.array([[1, 2, 3]], dtype=float)


def test_wasserstein_extremes_and_half_shift_a3():
    """A.3: all mass at opposite ends of a 3-point scale is distance 1; a half-step shift of
    every respondent by one option (of two gaps) is 0.5."""
    assert m.wasserstein(np.array([1.0, 0, 0]), np.array([0, 0, 1.0]), THREE[0]) == 1.0
    assert m.wasserstein(np.array([0.5, 0.5, 0]), np.array([0, 0.5, 0.5]), THREE[0]) == pytest.approx(0.5)
    assert m.wasserstein(np.array([0.2, 0.3, 0.5]), np.array([0.2, 0.3, 0.5]), THREE[0]) == 0.0


def test_wasserstein_three_and_five_options_in_one_batch_a3():
    """A.3 eq. 8 normalises by the scale length: a 5-option pair
    F_p = (.4,.5,.6,.7), F_q = (.1,.2,.3,.4) -> 4 x 0.3 / 4 = 0.3, next to a 3-option pair (0.5),
    both computed in one padded batch."""
    rows = [[0.4, 0.1, 0.1, 0.1, 0.3], [0.5, 0.5, 0.0]]
    other = [[0.1, 0.1, 0.1, 0.1, 0.6], [0.0, 0.5, 0.5]]
    p, q = m.pad_distributions(rows), m.pad_distributions(other)
    positions = m.option_positions(np.array([5, 3]), p.shape[1])
    assert positions[1].tolist() == [1, 2, 3, 3, 3]
    assert m.wasserstein(p, q, positions) == pytest.approx([0.3, 0.5])


def test_wasserstein_matches_scipy_with_option_values_a3():
    """A.3 with unequal option values a_j: W1 / (a_K - a_1) equals scipy's 1-D distance / span."""
    rng = np.random.default_rng(1)
    values = [0.0, 1.0, 4.0, 5.0]
    p, q = rng.dirichlet(np.ones(4), size=20), rng.dirichlet(np.ones(4), size=20)
    positions = m.option_positions(np.full(20, 4), 4, [values] * 20)
    expected = [wasserstein_distance(values, values, a, b) / 5.0 for a, b in zip(p, q, strict=True)]
    assert m.wasserstein(p, q, positions) == pytest.approx(expected)


def test_invalid_prediction_row_is_nan_everywhere():
    p = m.pad_distributions([None, [1.0, 0.0, 0.0]])
    q = m.pad_distributions([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    d = m.wasserstein(p, q, m.option_positions(np.array([3, 3]), 3))
    assert np.isnan(d[0]) and d[1] == 0.0
    assert m.period_outcome(d, np.array([0.0, 0.0]))[0] == m.MISSING


def test_shift_categories_boundaries_table1_and_f1():
    """Table 1: stable <= 0.03 < moderate < 0.10 <= strong < 0.20 <= very strong; Table 21 sets."""
    d = np.array([0.0, 0.03, 0.0301, 0.0999, 0.10, 0.1999, 0.20, 0.9])
    assert m.shift_category(d).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert m.shift_category(np.array([0.02, 0.021, 0.075, 0.15]), m.BOUNDARY_SETS["tighter"]).tolist() == [0, 1, 2, 3]
    assert m.shift_category(np.array([0.04, 0.124, 0.125, 0.25]), m.BOUNDARY_SETS["looser"]).tolist() == [0, 1, 2, 3]


def test_knowledge_score_is_min_over_all_years_b2():
    """B.2 eq. 9: K is the distance to the closest available year, intermediate years included."""
    golds = np.array([[[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]]])
    undated = np.array([[0.0, 0.9, 0.1]])
    d = m.year_distances(undated, golds, np.array([[True, True, True]]), np.array([[1.0, 2, 3]]))
    # F(undated) = (0, .9); year 1: (1,1) -> 1.1/2; year 2: (0,1) -> .1/2; year 3: (0,0) -> .9/2
    assert d[0].tolist() == pytest.approx([0.55, 0.05, 0.45])
    assert m.knowledge_score(d)[0] == pytest.approx(0.05)
    masked = m.year_distances(undated, golds, np.array([[True, False, True]]), np.array([[1.0, 2, 3]]))
    assert m.knowledge_score(masked)[0] == pytest.approx(0.45)


def test_knowledge_filter_keeps_floor_of_75_percent_per_group_b2():
    """B.2 Selection: ranking within survey x number-of-years groups; floor(0.75 n) kept per group
    (Table 6: 2,420 of 3,228 WVS pairs). Invalid undated predictions (NaN) are never kept."""
    k = np.array([0.4, 0.1, 0.3, 0.2, 0.05, 0.5, 0.01, np.nan, 0.2])
    groups = np.array(["wvs2", "wvs2", "wvs2", "wvs2", "wvs3", "wvs3", "issp2", "issp2", "issp2"])
    keep = m.knowledge_filter(k, groups, 0.75)
    # wvs2: 4 scored -> 3 smallest (0.1, 0.2, 0.3); wvs3: 2 -> 1 (0.05); issp2: 2 scored -> 1 (0.01)
    assert keep.tolist() == [False, True, True, True, True, False, True, False, False]
    assert m.knowledge_filter(k, groups, 1.0).tolist() == (~np.isnan(k)).tolist()
    assert m.knowledge_filter(k, groups, 0.5).sum() == 2 + 1 + 1


def test_knowledge_filter_ties_keep_dataset_order_b2():
    keep = m.knowledge_filter(np.array([0.1, 0.1, 0.1, 0.1]), np.zeros(4), 0.5)
    assert keep.tolist() == [True, True, False, False]
    # float noise below 1e-12 does not reorder ties
    keep = m.knowledge_filter(np.array([1e-15, 3e-16, 0.0, 0.2]), np.zeros(4), 0.5)
    assert keep.tolist() == [True, True, False, False]


def test_period_outcomes_at_each_tolerance_c2():
    """4.2 / C.2: a prediction is accurate when its distance is within tau (d <= tau)."""
    d_old = np.array([0.08, 0.02, 0.12, 0.30, 0.10])
    d_new = np.array([0.12, 0.04, 0.02, 0.30, 0.10])
    assert m.period_outcome(d_old, d_new, 0.10).tolist() == [m.OLDER_ONLY, m.BOTH, m.NEWER_ONLY, m.NEITHER, m.BOTH]
    assert m.period_outcome(d_old, d_new, 0.05).tolist() == [m.NEITHER, m.BOTH, m.NEWER_ONLY, m.NEITHER, m.NEITHER]
    assert m.period_outcome(d_old, d_new, 0.15).tolist() == [m.BOTH, m.BOTH, m.BOTH, m.NEITHER, m.BOTH]


G_OLD = np.array([1.0, 0, 0])
G_NEW = np.array([0, 0, 1.0])


def test_alignment_classes_c3():
    """4.2 'Alignment of predictions': separated, older-/newer-aligned, reversed."""
    pos = THREE
    p_old = np.array([[1.0, 0, 0], [1.0, 0, 0], [0, 0, 1.0], [0, 0, 1.0]])
    p_new = np.array([[0, 0, 1.0], [1.0, 0, 0], [0, 0, 1.0], [1.0, 0, 0]])
    codes = m.alignment(p_old, p_new, G_OLD[None], G_NEW[None], pos)
    assert codes.tolist() == [m.SEPARATED, m.OLDER_ALIGNED, m.NEWER_ALIGNED, m.REVERSED]


def test_identical_predictions_are_never_separated_c3():
    """A pair with P_old == P_new can only be older- or newer-aligned (or a tie)."""
    p = np.array([[0.6, 0.2, 0.2]])
    assert m.alignment(p, p, G_OLD[None], G_NEW[None], THREE)[0] == m.OLDER_ALIGNED


def test_alignment_tie_uses_1e12_tolerance_c3():
    """C.3: equal distances are identified with a tolerance of 1e-12. The middle option is
    W = 0.5 from both golds; moving 1e-13 of mass stays a tie, 1e-9 does not."""
    mid = np.array([[0, 1.0, 0]])
    assert m.alignment(mid, np.array([[0, 0, 1.0]]), G_OLD[None], G_NEW[None], THREE)[0] == m.TIE
    nudged = np.array([[1e-13, 1.0 - 1e-13, 0]])
    assert m.alignment(nudged, np.array([[0, 0, 1.0]]), G_OLD[None], G_NEW[None], THREE)[0] == m.TIE
    moved = np.array([[1e-9, 1.0 - 1e-9, 0]])
    assert m.alignment(moved, np.array([[0, 0, 1.0]]), G_OLD[None], G_NEW[None], THREE)[0] == m.SEPARATED


def test_magnitude_ratio_and_direction_cosine_43():
    """4.3 eqs. 3-4. G: (.5,.5,0) -> (.2,.5,.3): g = (-.3,-.3,0), d_h = 0.3.
    P: (.4,.4,.2) -> (.3,.4,.3): p = (-.1,-.1,0), d_m = 0.1, r = 1/3, cosine 1."""
    g_old, g_new = np.array([[0.5, 0.5, 0]]), np.array([[0.2, 0.5, 0.3]])
    p_old, p_new = np.array([[0.4, 0.4, 0.2]]), np.array([[0.3, 0.4, 0.3]])
    d_h = m.wasserstein(g_old, g_new, THREE)
    d_m = m.wasserstein(p_old, p_new, THREE)
    assert d_h[0] == pytest.approx(0.3) and d_m[0] == pytest.approx(0.1)
    assert m.magnitude_ratio(d_m, d_h)[0] == pytest.approx(1 / 3)
    assert m.direction_cosine(p_old, p_new, g_old, g_new)[0] == pytest.approx(1.0)
    # reversed direction: P moves toward the first option -> cosine -1
    assert m.direction_cosine(p_new, p_old, g_old, g_new)[0] == pytest.approx(-1.0)
    # orthogonal: p = (-.1, +.1, 0) against g = (-.3, -.3, 0)
    p_orth = np.array([[0.3, 0.6, 0.1]])  # F = (.3, .9): p = (-.1, +.1)
    assert m.direction_cosine(p_old, p_orth, g_old, g_new)[0] == pytest.approx(0.0, abs=1e-12)


def test_identical_predictions_have_zero_shift_and_no_direction_43():
    """4.3: identical predictions have d_m = 0, ratio 0 (D.2), and are excluded from the cosine."""
    p = np.array([[0.3, 0.3, 0.4]])
    d_m = m.wasserstein(p, p, THREE)
    assert d_m[0] == 0.0 and m.identical(p, p)[0]
    assert m.magnitude_ratio(d_m, np.array([0.2]))[0] == 0.0
    assert np.isnan(m.direction_cosine(p, p, G_OLD[None], G_NEW[None])[0])
    assert np.isnan(m.magnitude_ratio(np.array([0.1]), np.array([0.0]))[0])


def test_stability_behaviour_d3_and_f1():
    """D.3: preserves d_m <= 0.03, small 0.03 < d_m < 0.10, large d_m >= 0.10; F.1 moves only the
    stable boundary."""
    d_m = np.array([0.0, 0.03, 0.031, 0.0999, 0.10, 0.5])
    assert m.stability_behaviour(d_m).tolist() == [0, 0, 1, 1, 2, 2]
    assert m.stability_behaviour(np.array([0.02, 0.03, 0.04, 0.10]), 0.02).tolist() == [0, 1, 1, 2]
    assert m.stability_behaviour(np.array([0.04, 0.05]), 0.04).tolist() == [0, 1]


def test_default_period_and_ties_e1():
    """4.4 Default period: the closest year among all available ones (intermediate years count)."""
    d = np.array([
        [0.10, 0.05, 0.20, np.nan],    # intermediate
        [0.30, 0.10, np.nan, np.nan],  # newest of two
        [0.05, 0.10, 0.20, 0.30],      # oldest
        [0.10, 0.10 + 1e-13, np.nan, np.nan],  # tie within 1e-12 -> earliest, flagged
        [np.nan, np.nan, np.nan, np.nan],      # invalid undated prediction
    ])
    codes, tied = m.default_period(d)
    assert codes.tolist() == [m.INTERMEDIATE, m.NEWEST, m.OLDEST, m.OLDEST, m.MISSING]
    assert tied.tolist() == [False, False, False, True, False]


def test_equal_choice_baseline_e2():
    """E.2: two years -> 50/0/50; four years -> 25% oldest, 50% intermediate, 25% newest."""
    assert m.equal_choice(np.array([2, 4])).tolist() == [[0.5, 0.0, 0.5], [0.25, 0.5, 0.25]]


def test_benefit_of_naming_a_year_44():
    """4.4 eq. 5: G = (0,0,1); undated (1,0,0) is W = 1 away; dated (0,.5,.5) is 0.25 away -> b = 0.75."""
    gold = np.array([[0, 0, 1.0]])
    undated = np.array([[1.0, 0, 0]])
    dated = np.array([[0, 0.5, 0.5]])
    b = m.benefit(dated, undated, gold, THREE)
    assert b[0] == pytest.approx(0.75)
    assert m.benefit(undated, dated, gold, THREE)[0] == pytest.approx(-0.75)
    assert m.benefit(dated, dated, gold, THREE)[0] == 0.0
    assert m.benefit_outcome(np.array([0.75, -0.75, 0.0, 5e-13, np.nan])).tolist() == [
        m.HELPED, m.HURT, m.UNCHANGED, m.UNCHANGED, m.MISSING]


def test_kendalls_w_c4():
    """C.4: W = 1 for identical rankings, 0 for two opposite ones; with ties (hand-worked):
    ranks (1.5,1.5,3) and (1,2,3): S = 6.5, T = 6, W = 12*6.5 / (4*24 - 2*6) = 78/84."""
    assert m.kendalls_w(np.array([[0.1, 0.5, 0.9], [0.2, 0.4, 0.8], [0.0, 0.3, 0.7]])) == pytest.approx(1.0)
    assert m.kendalls_w(np.array([[1, 2, 3], [3, 2, 1]])) == pytest.approx(0.0)
    assert m.kendalls_w(np.array([[1, 1, 2], [1, 2, 3]])) == pytest.approx(78 / 84)
    assert np.isnan(m.kendalls_w(np.array([[1, 2, 3]])))


def test_modal_both_correct_a5():
    """A.5: both correct when the chosen option is the mode in both periods; -1 (invalid) is wrong."""
    both, any_ = m.modal_both_correct(np.array([0, 0, 1, -1]), np.array([2, 1, 1, 2]),
                                      np.array([0, 0, 0, 0]), np.array([2, 2, 2, 2]))
    assert both.tolist() == [True, False, False, False]
    assert any_.tolist() == [True, True, False, True]
