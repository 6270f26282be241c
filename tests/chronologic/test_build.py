"""Building Chronologic-EN: the bundled sample, the authors' public sample (realdata) and a
release with unknown fields; configs questions / options / sources and the summary."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from histbench.builders.chronologic import BUILDER
from histbench.builders.chronologic.taxonomy import REASONING_TYPES
from histbench.builders.machinery.build import run_build
from histbench.core.dataset import BuiltDataset
from histbench.core.errors import SourceError

REALDATA = Path(__file__).resolve().parents[2].parent / "shared" / "realdata" / "chronologic"
REAL_FILE = REALDATA / "chronologic_en_1.0_sample.jsonl"


def _summary(folder: Path) -> dict:
    return json.loads((folder / "histbench.json").read_text())["summary"]


def test_sample_covers_what_the_issue_asks(sample_build):
    built = BuiltDataset.open(sample_build)
    questions = built.load("questions", "test").to_list()
    assert {q["reasoning_type"] for q in questions} == set(REASONING_TYPES)
    assert {q["n_ground_truths"] for q in questions} == {1, 2}
    assert {q["partial_credit"] for q in questions} == {0, 1}
    assert min(q["n_options"] for q in questions) == 4 and max(q["n_options"] for q in questions) == 8
    assert any(0 < p < 1 for q in questions for p in q["answer_probabilities"])


def test_questions_config_keeps_release_fields_and_derives(sample_build):
    built = BuiltDataset.open(sample_build)
    rows = {q["question_number"]: q for q in built.load("questions", "test").to_list()}
    q131 = rows[131]  # constrained generation with two ground truths and a rubric
    assert q131["group"] == "generation"
    assert q131["ground_truth_indices"] == [0, 1] and q131["n_ground_truths"] == 2
    assert q131["reject_reasons"][0] == "" and q131["partial_credit"] == 1
    assert q131["answer_families"] == ["ground_truth", "ground_truth", "anachronistic_model", "manual",
                                       "anachronistic_model", "other_book"]
    assert rows[151]["reject_reasons"] is None and rows[151]["group"] == "knowledge"
    assert rows[142]["added_answers"] == [{"candidate_model": "claude-3-haiku", "approving_judges": ["AB"],
                                           "n_context_approve": 1, "index": 6}]
    assert rows[101]["extra_fields"] == "{}"
    assert rows[133]["period_words_in_main_question"] is None


def test_options_config_is_long_format(sample_build):
    built = BuiltDataset.open(sample_build)
    options = built.load("options", "test").to_list()
    questions = built.load("questions", "test").to_list()
    assert len(options) == sum(q["n_options"] for q in questions)
    o = next(o for o in options if o["question_number"] == 142 and o["option_index"] == 6)
    assert o["answer_probability"] == 0.75 and not o["is_ground_truth"] and o["is_stylistic"]
    assert o["answer_family"] == "anachronistic_model" and o["answer_generator"] == "claude-3-haiku"
    assert o["added_by_model"] == "claude-3-haiku" and o["reject_reason"] == "plausible, a little sentimental"
    year = next(o for o in options if o["answer_type"] == "anachronistic_1909")
    assert year["answer_family"] == "anachronistic_year" and year["answer_year"] == 1909


def test_sources_config_lists_volumes_and_their_questions(sample_build):
    built = BuiltDataset.open(sample_build)
    sources = {s["source_htid"]: s for s in built.load("sources", "test").to_list()}
    assert sources["refusal"]["volume_id_kind"] == "placeholder"
    assert sources["histbench_sample_nov1864"]["question_numbers"] == [111, 141, 142, 143]
    assert sources["histbench_sample_nov1864"]["reasoning_types"] == ["phrase_cloze", "character_modeling"]
    assert sum(s["n_questions"] for s in sources.values()) == 24
    # question 173 shares the encyclopedia but is an abstention question with its own htid
    enc = sources["histbench_sample_enc1889"]
    assert enc["n_metadata_variants"] == 1 and json.loads(enc["metadata_variants"])[0]["n_questions"] == enc["n_questions"]


def test_summary_has_table1_counts(sample_build):
    summary = _summary(sample_build)
    assert summary["reasoning_types"] == {t: 3 for t in REASONING_TYPES}
    assert summary["groups"] == {"cloze": 9, "generation": 6, "knowledge": 9}
    assert summary["ground_truths_per_question"] == {"1": 21, "2": 3}
    assert summary["excluded"] == {"questions": 0, "options": 0}
    assert "matches_paper_table1" not in summary  # not the full 866-question release


def test_unknown_fields_are_reported(tmp_path, question, jsonl):
    path = jsonl(tmp_path / "r.jsonl", [question(1, difficulty="hard"), question(2)])
    folder = run_build(BUILDER, {"questions": path}, out_root=tmp_path / "out")
    assert _summary(folder)["extra_fields"] == {"difficulty": 1}
    rows = BuiltDataset.open(folder).load("questions", "test").to_list()
    assert json.loads(rows[0]["extra_fields"]) == {"difficulty": "hard"}
    card = (folder / "README.md").read_text()
    assert "unknown fields kept in `extra_fields`: difficulty (1 questions)" in card


def test_failed_build_writes_nothing(tmp_path, question, jsonl):
    path = jsonl(tmp_path / "r.jsonl", [question(1), question(2, frame_type="nowhere")])
    with pytest.raises(SourceError, match="question 2"):
        run_build(BUILDER, {"questions": path}, out_root=tmp_path / "out")
    assert not (tmp_path / "out" / "chronologic-1.0.0").exists()


@pytest.mark.skipif(not REAL_FILE.is_file(), reason="../shared/realdata/chronologic is absent (only in the project workspace)")
def test_real_public_sample_builds_and_matches_source_md(tmp_path):
    """The authors' 100-question sample: every question accepted, per-type counts as SOURCE.md says."""
    text = (REALDATA / "SOURCE.md").read_text()
    expected = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\| (\w+) \| (\d+) \|$", text, re.M)}
    assert set(expected) == set(REASONING_TYPES)
    folder = run_build(BUILDER, {"questions": REAL_FILE}, out_root=tmp_path)
    summary = _summary(folder)
    assert summary["questions"] == 100
    assert summary["reasoning_types"] == expected
    assert summary["partial_credit"] == {"pass_fail": 59, "partial_credit": 41}
    assert summary["questions_with_added_answers"] == 24
    assert summary["questions_with_substantive_frame"] == 80
    assert set(summary["options_per_question"]) == {"4", "5", "6", "7", "8"}
    assert summary["unparsed_answer_types"] == {} and summary["ground_truth_type_mismatches"] == []
    assert summary["extra_fields"] == {}
    built = BuiltDataset.open(folder)
    rows = built.load("questions", "test").to_list()
    assert [r["question_number"] for r in rows][:3] == [3, 6, 12]
    raw = [json.loads(line) for line in REAL_FILE.read_text(encoding="utf-8").splitlines()]
    for record, row in zip(sorted(raw, key=lambda r: r["question_number"]), rows, strict=True):
        for key, value in record.items():
            assert row[key] == value, (record["question_number"], key)
