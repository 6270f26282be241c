"""Paper 3.2, a consistent ordered scale: a question whose scale differs between the two periods
of a pair gets no pair, counted and printed by question (issue: 3 points in waves 3-6, 5 in
wave 7 made 45 wrong pairs)."""

from __future__ import annotations

import numpy as np
import pytest

from histbench.builders.chronoculture.scales import PeriodScale, scale_difference

COUNTRIES = (124, 276, 392)


def _c001(n, shares, codes=(1, 3, 2)):
    raw = np.floor(np.asarray(shares, float) * n).astype(int)
    raw[0] += n - raw.sum()
    return {code: int(k) for code, k in zip(codes, raw, strict=True) if k}


def _groups(happy_counts, wave7_codes=(1, 3, 2, 4, 5), wave7_shares=(0.3, 0.2, 0.2, 0.2, 0.1), wave6=None):
    groups = []
    for country in COUNTRIES:
        groups.append({"country": country, "wave": 3, "year": 1996, "A008": happy_counts(600),
                       "C001": _c001(600, (0.5, 0.2, 0.3))})
        if wave6 is not None:
            groups.append({"country": country, "wave": 6, "year": 2012, "A008": happy_counts(1000),
                           "C001": _c001(1000, wave6[1], wave6[0])})
        # 1,000 respondents: the three registered options alone still reach 500 valid answers
        groups.append({"country": country, "wave": 7, "year": 2018, "A008": happy_counts(1000, (0.3, 0.3, 0.2, 0.2)),
                       "C001": _c001(1000, wave7_shares, wave7_codes)})
    return groups


def test_three_points_in_older_waves_five_in_wave_7_gives_no_pair(wvs_file, registry_file, build, happy_counts,
                                                                 capsys):
    """3.2: C001 is registered with 3 options; wave 7 answers on 5 codes (4 and 5 are neither options
    nor invalid). The old build read 4 and 5 as invalid answers and made one pair per country."""
    out = build(wvs=wvs_file(_groups(happy_counts)), registry=registry_file())
    pair_ids = sorted(p["pair_id"] for p in out["pairs"])
    assert pair_ids == ["wvs_A008__CAN", "wvs_A008__DEU", "wvs_A008__JPN"]  # A008 keeps its scale
    changes = out["summary"]["scale_changes"]
    assert list(changes) == ["wvs_C001"]
    assert changes["wvs_C001"]["pairs_not_formed"] == 3
    assert changes["wvs_C001"]["countries"] == ["CAN", "DEU", "JPN"]
    reason = changes["wvs_C001"]["reasons"][0]["reason"]
    assert "code 4 (not an option)" in reason and "wave 7" in reason and "none in wave 3" in reason
    assert out["summary"]["exclusions"]["question_country_without_pair"]["WVS:scale_changed"] == 3
    err = capsys.readouterr().err
    assert "rule 3.2 (consistent scale): 3 pair(s) not formed" in err and "wvs_C001: 3 pair(s)" in err
    # the unregistered codes are also above 1% of the variable's answers: printed
    assert "neither options nor invalid above 1%" in err and "wvs_C001" in err


def test_options_registered_but_unused_in_older_waves(wvs_file, registry_file, registry_data, build, happy_counts):
    """The same change seen from a registry that knows the 5-point scale: waves 3-6 never use options 4
    and 5, which hold 30% of wave 7's answers."""
    data = registry_data
    data["wvs"]["questions"][1]["options"] = [{"code": c, "label": f"point {c}"} for c in (1, 2, 3, 4, 5)]
    labels = {"C001": {1: "a", 2: "b", 3: "c", 4: "d", 5: "e", -1: "Don't know"},
              "A008": {1: "Very happy", 2: "Quite happy", 3: "Not very happy", 4: "Not at all happy"}}
    groups = _groups(happy_counts, wave7_codes=(1, 2, 3, 4, 5))
    for g in groups:
        if g["wave"] == 3:
            g["C001"] = _c001(600, (0.5, 0.2, 0.3), (1, 2, 3))
    out = build(wvs=wvs_file(groups, value_labels=labels), registry=registry_file(data))
    assert out["summary"]["scale_changes"]["wvs_C001"]["pairs_not_formed"] == 3
    assert "option 4 ('point 4')" in out["summary"]["scale_changes"]["wvs_C001"]["reasons"][0]["reason"]


