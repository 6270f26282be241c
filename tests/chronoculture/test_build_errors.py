"""Bad input: clear errors naming file/field, or counted exclusions; a failed build writes nothing."""

from __future__ import annotations

import pandas as pd
import pyreadstat
import pytest

from histbench.builders.chronoculture.readers import read_columns, read_meta
from histbench.builders.cli import main
from histbench.builders.core.errors import SourceError, UsageError


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
    assert list(frame.columns) == ["S002VS", "A008"]
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
    from histbench.builders.cli import make_parser

    parser = make_parser()
    args = parser.parse_args(["build", "chronoculture", "--wvs", "x.sav", "--min-respondents", "0"])
    with pytest.raises(UsageError):
        args.builder.options_from_args(args)
