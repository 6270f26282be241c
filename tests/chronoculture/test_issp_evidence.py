"""Real ISSP variable names and labels (sources/chronoculture/issp_evidence.yaml, issue 14 coverage):
the registry pins exactly what the evidence pins, its country and weight variables are those public
code reads from the real files, and its `label` patterns find each real label and no rival of the
same study, in files written with pyreadstat that carry the real labels."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
import yaml

from histbench.builders.chronoculture.countries import CountryTable
from histbench.builders.chronoculture.locate import (
    Located,
    NotLocated,
    country_from_label,
    is_non_answer,
    locate_question,
    match_options,
)
from histbench.builders.chronoculture.readers import read_meta
from histbench.builders.chronoculture.registry import load_registry
from histbench.core.resources import Resources

SOURCES = Resources.default().source_dir("chronoculture")
REGISTRY = load_registry(SOURCES / "registry.yaml")
QUESTIONS = {q.id: q for q in REGISTRY.issp_questions}
STUDIES = {s.id: s for s in REGISTRY.studies}
EVIDENCE = yaml.safe_load((SOURCES / "issp_evidence.yaml").read_text(encoding="utf-8"))
DOCUMENTS = EVIDENCE["documents"]
# pinned since the registry's first version, shown by no document re-read (the evidence lists them)
FIRST_VERSION = {(p["study"], p["question"], p["variable"]) for p in EVIDENCE["first_version_pins"]}
FORMS = {"exact", "codebook", "label_to_name", "retyped", "none"}
BATTERY = re.compile(r"^(?:optional\s+)?q(\d+)[a-z]?\b", re.IGNORECASE)


def entries(study_id):
    study = EVIDENCE["studies"][study_id]
    for entry in study.get("variables") or []:
        yield {"document": study.get("document"), **entry}


def label_text(entry) -> str:
    """The label as a file holds it; label_to_name forms (CRI team 20) read '_' as a blank."""
    form = entry.get("form") or DOCUMENTS[entry.get("label_document") or entry["document"]]["form"]
    return entry["label"].replace("_", " ") if form == "label_to_name" else entry["label"]


def value_labels(study_id, entry):
    labels = entry.get("value_labels")
    if isinstance(labels, str):
        labels = EVIDENCE["studies"][study_id]["value_label_sets"][labels]
    return {float(k): str(v) for k, v in labels.items()} if labels else None


def test_evidence_names_every_registry_study_and_cites_its_documents():
    assert set(EVIDENCE["studies"]) == set(STUDIES)
    assert EVIDENCE["format"] == "chronoculture-issp-evidence/1"
    for doc in DOCUMENTS.values():
        assert doc["form"] in FORMS and doc["where"] and doc["what"] and isinstance(doc["attributable"], bool)
        if doc["attributable"]:  # a repository and path, or a URL
            assert doc["where"].startswith(("GitHub ", "https://")), doc["where"]
        else:
            assert "repository not identified" in doc["where"], doc["where"]
    for sid, study in EVIDENCE["studies"].items():
        assert study["unconfirmed"].strip(), sid  # what stays unconfirmed, and why
        for entry in entries(sid):
            assert entry["document"] in DOCUMENTS and entry.get("label_document", entry["document"]) in DOCUMENTS, (sid, entry)
            assert entry["variable"] or entry["label"], (sid, entry)
            if entry.get("question"):
                question = QUESTIONS[entry["question"]]
                assert question.topic == STUDIES[sid].module, (sid, entry["question"])
        variables = [e["variable"].lower() for e in entries(sid) if e["variable"]]
        assert len(variables) == len(set(variables)), sid
    for sid, row in EVIDENCE["pilerdb"].items():
        assert row["file"].startswith(sid) and sid in STUDIES


def test_registry_pins_exactly_the_pinned_evidence():
    """A variable is pinned only where a citable document shows it in the study's file."""
    pinned_registry, pinned_evidence = set(), set()
    for question in REGISTRY.issp_questions:
        for source in question.sources:
            if (source.study, question.id, source.variable) not in FIRST_VERSION:
                pinned_registry.add((source.study, question.id, source.variable, source.invalid_codes))
    for sid in EVIDENCE["studies"]:
        for entry in entries(sid):
            if entry.get("pin"):
                assert entry["variable"] and entry["question"], (sid, entry)
                assert DOCUMENTS[entry["document"]]["attributable"], (sid, entry)
                invalid = tuple(float(c) for c in entry["invalid_codes"]) if "invalid_codes" in entry else None
                pinned_evidence.add((sid, entry["question"], entry["variable"], invalid))
    assert pinned_registry == pinned_evidence
    for study, qid, variable in FIRST_VERSION:
        assert QUESTIONS[qid].source_for(study).variable == variable
    assert not FIRST_VERSION  # ZA2900 v37 and v40, the last two, are now named by CRI teams 23 and 31


