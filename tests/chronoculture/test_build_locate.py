"""ISSP files beyond the pinned variables: study numbers in GESIS file names, country, weight,
year and question variables found by their labels (locate.py), on files written with pyreadstat."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from histbench.builders.chronoculture.countries import CountryTable
from histbench.builders.chronoculture.locate import country_from_label, locate_weight, match_options, normal
from histbench.builders.chronoculture.readers import read_meta
from histbench.builders.chronoculture.registry import load_registry
from histbench.core.errors import SourceError
from histbench.core.resources import Resources

SOURCES = Resources.default().source_dir("chronoculture")
GOVRESP = {1: "Definitely should be", 2: "Probably should be", 3: "Probably should not be",
           4: "Definitely should not be", -8: "Can't choose", -9: "No answer"}
TAXLEVEL = {1: "Much too high", 2: "Too high", 3: "About right", 4: "Too low", 5: "Much too low",
            -8: "Can't choose", -9: "No answer"}
POWER = {1: "Far too much power", 2: "Too much power", 3: "About the right amount of power", 4: "Too little power",
         5: "Far too little power", -8: "Can't choose", -9: "No answer"}
FIVE = (1, 2, 3, 4, 5)


def write_issp(path: Path, samples: list[dict], columns: dict, string_columns=()) -> Path:
    """samples: [{"size": n, column: value or {code: count}}]; columns: {name: (label, value labels or None)}."""
    rng = np.random.default_rng(7)
    parts = []
    for sample in samples:
        n = sample["size"]
        part = {}
        for column in columns:
            value = sample.get(column, np.nan)
            if isinstance(value, dict):
                codes = np.concatenate([np.full(k, float(c)) for c, k in value.items()])
                assert len(codes) == n, column
                rng.shuffle(codes)
                part[column] = codes
            else:
                part[column] = [value] * n
        parts.append(pd.DataFrame(part))
    df = pd.concat(parts, ignore_index=True)
    for column in df.columns:
        if column not in string_columns:
            df[column] = df[column].astype(float)
    labels = {c: spec[0] for c, spec in columns.items()}
    value_labels = {c: spec[1] for c, spec in columns.items() if spec[1]}
    if path.suffix == ".sav":
        pyreadstat.write_sav(df, path, column_labels=labels, variable_value_labels=value_labels)
    else:
        pyreadstat.write_dta(df, path, column_labels=labels,
                             variable_value_labels={k: {int(c): v for c, v in m.items()} for k, m in value_labels.items()})
    return path


def _shares(n, shares, codes=(1, 2, 3, 4), extra=None):
    raw = np.floor(np.asarray(shares) * n).astype(int)
    raw[0] += n - raw.sum()
    out = {c: int(k) for c, k in zip(codes, raw, strict=True)}
    return {**out, **(extra or {})}


def za4700(tmp_path: Path, name="ZA4700_v1-0-0.dta") -> Path:
    """A 2006 Role of Government file: C_ALPHAN sample codes, WEIGHT, the jobs and taxes-for-high-incomes
    items (pinned as V25 and V51), labelled as the real ones (CRI team 20 shows them lower-cased as
    q7a_gov_responsibility_provide_job_for_everyone, q12a_taxes_for_high_incomes), and the trade unions'
    power item, which no document names in ZA4700, so it is found by its label (here V60, labelled as the
    1996 codebook's V33: the 2006 wording is not known)."""
    columns = {
        "C_ALPHAN": ("Country Prefix ISO 3166 Code - alphanumeric", None),
        "V25": ("Q7a Gov responsibility: provide job for everyone", GOVRESP),
        "V51": ("Q12a Taxes for high incomes", TAXLEVEL),
        "V60": ("Power of trade unions", POWER),
        "V3a": ("Country/ Sample ISO 3166 Code (see V3 for codes for the sample)", None),
        "WEIGHT": ("Weighting factor", None),
    }
    samples = [
        {"size": 320, "C_ALPHAN": "DE-W", "V25": _shares(300, (0.4, 0.3, 0.2, 0.1), extra={-8: 20}),
         "V51": _shares(320, (0.4, 0.3, 0.1, 0.1, 0.1), FIVE),
         "V60": _shares(320, (0.4, 0.3, 0.1, 0.1, 0.1), FIVE), "V3a": 276, "WEIGHT": 1.2},
        {"size": 300, "C_ALPHAN": "DE-E", "V25": _shares(300, (0.6, 0.3, 0.05, 0.05)),
         "V51": _shares(300, (0.4, 0.3, 0.1, 0.1, 0.1), FIVE),
         "V60": _shares(300, (0.4, 0.3, 0.1, 0.1, 0.1), FIVE), "V3a": 276, "WEIGHT": 0.8},
        {"size": 600, "C_ALPHAN": "GB-GBN", "V25": _shares(600, (0.2, 0.3, 0.3, 0.2)),
         "V51": _shares(600, (0.3, 0.3, 0.2, 0.1, 0.1), FIVE),
         "V60": _shares(600, (0.3, 0.3, 0.2, 0.1, 0.1), FIVE), "V3a": 826, "WEIGHT": 1.0},
        {"size": 550, "C_ALPHAN": "GB-NIR", "V25": _shares(550, (0.3, 0.3, 0.2, 0.2)),
         "V51": _shares(550, (0.3, 0.3, 0.2, 0.1, 0.1), FIVE),
         "V60": _shares(550, (0.3, 0.3, 0.2, 0.1, 0.1), FIVE), "V3a": 826, "WEIGHT": 1.0},
    ]
    return write_issp(tmp_path / name, samples, columns, string_columns=("C_ALPHAN",))


def za2900(tmp_path: Path, name="ZA2900.dta") -> Path:
    """A 1996 file with the registry's pinned variables (v3 ISSP country codes, v36-v42, v325) and the
    taxes-for-high-incomes item, pinned at v57 (the GESIS codebook's V57)."""
    columns = {"v3": ("Country", {2: "D-W", 3: "D-E", 4: "GB", 5: "NIRL"}),
               **{f"v{n}": (f"Govt responsib: item {n}", {**{k: v for k, v in GOVRESP.items() if k > 0},
                                                       8: "Can't choose", 9: "NA"}) for n in range(36, 43)},
               "v57": ("Taxes for high incomes", {**{k: v for k, v in TAXLEVEL.items() if k > 0},
                                                  8: "Can't choose", 9: "NA"}),
               "v325": ("Weight", None)}
    samples = []
    for code, n in ((2, 300), (3, 260), (4, 600), (5, 540)):
        sample = {"size": n, "v3": code, "v325": 1.0}
        for var in range(36, 43):
            sample[f"v{var}"] = _shares(n, (0.25, 0.25, 0.25, 0.25))
        sample["v57"] = _shares(n, (0.2, 0.2, 0.2, 0.2, 0.2), FIVE)
        samples.append(sample)
    return write_issp(tmp_path / name, samples, columns)


def test_study_numbers_in_gesis_file_names():
    registry = load_registry(SOURCES / "registry.yaml")
    for name, study in (("ZA4700_v1-0-0.dta", "ZA4700"), ("ZA7600_v3-0-0.sav", "ZA7600"), ("ZA1950.sav", "ZA1950"),
                        ("ZA2900.dta", "ZA2900"), ("za4747.dta", "ZA4747"), ("ZA8000_v2-0-0.sav", "ZA8000"),
                        ("ZA10000_v2-0-0.sav", "ZA10000"), ("ZA1950_synthetic.sav", "ZA1950")):
        assert registry.study_for(Path(name)).id == study
    with pytest.raises(SourceError, match="no ISSP study of the registry matches"):
        registry.study_for(Path("ZA47001.sav"))  # another study number, not ZA4700


def test_issp_2006_variables_found_by_label_and_paired_with_the_pinned_1996_file(tmp_path, build, capsys):
    """The trade unions' power item of ZA4700 is found by its label (jobs, taxes and the 1996 items are pinned), country from C_ALPHAN (DE-W + DE-E
    pooled, GB-NIR apart), the pinned WEIGHT; the pair runs from the pinned 1996 file to 2006 (paper 3.4,
    newest ISSP year)."""
    out = build(issp=[za2900(tmp_path), za4700(tmp_path)], allow_missing_questions=True)
    pairs = {p["pair_id"]: p for p in out["pairs"]}
    deu = pairs["issp_rog_jobs__DEU"]
    assert (deu["year_old"], deu["year_new"]) == (1996, 2006)
    assert deu["source_new"] == "ZA4700_v1-0-0.dta:V25" and deu["source_old"] == "ZA2900.dta:v36"
    # A.2 weights: DE-W 1.2 x 300 valid, DE-E 0.8 x 300 (-8 can't choose is invalid)
    west = np.floor(np.array([0.4, 0.3, 0.2, 0.1]) * 300)
    east = np.floor(np.array([0.6, 0.3, 0.05, 0.05]) * 300)
    west[0] += 300 - west.sum()
    east[0] += 300 - east.sum()
    expected = (1.2 * west + 0.8 * east) / (1.2 * 300 + 0.8 * 300)
    assert deu["G_new"] == pytest.approx(expected.tolist())
    assert deu["n_new"] == 600
    assert "issp_rog_jobs__NIR" in pairs and "issp_rog_jobs__GBR" in pairs
    assert pairs["issp_rog_tax_high_incomes__GBR"]["source_new"] == "ZA4700_v1-0-0.dta:V51"
    assert pairs["issp_rog_tax_high_incomes__GBR"]["source_old"] == "ZA2900.dta:V57"  # the registry's name
    report = {f["file"]: f for f in out["summary"]["exclusions"]["respondents_per_file"]}["ZA4700_v1-0-0.dta"]
    assert report["questions_located_by_label"] == {"issp_rog_power_unions": "V60 (label)"}
    assert report["variables"]["country"].startswith("C_ALPHAN (found")
    assert report["variables"]["weight"] == "WEIGHT"
    assert "issp_rog_power_government" in report["questions_not_found"]
    err = capsys.readouterr().err
    assert "ZA4700_v1-0-0.dta (study ZA4700): 1 question(s) found by their label" in err
    assert "country C_ALPHAN (found" in err


def test_abbreviated_and_reversed_value_labels_are_read_by_what_they_say(tmp_path):
    """Issue 40: codes are never taken by position alone; value labels written shorter ("Def should")
    are matched to the options word by word, a reversed scale is read reversed, and labels of another
    answer scale with the same number of codes are refused."""
    registry = load_registry(SOURCES / "registry.yaml")
    jobs = {q.id: q for q in registry.issp_questions}["issp_rog_jobs"]
    short = {1: "Def should", 2: "Prob should", 3: "Prob not", 4: "Def not", 8: "Can't choose", 9: "NA"}
    assert match_options(jobs, short) == (((1.0,), (2.0,), (3.0,), (4.0,)), "label, abbreviated value labels")
    assert match_options(jobs, {5 - k: v for k, v in short.items() if k < 5}) == (
        ((4.0,), (3.0,), (2.0,), (1.0,)), "label, abbreviated value labels, reversed")
    reordered = {1: "Definitely should not be", 2: "Probably should not be", 3: "Probably should be",
                 4: "Definitely should be", -8: "Can't choose"}
    assert match_options(jobs, reordered) == (((4.0,), (3.0,), (2.0,), (1.0,)), "label, reversed")
    shuffled = {1: "Probably should be", 2: "Definitely should be", 3: "Definitely should not be",
                4: "Probably should not be"}
    assert "neither the same nor reversed" in match_options(jobs, shuffled)
    # four codes 1-4 with other answers are not the item, whatever their number
    assert "do not carry the options" in match_options(jobs, {1: "Very good", 2: "Good", 3: "Bad", 4: "Very bad"})
    corrupt = {q.id: q for q in registry.issp_questions}["issp_si_top_corrupt"]
    how_many = {1: "Almost none", 2: "A few", 3: "Some", 4: "Quite a lot", 5: "Almost all", 8: "Can't choose"}
    assert "do not carry the options" in match_options(corrupt, how_many)
    ahead = {q.id: q for q in registry.issp_questions}["issp_si_ahead_education"]
    gesis = {1: "Essential", 2: "Very imp", 3: "Fairly imp", 4: "Not very imp", 5: "Not imp at all", 8: "Can't choose"}
    assert match_options(ahead, gesis)[1] == "label, abbreviated value labels"
    # "Very important" is not "Not very important" written shorter: a dropped "not" is refused
    assert "do not carry" in match_options(ahead, {1: "Essential", 2: "Very imp", 3: "Fairly imp", 4: "Very imp",
                                                   5: "Imp at all"})
    agree = {1: "Agree strongly", 2: "Agree", 3: "Neither agree nor disagree", 4: "Disagree", 5: "Disagree strongly"}
    trust = {q.id: q for q in registry.issp_questions}["issp_si_top_corrupt"]
    assert match_options(trust, agree)[1] == "label"  # word order and aliases: "Agree strongly" = "Strongly agree"
    assert "do not carry the options" in match_options(jobs, {1: "Yes", 2: "No", 3: "Maybe"})
    # an answer that says "don't know" is an answer, not a non-answer (found by the benchmark)
    god = {q.id: q for q in registry.issp_questions}["issp_rel_belief_in_god"]
    beliefs = {float(o.codes[0]): o.label for o in god.options}
    assert "don't know whether there is a God" in beliefs[2.0]
    assert match_options(god, {**beliefs, 8.0: "Can't choose, don't know"}) == (
        tuple(o.codes for o in god.options), "label")
    # a numeric 1-10 scale is not a 1-4 item whose label happens to match (found by the benchmark)
    top = {q.id: q for q in registry.issp_questions}["issp_si_self_placement"]
    four = {1: "Very strong conflicts", 2: "Strong conflicts", 3: "Not very strong conflicts", 4: "No conflicts"}
    assert "do not reach both ends of the scale 1-10" in match_options(top, four)
    assert match_options(top, {1: "Bottom", 10: "Top", 98: "Can't choose"})[1] == "label, numeric scale"
    # ZA2310 V73's wording: 1 "Top" .. 10 "Bottom" is the same scale read backwards (issue 40)
    codes, how = match_options(top, {1: "Top", 10: "Bottom", 98: "Can't choose", 99: "NA"})
    assert how == "label, numeric scale, reversed" and codes == tuple((float(c),) for c in range(10, 0, -1))
    assert "do not say which end" in match_options(top, {1: "1", 10: "10"})
    assert "do not say which end" in match_options(top, {1: "Left", 10: "Right"})
    # the registry's end aliases: ZA5400 V44 is labelled "Bottom,Lowest,01" .. "Top,Highest,10"
    assert match_options(top, {1: "Lowest", 10: "Highest"})[1] == "label, numeric scale"
    assert match_options(top, {1: "Highest", 10: "Lowest"})[1] == "label, numeric scale, reversed"


def test_ambiguous_and_missing_variables_are_reported_not_guessed(tmp_path, build):
    columns = {"C_ALPHAN": ("Country Prefix ISO 3166 Code - alphanumeric", None),
               "V25": ("Q7a Gov responsibility: provide job for everyone", GOVRESP),
               "V60": ("Power of trade unions", POWER),
               "V99": ("Power of trade unions (split ballot)", POWER),
               "V61": ("Power of business and industry", POWER), "WEIGHT": ("Weighting factor", None)}
    path = write_issp(tmp_path / "ZA4700.sav", [{"size": 600, "C_ALPHAN": "AU", "V25": {1: 600}, "V60": {1: 600},
                                                  "V99": {1: 600}, "V61": _shares(600, (0.4, 0.3, 0.2, 0.05, 0.05), FIVE),
                                                  "WEIGHT": 1.0}],
                      columns, string_columns=("C_ALPHAN",))
    old = za2900(tmp_path)
    with pytest.raises(SourceError, match="no temporal pair"):  # 2006 holds only AUS, which 1996 lacks
        build(issp=[old, path], allow_missing_questions=True)
    from histbench.builders.chronoculture.surveys import load_issp

    registry = load_registry(SOURCES / "registry.yaml")
    table = CountryTable.load(SOURCES / "countries.csv")
    loaded = load_issp(read_meta(path), registry, table, allow_missing_questions=True)
    assert ("question issp_rog_power_unions: several variables fit (V60 'Power of trade unions', V99 'Power of "
            "trade unions (split ballot)')") in loaded.report.not_located["issp_rog_power_unions"]
    assert loaded.report.located["issp_rog_power_business"] == "V61 (label)"
    assert loaded.report.not_located["issp_rog_power_government"].startswith(
        "question issp_rog_power_government: no variable label matches")


def test_country_coding_drafted_from_value_labels_and_cumulation_years(tmp_path, build):
    """A cumulation (ZA4747): country variable V3 with vehicle-code labels, year from the study-number
    variable (1990 -> ZA1950, 2006 -> ZA4700 of the same module)."""
    country = {1: "aus", 2: "d-w", 3: "d-e", 4: "gb", 5: "nirl", 6: "usa", 99: "Other"}
    columns = {"V1": ("ZA study number", None), "V3": ("Country", country),
               "V5": ("Govt responsibility: provide a job for everyone", GOVRESP), "V200": ("Weighting factor", None)}
    samples = []
    for study, shares in ((1950, (0.4, 0.3, 0.2, 0.1)), (4700, (0.1, 0.2, 0.3, 0.4))):
        for code, n in ((1, 600), (2, 300), (3, 300), (6, 600), (99, 50)):
            samples.append({"size": n, "V1": study, "V3": code, "V5": _shares(n, shares), "V200": 1.0})
    path = write_issp(tmp_path / "ZA4747.dta", samples, columns)
    out = build(issp=[path], allow_missing_questions=True)
    pairs = {p["pair_id"]: p for p in out["pairs"]}
    assert sorted(pairs) == ["issp_rog_jobs__AUS", "issp_rog_jobs__DEU", "issp_rog_jobs__USA"]
    assert (pairs["issp_rog_jobs__DEU"]["year_old"], pairs["issp_rog_jobs__DEU"]["year_new"]) == (1990, 2006)
    assert pairs["issp_rog_jobs__DEU"]["n_old"] == 600  # West and East German samples pooled
    report = out["summary"]["exclusions"]["respondents_per_file"][0]
    assert report["variables"]["year"] == "V1 (found: its values are the module's study numbers)"
    assert "pooled: d-e, d-w -> DEU" in report["variables"]["country"]
    assert report["excluded_respondents"]["country_not_in_table"] == {"99 (Other)": 100}


def test_country_labels_the_early_and_recent_files_use():
    table = CountryTable.load(SOURCES / "countries.csv")
    cases = {"DE-W-Germany-West": "DEU", "DE-E Germany East": "DEU", "d-w": "DEU", "West Germany": "DEU",
             "AU-Australia": "AUS", "aus": "AUS", "36. Australia": "AUS", "Australia (AUS)": "AUS",
             "GB-GBN-Great Britain": "GBR", "GB-NIR-Northern Ireland": "NIR", "nirl": "NIR",
             "IL-J-Israel Jews": "ISR", "IL-A-Israel Arabs": "ISR", "cdn": "CAN", "usa": "USA", "Czech Republic": "CZE",
             "KR-Korea (South)": "KOR", "SR-Suriname": "SUR"}
    assert {label: country_from_label(label, table).alpha3 for label in cases} == cases
    assert country_from_label("Can't choose", table) is None and country_from_label("Other", table) is None


def test_weight_found_by_name_or_label(tmp_path):
    path = write_issp(tmp_path / "x.sav", [{"size": 2, "a": 1, "b": 1}], {"a": ("Design weight", None),
                                                                          "b": ("Body weight in kg", None)})
    assert locate_weight(read_meta(path)) == "a"
    assert normal("01. Agree  strongly!") == "agree strongly"


@pytest.mark.parametrize("where, prefix", [("docs/chronoculture.md", "make build-chronoculture"),
                                           ("README.md", "histbench build chronoculture --wvs ~/data/")])
def test_the_documented_build_line_runs_as_written(tmp_path, where, prefix):
    """The docs' `make build-chronoculture WVS=~/data/... ISSP="~/data/ZA1950.sav ~/data/ZA2900.dta"`
    (through the Makefile's recipe) and the README's `histbench build chronoculture ...` line run
    as written: tilde expansion by the shell, study numbers in the file names."""
    import os
    import re
    import shutil
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    line = next(li for li in (root / where).read_text().splitlines() if li.startswith(prefix))
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    sample = SOURCES / "sample"
    wvs_name = re.search(r"(?:WVS=|--wvs )~/data/(\S+)", line).group(1)
    shutil.copy(sample / "wvs_timeseries_synthetic.sav", home / "data" / wvs_name)
    shutil.copy(sample / "ZA1950_synthetic.sav", home / "data" / "ZA1950.sav")
    shutil.copy(sample / "ZA2900_synthetic.dta", home / "data" / "ZA2900.dta")
    if line.startswith("make "):
        # the recipe the Makefile runs for this line (make -n prints it without running it)
        dry = subprocess.run(line.replace("make ", "make -s -n -o .venv/.core ", 1), shell=True, cwd=root,
                             capture_output=True, text=True, check=True, env={**os.environ, "HOME": str(home)})
        command = dry.stdout.strip().splitlines()[-1]
        assert "--issp ~/data/ZA1950.sav ~/data/ZA2900.dta" in command
        command = command.replace(".venv/bin/histbench", f"{sys.executable} -m histbench.cli", 1)
    else:
        command = line.split("  #")[0].replace("histbench", f"{sys.executable} -m histbench.cli", 1)
    command += f" --allow-missing-questions --out {tmp_path / 'out'}"  # the sample lacks most registry variables
    run = subprocess.run(command, shell=True, cwd=root, capture_output=True, text=True,
                         env={**os.environ, "HOME": str(home), "HISTBENCH_PROGRESS": "0"})
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out" / "chronoculture-1.0.0" / "histbench.json").exists()
    assert "ZA1950.sav" in run.stderr and "ZA2900.dta" in run.stderr


def test_every_documented_make_line_names_registry_studies():
    """The build lines of the README and the docs name ISSP files the registry recognises."""
    import re

    root = Path(__file__).resolve().parents[2]
    registry = load_registry(SOURCES / "registry.yaml")
    lines = [line for doc in ("README.md", "docs/building.md", "docs/chronoculture.md")
             for line in (root / doc).read_text().splitlines()
             if line.startswith(("make build-chronoculture", "histbench build chronoculture --wvs ~/data/"))]
    assert len(lines) >= 3
    for line in lines:
        found = re.search(r'ISSP="([^"]+)"', line) or re.search(r"--issp ((?:~/data/\S+ ?)+)", line)
        names = found.group(1).split()
        assert [registry.study_for(Path(n)).id for n in names] == [Path(n).stem.split("_")[0] for n in names]
