"""The shared shortcut audit of multiple-choice items (histbench.builders.machinery.shortcuts):
each trivial rule's accuracy against hand-counted items, the chance level, the margin and
significance that decide "beats chance", ties, several right answers, ranking items, and
the refusal a builder raises (or records, with --allow-shortcuts or for a released dataset)."""

import itertools

import numpy as np
import pytest
from scipy.stats import binomtest, spearmanr

from histbench.builders.machinery import shortcuts as S
from histbench.core.errors import BuildError


def close(value: float):
    return pytest.approx(value, abs=1e-4)         # audit figures are rounded to 4 decimals


def _rule(result: dict, name: str) -> dict:
    return next(r for r in result["rules"] if r["rule"] == name)


@pytest.mark.parametrize("hits,n,p", [(0, 10, 0.25), (3, 10, 0.25), (9, 20, 1 / 6), (40, 50, 0.25), (50, 50, 0.5), (7, 200, 0.02)])
def test_the_binomial_tail_is_scipys_one_sided_binomial_test(hits, n, p):
    assert S.binomial_upper_tail(hits, n, p) == pytest.approx(binomtest(hits, n, p, alternative="greater").pvalue, rel=1e-9)


def test_each_rule_scores_what_it_says_on_hand_counted_items():
    # gold: the longest option in the first two items, the shortest in the third
    items = [
        S.Choice(["a", "bb", "cccccc"], 2, context="cccccc appare qui"),
        S.Choice(["dddddd", "e", "ff"], 0, context="nulla in comune"),
        S.Choice(["g", "hhhh", "iiiii"], 0, context="g"),
    ]
    result = S.audit_choices(items)
    assert result["items"] == 3 and result["chance"] == close(1 / 3)
    assert _rule(result, "longest")["accuracy"] == close(2 / 3)
    assert _rule(result, "shortest")["accuracy"] == close(1 / 3)
    assert _rule(result, "first_position")["accuracy"] == close(2 / 3)
    assert _rule(result, "last_position")["accuracy"] == close(1 / 3)
    # context overlap: item 1 picks "cccccc" (right), item 2 ties all three at 0 (1/3), item 3 picks "g" (right)
    assert _rule(result, "most_context_overlap")["accuracy"] == close((1 + 1 / 3 + 1) / 3)
    assert _rule(result, "most_common_gold_position")["position"] == 0
    assert result["gold_positions"] == {"0": 2, "1": 0, "2": 1}


def test_ties_earn_the_expected_credit_of_a_random_pick():
    tied = S.audit_choices([S.Choice(["aaa", "bbb", "c", "d"], 0)])
    assert _rule(tied, "longest")["accuracy"] == close(0.5)        # two longest, gold among them
    missed = S.audit_choices([S.Choice(["aaa", "bbb", "c", "d"], 2)])
    assert _rule(missed, "longest")["accuracy"] == 0.0


def test_ties_are_those_numpy_isclose_finds_within_the_tolerance():
    """The plain-Python tie rule of _credit equals numpy.isclose(rtol=0, atol=TIE_TOLERANCE) on
    scores such as the shares of word overlap (near-equal floats), lengths and infinities."""
    rng = np.random.default_rng(3)
    cases = [[1 / 3, 0.1 * 3 + 1 / 30 + 1e-13, 0.2, 1 / 3 - 2e-12], [3, 5, 5, 2], [0.0, -0.0, 1e-13],
             [float("inf"), float("inf"), 1.0], [float("-inf"), 2.0, float("-inf")]]
    cases += [list(rng.choice([0.25, 0.5, 0.5 + 5e-13, 0.5 + 5e-12, 0.75], size=int(rng.integers(2, 7))))
              for _ in range(300)]
    for scores in cases:
        for pick_max in (True, False):
            values = np.asarray(scores, dtype=float)
            best = values.max() if pick_max else values.min()
            expected = np.flatnonzero(np.isclose(values, best, rtol=0.0, atol=S.TIE_TOLERANCE))
            for gold in range(len(scores)):
                assert S._credit(scores, {gold}, pick_max) == (gold in expected) / len(expected), (scores, pick_max)


def test_several_right_answers_raise_chance_and_count_any_of_them():
    items = [S.Choice(["uno", "due", "tremendo", "quattro"], 0, also_correct=[2])] * 4
    result = S.audit_choices(items)
    assert result["chance"] == close(0.5)
    assert _rule(result, "longest")["accuracy"] == 1.0 and _rule(result, "first_position")["accuracy"] == 1.0


