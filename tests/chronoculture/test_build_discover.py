"""`--discover`: sources attached to the registry's questions, country maps drafted for combined
codes, and new candidates screened by the paper's 3.2 criteria a file can show."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyreadstat
import pytest
import yaml

from histbench.builders.chronoculture.registry import load_registry
from histbench.cli import main

from .test_build_locate import GOVRESP, POWER, _shares, write_issp


def _discover(argv) -> int:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code


def _wvs_with_extras(wvs_file, happy_counts):
    path = wvs_file([
        {"country": 124, "wave": 3, "year": 1996, "A008": happy_counts(600)},
        {"country": 276, "wave": 3, "year": 1996, "A008": happy_counts(600)},
        {"country": 124, "wave": 7, "year": 2018, "A008": happy_counts(600), "C001": {1: 300, 2: 300}},
        {"country": 276, "wave": 7, "year": 2018, "A008": happy_counts(600), "C001": {1: 300, 2: 300}},
    ])
    df, meta = pyreadstat.read_sav(path, user_missing=True)
    n = len(df)
    wave, country = df["S002VS"].to_numpy(), df["S003"].to_numpy()
    rng = np.random.default_rng(3)
    df["A099"] = rng.integers(1, 6, n).astype(float)  # a new question: 5 labelled codes, both waves, both countries
    df["X001"] = rng.integers(1, 3, n).astype(float)  # demographic
    df["A010"] = np.where(wave == 3, 5.0, 1.0)  # code 5 used but not labelled
    df["A011"] = 2.0  # codes 1, 2, 7: not consecutive
    df["A012"] = np.where(wave == 7, 1.0, -4.0)  # asked in wave 7 only
    df["A013"] = np.where(country == 124, 1.0, -4.0)  # asked in one country only
    df["A014"] = np.where(wave == 7, rng.integers(1, 6, n), rng.integers(1, 4, n)).astype(float)  # 3 then 5 points
    df["F028"] = rng.integers(1, 8, n).astype(float)  # behaviour frequency
    labels = dict(meta.variable_value_labels)
    five = {1: "Very good", 2: "Good", 3: "Fair", 4: "Poor", 5: "Very poor", -1: "Don't know", -4: "Not asked"}
    labels.update({"A099": five, "X001": {1: "Male", 2: "Female"}, "A010": {1: "Good", 2: "Fair", 3: "Poor"},
                   "A011": {1: "Yes", 2: "No", 7: "Other"}, "A012": five, "A013": five, "A014": five,
                   "F028": {i: f"f{i}" for i in range(1, 8)}})
    pyreadstat.write_sav(pd.DataFrame(df), path, variable_value_labels=labels,
                         column_labels={"A008": "Feeling of happiness", "A099": "State of health (subjective)",
                                        "F028": "How often do you attend religious services"})
    return path


def test_discover_wvs_attaches_registry_questions_and_screens_candidates(wvs_file, happy_counts, tmp_path, build):
    path = _wvs_with_extras(wvs_file, happy_counts)
    out = tmp_path / "mine.yaml"
    assert _discover(["build", "chronoculture", "--wvs", str(path), "--discover", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# chronoculture question registry written by `histbench build chronoculture --discover`")
    draft = yaml.safe_load(text)
    assert {q["id"] for q in draft["wvs"]["questions"]} >= {"wvs_A008", "wvs_C001"}  # the registry, copied
    candidates = {c["variable"]: c for c in draft["wvs"]["candidates"]}
    assert sorted(candidates) == ["A099"]
    a099 = candidates["A099"]
    assert a099["draft"] is True and a099["category"] is None and a099["text"] == "State of health (subjective)"
    assert a099["waves_asked"] == [3, 7] and [o["code"] for o in a099["options"]] == [1, 2, 3, 4, 5]
    assert a099["invalid_codes"] == [-4, -1]
    header = text.split("\nformat:")[0]
    for reason in ("identifier_or_demographic: 5", "unlabelled_codes_used: 1", "answer_codes_not_consecutive: 1",
                   "asked_in_fewer_than_2_waves: 1", "asked_in_one_country_only: 1", "scale_differs_between_waves: 1",
                   "behaviour_frequency: 1", "registry_questions_present: 2"):
        assert reason in header, reason
    # the written registry loads as it is (candidates are not built), and a curated candidate builds
    registry = load_registry(out)
    assert registry.candidates == 1 and "wvs_A099" not in {q.id for q in registry.wvs_questions}
    a099.pop("draft")
    a099.update(category="Family, health, and social attitudes", text="All in all, how would you describe your health?")
    mine = {"format": draft["format"], "wvs": {**draft["wvs"], "questions": [a099], "candidates": []}}
    curated = tmp_path / "curated.yaml"
    curated.write_text(yaml.safe_dump(mine, sort_keys=False))
    result = build(wvs=path, registry=curated)
    assert sorted(p["pair_id"] for p in result["pairs"]) == ["wvs_A099__CAN", "wvs_A099__DEU"]


def test_discover_issp_pins_sources_and_drafts_combined_country_codes(tmp_path, build):
    """ZA4700 (country: auto in the registry) with a numeric country variable whose labels name the
    samples: the drafted map pools DE-W + DE-E and IL-J + IL-A, keeps GB-GBN and GB-NIR apart."""
    country = {1: "DE-W-Germany-West", 2: "DE-E-Germany-East", 3: "IL-J-Israel Jews", 4: "IL-A-Israel Arabs",
               5: "GB-GBN-Great Britain", 6: "GB-NIR-Northern Ireland", 7: "XX-Atlantis"}
    # V25 is pinned for ZA4700 (issp_evidence.yaml); the trade unions' power item (here V60), which no
    # document names in ZA4700, is found by its label (the 1996 codebook's V33 label)
    columns = {"V3": ("Country/ Sample", country), "V25": ("Q7a Gov responsibility: provide job for everyone", GOVRESP),
               "V60": ("Power of trade unions", POWER),
               "V50": ("Q12 How important: a new kind of thing", {1: "a", 2: "b", 3: "c", 4: "d"}),
               "SEX": ("R: Sex", {1: "Male", 2: "Female"}), "WEIGHT": ("Weighting factor", None)}
    samples = [{"size": 600, "V3": code, "V25": _shares(600, (0.4, 0.3, 0.2, 0.1)), "V60": _shares(600, (0.3, 0.3, 0.2, 0.1, 0.1), (1, 2, 3, 4, 5)),
                "V50": _shares(600, (0.25,) * 4),
                "SEX": {1: 300, 2: 300}, "WEIGHT": 1.0} for code in country]
    path = write_issp(tmp_path / "ZA4700_v1-0-0.dta", samples, columns)
    unknown = write_issp(tmp_path / "ZA9999.sav", samples[:1], columns)
    out = tmp_path / "mine.yaml"
    assert _discover(["build", "chronoculture", "--issp", str(path), str(unknown), "--discover", str(out)]) == 0
    draft = yaml.safe_load(out.read_text())
    studies = {s["id"]: s for s in draft["issp"]["studies"]}
    za4700 = studies["ZA4700"]
    assert za4700["country"] == {"variable": "V3", "coding": "map",
                                 "map": {1: "DEU", 2: "DEU", 3: "ISR", 4: "ISR", 5: "GBR", 6: "NIR"}}
    assert "DE-E-Germany-East + DE-W-Germany-West -> DEU" in za4700["notes"]
    assert "IL-A-Israel Arabs + IL-J-Israel Jews -> ISR" in za4700["notes"]
    assert "7 'XX-Atlantis'" in za4700["notes"] and za4700["weight"] == "WEIGHT"
    questions = {q["id"]: q for q in draft["issp"]["questions"]}
    assert questions["issp_rog_power_unions"]["sources"]["ZA4700"] == {"variable": "V60", "invalid_codes": [-9, -8]}
    assert questions["issp_rog_jobs"]["sources"]["ZA4700"] == "V25"  # the pinned ones are kept
    assert questions["issp_rog_jobs"]["sources"]["ZA2900"] == "v36"
    candidates = {c["sources"]["ZA4700"]: c for c in draft["issp"]["candidates"] if "ZA4700" in c["sources"]}
    assert sorted(candidates) == ["V50"]  # SEX is a background variable, V3, V25 and V60 are taken
    assert draft["issp"]["candidate_studies"][0]["id"] == "ZA9999"
    # the written registry builds: the 2006 source is now pinned
    registry = load_registry(out)
    power = {q.id: q for q in registry.issp_questions}["issp_rog_power_unions"]
    assert power.source_for("ZA4700").variable == "V60"


def test_discover_never_overwrites_a_registry_someone_wrote(tmp_path, wvs_file, happy_counts, capsys):
    path = wvs_file([{"country": 124, "wave": 3, "year": 1996, "A008": happy_counts(600)}])
    mine = tmp_path / "my_registry.yaml"
    mine.write_text("format: chronoculture-registry/1\n# my curated notes\n")
    assert main(["build", "chronoculture", "--wvs", str(path), "--discover", str(mine)]) == 2
    assert "exists and was not written by --discover" in capsys.readouterr().err
    assert mine.read_text() == "format: chronoculture-registry/1\n# my curated notes\n"
    assert main(["build", "chronoculture", "--wvs", str(path), "--registry", str(mine), "--discover", str(mine)]) == 2


def test_discover_needs_a_file(tmp_path, capsys):
    assert main(["build", "chronoculture", "--discover", str(tmp_path / "x.yaml")]) == 2
    assert "--discover needs at least one survey file" in capsys.readouterr().err


def test_discover_never_writes_one_variable_for_two_questions(tmp_path):
    """Issue 40: a variable whose label and value labels fit two questions (the unions' and business's
    power) is written for neither; the report says why, and the written registry loads (it pins no
    variable twice, which the build refuses)."""
    columns = {"C_ALPHAN": ("Country Prefix ISO 3166 Code - alphanumeric", None),
               "V60": ("Power of trade unions and of business and industry", POWER),
               "V61": ("Power of the federal government", POWER), "WEIGHT": ("Weighting factor", None)}
    path = write_issp(tmp_path / "ZA4700_v1-0-0.sav", [{"size": 10, "C_ALPHAN": "AU", "V60": {1: 10}, "V61": {2: 10},
                                                        "WEIGHT": 1.0}], columns, string_columns=("C_ALPHAN",))
    out = tmp_path / "mine.yaml"
    assert _discover(["build", "chronoculture", "--issp", str(path), "--discover", str(out)]) == 0
    written = yaml.safe_load(out.read_text())
    questions = {q["id"]: q for q in written["issp"]["questions"]}
    assert "ZA4700" not in questions["issp_rog_power_unions"].get("sources", {})
    assert "ZA4700" not in questions["issp_rog_power_business"].get("sources", {})
    assert questions["issp_rog_power_government"]["sources"]["ZA4700"]["variable"] == "V61"
    header = " ".join(out.read_text().replace("#", " ").split())
    assert ("question issp_rog_power_unions: V60 ''Power of trade unions and of business and industry'' fits several "
            "questions (issp_rog_power_unions, issp_rog_power_business)") in header
    pins = [(sid, str(ref if isinstance(ref, str) else ref["variable"]).lower())
            for q in questions.values() for sid, ref in (q.get("sources") or {}).items()]
    assert len(pins) == len(set(pins))
    load_registry(out)