def test_country_and_weight_are_those_pilerdb_reads_from_the_real_files():
    """The registry's fixed country and weight variables are the ones PilerDB's data definitions read
    (case aside: ZA4700 has 'weight' in its first edition, WEIGHT in v2.0.0); ZA4700's country stays
    auto because its first edition has V3/V3a and no c_alphan (nbreznau/CRI colnames)."""
    for sid, row in EVIDENCE["pilerdb"].items():
        study = STUDIES[sid]
        assert study.weight is not None and study.weight.lower() == row["weight"].lower(), sid
        if sid == "ZA4700":
            assert study.country.auto
            continue
        assert study.country.variable.lower() == row["country"].lower(), sid
        coding = "alpha2" if row["country"].lower() == "c_alphan" else ("map", "label")
        assert study.country.coding in coding, sid
    assert STUDIES["ZA8000"].weight == "WEIGHT_COM"  # not WEIGHT: the 2021 file's own name
    za1680 = EVIDENCE["studies"]["ZA1680"]["country"]["codes"]
    assert STUDIES["ZA1680"].country.map == {float(k): v for k, v in za1680.items()}


@pytest.mark.parametrize("study_id", sorted(s for s in EVIDENCE["studies"]
                                          if any(e.get("label") for e in entries(s))))
def test_label_patterns_find_each_real_label_and_nothing_else(tmp_path, study_id):
    """A file written with pyreadstat holds every labelled variable the evidence quotes for the study;
    each question the evidence maps is located at its variable, and no other question of the module
    takes any of them (the registry's pins are set aside: this checks the patterns).

    Value labels are the real ones where the document gives them, else the question's options; an
    unmapped item gets the options of a mapped item of its battery (Qn), whose answer scale ISSP
    shares; an unmapped item with neither has no value labels and cannot be taken."""
    rows = [e for e in entries(study_id) if e.get("label")]
    battery = {}  # Qn -> the option sets of the mapped items of that battery
    for entry in rows:
        key = BATTERY.match(label_text(entry))
        if key and entry.get("question"):
            battery.setdefault(key.group(1), set()).add(QUESTIONS[entry["question"]].options)

    def options_labels(options):
        return {c: o.label for o in options for c in o.codes} | {8.0: "Can't choose", 9.0: "No answer"}

    columns, labels, values, expected = {}, {}, {}, {}
    for number, entry in enumerate(rows):
        name = entry["variable"] or f"X{number}"
        text = label_text(entry)
        columns[name], labels[name] = [1.0, 2.0], text
        question = QUESTIONS.get(entry.get("question") or "")
        real = value_labels(study_id, entry)
        key = BATTERY.match(text)
        if real is None and question is not None:
            real = options_labels(question.options)
        elif real is None and key and len(battery.get(key.group(1), ())) == 1:
            real = options_labels(next(iter(battery[key.group(1)])))
        if real is not None:
            values[name] = {int(c): v for c, v in real.items()}
        if question is not None:
            expected[question.id] = name
    path = tmp_path / f"{study_id}_evidence.sav"
    pyreadstat.write_sav(pd.DataFrame(columns), path, column_labels=labels, variable_value_labels=values)
    meta = read_meta(path)
    module = [q for q in REGISTRY.issp_questions if q.topic == STUDIES[study_id].module and q.label
              and study_id not in q.absent]  # the build never looks for an item the file lacks
    problems = []
    for question in module:
        try:
            found = locate_question(meta, question)
        except NotLocated as refusal:
            found = refusal.message
        want = expected.get(question.id)
        got = found.variable if isinstance(found, Located) else None
        if got != want:
            problems.append(f"{question.id}: expected {want}, located {got} ({found if got is None else found.how})")
    assert problems == []
    assert expected  # the study's evidence maps at least one question