def test_odd_one_out_items_are_scored_by_the_least_overlap_with_the_others():
    items = [S.Choice(["il mare e il vento", "il vento e il mare", "mare vento sole", "pietra ferro bronzo"], 3, odd_one_out=True)]
    assert _rule(S.audit_choices(items), "least_overlap_with_other_options")["accuracy"] == 1.0


def test_a_rule_beats_chance_only_by_more_than_the_margin_and_beyond_luck():
    rng = np.random.default_rng(0)
    # 6 options, gold always the longest: 1.0 against 1/6, p ~ 1e-15
    always = [S.Choice([f"{'x' * int(n)}" for n in rng.integers(1, 30, 6)], 0) for _ in range(20)]
    for item in always:
        item.options = sorted(item.options, key=len, reverse=True)
        item.options[0] += "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    assert _rule(S.audit_choices(always), "longest")["beats_chance"]
    # two such items: the excess is large but two hits are not evidence (p = 1/36 > 0.01)
    assert not _rule(S.audit_choices(always[:2]), "longest")["beats_chance"]
    # a real but small bias (30% against 25%) on many items: significant, yet within the 0.10 margin
    small = [S.Choice(["aaaa", "b", "c", "d"], 0 if k % 10 < 3 else 1) for k in range(2000)]
    longest = _rule(S.audit_choices(small), "longest")
    assert longest["accuracy"] == close(0.3) and longest["p_value"] < 1e-3 and not longest["beats_chance"]


def test_the_most_common_gold_position_is_corrected_for_choosing_among_positions():
    items = [S.Choice(["a", "b", "c", "d"], 1)] * 30
    rule = _rule(S.audit_choices(items), "most_common_gold_position")
    assert rule["accuracy"] == 1.0 and rule["position"] == 1 and rule["beats_chance"]
    assert rule["p_value"] == pytest.approx(min(1.0, 4 * binomtest(30, 30, 0.25, alternative="greater").pvalue), rel=1e-6)


def test_rankings_are_scored_by_mean_spearman_and_length_correlation():
    # the newest snippet (gold rank 0) is always the shortest: "shortest first" is the gold order
    items = [S.Ranking(["a" * 10, "a" * 20, "a" * 30, "a" * 40], [0, 1, 2, 3])] * 10
    result = S.audit_rankings(items)
    assert _rule(result, "shortest_first")["mean_spearman"] == close(1.0)
    assert _rule(result, "longest_first")["mean_spearman"] == close(-1.0)
    assert _rule(result, "shortest_first")["beats_chance"] and _rule(result, "longest_first")["beats_chance"]
    assert result["mean_abs_spearman_length_gold"] == close(1.0)
    assert result["first_in_gold_order_positions"] == {"0": 10, "1": 0, "2": 0, "3": 0}


def test_the_independence_level_of_mean_abs_spearman_is_one_half_for_four_items():
    exact = np.mean([abs(spearmanr(range(4), p)[0]) for p in itertools.permutations(range(4))])
    assert S._expected_abs_spearman(4) == pytest.approx(exact) == pytest.approx(0.5)


def test_enforcement_refuses_records_or_reports():
    items = [S.Choice(["lunghissima risposta", "no", "sì", "boh"], 0)] * 25
    with pytest.raises(BuildError) as refused:
        S.enforce(S.audit_choices(items), "wsd", allow=False)
    assert "--allow-shortcuts" in str(refused.value)
    assert any("longest option: accuracy 1.000 against chance 0.250" in line for line in refused.value.details)
    allowed = S.enforce(S.audit_choices(items), "wsd", allow=True)
    assert allowed["allowed_by_user"] and "longest" in allowed["failing_rules"]
    assert "allowed by --allow-shortcuts" in S.markdown(allowed, "wsd")
    reported = S.record(S.audit_choices(items), allow=False, enforced=False, why_not="a released dataset")
    S.refuse({"options": reported}, allow=False, benchmark="chronologic")         # reported only: no error
    assert "Reported, not enforced: a released dataset" in S.markdown(reported, "options")


def test_an_exempt_rule_is_reported_not_failing():
    items = [S.Choice(["il cor gentil", "la selva oscura"], 0, context="al cor gentil rempaira sempre amore")] * 25
    result = S.record(S.audit_choices(items, exempt={"most_context_overlap": "verbal echo is the task"}), allow=False)
    rule = _rule(result, "most_context_overlap")
    assert rule["beats_chance"] and rule["exempt"] and "most_context_overlap" not in result["failing_rules"]
    assert "reported (verbal echo is the task)" in S.markdown(result, "intertext")
