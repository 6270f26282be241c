"""Whole builds from survey files written with pyreadstat: gold cells, temporal pairs, configs (paper 3.3-3.7)."""

from __future__ import annotations

import numpy as np
import pytest

from histbench.builders.chronoculture.distance import normalised_wasserstein, shift_category

SHARES_OLD = (0.5, 0.3, 0.15, 0.05)
SHARES_MID = (0.4, 0.35, 0.15, 0.10)
SHARES_NEW = (0.2, 0.3, 0.3, 0.2)


@pytest.fixture
def wvs_groups(happy_counts):
    return [
        {"country": 124, "wave": 3, "year": 1996, "A008": happy_counts(600, SHARES_OLD, {-1: 20, -2: 5})},
        {"country": 124, "wave": 5, "year": 2006, "A008": happy_counts(550, SHARES_MID, {-1: 10})},
        {"country": 124, "wave": 7, "year": 2018, "A008": happy_counts(700, SHARES_NEW, {-5: 3})},
        {"country": 276, "wave": 2, "year": 1990, "A008": happy_counts(800, SHARES_OLD)},  # wave 2: dropped
        {"country": 276, "wave": 4, "year": 1999, "A008": happy_counts(499, SHARES_OLD, {-1: 60})},  # 499 valid
        {"country": 276, "wave": 5, "year": 2006, "A008": happy_counts(500, SHARES_MID, {-1: 60})},  # 500 valid
        {"country": 276, "wave": 7, "year": 2018, "A008": happy_counts(520, SHARES_MID)},
        {"country": 392, "wave": 3, "year": 1995, "A008": happy_counts(600, SHARES_OLD)},
        {"country": 392, "wave": 6, "year": 2010, "A008": happy_counts(600, SHARES_NEW)},  # no wave 7
        {"country": 484, "wave": 7, "year": 2018, "A008": happy_counts(600, SHARES_NEW)},  # one period only
        {"country": 999, "wave": 7, "year": 2018, "A008": happy_counts(50, SHARES_NEW)},  # not in the table
    ]


def test_wvs_pairs_newer_is_wave_7_older_is_oldest_available(wvs_file, registry_file, build, wvs_groups):
    """3.4: newer = Wave 7, older = oldest available wave with a gold distribution (>= 500 valid)."""
    out = build(wvs=wvs_file(wvs_groups), registry=registry_file())
    pairs = {p["pair_id"]: p for p in out["pairs"]}
    assert sorted(pairs) == ["wvs_A008__CAN", "wvs_A008__DEU"]
    can = pairs["wvs_A008__CAN"]
    assert (can["year_old"], can["year_new"], can["wave_old"], can["wave_new"]) == (1996, 2018, 3, 7)
    assert can["years_available"] == [1996, 2006, 2018]
    assert can["G_old"] == pytest.approx(SHARES_OLD) and can["G_new"] == pytest.approx(SHARES_NEW)
    assert (can["n_old"], can["n_new"]) == (600, 700)
    assert can["d_h"] == pytest.approx(normalised_wasserstein(SHARES_OLD, SHARES_NEW))
    assert can["shift_category"] == shift_category(can["d_h"]) == "very_strong"
    assert can["option_labels"] == ["Very happy", "Quite happy", "Not very happy", "Not at all happy"]
    assert can["option_values"] == [1.0, 2.0, 3.0, 4.0]
    assert (can["country_iso_numeric"], can["country_name"], can["region"]) == (124, "Canada", "Western")
    assert can["source_old"] == "wvs.sav:A008"
    # DEU: wave 4 has 499 valid respondents (excluded), so the older period is wave 5 with exactly 500
    deu = pairs["wvs_A008__DEU"]
    assert (deu["year_old"], deu["n_old"], deu["years_available"]) == (2006, 500, [2006, 2018])
    assert deu["d_h"] == pytest.approx(0.0, abs=1e-12) and deu["shift_category"] == "stable"

    summary = out["summary"]
    excl = summary["exclusions"]
    assert excl["cells"]["WVS"]["too_few_respondents"] == 1  # DEU wave 4 (499 valid)
    assert excl["question_country_without_pair"] == {"WVS:no_newer_wave": 1, "WVS:single_period": 1}
    file_report = excl["respondents_per_file"][0]
    assert file_report["excluded_respondents"]["wave_outside_range"] == {"2": 800}
    assert file_report["excluded_respondents"]["country_not_in_table"] == {"999": 50}
    in_groups = 625 + 560 + 703 + 559 + 560 + 520 + 600 + 600 + 600  # respondents of kept country-waves
    assert excl["invalid_answers"]["WVS"] == {"-5": 3, "-4": in_groups, "-2": 5, "-1": 150}  # -4: C001
    # C001 was never asked (-4 everywhere): every country x wave cell is 'not asked'
    assert excl["cells"]["WVS"]["not_asked"] == 9