# The patterns fixed against real labels: (question, a real label it must match, a real label of the
# same file it must not take, where both labels are quoted from). Each "rival" was taken by the old
# pattern, so these fail on the registry before the fix.
FIXED = [
    ("issp_rel_life_meaning_yourself", "Q19e Life meaningful, provide meaning yourself",
     "Q19c Life meaningful because God exists", "ZA4950 V46 / V44, promarket-catalogue"),
    ("issp_si_poor_children_university", "the government should provide more chances for children from poor families to go to university",
     "Q2c Getting ahead: In [Rs country] only the rich can afford the costs of attending university.",
     "the question's text / ZA5400 V19, promarket-catalogue"),
    ("issp_si_ahead_wealthy_family", "AHEAD:WEALTHY FAMILY",
     "Q2c Getting ahead: In [Rs country] only the rich can afford the costs of attending university.",
     "ZA1680 V4, za1680-codebook / ZA5400 V19, promarket-catalogue"),
    ("issp_si_ahead_education", "Q1c Getting ahead: How important is having a good education yourself?",
     "Q2b Getting ahead: In [Rs country] only stud from best sec schools good chance to obtain uni educ",
     "ZA5400 V8 / V18, promarket-catalogue"),
    ("issp_si_ahead_race", "Q1i Getting ahead: How important is a person's race?",
     "Q2d Getting ahead: In [Rs country] people same chances to enter uni, regardl of gender, ethnicity",
     "ZA5400 V14 / V20, promarket-catalogue"),
    ("issp_si_ahead_gender", "Q1k Getting ahead: How important is being born a man or a woman?",
     "Q2d Getting ahead: In [Rs country] people same chances to enter uni, regardl of gender, ethnicity",
     "ZA5400 V16 / V20, promarket-catalogue"),
    ("issp_si_tax_high_incomes", "Q7b Tax: Generally, how would you describe taxes in [Rs country] for those with high incomes?",
     "Q7a Tax: Do you think people with high incomes should pay larger share of their income in taxes",
     "ZA5400 V37 / V36, promarket-catalogue"),
    ("issp_rel_confidence_churches", "Q8c Confidence in churches and religious organizations",
     "Q12 Power of churches and religious organizations", "ZA4950 V16 / V26, promarket-catalogue"),
    ("issp_rel_churches_power", "Q12 Power of churches and religious organizations",
     "Optional Q6c Faithhealers have God-given healing powers", "ZA4950 V26 / V80, promarket-catalogue"),
    ("issp_work_proud_of_organisation", "I am proud to be working for my firm or organisation",
     "Q25b I am proud of the type of work I do", "the question's text / ZA6770-layout v49, chile-2015"),
    ("issp_work_job_satisfaction", "Q23 How satisfied are you in your (main) job",
     "Q4 Remain in not satisfying job for benefit of family life", "v44 / v13, chile-2015"),
    ("issp_env_worry_prices_jobs", "Q10a Worry about future environment",
     None, "ZA5500 v23, za5500-retyped (the old pattern wanted prices and jobs in the label)"),
]