def test_match_policy_takes_the_oldest_period_on_the_newer_scale(wvs_file, registry_file, build, happy_counts):
    """--scale-change match: wave 6 already uses the 5-point coding, so it becomes the older period."""
    groups = _groups(happy_counts, wave6=((1, 3, 2, 4, 5), (0.2, 0.2, 0.2, 0.2, 0.2)))
    path = wvs_file(groups)
    dropped = build(wvs=path, registry=registry_file())
    assert dropped["summary"]["scale_changes"]["wvs_C001"]["pairs_not_formed"] == 3
    matched = build(wvs=path, registry=registry_file(), scale_change="match")
    c001 = [p for p in matched["pairs"] if p["question_id"] == "wvs_C001"]
    assert [(p["wave_old"], p["wave_new"]) for p in c001] == [(6, 7)] * 3
    assert matched["summary"]["scale_changes"] == {}
    assert matched["manifest"]["options"]["scale_change"] == "match"


def test_a_rare_answer_missing_in_one_period_is_not_a_scale_change(wvs_file, registry_file, build, happy_counts):
    """An option below 1% of a period's answers that nobody gives in the other period keeps the pair."""
    groups = []
    for country in COUNTRIES:
        groups.append({"country": country, "wave": 3, "year": 1996, "A008": {1: 300, 2: 200, 3: 96, 4: 4}})
        groups.append({"country": country, "wave": 7, "year": 2018, "A008": {1: 320, 2: 190, 3: 90}})
    out = build(wvs=wvs_file(groups), registry=registry_file())
    assert len(out["pairs"]) == 3 and out["summary"]["scale_changes"] == {}


def test_issp_files_whose_value_labels_offer_different_answers(issp_file, registry_file, build, capsys):
    """3.2 from value labels: the 1996 file labels a fifth answer ('Neither') that the 1990 file lacks,
    although nobody chose it; the only pair is dropped, so the build stops and says why."""
    from histbench.core.errors import SourceError

    rog = {1: "Definitely should be", 2: "Probably should be", 3: "Probably should not be",
           4: "Definitely should not be", 8: "Can't choose", 9: "NA", 0: "NAP"}
    five = {**rog, 5: "Neither should nor should not be"}
    old = issp_file("ZA1950.sav", [{"v3": 1, "answers": {1: 200, 2: 200, 3: 100, 4: 100}}])
    new = issp_file("ZA2900.dta", [{"v3": 1, "answers": {1: 250, 2: 150, 3: 100, 4: 100}}], question_var="v36",
                    weight_var="v325", labels=five)
    with pytest.raises(SourceError, match=r"no temporal pair can be formed: .*ISSP:scale_changed.: 1"):
        build(issp=[old, new], registry=registry_file())
    err = capsys.readouterr().err
    assert "issp_rog_jobs: 1 pair(s); labelled answers beyond the options differ" in err
    assert "'neither should nor should not be'" in err


def test_scale_difference_rule():
    a = PeriodScale("wave 3", np.array([300, 200, 0]), {}, None, ("x", "y", "z"))
    b = PeriodScale("wave 7", np.array([300, 150, 50]), {}, None, ("x", "y", "z"))
    assert scale_difference(a, b) == "option 3 ('z') holds 10.0% of the answers in wave 7 and none in wave 3"
    c = PeriodScale("wave 7", np.array([300, 195, 5]), {}, None, ("x", "y", "z"))  # 1% exactly: a change
    assert scale_difference(a, c).startswith("option 3")
    d = PeriodScale("wave 7", np.array([300, 196, 4]), {}, None, ("x", "y", "z"))  # 0.8%: rare, not a change
    assert scale_difference(a, d) is None
    e = PeriodScale("wave 7", np.array([300, 200, 0]), {7.0: 40}, None, ("x", "y", "z"))
    assert scale_difference(a, e) == "code 7 (not an option) holds 7.4% of the answers in wave 7 and none in wave 3"
    f = PeriodScale("ZA1.sav 1990", np.array([1, 1, 1]), {}, ("neither",), ())
    g = PeriodScale("ZA2.sav 1996", np.array([1, 1, 1]), {}, (), ())
    assert "labelled answers beyond the options differ" in scale_difference(f, g)
    assert scale_difference(a, None) is None


def test_scale_policy_is_checked():
    from histbench.cli import make_parser
    from histbench.core.errors import UsageError

    with pytest.raises(UsageError, match="--scale-change: invalid choice: 'sometimes'"):
        make_parser().parse_args(["build", "chronoculture", "--wvs", "x.sav", "--scale-change", "sometimes"])