def test_items_undated_and_prompts(wvs_file, registry_file, build, wvs_groups):
    """3.7/A.4: two dated prompts per pair, one undated prompt per question x country, as chat messages."""
    out = build(wvs=wvs_file(wvs_groups), registry=registry_file())
    items = [i for i in out["items"] if i["pair_id"] == "wvs_A008__CAN"]
    assert [(i["period"], i["year"]) for i in items] == [("old", 1996), ("new", 2018)]
    old, new = items
    assert old["gold"] == pytest.approx(SHARES_OLD) and old["n"] == 600
    assert [m["role"] for m in old["messages"]] == ["system", "user"]
    user_old, user_new = old["messages"][1]["content"], new["messages"][1]["content"]
    for text in ("Canada", "1996", "How happy are you?", "Very happy", "Not at all happy", "JSON", "percentage"):
        assert text in user_old
    assert user_old.replace("1996", "2018") == user_new  # the two prompts differ only in the year
    undated = {u["pair_id"]: u for u in out["undated"]}["wvs_A008__CAN"]
    assert undated["n_years"] == 3
    assert [y["year"] for y in undated["years"]] == [1996, 2006, 2018]
    assert [y["wave"] for y in undated["years"]] == [3, 5, 7]
    assert undated["years"][1]["gold"] == pytest.approx(SHARES_MID, abs=1e-3)  # 550 x 0.35 is rounded
    content = undated["messages"][1]["content"]
    assert "Canada" in content and "How happy are you?" in content
    assert not any(str(y) in content for y in range(1981, 2030))
    manifest = out["manifest"]
    assert len(manifest["chronoculture_sources"]["prompt_templates"]["sha256"]) == 64


def test_scale_order_comes_from_the_registry_not_the_codes(wvs_file, registry_file, build, happy_counts):
    """C001-style items: codes 1 agree, 2 disagree, 3 neither; the scale order is agree < neither < disagree."""
    groups = [
        {"country": 124, "wave": 3, "year": 1996, "A008": happy_counts(600), "C001": {1: 300, 2: 200, 3: 100}},
        {"country": 124, "wave": 7, "year": 2018, "A008": happy_counts(600), "C001": {1: 100, 2: 400, 3: 100}},
    ]
    out = build(wvs=wvs_file(groups), registry=registry_file())
    pair = {p["question_id"]: p for p in out["pairs"]}["wvs_C001"]
    assert pair["option_labels"] == ["Agree", "Neither", "Disagree"]
    assert pair["G_old"] == pytest.approx([0.5, 1 / 6, 1 / 3])
    assert pair["d_h"] == pytest.approx(normalised_wasserstein([0.5, 1 / 6, 1 / 3], [1 / 6, 1 / 6, 2 / 3]))


def test_weights_and_unusable_weights_in_a_build(wvs_file, registry_file, build):
    """A.2 weights in a full build: 300 x Agree(w=1) and 150 x Disagree... computed on the weighted totals;
    missing, zero and negative weights are counted and left out of n."""
    n = 600
    weight = np.ones(n)
    answers = {1: 400, 2: 200}  # shuffled by the fixture with its own seed; weights follow the codes below
    group_old = {"country": 124, "wave": 3, "year": 1996, "A008": answers, "weight": weight}
    # (both waves answer on options 1 and 2: a period where nobody gives an answer another period
    # gives 33% of the time would read as a different scale, paper 3.2)
    path = wvs_file([group_old, {"country": 124, "wave": 7, "year": 2018, "A008": {1: 450, 2: 150}}])
    import pandas as pd
    import pyreadstat

    df, meta = pyreadstat.read_sav(path, user_missing=True)
    old = df["S002VS"] == 3
    df.loc[old & (df["A008"] == 2), "S017"] = 2.0  # each Disagree counts twice: 400 vs 2 x 200 -> 50/50
    first = df.index[old & (df["A008"] == 1)][:3]
    df.loc[first, "S017"] = [np.nan, 0.0, -1.0]  # three Agree respondents lose their weight
    pyreadstat.write_sav(pd.DataFrame(df), path, variable_value_labels=meta.variable_value_labels)
    out = build(wvs=path, registry=registry_file())
    pair = out["pairs"][0]
    assert pair["G_old"] == pytest.approx([397 / 797, 400 / 797, 0, 0])
    assert pair["n_old"] == 597
    report = out["summary"]["exclusions"]["respondents_per_file"][0]
    assert report["unusable_weights"] == {"missing": 1, "zero": 1, "negative": 1}