@pytest.mark.parametrize(("question_id", "real", "rival", "source"), FIXED, ids=[f[0] for f in FIXED])
def test_fixed_patterns_take_the_real_label_and_not_its_rival(question_id, real, rival, source):
    pattern = QUESTIONS[question_id].label_pattern
    assert pattern.search(real), source
    assert rival is None or not pattern.search(rival), source


def test_real_value_labels_are_read_as_the_registry_means_them():
    """ZA5400's value labels (promarket-crosswalk): 'NAV (PT)' is a non-answer, not an answer code;
    'Larger' / 'Smaller' are the share options (matched by text, not only by position). ZA2900's
    (CRI team 20's factor levels, in their order): 'Definitely should' ... 'Definitely not'."""
    assert is_non_answer(0, "NAV (PT)") and is_non_answer(0, "NAV (JP)") and not is_non_answer(1, "Navigator")
    v36 = {1.0: "Much larger share", 2.0: "Larger", 3.0: "The same share", 4.0: "Smaller", 5.0: "Much smaller share",
           8.0: "Cant choose", 9.0: "NA"}
    codes, how = match_options(QUESTIONS["issp_si_tax_share_high_incomes"], v36)
    assert how == "label" and codes == ((1.0,), (2.0,), (3.0,), (4.0,), (5.0,))
    v51 = {0.0: "NAV (PT)", 1.0: "Essential", 2.0: "Very important", 3.0: "Fairly important", 4.0: "Not very important",
           5.0: "Not important at all", 8.0: "Cant choose", 9.0: "NA"}
    assert match_options(QUESTIONS["issp_si_pay_job_done_well"], v51)[1] == "label"
    za2900 = {1.0: "Definitely should", 2.0: "Probably should", 3.0: "Probably not", 4.0: "Definitely not",
              8.0: "Can't choose", 9.0: "NA"}
    assert match_options(QUESTIONS["issp_rog_students"], za2900) == (((1.0,), (2.0,), (3.0,), (4.0,)), "label")
    cuts = {1.0: "Strongly in favour", 2.0: "In favour", 3.0: "Neither nor", 4.0: "Against", 5.0: "Strongly against"}
    assert match_options(QUESTIONS["issp_rog_econ_spending_cuts"], cuts)[1] == "label"


# Country labels and sample codes as PilerDB's country.custom lists them for each file, with the unit
# this benchmark gives them (West and East Germany pooled, Israel's samples pooled, Northern Ireland
# its own unit).
UNITS = {"AUS": "AUS", "D": "DEU", "D-W": "DEU", "D-E": "DEU", "GB": "GBR", "USA": "USA", "A": "AUT", "I": "ITA",
         "H": "HUN", "NL": "NLD", "CH": "CHE", "PL": "POL", "IRL": "IRL", "NIRL": "NIR", "N": "NOR", "IL": "ISR",
         "S": "SWE", "CZ": "CZE", "SLO": "SVN", "RUS": "RUS", "NZ": "NZL", "RP": "PHL", "BG": "BGR", "CDN": "CAN",
         "J": "JPN", "E": "ESP", "LV": "LVA", "SK": "SVK", "IL-J": "ISR", "IL-A": "ISR", "IL_A": "ISR", "F": "FRA",
         "CY": "CYP", "P": "PRT", "DK": "DNK", "BUP": "BGD", "NORTHERN IRELAND - NIRL": "NIR",
         "GERMANY-EAST - D-E": "DEU", "NIRL- NORTHERN IRELAND": "NIR", "D-E - GERMANY-EAST": "DEU",
         "NIRL-NORTHERN IRELAND": "NIR", "D-E-GERMANY-EAST": "DEU", "NIRL NORTH IRELAND": "NIR",
         "D-E GERMANY EAST": "DEU", "GB-GBN": "GBR", "GB-NIR": "NIR", "BE-FLA": "BEL", "BE-WAL": "BEL", "BE-BRU": "BEL",
         "DE-E": "DEU", "DE-W": "DEU", "IL (A)": "ISR", "IL (J)": "ISR"}


