"""export-vocabulary / import-annotations on a run folder with hand-made predictions."""

from __future__ import annotations

import csv

import pytest

from histbench.core.errors import SourceError
from histbench.eval.valence.vocabulary import export_vocabulary, import_annotations


def _read(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_export_is_the_union_of_whole_words_per_sentence_in_context(synthetic_run, tmp_path):
    stats = export_vocabulary(synthetic_run, tmp_path / "to_annotate.csv")
    rows = _read(tmp_path / "to_annotate.csv")
    assert list(rows[0].keys()) == ["sentence_id", "sentence", "filled", "token", "sigma", "skip", "annotator", "comment"]
    s1 = [r["token"] for r in rows if r["sentence_id"] == "s1"]
    assert s1 == ["not", "they", "thou", "you"]          # early + modern, '##st' left out, alphabetical
    s2 = [r for r in rows if r["sentence_id"] == "s2"]
    assert [r["token"] for r in s2] == ["thee", "them", "ye", "you"]   # '[UNK]' and '##ll' left out
    assert s2[0]["sentence"] == "Fare [MASK] well, sir." and s2[0]["filled"] == "Fare thee well, sir."
    assert stats["rows"] == 21 and stats["not_whole_words_left_out"] == {"subword": 2, "special": 1}
    assert all(r["sigma"] == "" and r["annotator"] == "" for r in rows)


def test_roundtrip_export_fill_import(synthetic_run, tmp_path):
    sheet = tmp_path / "to_annotate.csv"
    export_vocabulary(synthetic_run, sheet)
    rows = _read(sheet)
    for r in rows:
        r["sigma"], r["annotator"] = ("-1" if r["token"] in ("thou", "thee", "ye", "morrow") else "0"), "ann1"
        if r["token"] == "!":
            r["sigma"], r["skip"] = "", "x"
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    result = import_annotations(synthetic_run, [sheet])
    stored = synthetic_run.annotations()
    assert result["added"] == 21 and len(stored) == 21 and not result["missing"]
    assert {(a["token"], a["skipped"]) for a in stored if a["sentence_id"] == "s3"} >= {("!", True), ("thou", False)}
    export_vocabulary(synthetic_run, tmp_path / "missing.csv", only_missing=True)
    assert _read(tmp_path / "missing.csv") == []


def _import_error(run, path, **kwargs) -> SourceError:
    with pytest.raises(SourceError) as caught:
        import_annotations(run, [path], **kwargs)
    assert not run.annotations_path.exists()   # nothing imported
    return caught.value


@pytest.mark.parametrize(
    ("bad_row", "message"),
    [
        (("s1", "thou", "-0.7"), "field 'sigma': sigma '-0.7' is not on the scale {-1, -0.5, 0, 0.5, 1}"),
        (("s1", "thou", "abc"), "field 'sigma': expected a number, got 'abc'"),
        (("s9", "thou", "-1"), "field 'sentence_id': unknown sentence 's9'"),
        (("s1", "thine", "-1"), "field 'token': 'thine' was not predicted for sentence 's1'"),
    ],
)
def test_import_errors_name_the_row(synthetic_run, annotation_sheet, bad_row, message):
    rows = [("s1", "not", "0"), bad_row, ("s1", "you", "0")]
    error = _import_error(synthetic_run, annotation_sheet(rows), partial=True)
    assert "annotated.csv, row 3: " in str(error) and message in str(error)


def test_both_sigma_and_skip_and_bad_skip_values(synthetic_run, tmp_path):
    path = tmp_path / "sheet.csv"
    path.write_text("sentence_id,token,sigma,skip,annotator\ns1,thou,-1,yes,a\ns1,you,0,maybe,a\n")
    error = _import_error(synthetic_run, path, partial=True)
    assert "row 2: token 'thou': both a sigma ('-1') and skip are given" in str(error)
    assert any(d.startswith("row 3: field 'skip': 'maybe'") for d in error.details)


def test_same_annotator_two_values_names_both_rows(synthetic_run, annotation_sheet):
    error = _import_error(synthetic_run, annotation_sheet([("s1", "thou", "-1"), ("s1", "you", "0"), ("s1", "Thou", "0")]),
                          partial=True)
    assert "row 4: annotator 'ann1' gives token 'Thou' in sentence 's1' two values: -1 (row 2) and 0" in str(error)


def test_annotator_column_or_option_required(synthetic_run, annotation_sheet):
    sheet = annotation_sheet([("s1", "thou", "-1")], annotator=None)
    error = _import_error(synthetic_run, sheet, partial=True)
    assert "row 2: field 'annotator': empty" in str(error)
    result = import_annotations(synthetic_run, [sheet], annotator="mary", partial=True)
    assert synthetic_run.annotations()[0]["annotator"] == "mary" and len(result["missing"]) == 20


def test_every_predicted_word_must_be_annotated_or_skipped(synthetic_run, annotation_sheet):
    sheet = annotation_sheet([("s1", "thou", "-1"), ("s1", "not", "0")])
    error = _import_error(synthetic_run, sheet)
    assert "19 predicted words are neither annotated nor skipped" in str(error)
    assert "sentence 's1': token 'they'" in error.details
    partial = import_annotations(synthetic_run, [sheet], partial=True)
    assert len(partial["missing"]) == 19 and len(synthetic_run.annotations()) == 2


def test_conflicts_between_annotators_are_reported_not_fatal(synthetic_run, annotation_sheet, tmp_path):
    rows = _complete_rows()
    import_annotations(synthetic_run, [annotation_sheet(rows, "ann1", "a1.csv")])
    changed = [(s, t, "0" if (s, t) == ("s2", "you") else v) for s, t, v in rows]
    result = import_annotations(synthetic_run, [annotation_sheet(changed, "ann2", "a2.csv")])
    assert [(c["sentence_id"], c["token"], c["values"]) for c in result["conflicts"]] == [
        ("s2", "you", {"ann1": -1.0, "ann2": 0.0})]
    assert result["agreement"]["pairs_with_several_annotators"] == 21
    assert result["agreement"]["exact_agreement"] == pytest.approx(20 / 21)
    conflicts = _read(synthetic_run.path / "conflicts.csv")
    assert [(r["annotator"], r["value"]) for r in conflicts] == [("ann1", "-1"), ("ann2", "0")]
    assert conflicts[0]["sentence"] == "Fare [MASK] well, sir."
    # a corrected re-import by ann2 replaces ann2's earlier values
    again = import_annotations(synthetic_run, [annotation_sheet(rows, "ann2", "a3.csv")])
    assert again["replaced"] == 21 and again["conflicts"] == [] and not (synthetic_run.path / "conflicts.csv").exists()


def test_sentence_column_must_match_the_sentence_id(synthetic_run, tmp_path):
    path = tmp_path / "sheet.csv"
    path.write_text("sentence_id,sentence,token,sigma,annotator\ns1,Fare [MASK] well, sir.,thou,-1,a\n".replace(
        "Fare [MASK] well, sir.", '"Fare [MASK] well, sir."'))
    error = _import_error(synthetic_run, path, partial=True)
    assert "row 2: field 'sentence': the text differs from sentence 's1'" in str(error)


def _complete_rows():
    return [
        ("s1", "thou", "-1"), ("s1", "not", "0"), ("s1", "you", "0"), ("s1", "they", "0"),
        ("s2", "you", "-1"), ("s2", "thee", "-1"), ("s2", "ye", "-1"), ("s2", "them", "0"),
        ("s3", "thou", "-1"), ("s3", "you", "0"), ("s3", "ye", "-1"), ("s3", "!", "skip"), ("s3", "someone", "0"),
        ("s3", "they", "0"), ("s3", "u", "1"),
        ("s4", "night", "0"), ("s4", "wind", "0"), ("s4", "morrow", "-1"), ("s4", "air", "0"), ("s4", "weather", "0"),
        ("s4", "water", "0"),
    ]
