"""Reading the release (JSONL, JSON, CSV, TSV) and every invariant of issue 10, each named
by question, row and field."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from histbench.builders.chronologic.release import load_release
from histbench.core.errors import SourceError


def _error(tmp_path, records) -> SourceError:
    with pytest.raises(SourceError) as info:
        load_release(_write(tmp_path / "release.jsonl", records))
    return info.value


def test_valid_release_reads_every_field(tmp_path, question, jsonl):
    questions = load_release(jsonl(tmp_path / "r.jsonl", [question(1), question(2)]))
    assert [q["question_number"] for q in questions] == [1, 2]
    assert questions[0]["answer_probabilities"] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert questions[0]["reject_reasons"] is None
    assert "reject_reasons" in questions[0].absent and questions[0].extra == {}


@pytest.mark.parametrize(
    ("changes", "field", "expected"),
    [
        ({"answer_types": ["ground_truth", "manual", "manual", "manual"]}, "answer_strings",
         "parallel answer arrays differ in length (answer_strings has 5, answer_probabilities has 5, answer_types has 4)"),
        ({"answer_strings": ["a", "b", "c"], "answer_probabilities": [1.0, 0.0, 0.0], "answer_types": ["ground_truth", "manual", "manual"]},
         "answer_strings", "expected 4 to 8 answer options, got 3"),
        ({"answer_strings": list("abcdefghi"), "answer_probabilities": [1.0] + [0.0] * 8, "answer_types": ["ground_truth"] + ["manual"] * 8},
         "answer_strings", "expected 4 to 8 answer options, got 9"),
        ({"answer_probabilities": [0.75, 1.0, 0.0, 0.0, 0.0]}, "answer_probabilities",
         "answer_probabilities[0] must be 1.0 (the first answer is a ground truth), got 0.75"),
        ({"answer_probabilities": [1.0, 1.5, 0.0, 0.0, 0.0]}, "answer_probabilities", "answer_probabilities[1] = 1.5 is outside [0, 1]"),
        ({"partial_credit": 1}, "reject_reasons",
         "partial_credit is 1 but reject_reasons is absent (a partial-credit question needs its rubric)"),
        ({"reject_reasons": ["", "wrong", "wrong", "modern", "wrong"]}, "reject_reasons",
         "reject_reasons is present but partial_credit is 0 (only partial-credit questions carry a rubric)"),
        ({"partial_credit": 1, "reject_reasons": ["fine", "wrong", "wrong", "modern", "wrong"]}, "reject_reasons",
         "reject_reasons[0] must be \"\" (the first answer is a ground truth), got 'fine'"),
        ({"partial_credit": 1, "reject_reasons": ["", "wrong"]}, "answer_strings",
         "parallel answer arrays differ in length (answer_strings has 5, answer_probabilities has 5, answer_types has 5, reject_reasons has 2)"),
        ({"partial_credit": 2}, "partial_credit", "expected 0 (pass/fail) or 1 (partial credit), got 2"),
        ({"reasoning_type": "trivia"}, "reasoning_type",
         "'trivia' is not one of sentence_cloze, phrase_cloze, topic_sentence, constrained_generation, "
         "character_modeling, knowledge, inference, abstention"),
        ({"frame_type": "era_context"}, "frame_type", "'era_context' is not one of world_context, book_context, passage_context"),
        ({"added_answers": [{"candidate_model": "m", "approving_judges": [], "n_context_approve": 0, "index": 7}]},
         "added_answers", "added_answers[0].index = 7 points outside the 5 answer options"),
        ({"question_number": "seven"}, "question_number", "expected an integer, got 'seven'"),
        ({"answer_strings": ["Lisbon", 3, "Madrid", "x", "y"]}, "answer_strings[1]", "expected text, got 3"),
        ({"answer_probabilities": [1.0, "0", 0.0, 0.0, 0.0]}, "answer_probabilities[1]", "expected a finite number, got '0'"),
        ({"source_date": 1880.5}, "source_date", "expected an integer, got 1880.5"),
    ],
)
def test_invariant_violation_names_question_row_and_field(tmp_path, changes, field, expected, question):
    records = [question(1), question(42, **changes)]
    error = _error(tmp_path, records)
    label = "question 42" if changes.get("question_number") is None else "question seven"
    assert error.row == 2 and error.field == field
    assert str(error) == f"{tmp_path / 'release.jsonl'}, row 2, field {field!r}: {label}: {expected} (nothing was written)"


def test_missing_required_field(tmp_path, question):
    record = question(5)
    del record["main_question"]
    error = _error(tmp_path, [record])
    assert error.field == "main_question" and "question 5: required field is missing" in str(error)


def test_duplicate_question_number(tmp_path, question):
    error = _error(tmp_path, [question(7), question(8), question(7)])
    assert error.row == 3 and error.field == "question_number"
    assert "question 7: question_number 7 is not unique (rows 1, 3)" in str(error)


def test_several_problems_are_all_listed(tmp_path, question):
    error = _error(tmp_path, [question(1, frame_type="x"), question(2, reasoning_type="y")])
    assert "2 problems in 2 field(s)" in str(error)
    assert len(error.details) == 2
    assert error.details[0].startswith("row 1, question 1, field 'frame_type'")
    assert error.details[1].startswith("row 2, question 2, field 'reasoning_type'")


def test_bad_json_line_is_named(tmp_path, question):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(question(1)) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(SourceError) as info:
        load_release(path)
    assert info.value.row == 2 and "not valid JSON" in str(info.value)


def test_unknown_fields_are_kept(tmp_path, question, jsonl):
    record = question(3, difficulty="hard", review={"by": "AB"})
    record["added_answers"] = [{"candidate_model": "m", "approving_judges": ["AB"], "n_context_approve": 1, "index": 4,
                                "note": "kept"}]
    (question,) = load_release(jsonl(tmp_path / "r.jsonl", [record]))
    assert question.extra["difficulty"] == "hard" and question.extra["review"] == {"by": "AB"}
    assert question.extra["added_answers"][0]["note"] == "kept"
    assert question["added_answers"] == [{"candidate_model": "m", "approving_judges": ["AB"], "n_context_approve": 1, "index": 4}]


def _write(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def _frame(records):
    rows = []
    for record in records:
        row = {}
        for key, value in record.items():
            row[key] = json.dumps(value, ensure_ascii=False) if isinstance(value, list) else ("" if value is None else value)
        rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("suffix", "sep"), [("csv", ","), ("tsv", "\t")])
def test_csv_and_tsv_read_like_jsonl(tmp_path, suffix, sep, question, jsonl):
    records = [
        question(1, manual_comment="has a, comma and a \"quote\"\nand a newline"),
        question(2, partial_credit=1, reject_reasons=["", "a", "b", "c", "d"], author_birth=1850),
    ]
    path = tmp_path / f"release.{suffix}"
    _frame(records).to_csv(path, sep=sep, index=False)
    from_table = load_release(path)
    from_jsonl = load_release(jsonl(tmp_path / "r.jsonl", records))
    assert [q.fields for q in from_table] == [q.fields for q in from_jsonl]
    assert from_table[0]["author_birth"] is None and from_table[1]["author_birth"] == 1850
    assert from_table[0]["author_profession"] == ""


def test_csv_accepts_python_literal_lists(tmp_path, question):
    """pandas writes list cells as Python reprs (single quotes); those read too."""
    frame = pd.DataFrame([question(1)])
    path = tmp_path / "release.csv"
    frame.to_csv(path, index=False)
    assert "['Lisbon'," in path.read_text()
    (question,) = load_release(path)
    assert question["answer_strings"][0] == "Lisbon" and question["answer_probabilities"][0] == 1.0


def test_csv_bad_list_cell_is_named(tmp_path, question):
    frame = _frame([question(1)])
    frame.loc[0, "answer_types"] = "ground_truth; manual"
    path = tmp_path / "release.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(SourceError) as info:
        load_release(path)
    assert info.value.row == 1 and info.value.field == "answer_types" and "JSON array" in str(info.value)


def test_json_array_and_wrapped(tmp_path, question):
    records = [question(1), question(2)]
    (tmp_path / "a.json").write_text(json.dumps(records))
    (tmp_path / "b.json").write_text(json.dumps({"questions": records}))
    assert len(load_release(tmp_path / "a.json")) == len(load_release(tmp_path / "b.json")) == 2
    (tmp_path / "c.json").write_text(json.dumps({"rows": records}))
    with pytest.raises(SourceError, match="array of question objects"):
        load_release(tmp_path / "c.json")


def test_empty_release(tmp_path, jsonl):
    with pytest.raises(SourceError, match="holds no questions"):
        load_release(jsonl(tmp_path / "r.jsonl", []))