def test_country_labels_of_the_real_files_name_their_units():
    table = CountryTable.load(SOURCES / "countries.csv")
    for sid, row in EVIDENCE["pilerdb"].items():
        study = STUDIES[sid]
        for label in row["country_labels"]:
            want = UNITS[label.upper()]
            if study.country.coding == "alpha2" or (study.country.auto and row["country"].lower() == "c_alphan"):
                got = table.from_text(label, "alpha2")  # C_ALPHAN values
            else:
                got = country_from_label(label, table)  # value labels of v3
            assert got is not None and got.alpha3 == want, (sid, label)


def test_pinned_sample_file_uses_the_real_2016_names():
    """The bundled ZA6900 sample carries the variable names and labels the evidence shows (v21-v27,
    c_alphan, WEIGHT), so the registry's 2016 pins read it."""
    _, meta = pyreadstat.read_sav(str(SOURCES / "sample" / "ZA6900_synthetic.sav"), metadataonly=True)
    assert {"c_alphan", "WEIGHT", "v21", "v23", "v24", "v26", "v27"} <= set(meta.column_names)
    za6900 = {e["variable"]: label_text(e) for e in entries("ZA6900") if e["variable"]}
    assert meta.column_names_to_labels["v27"] == za6900["v27"]
    assert np.all([meta.column_names_to_labels[v].lower().replace(":", "") == za6900[v].lower()
                   for v in ("v21", "v23", "v24", "v26")])


def recorded_labels(study_id) -> dict[str, str]:
    """{variable (or the label itself when the document names no variable): label as the file holds it}."""
    return {e["variable"] or label_text(e): label_text(e) for e in entries(study_id) if e.get("label")}


def ambiguous_patterns(questions, studies) -> list[str]:
    """Each (study, question) whose label pattern matches more than one labelled item of the study
    (value labels aside: a pattern that only the value labels keep apart is a defect)."""
    out = []
    for sid in studies:
        labels = recorded_labels(sid)
        for question in questions:
            if question.topic != STUDIES[sid].module or not question.label:
                continue
            hits = sorted(v for v, text in labels.items() if question.label_pattern.search(text))
            if len(hits) > 1:
                out.append(f"{sid} {question.id}: {', '.join(hits)}")
    return out


def test_a_label_pattern_matches_at_most_one_labelled_item_of_a_study():
    """Issue 25: over every label the evidence records (the whole variable lists of ZA1490, ZA1950,
    and the module items of ZA4950 and ZA5400 among them), no pattern matches two items of one study."""
    studies = [s for s in EVIDENCE["studies"] if recorded_labels(s)]
    assert {"ZA1490", "ZA1950", "ZA4950", "ZA5400"} <= set(studies)
    assert ambiguous_patterns(REGISTRY.issp_questions, studies) == []
    # the check catches what it is for: the patterns of the previous registry matched both the
    # responsibility and the spending item ("health": RESP:HEALTH CARE F SICK and GOVT SPEND:HEALTH)
    import dataclasses

    old = dataclasses.replace(QUESTIONS["issp_rog_health"], label="health")
    assert ambiguous_patterns([old], ["ZA1490"]) == ["ZA1490 issp_rog_health: V103, V83"]


# the studies whose document shows the whole file (the file itself, or a codebook of every variable)
COMPLETE = ["ZA10000", "ZA1490", "ZA1680", "ZA1700", "ZA1840", "ZA1950", "ZA2150", "ZA2310", "ZA2450", "ZA2620", "ZA2880",
            "ZA2900", "ZA3190", "ZA3440", "ZA3880", "ZA4950", "ZA5400", "ZA5900", "ZA5950", "ZA7570", "ZA7650", "ZA8000"]


