"""Bad input: clear errors naming file/field, or counted exclusions; a failed build writes nothing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from histbench.builders.chronoculture.readers import read_columns, read_meta
from histbench.cli import main
from histbench.core.errors import SourceError, UsageError


@pytest.fixture
def groups(happy_counts):
    return [
        {"country": 124, "wave": 3, "year": 1996, "A008": happy_counts(600)},
        {"country": 124, "wave": 7, "year": 2018, "A008": happy_counts(600, (0.1, 0.2, 0.3, 0.4))},
    ]


def _assert_nothing_written(tmp_path):
    out = tmp_path / "out"
    assert not out.exists() or not any(p.name.startswith("chronoculture") for p in out.iterdir())


def test_not_an_spss_file(tmp_path, build, registry_file):
    fake = tmp_path / "wvs.sav"
    fake.write_text("S002VS,S003\n7,124\n")
    with pytest.raises(SourceError, match="not a readable SPSS .sav file") as info:
        build(wvs=fake, registry=registry_file())
    assert info.value.file == str(fake)
    _assert_nothing_written(tmp_path)


def test_unknown_extension_is_refused_before_reading(tmp_path, build, registry_file):
    other = tmp_path / "wvs.xlsx"
    other.write_bytes(b"PK")
    with pytest.raises(SourceError, match="unknown format for --wvs"):
        build(wvs=other, registry=registry_file())


def test_missing_required_variable(wvs_file, build, registry_file, groups, tmp_path):
    path = wvs_file(groups, drop=("S017",))
    with pytest.raises(SourceError, match=r"missing required variable\(s\) S017") as info:
        build(wvs=path, registry=registry_file())
    assert info.value.field == "S017"
    _assert_nothing_written(tmp_path)


def test_registry_code_absent_from_value_labels(wvs_file, build, registry_file, groups):
    labels = {"A008": {1: "Very happy", 2: "Quite happy", 3: "Not very happy", -1: "Don't know"}}  # no label for 4
    path = wvs_file(groups, value_labels=labels)
    with pytest.raises(SourceError, match="registry code 4 .*'Not at all happy'.* of question wvs_A008") as info:
        build(wvs=path, registry=registry_file())
    assert info.value.field == "A008"


def test_variable_without_value_labels(wvs_file, build, registry_file, groups):
    path = wvs_file(groups, value_labels={"C001": {}})
    with pytest.raises(SourceError, match="has no value labels"):
        build(wvs=path, registry=registry_file())


def test_registry_variable_missing_fails_unless_allowed(wvs_file, build, registry_file, groups):
    path = wvs_file(groups, drop=("C001",))
    with pytest.raises(SourceError, match="registry variable.*not in this file: C001.*--allow-missing-questions"):
        build(wvs=path, registry=registry_file())
    out = build(wvs=path, registry=registry_file(), allow_missing_questions=True)
    assert out["summary"]["exclusions"]["respondents_per_file"][0]["registry_variables_missing"] == ["C001"]
    assert len(out["pairs"]) == 1


def test_issp_file_without_registry_study(issp_file, build, registry_file):
    path = issp_file("ZA7777.sav", [{"v3": 1, "answers": {1: 600}}])
    with pytest.raises(SourceError, match="no ISSP study of the registry matches this file name") as info:
        build(issp=[path], registry=registry_file())
    assert info.value.file == str(path)


def test_same_module_year_in_two_issp_files(issp_file, build, registry_file, registry_data):
    data = registry_data
    data["issp"]["studies"].append({"id": "ZA4747", "files": ["ZA4747*"], "year": {"variable": "year"},
                                    "country": {"variable": "v3", "coding": "map", "map": {1: "AUS"}}, "weight": "v114"})
    data["issp"]["questions"][0]["sources"]["ZA4747"] = "v49"
    cumulation = issp_file("ZA4747.sav", [{"v3": 1, "answers": {1: 600}}])
    df, meta = pyreadstat.read_sav(cumulation)
    df["year"] = 1990.0
    pyreadstat.write_sav(df, cumulation, variable_value_labels=meta.variable_value_labels)
    module = issp_file("ZA1950.sav", [{"v3": 1, "answers": {2: 600}}])
    with pytest.raises(SourceError, match="is in two ISSP files"):
        build(issp=[cumulation, module], registry=registry_file(data))


def test_registry_country_map_must_use_the_country_table(issp_file, build, registry_file, registry_data):
    data = registry_data
    data["issp"]["studies"][0]["country"]["map"][5] = "QQQ"
    path = issp_file("ZA1950.sav", [{"v3": 1, "answers": {1: 600}}])
    with pytest.raises(SourceError, match=r"country map names \['QQQ'\]"):
        build(issp=[path], registry=registry_file(data))


def test_failed_rebuild_keeps_the_previous_build(wvs_file, build, registry_file, groups, tmp_path):
    good = build(wvs=wvs_file(groups), registry=registry_file())
    before = (good["folder"] / "histbench.json").read_text()
    with pytest.raises(SourceError):
        build(wvs=wvs_file(groups, name="bad.sav", drop=("S020",)), registry=registry_file())
    assert (good["folder"] / "histbench.json").read_text() == before


def test_only_the_needed_columns_are_read(wvs_file, groups, monkeypatch, tmp_path):
    """The data are read with pyreadstat usecols: unrelated variables are never loaded."""
    path = wvs_file(groups)
    df, meta = pyreadstat.read_sav(path, user_missing=True)
    for extra in ("X001", "Y002", "A009"):
        df[extra] = 1.0
    pyreadstat.write_sav(pd.DataFrame(df), path, variable_value_labels=meta.variable_value_labels)
    calls = []
    original = pyreadstat.read_sav

    def spy(*args, **kwargs):
        calls.append(kwargs.get("usecols"))
        return original(*args, **kwargs)

    monkeypatch.setattr(pyreadstat, "read_sav", spy)
    meta = read_meta(path)
    frame = read_columns(meta, ["S002VS", "A008"])
    assert list(frame) == ["S002VS", "A008"]
    assert calls == [None, ["S002VS", "A008"]]  # metadata only, then the two columns


def test_cli_prints_one_line_and_exits_2(wvs_file, registry_file, groups, tmp_path, capsys):
    path = wvs_file(groups, drop=("S002VS",))
    code = main(["build", "chronoculture", "--wvs", str(path), "--registry", str(registry_file()),
                 "--out", str(tmp_path / "cli")])
    lines = capsys.readouterr().err.splitlines()
    assert code == 2
    assert lines[-1].startswith("histbench: error: ") and "S002VS" in lines[-1]
    assert sum(line.startswith("histbench: error") for line in lines) == 1


def test_bad_options(wvs_file, registry_file, groups, tmp_path):
    from histbench.builders.chronoculture import BUILDER
    from histbench.cli import make_parser

    parser = make_parser()
    args = parser.parse_args(["build", "chronoculture", "--wvs", "x.sav", "--min-respondents", "0"])
    with pytest.raises(UsageError):
        BUILDER.options_from_args(args)


# ------------------------------------------------------------------ issue 17: reliability of the reader
def _csv(tmp_path, rows: list[str], name="wvs.csv"):
    path = tmp_path / name
    path.write_text("S002VS,S003,S020,S017,A008\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(("code", "shown"), [("inf", "inf"), ("9" * 400_000, "inf"), ("124.5", "124.5")])
def test_absurd_country_code_in_a_wvs_csv(tmp_path, build, registry_file, code, shown):
    """A non-finite or absurd S003 stops with one line naming file, row and field (was: OverflowError)."""
    rows = ["3,124,1996,1,1"] * 3 + [f"7,{code},2018,1,2"] + ["7,124,2018,1,1"]
    path = _csv(tmp_path, rows)
    with pytest.raises(SourceError, match=f"expected a whole-number code here, got {shown}") as info:
        build(wvs=path, registry=registry_file(), allow_missing_questions=True)
    assert (info.value.file, info.value.row, info.value.field) == (str(path), 5, "S003")
    assert "\n" not in str(info.value)
    _assert_nothing_written(tmp_path)


@pytest.mark.parametrize(("registry", "message"), [
    ({"wvs": {"questions": ["A008", "A001"]}}, r"wvs.questions\[1\]: each question must be a mapping"),
    ({"wvs": {"questions": [["id", "wvs_A008"]]}}, r"wvs.questions\[1\]: each question must be a mapping"),
    ({"wvs": {"questions": {"id": "wvs_A008"}}}, r"entry wvs: 'questions' must be a list"),
    ({"wvs": ["questions"]}, r"entry wvs: 'wvs' must be a mapping"),
    ({"issp": {"studies": ["ZA1950"]}}, r"issp.studies\[1\]: each study must be a mapping"),
    ({"issp": {"studies": [], "questions": [{"id": "q", "module": "m", "text": "Q?", "sources": ["ZA1"],
                                             "category": "Family, health, and social attitudes",
                                             "options": [{"code": 1, "label": "a"}, {"code": 2, "label": "b"}]}]}},
     r"entry q: 'sources' must be a mapping"),
])
def test_registry_whose_entries_are_not_mappings(tmp_path, registry_file, registry, message):
    """A registry with questions that are not mappings: one-line error naming the entry (was: AttributeError)."""
    from histbench.builders.chronoculture.registry import load_registry

    path = registry_file({"format": "chronoculture-registry/1", **registry})
    with pytest.raises(SourceError, match=message) as info:
        load_registry(path)
    assert info.value.file == str(path)
    top = tmp_path / "list.yaml"
    top.write_text("- format: chronoculture-registry/1\n")
    with pytest.raises(SourceError, match="must be a mapping with 'format'"):
        load_registry(top)


def test_all_weights_missing_names_the_file_and_weight_column(wvs_file, build, registry_file, groups, issp_file):
    """Was: 'every config is empty'. Now: the file and the weight variable, with the counts."""
    import numpy as np

    bad = [dict(g, weight=np.nan) for g in groups]
    path = wvs_file(bad)
    with pytest.raises(SourceError, match=r"no respondent has a usable weight: all 1,200 respondents .* missing \(1,200\)") as info:
        build(wvs=path, registry=registry_file())
    assert (info.value.file, info.value.field) == (str(path), "S017")
    issp = issp_file("ZA1950.sav", [{"v3": 1, "answers": {1: 600}, "weight": 0.0}])
    with pytest.raises(SourceError, match=r"zero \(600\)") as info:
        build(issp=[issp], registry=registry_file())
    assert info.value.field == "v114"


def test_every_answer_invalid_says_so(wvs_file, build, registry_file):
    """Was: 'every config is empty'. Now: the reason, with the invalid codes counted."""
    groups = [{"country": 124, "wave": 3, "year": 1996, "A008": {-1: 500, -2: 100}},
              {"country": 124, "wave": 7, "year": 2018, "A008": {-1: 600}}]
    path = wvs_file(groups)
    # (C001, absent from these groups, is written as -4: not asked)
    with pytest.raises(SourceError, match=r"no temporal pair can be formed: WVS: every answer is invalid "
                                          r"\(codes -4 x1,200, -2 x100, -1 x1,100\)") as info:
        build(wvs=path, registry=registry_file())
    assert str(path) in info.value.file


def test_exclusions_that_change_the_result_are_printed(wvs_file, build, registry_file, happy_counts, capsys):
    """Off-scale codes above 1% of a variable's answers, cells dropped for missing weights and registry
    variables absent from the file go to the console, not only to histbench.json."""
    import numpy as np

    groups = [
        {"country": 124, "wave": 3, "year": 1996, "A008": happy_counts(600, invalid={6: 20})},  # 6: off the scale
        {"country": 124, "wave": 7, "year": 2018, "A008": happy_counts(600, invalid={6: 15})},
        {"country": 276, "wave": 3, "year": 1996, "A008": happy_counts(600), "weight": np.nan},  # all weights missing
        {"country": 276, "wave": 7, "year": 2018, "A008": happy_counts(600)},
    ]
    out = build(wvs=wvs_file(groups, drop=("C001",)), registry=registry_file(), allow_missing_questions=True)
    err = capsys.readouterr().err
    assert "registry variable(s) are not in the file and were skipped: C001" in err
    assert "neither options nor invalid above 1% of their answers" in err and "wvs_A008 (wvs.sav:A008): 1.4% of answers (6 x35)" in err
    assert "1 question x country x period cell(s) dropped because none of their valid answers has a usable weight" in err
    assert "wvs_A008 DEU wave 3" in err
    assert out["summary"]["exclusions"]["cells_missing_weight"] == {"wvs.sav": ["wvs_A008 DEU wave 3"]}
    assert out["summary"]["exclusions"]["off_scale_codes_above_1_percent"][0].startswith("wvs_A008 (wvs.sav:A008)")


# ------------------------------------------------------------------ issue 14: a labelled CSV export
def test_labelled_csv_answers_map_through_the_registry(wvs_file, build, registry_file, happy_counts, tmp_path):
    """A CSV export that writes answers as labels gives the same pairs as the numeric one (was: all
    answers read as missing, so every cell 'not asked' and the pairs vanished silently)."""
    groups = [{"country": 124, "wave": 3, "year": 1996, "A008": happy_counts(600, invalid={-1: 10, -2: 5})},
              {"country": 124, "wave": 7, "year": 2018, "A008": happy_counts(600, (0.1, 0.2, 0.3, 0.4))}]
    numeric = wvs_file(groups, name="numeric.csv", drop=("C001",))
    frame = pd.read_csv(numeric)
    names = {1: "Very happy", 2: "quite happy", 3: "Not very happy ", 4: "Not at all happy", -1: "Don't know",
             -2: "No answer"}
    frame["A008"] = frame["A008"].map(names)
    frame["S003"] = frame["S003"].map({124: "Canada"})
    labelled = tmp_path / "labelled.csv"
    frame.to_csv(labelled, index=False)
    a = build(wvs=numeric, registry=registry_file(), allow_missing_questions=True)
    b = build(wvs=labelled, registry=registry_file(), allow_missing_questions=True)
    assert [p["G_old"] for p in a["pairs"]] == [p["G_old"] for p in b["pairs"]] and len(b["pairs"]) == 1
    assert b["summary"]["exclusions"]["invalid_answers"]["WVS"] == {"-2": 5, "-1": 10}
    report = b["summary"]["exclusions"]["respondents_per_file"][0]
    assert report["csv_answers_mapped_from_labels"] == {"S003": 1215, "A008": 1215}


def test_labelled_csv_answer_the_registry_cannot_map(build, registry_file, tmp_path):
    path = tmp_path / "wvs.csv"
    path.write_text("S002VS,S003,S020,S017,A008\n3,124,1996,1,Very happy\n7,124,2018,1,Rather happy\n")
    with pytest.raises(SourceError, match=r"answers as text that the registry cannot map to codes \('Rather happy'\)") as info:
        build(wvs=path, registry=registry_file(), allow_missing_questions=True)
    assert (info.value.row, info.value.field) == (3, "A008")
    # issue 40: the message names the options it expected (not only the non-answer labels) and what it found
    assert ("labels expected (the registry's options, then non-answers): 'Very happy', 'Quite happy', "
            "'Not very happy', 'Not at all happy', \"Don't know\"") in info.value.message
    assert "labels found: 'Very happy', 'Rather happy'" in info.value.message


def test_labelled_issp_csv_export(issp_file, build, registry_file, tmp_path):
    """An ISSP module file exported to CSV with labels: options and "Can't choose" map through the registry."""
    numeric = issp_file("ZA1950.sav", [{"v3": 1, "answers": {1: 300, 2: 200, 3: 80, 4: 20, 8: 30}}])
    df, _ = pyreadstat.read_sav(numeric)
    names = {1.0: "Definitely should be", 2.0: "Probably should be", 3.0: "Probably should not be",
             4.0: "Definitely should not be", 8.0: "Can't choose"}
    df["v49"] = df["v49"].map(names)
    csv = tmp_path / "ZA2900.csv"
    df.rename(columns={"v49": "v36", "v114": "v325"}).to_csv(csv, index=False)
    out = build(issp=[numeric, csv], registry=registry_file())
    pair = out["pairs"][0]
    assert pair["G_old"] == pytest.approx(pair["G_new"]) and pair["n_new"] == 600
    assert out["summary"]["exclusions"]["invalid_answers"]["ISSP"] == {"8": 60}


def test_labelled_csv_export_of_a_ten_point_scale(build, registry_data, registry_file, tmp_path):
    """A WVS CSV exported with labels writes the ends of a 10-point item as their words ("Completely
    dissatisfied", "Completely satisfied") and the points between as numbers: the ends map to 1 and 10
    through the scale's end labels (was: the build stopped, the registry's labels being "1 (...)")."""
    registry_data["wvs"]["questions"] = [{
        "id": "wvs_A170", "variable": "A170", "topic": "Perceptions of life",
        "category": "Family, health, and social attitudes", "text": "How satisfied are you with your life?",
        "scale": {"from": 1, "to": 10, "low": "completely dissatisfied", "high": "completely satisfied",
                  "high_aliases": ["Satisfied"]}}]
    rng = np.random.default_rng(3)
    rows = []
    for wave, year, p in ((3, 1996, np.linspace(1, 2, 10)), (7, 2018, np.linspace(2, 1, 10))):
        answers = rng.choice(np.arange(1, 11), size=700, p=p / p.sum())
        rows += [{"S002VS": wave, "S003": 124, "S020": year, "S017": 1.0, "A170": a} for a in answers]
    rows[-1]["A170"] = 10
    numeric = tmp_path / "numeric.csv"
    pd.DataFrame(rows).to_csv(numeric, index=False)
    labelled = tmp_path / "labelled.csv"
    frame = pd.DataFrame(rows)
    frame["A170"] = frame["A170"].map(lambda a: {1: "Completely dissatisfied", 10: "Completely satisfied"}.get(a, str(a)))
    frame.loc[frame.index[-1], "A170"] = "satisfied"  # another wording the registry gives for 10
    frame.to_csv(labelled, index=False)
    registry = registry_file(registry_data)
    a, b = build(wvs=numeric, registry=registry), build(wvs=labelled, registry=registry)
    assert len(b["pairs"]) == 1 and b["pairs"][0]["G_old"] == pytest.approx(a["pairs"][0]["G_old"])
    assert b["pairs"][0]["G_new"] == pytest.approx(a["pairs"][0]["G_new"])
    ends = int((frame["A170"].str.len() > 2).sum())
    assert b["summary"]["exclusions"]["respondents_per_file"][0]["csv_answers_mapped_from_labels"] == {"A170": ends}


def test_labelled_csv_with_other_end_words_names_the_options_it_expected(build, registry_data, registry_file,
                                                                          tmp_path):
    """Issue 40: a labelled WVS CSV whose end labels differ from the registry's ("Dissatisfied" for
    "Completely dissatisfied") stops with a message that names the scale's labels it expected, the
    options first, and the labels the column holds (was: only the first eight non-answer labels)."""
    registry_data["wvs"]["questions"] = [{
        "id": "wvs_A170", "variable": "A170", "topic": "Perceptions of life",
        "category": "Family, health, and social attitudes", "text": "How satisfied are you with your life?",
        "scale": {"from": 1, "to": 10, "low": "completely dissatisfied", "high": "completely satisfied"}}]
    path = tmp_path / "wvs.csv"
    path.write_text("S002VS,S003,S020,S017,A170\n3,124,1996,1,Dissatisfied\n7,124,2018,1,5\n"
                    "7,124,2018,1,Completely satisfied\n")
    with pytest.raises(SourceError) as info:
        build(wvs=path, registry=registry_file(registry_data))
    message = info.value.message
    assert "cannot map to codes ('Dissatisfied')" in message and (info.value.row, info.value.field) == (2, "A170")
    assert ("labels expected (the registry's options, then non-answers): '1 (completely dissatisfied)', "
            "'completely dissatisfied', '2', '3'") in message
    assert "'10 (completely satisfied)', 'completely satisfied', \"Don't know\"" in message
    assert "labels found: 'Dissatisfied', 'Completely satisfied'" in message
