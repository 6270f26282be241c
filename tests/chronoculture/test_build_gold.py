"""Gold distributions per question x country x period (paper 3.3, appendix A.2)."""

from __future__ import annotations

import numpy as np
import pytest

from histbench.builders.chronoculture.gold import MIN_RESPONDENTS, GroupIndex, tabulate, weight_status


def _index(group, weight):
    weight = np.asarray(weight, float)
    ok, _ = weight_status(weight)
    n_groups = int(max(group)) + 1
    return GroupIndex(np.asarray(group, np.int64), [("c", 2000 + g, None) for g in range(n_groups)], weight, ok)


def test_a2_worked_example_weights_1_1_2_give_50_50():
    """A.2: Agree (w=1), Agree (w=1), Disagree (w=2) -> Agree 2/4 = 50%, Disagree 2/4 = 50%."""
    index = _index([0, 0, 0], [1, 1, 2])
    table = tabulate(np.array([1.0, 1.0, 2.0]), index, [(1.0,), (2.0,)], invalid_codes=(), min_respondents=1)
    assert table.status == [None]
    assert table.gold(0).tolist() == [0.5, 0.5]
    assert table.n_valid.tolist() == [3]


def test_invalid_answers_are_removed_before_the_proportions():
    """3.3: don't know / no answer are dropped; the proportions are over valid answers only."""
    index = _index([0] * 6, [1] * 6)
    answers = np.array([1, 1, 2, -1, -2, 8], float)
    table = tabulate(answers, index, [(1.0,), (2.0,)], invalid_codes=(8.0,), negative_invalid=True, min_respondents=1)
    assert table.gold(0).tolist() == pytest.approx([2 / 3, 1 / 3])
    assert table.n_valid.tolist() == [3]
    assert dict(table.invalid_codes) == {-1: 1, -2: 1, 8: 1}


def test_several_codes_can_form_one_option_and_unregistered_codes_are_counted():
    index = _index([0] * 5, [1] * 5)
    answers = np.array([1, 2, 3, 3, 7], float)
    table = tabulate(answers, index, [(1.0, 2.0), (3.0,)], invalid_codes=(), min_respondents=1)
    assert table.gold(0).tolist() == pytest.approx([0.5, 0.5])
    assert dict(table.unregistered_codes) == {7: 1}


@pytest.mark.parametrize(("n_valid", "kept"), [(499, False), (500, True), (501, True)])
def test_500_valid_respondents_cutoff(n_valid, kept):
    """3.2: at least 500 valid respondents per question, country and wave (invalid ones do not count)."""
    n = n_valid + 40
    index = _index([0] * n, [1] * n)
    answers = np.concatenate([np.ones(n_valid), np.full(40, -1.0)])
    table = tabulate(answers, index, [(1.0,), (2.0,)], invalid_codes=(), negative_invalid=True)
    assert table.status == [None if kept else "too_few_respondents"]


def test_unusable_weights_do_not_count_and_cells_fail_by_rule():
    """Missing, zero or negative weights leave the respondent out; each failing cell gets one rule."""
    group = [0] * 4 + [1] * 3 + [2] * 3 + [3] * 2
    weight = [1, np.nan, 0, -2] + [1, 1, 1] + [np.nan, np.nan, 1] + [1, 1]
    answers = [1, 1, 2, 2] + [-4, -4, np.nan] + [1, 2, -1] + [-1, -2]
    index = _index(group, weight)
    table = tabulate(np.array(answers, float), index, [(1.0,), (2.0,)], invalid_codes=(-1.0, -2.0, -4.0),
                     not_asked_codes=(-4.0,), min_respondents=1)
    assert table.status == [None, "not_asked", "missing_weight", "all_answers_invalid"]
    assert table.n_valid.tolist() == [1, 0, 0, 0]
    assert table.gold(0).tolist() == [1.0, 0.0]
    _, counts = weight_status(np.array(weight, float))
    assert counts == {"missing": 3, "zero": 1, "negative": 1}


def test_respondents_outside_every_group_are_ignored():
    index = _index([-1, 0, 0, -1], [1, 1, 1, 1])
    table = tabulate(np.array([2, 1, 1, 2], float), index, [(1.0,), (2.0,)], invalid_codes=(), min_respondents=1)
    assert table.gold(0).tolist() == [1.0, 0.0]