def test_complete_files_leave_nothing_to_the_patterns():
    """Where the document is the whole file (ZA1490, ZA1950; ZA1680, ZA1700, ZA1840 in GitHub fsolt/DCPO; the GESIS
    codebooks of ZA2150, ZA2310, ZA2900 and ZA3190 there, whose variable lists describe every variable of the
    file; the velgaks/promarket-attitudes catalogue of ZA4950 and ZA5400; the GESIS codebooks of ZA2450, ZA2620,
    ZA2880 and ZA3440 in fsolt/DCPO, whose record positions leave no variable out; the
    ashishpapanai/2025-02-ActionWords lists of every variable of ZA3880, ZA5900 and ZA10000; the JiaWANG-TJ/SocioBench
    lists of the GESIS variable reports of ZA5950, ZA7570, ZA7650 and ZA8000, whose item numbers run without a gap),
    every question of the module is pinned to a variable it shows or marked absent with the reason; the registry's
    `absent` is the evidence's."""
    complete = [sid for sid, study in EVIDENCE["studies"].items() if study.get("complete")]
    assert sorted(complete) == COMPLETE
    for sid in complete:
        names = {e["variable"] for e in entries(sid)}
        absent = EVIDENCE["studies"][sid].get("absent") or {}
        for question in REGISTRY.issp_questions:
            if question.topic != STUDIES[sid].module:
                continue
            source = question.source_for(sid)
            assert (source is not None) != (question.id in absent), (sid, question.id)
            assert source is None or source.variable in names, (sid, question.id)
            assert (sid in question.absent) == (question.id in absent), (sid, question.id)
            assert question.id not in absent or absent[question.id].strip(), (sid, question.id)
    for question in REGISTRY.issp_questions:  # nothing is absent without a whole-file document
        assert set(question.absent) <= set(complete), question.id


def test_no_absent_question_is_looked_for():
    for sid in COMPLETE:
        asked = {q.id for q, _ in REGISTRY.questions_of(STUDIES[sid])}
        assert not asked & set(EVIDENCE["studies"][sid].get("absent") or {}), sid


def coverage_rows():
    """(module year, study, pinned, absent, found by label, labels checked, country / weight, status) per
    study, in module order; cumulations count no combination (they repeat the module years)."""
    from histbench.builders.chronoculture.evidence import coverage

    by_study = {row.study: row for row in coverage(REGISTRY, EVIDENCE).studies}
    order = list(dict.fromkeys(s.module for s in REGISTRY.studies))
    for module in order:
        questions = [q for q in REGISTRY.issp_questions if q.topic == module]
        for study in sorted((s for s in REGISTRY.studies if s.module == module),
                            key=lambda s: (s.year.fixed or 9999, s.id)):
            row = by_study.get(study.id)
            checked = sum(1 for e in entries(study.id) if e.get("label") and e.get("question"))
            country = "auto" if study.country.auto else study.country.variable
            weight = "auto" if study.weight_auto else study.weight
            if row is None:
                counts = ("-", "-", f"all {len(questions)}")
                status = "unchecked"
            else:
                counts = (str(len(row.pinned)), str(len(row.absent)), str(len(row.pattern)))
                status = ("whole file" if EVIDENCE["studies"][study.id].get("complete") else
                          "pinned" if row.pinned else "pattern checked" if checked else "unchecked")
            yield (f"{module} {study.year.fixed or 'cumulation'}", study.id, *counts, str(checked),
                   f"{country} / {weight}", status)


def coverage_summary() -> str:
    from histbench.builders.chronoculture.evidence import coverage

    c = coverage(REGISTRY, EVIDENCE)
    return (f"{c.pinned} of the {c.asked} question x module-year combinations the files ask are pinned "
            f"({100 * c.pinned / c.asked:.1f}%; {c.combinations} combinations of every question with every module "
            f"year of its module, {c.absent} of them documented absent, {c.pattern} left to the label patterns)")


def pattern_lists() -> list[str]:
    """The docs' list of every question left to its label pattern, per module file, with the reason."""
    from histbench.builders.chronoculture.evidence import coverage

    lines = []
    for row in coverage(REGISTRY, EVIDENCE).studies:
        if row.pattern:
            lines.append(f"- **{row.study}** ({row.module} {row.year}, {len(row.pattern)}): "
                         f"{', '.join(q.removeprefix('issp_') for q in row.pattern)}. Why: {row.why}")
    return lines