def test_issp_pairs_most_recent_and_oldest_year_across_files_and_formats(issp_file, registry_file, build):
    """3.4 (ISSP): newer = most recent year, older = oldest; module files in .sav, .dta and .csv; pooled samples."""
    shares = {1990: (0.1, 0.2, 0.3, 0.4), 1996: (0.25, 0.25, 0.25, 0.25), 2016: (0.4, 0.3, 0.2, 0.1)}

    def counts(year, n, extra=None):
        raw = np.round(np.asarray(shares[year]) * n).astype(int)
        return {**{c: int(k) for c, k in zip((1, 2, 3, 4), raw, strict=True)}, **(extra or {})}

    f1990 = issp_file("ZA1950_v2.sav", [
        {"v3": 1, "answers": counts(1990, 600, {8: 30, 9: 2})},
        {"v3": 2, "answers": counts(1990, 300)}, {"v3": 3, "answers": counts(1990, 300)},  # West + East = DEU
    ])
    f1996 = issp_file("ZA2900.dta", [{"v3": 1, "answers": counts(1996, 600)}], question_var="v36", weight_var="v325")
    f2016 = issp_file("ZA6900_v2-0-0.csv", [
        {"c_alphan": "AU", "answers": counts(2016, 800, {-8: 12})},
        {"c_alphan": "DE-W", "answers": counts(2016, 400)}, {"c_alphan": "DE-E", "answers": counts(2016, 200)},
        {"c_alphan": "XX", "answers": counts(2016, 100)},
    ], question_var="v21", weight_var="WEIGHT", country_var="c_alphan")
    out = build(issp=[f1990, f1996, f2016], registry=registry_file())
    pairs = {p["pair_id"]: p for p in out["pairs"]}
    aus = pairs["issp_rog_jobs__AUS"]
    assert (aus["year_old"], aus["year_new"], aus["years_available"]) == (1990, 2016, [1990, 1996, 2016])
    assert aus["wave_old"] is None and aus["source_new"] == "ZA6900_v2-0-0.csv:v21"
    assert aus["G_old"] == pytest.approx(shares[1990]) and aus["n_old"] == 600
    assert aus["topic"] == "Role of Government"
    deu = pairs["issp_rog_jobs__DEU"]
    assert (deu["n_old"], deu["n_new"], deu["years_available"]) == (600, 600, [1990, 2016])
    summary = out["summary"]
    assert summary["per_survey"]["ISSP"]["pairs"] == 2
    csv_report = [r for r in summary["exclusions"]["respondents_per_file"] if r["file"].endswith(".csv")][0]
    assert csv_report["excluded_respondents"]["country_not_in_table"] == {"XX": 100}
    assert csv_report["value_labels_checked"] is False
    assert summary["exclusions"]["invalid_answers"]["ISSP"] == {"-8": 12, "8": 30, "9": 2}


def test_same_data_in_sav_dta_and_csv_give_the_same_pairs(wvs_file, registry_file, build, wvs_groups, tmp_path):
    results = []
    for fmt in ("sav", "dta", "csv"):
        out = build(wvs=wvs_file(wvs_groups, name=f"wvs_{fmt}.{fmt}"), registry=registry_file())
        results.append([{k: v for k, v in p.items() if not k.startswith("source")} for p in out["pairs"]])
    assert results[0] == results[1] == results[2]


def test_country_alpha_column_when_s003_is_absent(wvs_file, registry_file, build, wvs_groups):
    out = build(wvs=wvs_file(wvs_groups, alpha_only=True), registry=registry_file())
    assert sorted(p["pair_id"] for p in out["pairs"]) == ["wvs_A008__CAN", "wvs_A008__DEU"]


def test_wvs_year_is_the_most_frequent_survey_year_of_the_wave(wvs_file, registry_file, build, happy_counts):
    years = [2017] * 200 + [2018] * 400
    groups = [{"country": 124, "wave": 3, "year": 1996, "A008": happy_counts(600)},
              {"country": 124, "wave": 7, "year": years, "A008": happy_counts(600)}]
    out = build(wvs=wvs_file(groups), registry=registry_file())
    assert out["pairs"][0]["year_new"] == 2018
    report = out["summary"]["exclusions"]["respondents_per_file"][0]
    assert report["groups_spanning_several_years"] == ["CAN wave 7: years 2017, 2018 -> 2018"]


def test_build_is_deterministic_and_seeded(wvs_file, registry_file, build, wvs_groups):
    path = wvs_file(wvs_groups)
    a = build(wvs=path, registry=registry_file(), seed=0)
    b = build(wvs=path, registry=registry_file(), seed=0)
    c = build(wvs=path, registry=registry_file(), seed=1)
    assert a["manifest"]["data_sha256"] == b["manifest"]["data_sha256"]
    assert [p["noise_p95"] for p in a["pairs"]] != [p["noise_p95"] for p in c["pairs"]]
    assert a["manifest"]["options"]["seed"] == 0


def test_variable_names_match_case_insensitively(issp_file, registry_file, build):
    """Releases differ in case (v3 / V3): the registry's names resolve to the file's spelling."""
    module = issp_file("ZA1950.sav", [{"V3": 1, "answers": {1: 300, 2: 300}}], question_var="V49",
                       weight_var="V114", country_var="V3")
    later = issp_file("ZA2900.dta", [{"v3": 1, "answers": {1: 100, 2: 500}}], question_var="v36", weight_var="v325")
    out = build(issp=[module, later], registry=registry_file())
    pair = out["pairs"][0]
    assert pair["G_old"] == pytest.approx([0.5, 0.5, 0, 0]) and pair["source_old"] == "ZA1950.sav:v49"