def test_groups_are_tabulated_independently_with_weights():
    rng = np.random.default_rng(3)
    n = 3000
    group = rng.integers(0, 3, n)
    weight = rng.uniform(0.2, 2.0, n)
    answers = rng.integers(1, 5, n).astype(float)
    table = tabulate(answers, _index(group, weight), [(1.0,), (2.0,), (3.0,), (4.0,)], invalid_codes=(),
                     min_respondents=1)
    for g in range(3):
        mask = group == g
        expected = [weight[mask & (answers == c)].sum() / weight[mask].sum() for c in (1, 2, 3, 4)]
        assert table.gold(g) == pytest.approx(expected, abs=1e-12)
        assert table.n_valid[g] == mask.sum()


@pytest.mark.parametrize("negative_invalid", [False, True])
@pytest.mark.parametrize("first_option", [(1.0, 2.0), (1.0,)], ids=["two codes, one option", "one code each"])
def test_integer_lookup_tables_give_the_sorted_code_tabulation(negative_invalid, first_option):
    """The lookup-table path (integer codes) and the sorted-code path give the same tabulation, bit for
    bit: empty answers, negative and invalid codes, a not-asked code, codes that are neither option nor
    invalid, two codes forming one option (its own weighted count) or one code per option (the weighted
    count by code), unusable weights, respondents in no group."""
    from histbench.builders.chronoculture.gold import _code_flags, _tabulate_sorted

    rng = np.random.default_rng(11)
    n = 20_000
    group = rng.integers(-1, 6, n)
    weight = rng.uniform(0.2, 2.0, n)
    weight[rng.random(n) < 0.02] = np.nan
    weight[rng.random(n) < 0.01] = 0.0
    weight[rng.random(n) < 0.01] = -1.0
    answers = rng.choice([-5, -4, -2, -1, 1, 2, 3, 4, 5, 7, 8, 9, 97, np.nan], n,
                         p=[.02, .05, .02, .03, .2, .2, .15, .15, .1, .01, .03, .02, .01, .01])
    answers[group == 4] = -4.0  # one group never asked
    options, invalid, not_asked = [first_option, (3.0,), (4.0,), (5.0,)], (8.0, 9.0, -1.0), (-4.0,)
    index = _index(group, weight)
    fast = tabulate(answers, index, options, invalid, not_asked, negative_invalid=negative_invalid,
                    min_respondents=100)
    slow = _tabulate_sorted(answers.astype(float), index, len(options), _code_flags(options, invalid, not_asked),
                            negative_invalid, 100)
    assert fast.totals.tobytes() == slow.totals.tobytes()
    for name in ("n_valid", "counts"):
        assert getattr(fast, name).tolist() == getattr(slow, name).tolist()
    assert fast.status == slow.status and "not_asked" in fast.status
    assert fast.invalid_codes == slow.invalid_codes and fast.unregistered_codes == slow.unregistered_codes
    assert fast.unregistered_codes[97] > 0 and fast.missing_answers == slow.missing_answers > 0
    assert {c: v.tolist() for c, v in fast.unregistered_by_group.items()} == {
        c: v.tolist() for c, v in slow.unregistered_by_group.items()}
    for g, status in enumerate(fast.status):  # the shares of all groups at once, bit for bit each row's own
        if status is None:
            assert fast.gold(g).tobytes() == (slow.totals[g] / slow.totals[g].sum()).tobytes()
    ten = tabulate(rng.integers(1, 11, n).astype(float), index, [(float(c),) for c in range(1, 11)], ())
    for g in range(index.n_groups):
        row = ten.totals[g]
        assert ten.gold(g).tobytes() == (row / row.sum()).tobytes()
    decimals = np.where(answers == 5, 4.5, answers)  # a decimal code: the sorted path
    assert tabulate(decimals, index, options, invalid, not_asked).unregistered_codes[4.5] > 0
    for odd in (np.full(n, np.nan), np.where(answers == 5, np.inf, answers), np.where(answers == 5, 2.0**70, answers)):
        # nothing but empty answers, an infinity, a code beyond the integers: each as the sorted path has it
        lookup = tabulate(odd, index, options, invalid, not_asked, negative_invalid=negative_invalid)
        sorted_ = _tabulate_sorted(odd, index, len(options), _code_flags(options, invalid, not_asked),
                                   negative_invalid, MIN_RESPONDENTS)
        assert lookup.totals.tobytes() == sorted_.totals.tobytes() and lookup.status == sorted_.status
        assert lookup.missing_answers == sorted_.missing_answers
        assert lookup.unregistered_codes == sorted_.unregistered_codes