def test_docs_coverage_table_is_the_registry_and_the_evidence():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "chronoculture.md").read_text(encoding="utf-8")
    table = [tuple(cell.strip() for cell in line.strip("|").split("|"))
             for line in docs.splitlines() if re.match(r"\| [A-Z][A-Za-z ]+ (\d{4}|cumulation) \| ZA\d+ \|", line)]
    assert table == list(coverage_rows())
    assert " ".join(coverage_summary().split()) in " ".join(docs.split())
    listed = [line for line in docs.splitlines() if re.match(r"- \*\*ZA\d+\*\* \(", line)]
    assert listed == pattern_lists()
    variables = [e for s in EVIDENCE["studies"] for e in entries(s)]
    counts = (sum(1 for e in variables if e["variable"]), sum(1 for e in variables if e["label"]),
              sum(1 for e in variables if e["label"] and e["question"]), sum(1 for e in variables if e.get("pin")))
    assert f"{counts[0]} variable names and {counts[1]} labels are recorded; {counts[2]} labels" in " ".join(docs.split())
    pinned_files = {s for s in EVIDENCE["studies"] for e in entries(s) if e.get("pin")}
    assert f"{counts[3]} question variables in {len(pinned_files)} files" in " ".join(docs.split())


def test_wvs_entries_cite_the_variable_list_they_were_checked_against():
    """Issue 25: every WVS question names the list its variable was checked against: the entry quotes
    the variable's label and document (a public list or script that reads the WVS time series, or the
    EVS trend or Integrated Values Surveys file, which use the same codes), and the per-wave
    questionnaire positions where a document gives them."""
    wvs = EVIDENCE["wvs"]
    for doc in wvs["documents"].values():
        assert doc["where"].startswith("GitHub ") and doc["what"] and doc["form"] in FORMS
    for question in REGISTRY.wvs_questions:
        entry = wvs["variables"][question.variable]
        assert entry["document"] in wvs["documents"], question.id
        assert f"{question.variable} '{entry['label']}'" in question.evidence, question.id
        if "waves" in entry:
            assert entry["waves"] in question.evidence and entry["waves_document"] in wvs["documents"]
        assert set(entry.get("also", {})) <= set(wvs["documents"]) - {entry["document"]}, question.id
    assert sorted(wvs["variables"]) == sorted(q.variable for q in REGISTRY.wvs_questions)
    assert len(wvs["variables"]) == 111 and "unlisted" not in wvs
    used = {e["document"] for e in wvs["variables"].values()} | {
        d for e in wvs["variables"].values() for d in [e.get("waves_document"), *e.get("also", {})] if d}
    assert used == set(wvs["documents"])
    # the crosswalk's scale ends: E037 runs from people's responsibility (1) to the government's (10)
    e037 = next(q for q in REGISTRY.wvs_questions if q.variable == "E037")
    assert e037.options[0].label.startswith("1 (people") and e037.options[-1].label.startswith("10 (government")
    # "the world better or worse off because of science" is E234, worse off (1) to better off (10);
    # E220 is the faith item, which the registry does not ask
    e234 = wvs["variables"]["E234"]
    assert "1 A lot worse off" in e234["also"]["owid-ivs-create"] and "E220 is 'We depend too much" in e234["note"]
    world = next(q for q in REGISTRY.wvs_questions if q.variable == "E234")
    assert world.options[0].label == "1 (a lot worse off)" and world.options[-1].label == "10 (a lot better off)"
    assert "E220" not in wvs["variables"]
    # the courts are E069_17 in the lists that number them as the v5.0 file does (the EU is E069_18)
    assert wvs["variables"]["E069_17"]["label"] == "Confidence: Justice System/Courts"
    assert wvs["variables"]["E069_17"]["document"] != "bickley-wvs-columns"
