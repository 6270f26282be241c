"""Issue 40: a variable found by its label is never the wrong one.

Files are written with pyreadstat in the layout of the GESIS ISSP files (upper-case
abbreviated variable labels such as "GETTING AHEAD: GOOD EDUCATION", value labels such
as "Very imp", missing codes such as 0 "Not available (BG, CL, ...)", the self-placement
scale coded 1 "Top" .. 10 "Bottom" as ZA2310's V73), each holding the true item or not and
decoys beside it. The locator must take the true item with its codes read the right way
round, or refuse with one line naming the question, the candidate variables and why each
was refused; it must never take another variable.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histbench.builders.chronoculture.locate import Located, NotLocated, locate_question
from histbench.builders.chronoculture.readers import read_meta
from histbench.builders.chronoculture.registry import load_registry
from histbench.core.errors import SourceError
from histbench.core.resources import Resources

from .test_build_locate import write_issp

SOURCES = Resources.default().source_dir("chronoculture")
REGISTRY = load_registry(SOURCES / "registry.yaml")
QUESTIONS = {q.id: q for q in REGISTRY.issp_questions}
MISSING_1999 = {0: "Not available (BG, CL, CY, LV, PH, RU, SK)", 8: "Can't choose", 9: "NA"}
ESSENTIAL_GESIS = {1: "Essential", 2: "Very imp", 3: "Fairly imp", 4: "Not very imp", 5: "Not imp at all"}
ESSENTIAL_FULL = {1: "Essential", 2: "Very important", 3: "Fairly important", 4: "Not very important",
                  5: "Not important at all"}
HOW_MANY = {1: "Almost none", 2: "A few", 3: "Some", 4: "Quite a lot", 5: "Almost all"}
AGREE = {1: "Strongly agree", 2: "Agree", 3: "Neither agree nor disagree", 4: "Disagree", 5: "Strongly disagree"}


def write_layout(path: Path, columns: dict[str, tuple[str, dict | None]], rows: int = 6) -> Path:
    """A .sav file with the given variables (label, value labels), in the given order; the answers
    cycle through the labelled codes (the locator reads labels, not answers)."""
    data = {}
    for name, (_, labels) in columns.items():
        codes = sorted(labels) if labels else [1.0]
        data[name] = [float(codes[i % len(codes)]) for i in range(rows)]
    pyreadstat.write_sav(pd.DataFrame(data), path, column_labels={c: spec[0] for c, spec in columns.items()},
                         variable_value_labels={c: spec[1] for c, spec in columns.items() if spec[1]})
    return path


def locate(tmp_path: Path, qid: str, columns: dict) -> Located:
    return locate_question(read_meta(write_layout(tmp_path / "ZA3430.sav", columns)), QUESTIONS[qid])


def test_abbreviated_true_labels_beside_a_full_label_decoy_are_not_decided_by_text(tmp_path):
    """The true item (GESIS's abbreviated labels) and a variable whose full label matches the pattern
    with the same answer scale: both fit, so neither is taken (the decoy used to win: text beat position)."""
    columns = {"v6": ("GETTING AHEAD: GOOD EDUCATION", {**ESSENTIAL_GESIS, **MISSING_1999}),
               "v70": ("Importance of own education for your present job", {**ESSENTIAL_FULL, 8: "Can't choose"})}
    with pytest.raises(NotLocated) as caught:
        locate(tmp_path, "issp_si_ahead_education", columns)
    line = str(caught.value)
    assert "question issp_si_ahead_education" in line and "v6 'GETTING AHEAD: GOOD EDUCATION'" in line
    assert "v70 'Importance of own education for your present job'" in line and "\n" not in line
    assert set(caught.value.candidates) == {"v6", "v70"}
    # a decoy on another scale is refused, and the true item is read from its abbreviated labels
    columns["v70"] = ("Importance of own education for your present job", {**HOW_MANY, 8: "Can't choose"})
    found = locate(tmp_path, "issp_si_ahead_education", columns)
    assert (found.variable, found.how) == ("v6", "label, abbreviated value labels")
    assert found.codes == tuple((float(c),) for c in range(1, 6)) and found.label == "GETTING AHEAD: GOOD EDUCATION"
    assert 0.0 in found.invalid  # "Not available (BG, CL, ...)" is a missing-value label, however long


def test_item_absent_and_a_same_size_decoy_is_refused(tmp_path):
    """Five codes with other answers ("Almost none" .. "Almost all") are not the five-point agree item."""
    columns = {"v30": ("HOW MANY POLITICIANS INVOLVED IN CORRUPTION", {**HOW_MANY, **MISSING_1999})}
    with pytest.raises(NotLocated) as caught:
        locate(tmp_path, "issp_si_top_corrupt", columns)
    assert "v30 'HOW MANY POLITICIANS INVOLVED IN CORRUPTION': value labels (1='Almost none'" in str(caught.value)
    assert "do not carry the options ('Strongly agree'" in str(caught.value)


def test_reversed_scale_is_read_reversed(tmp_path):
    reverse = {6 - k: v for k, v in AGREE.items()}
    found = locate(tmp_path, "issp_si_top_corrupt", {"v18": ("TOP: HAVE TO BE CORRUPT", {**reverse, **MISSING_1999})})
    assert found.how == "label, reversed" and found.codes == tuple((float(c),) for c in range(5, 0, -1))


def test_reversed_numeric_scale_is_read_reversed(tmp_path):
    top_bottom = {1: "Top", **{c: str(c) for c in range(2, 10)}, 10: "Bottom", 98: "Can't choose", 99: "NA"}
    found = locate(tmp_path, "issp_si_self_placement", {"v46": ("R: SELF-PLACEMENT TOP BOTTOM SCALE", None),
                                                        "v47": ("Groups at the top and at the bottom: where are you",
                                                                top_bottom)})
    assert (found.variable, found.how) == ("v47", "label, numeric scale, reversed")
    assert found.codes[0] == (10.0,) and found.codes[-1] == (1.0,)  # option 1, the bottom, is code 10
    with pytest.raises(NotLocated, match="do not say which end"):
        locate(tmp_path, "issp_si_self_placement", {"v47": ("Groups at the top and at the bottom: where are you",
                                                            {1: "1", 10: "10"})})


def test_split_ballot_twin_is_refused(tmp_path):
    labels = {**ESSENTIAL_FULL, **MISSING_1999}
    columns = {"v6": ("GETTING AHEAD: GOOD EDUCATION", labels),
               "v6b": ("GETTING AHEAD: GOOD EDUCATION (SPLIT B)", labels)}
    with pytest.raises(NotLocated, match=r"several variables fit \(v6 .*, v6b .*\): pin the right one"):
        locate(tmp_path, "issp_si_ahead_education", columns)


def test_reversed_self_placement_gives_the_stable_pair_it_is(tmp_path, build, capsys):
    """The issue's case in a build: a 1999 file coded 1 "Top" .. 10 "Bottom" and the pinned 2009 V44
    (1 bottom .. 10 top) with the same attitudes give a stable pair (d_h 0), not a very strong one;
    the console names the variable found and its label."""
    shares = np.array([2, 3, 6, 10, 18, 22, 17, 12, 6, 4]) / 100
    n = 1000
    counts = np.floor(shares * n).astype(int)
    counts[0] += n - counts.sum()
    forward = {c + 1: int(k) for c, k in enumerate(counts)}
    backward = {10 - c: int(k) for c, k in enumerate(counts)}
    top_bottom = {1: "Top", 10: "Bottom", 98: "Can't choose", 99: "NA", 0: "Not available (BG, CL, ...)"}
    old = write_issp(tmp_path / "ZA3430.sav", [{"size": n, "v3": 36, "weight": 1.0, "v47": backward}],
                     {"v3": ("Country", {36: "AU-Australia"}),
                      "v47": ("Q13 Groups tending towards top and bottom: self", top_bottom),
                      "weight": ("Weighting factor", None)})
    new = write_issp(tmp_path / "ZA5400.sav", [{"size": n, "C_ALPHAN": "AU", "WEIGHT": 1.0, "V44": forward}],
                     {"C_ALPHAN": ("Country Prefix ISO 3166 Code - alphanumeric", None),
                      "V44": ("Q11 Groups tending towards top and bottom. Where would you put yourself?",
                              {1: "Lowest, Bottom, 01", 10: "Highest, Top, 10", 98: "Can't choose", 99: "No answer"}),
                      "WEIGHT": ("Weighting factor", None)}, string_columns=("C_ALPHAN",))
    out = build(issp=[old, new], allow_missing_questions=True)
    pair = {p["pair_id"]: p for p in out["pairs"]}["issp_si_self_placement__AUS"]
    assert pair["G_old"] == pytest.approx(pair["G_new"]) and pair["d_h"] == pytest.approx(0.0, abs=1e-12)
    assert pair["G_old"][0] == pytest.approx(shares[0] + (n - np.floor(shares * n).sum()) / n)
    err = capsys.readouterr().err
    assert ("found by label: issp_si_self_placement -> ZA3430.sav:v47 'Q13 Groups tending towards top and bottom: "
            "self' (label, numeric scale, reversed)") in err
    report = {f["file"]: f for f in out["summary"]["exclusions"]["respondents_per_file"]}
    assert report["ZA5400.sav"]["questions_pinned"]["issp_si_self_placement"] == "V44"
    card = (out["folder"] / "README.md").read_text(encoding="utf-8")
    assert "| `issp_si_self_placement` | `ZA3430.sav:v47` | Q13 Groups tending towards top and bottom: self |" in card


def test_a_variable_pinned_for_two_questions_stops_the_build(tmp_path, registry_file, registry_data):
    registry_data["issp"]["questions"].append({**registry_data["issp"]["questions"][0], "id": "issp_rog_jobs_again",
                                               "sources": {"ZA1950": "V49"}})
    with pytest.raises(SourceError, match="issp_rog_jobs, issp_rog_jobs_again: both pin variable V49 of study "
                                          "ZA1950; one variable holds one question"):
        load_registry(registry_file(registry_data))


@pytest.mark.parametrize("label, missing", [
    ("Not available (BG, CL, CY, LV, PH, RU, SK)", True), ("Not applicable/ not available: NZ, ZA, SE", True),
    ("NAV (PT)", True), ("Can't choose, don't know", True), ("Does not apply/NA", True), ("8. No answer", True),
    ("NAP (Code 0 in countries that did not ask the question: AT, BE, CH, ...)", True),
    ("I don't know whether there is a God and I don't believe there is any way to find out", False),
    ("Don't know whether to agree", False), ("Not important at all", False), ("Navigator", False), ("None", False),
])
def test_missing_value_labels_are_read_by_meaning_not_length(label, missing):
    from histbench.builders.chronoculture.locate import is_non_answer

    assert is_non_answer(0, label) is missing


# ------------------------------------------------------------------ property: an outside generator of decoys
CASES = {  # question -> (labels of the true item, labels of decoys its pattern also matches)
    "issp_rog_jobs": (["GOVT RESP: PROVIDE JOB FOR EVERYONE", "Q7a Gov responsibility: provide job for everyone"],
                      ["Govt should provide jobs for all who want to work (split ballot)",
                       "Provide a job for everyone: own opinion"]),
    "issp_si_ahead_education": (["GETTING AHEAD: GOOD EDUCATION", "Q1b Getting ahead: having a good education"],
                                ["Importance of own education for your present job",
                                 "GETTING AHEAD: GOOD EDUCATION OF CHILDREN"]),
    "issp_si_top_corrupt": (["TOP: HAVE TO BE CORRUPT", "Q2a Getting ahead: you have to be corrupt"],
                            ["How many politicians are involved in corruption", "CORRUPTION IN PUBLIC SERVICE"]),
    "issp_rog_power_unions": (["POWER OF TRADE UNIONS", "Q18a Power of trade unions"],
                              ["Trade unions: too much power in your workplace", "UNION MEMBER: POWER AT WORK"]),
    "issp_si_self_placement": (["Q11 Groups tending towards top and bottom: self", "TOP BOTTOM: WHERE PLACE YOURSELF"],
                               ["Top or bottom 10 years ago: place yourself", "FAMILY: TOP OR BOTTOM, SELF-PLACEMENT"]),
}
OTHER_SCALES = [
    {1: "Almost none", 2: "A few", 3: "Some", 4: "Quite a lot", 5: "Almost all"},
    {1: "Very good", 2: "Good", 3: "Bad", 4: "Very bad"},
    {1: "Always", 2: "Often", 3: "Sometimes", 4: "Never"},
    {1: "Yes", 2: "No"},
    {1: "Left", 10: "Right"},
    {1: "Completely satisfied", 2: "Very satisfied", 3: "Fairly satisfied", 4: "Neither", 5: "Fairly dissatisfied"},
]
MISSING = [{}, {8: "Can't choose", 9: "NA"}, {-8: "Can't choose", -9: "No answer", -4: "NAP: ES, JP"},
           {0: "Not available (BG, CL, ...)", 8: "Can't choose, don't know", 9: "No answer, refused"},
           {97: "Refused", 98: "Don't know", 99: "No answer"}]


def _shorter(label: str, draw) -> str:
    """A GESIS-style shorter label: each word cut to a first-letters prefix, case changed."""
    words = []
    for word in label.split():
        keep = draw(st.integers(min_value=min(len(word), 3), max_value=len(word)))
        words.append(word[:keep])
    text = " ".join(words)
    return draw(st.sampled_from([text, text.upper(), text.lower()]))


def _true_labels(question, direction: int, style: str, draw) -> tuple[dict, list[float]]:
    """Value labels of the true item and the code of each option (as written)."""
    k = len(question.options)
    if question.is_scale:
        low, high = question.options[0].codes[0], question.options[-1].codes[0]
        ends = {"bottom": ["Bottom", "Lowest, bottom", "01 Bottom"], "top": ["Top", "Highest, top", "10 Top"]}
        first, last = ("bottom", "top") if direction > 0 else ("top", "bottom")
        labels = {low: draw(st.sampled_from(ends[first])), high: draw(st.sampled_from(ends[last]))}
        codes = [o.codes[0] for o in question.options]
        return labels, codes if direction > 0 else list(reversed(codes))
    codes = list(range(1, k + 1)) if direction > 0 else list(range(k, 0, -1))
    labels = {}
    for option, code in zip(question.options, codes, strict=True):
        text = option.label if style == "full" else _shorter(option.label, draw)
        labels[float(code)] = text
    return labels, [float(c) for c in codes]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_generated_decoy_is_ever_taken(data):
    draw = data.draw
    qid = draw(st.sampled_from(sorted(CASES)))
    question = QUESTIONS[qid]
    true_names, decoy_names = CASES[qid]
    present = draw(st.booleans())
    direction = draw(st.sampled_from([1, -1]))
    style = draw(st.sampled_from(["full", "short"]))
    missing = draw(st.sampled_from(MISSING))
    columns: dict[str, tuple[str, dict | None]] = {"V3": ("Country/ Sample", {36: "AU-Australia", 276: "DE-Germany"})}
    expected_codes = None
    if present:
        labels, expected_codes = _true_labels(question, direction, style, draw)
        columns["V_TRUE"] = (draw(st.sampled_from(true_names)), {**labels, **missing})
    decoys = draw(st.lists(st.sampled_from(["other_scale", "twin", "renamed", "unrelated"]), max_size=2))
    for i, kind in enumerate(decoys):
        name = f"V_DECOY{i}"
        if kind == "other_scale":
            columns[name] = (draw(st.sampled_from(decoy_names)), {**draw(st.sampled_from(OTHER_SCALES)), **missing})
        elif kind == "twin" and present:
            columns[name] = (columns["V_TRUE"][0] + draw(st.sampled_from(["", " (split ballot B)", " - version B"])),
                             dict(columns["V_TRUE"][1]))
        elif kind == "renamed" and present:  # the true item's value labels under another question's label
            columns[name] = (draw(st.sampled_from(decoy_names)), dict(columns["V_TRUE"][1]))
        else:
            columns[name] = ("Respondent's year of birth", {1: "Before 1950", 2: "1950 or later"})
    order = draw(st.permutations(list(columns)))
    columns = {c: columns[c] for c in order}
    with tempfile.TemporaryDirectory() as folder:
        meta = read_meta(write_layout(Path(folder) / "ZA9999.sav", columns))
        try:
            found = locate_question(meta, question)
        except NotLocated as refusal:
            line = str(refusal)
            assert "\n" not in line and f"question {qid}:" in line
            matched = [c for c in columns if question.label_pattern.search(columns[c][0])]
            for column in matched:  # every candidate is named, with why it was refused
                assert column in line and column in refusal.candidates and refusal.candidates[column]
            twins = [c for c in matched if c != "V_TRUE" and columns[c][1] == columns.get("V_TRUE", ("", None))[1]]
            if present and "V_TRUE" in matched and not twins and style == "full":
                pytest.fail(f"the true item alone with full labels was refused: {line}")
            return
    assert found.variable == "V_TRUE", (found, columns)
    assert [c for (c,) in found.codes] == expected_codes, (found, columns)