# ---------------------------------------------------------------- West and East Germany pooled (GESIS factors)
def _two_german_samples(tmp_path, name: str, west: dict, east: dict):
    """An ISSP-style .sav: sample v3 = 2 (West Germany) or 3 (East), weight v342 (2 and 1.5), item v49."""
    import pandas as pd
    import pyreadstat

    from .conftest import ROG, counts_to_codes

    frames = []
    for code, counts, w in ((2, west, 2.0), (3, east, 1.5)):
        answers = counts_to_codes(counts)
        frames.append(pd.DataFrame({"v3": float(code), "v342": w, "v49": answers}))
    path = tmp_path / name
    pyreadstat.write_sav(pd.concat(frames, ignore_index=True), path,
                         variable_value_labels={"v3": {2: "D-W", 3: "D-E"}, "v49": ROG})
    return path


def test_reunification_factors_reach_the_gold_distribution(tmp_path, build, registry_data, registry_file, capsys):
    """GESIS publishes factors for pooling the West and East German samples (ISSP 1995: West x 1.19455,
    East x 0.59238, quoted by martinlukk/boundary-consolidation 01-clean-issp95.do from GESIS's
    Weighting_ISSP1995_english.pdf). The pooled DEU distribution is the weighted mix with the file's
    weight times the factor; the study without factors pools the samples with their own weights."""
    west = {1: 600, 2: 300, 3: 80, 4: 20}   # 1,000 West respondents, weight 2
    east = {1: 100, 2: 200, 3: 300, 4: 400}  # 1,000 East respondents, weight 1.5 (oversampled)
    factors = {2: 1.19455, 3: 0.59238}
    registry_data["issp"]["studies"][0]["country"]["map"] = {2: "DEU", 3: "DEU"}
    registry_data["issp"]["studies"][1]["country"]["map"] = {2: "DEU", 3: "DEU"}
    registry_data["issp"]["studies"][0]["weight"] = "v342"
    registry_data["issp"]["studies"][1]["weight"] = "v342"
    registry_data["issp"]["studies"][1]["reunification"] = {
        "variable": "v3", "factors": factors, "document": "GESIS Weighting_ISSP1995_english.pdf"}
    registry_data["issp"]["questions"][0]["sources"] = {"ZA1950": "v49", "ZA2900": "v49"}
    older = _two_german_samples(tmp_path, "ZA1950.sav", west, east)
    newer = _two_german_samples(tmp_path, "ZA2900.sav", west, east)
    out = build(issp=[older, newer], registry=registry_file(registry_data))
    pair = out["pairs"][0]
    w_counts, e_counts = np.array(list(west.values()), float), np.array(list(east.values()), float)
    plain = 2.0 * w_counts + 1.5 * e_counts
    pooled = 2.0 * factors[2] * w_counts + 1.5 * factors[3] * e_counts
    assert pair["G_old"] == pytest.approx((plain / plain.sum()).tolist(), abs=1e-12)
    assert pair["G_new"] == pytest.approx((pooled / pooled.sum()).tolist(), abs=1e-12)
    # East Germany's share of the pooled weight falls from 43% to about 27% with the factors
    east_share = 1.5 * factors[3] * 1000 / (2.0 * factors[2] * 1000 + 1.5 * factors[3] * 1000)
    assert east_share == pytest.approx(0.2711, abs=1e-4)
    files = {f["file"]: f for f in out["summary"]["exclusions"]["respondents_per_file"]}
    assert files["ZA1950.sav"]["reunification_factors"] is None
    assert files["ZA2900.sav"]["reunification_factors"]["respondents"] == {"2": 1000, "3": 1000}
    assert "reunification factors by v3" in files["ZA2900.sav"]["variables"]["weight"]
    # issue 40: the file pooled without documented factors is flagged at build time, the other is not
    assert files["ZA1950.sav"]["german_samples_pooled_without_factors"] == ["2 (D-W)", "3 (D-E)"]
    assert files["ZA2900.sav"]["german_samples_pooled_without_factors"] == []
    err = capsys.readouterr().err
    assert ("warning: ZA1950.sav: the German samples 2 (D-W), 3 (D-E) are pooled into one Germany without reunification "
            "factors (the registry documents none for study ZA1950)") in err
    assert "warning: ZA2900.sav: the German samples" not in err


def test_reunification_factors_need_their_document(registry_data, registry_file):
    from histbench.builders.chronoculture.registry import load_registry
    from histbench.core.errors import SourceError

    registry_data["issp"]["studies"][1]["reunification"] = {"variable": "v3", "factors": {2: 1.2, 3: 0.6}}
    with pytest.raises(SourceError, match="ZA2900: reunification needs a variable, the factors"):
        load_registry(registry_file(registry_data))
