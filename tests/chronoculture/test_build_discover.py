"""`--discover`: a draft registry from a file's variables and value labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyreadstat
import pytest
import yaml

from histbench.builders.chronoculture.registry import load_registry
from histbench.builders.cli import main
from histbench.builders.core.errors import SourceError


def _discover(argv) -> int:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code


def test_discover_wvs_candidates_and_reasons(wvs_file, tmp_path, happy_counts, build):
    path = wvs_file([
        {"country": 124, "wave": 3, "year": 1996, "A008": happy_counts(600)},
        {"country": 124, "wave": 7, "year": 2018, "A008": happy_counts(600), "C001": {1: 300, 2: 300}},
    ])
    df, meta = pyreadstat.read_sav(path, user_missing=True)
    df["X001"] = 1.0  # demographic: skipped
    df["A009"] = np.where(df["S002VS"] == 3, 5.0, 1.0)  # code 5 used but not labelled
    df["A010"] = 2.0  # labelled, but codes 1, 2, 7 are not consecutive
    labels = dict(meta.variable_value_labels)
    labels["X001"] = {1: "Male", 2: "Female"}
    labels["A009"] = {1: "Good", 2: "Fair", 3: "Poor"}
    labels["A010"] = {1: "Yes", 2: "No", 7: "Other"}
    pyreadstat.write_sav(pd.DataFrame(df), path, variable_value_labels=labels,
                         column_labels={"A008": "Feeling of happiness"})
    out = tmp_path / "draft.yaml"
    assert _discover(["build", "chronoculture", "--wvs", str(path), "--discover", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# DRAFT chronoculture question registry")
    draft = yaml.safe_load(text)
    questions = {q["variable"]: q for q in draft["wvs"]["questions"]}
    assert sorted(questions) == ["A008"]
    a008 = questions["A008"]
    assert a008["draft"] is True and a008["category"] is None and a008["text"] == "Feeling of happiness"
    assert a008["waves_asked"] == [3, 7]
    assert [o["code"] for o in a008["options"]] == [1, 2, 3, 4]
    assert a008["invalid_codes"] == [-5, -4, -3, -2, -1]
    assert "asked_in_fewer_than_2_waves" in text and "unlabelled_codes_used" in text
    assert "answer_codes_not_consecutive" in text

    # a draft cannot be built from; once curated it can
    with pytest.raises(SourceError, match="still a --discover draft"):
        load_registry(out)
    a008.pop("draft")
    a008["category"] = "Family, health, and social attitudes"
    curated = tmp_path / "curated.yaml"
    curated.write_text(yaml.safe_dump(draft, sort_keys=False))
    result = build(wvs=path, registry=curated)
    assert [p["pair_id"] for p in result["pairs"]] == ["wvs_A008__CAN"]


def test_discover_issp_module_file(issp_file, tmp_path):
    path = issp_file("ZA2900_v1.dta", [{"v3": 1, "answers": {1: 300, 2: 200, 8: 10}}], question_var="v36",
                     weight_var="v325")
    out = tmp_path / "issp.yaml"
    assert _discover(["build", "chronoculture", "--issp", str(path), "--discover", str(out)]) == 0
    draft = yaml.safe_load(out.read_text())
    study = draft["issp"]["studies"][0]
    assert study["id"] == "ZA2900" and study["weight"] == "v325" and study["country"]["variable"] == "v3"
    [question] = draft["issp"]["questions"]
    assert question["sources"] == {"ZA2900": "v36"}
    assert [o["code"] for o in question["options"]] == [1, 2, 3, 4]
    assert question["invalid_codes"] == [0, 8, 9]  # NAP, can't choose, NA: read from the labels


def test_discover_needs_a_file(tmp_path, capsys):
    assert main(["build", "chronoculture", "--discover", str(tmp_path / "x.yaml")]) == 2
    assert "--discover needs at least one survey file" in capsys.readouterr().err
