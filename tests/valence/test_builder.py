"""The valence builder: scale, mask normalisation, per-row validation, formats, configs."""

from __future__ import annotations

import json

import pytest

from histbench.builders.valence.masks import MaskError, mask_regex, split_mask
from histbench.builders.valence.scale import DEFAULT_SCALE, Scale, ScaleError
from histbench.core.errors import SourceError, UsageError


def test_default_scale_is_the_papers_five_point_bipolar_scale():
    """Section 3: T = {-1, -0.5, 0, 0.5, 1}."""
    assert Scale().values == DEFAULT_SCALE == (-1.0, -0.5, 0.0, 0.5, 1.0)
    assert Scale.parse(None) == Scale()


def test_user_defined_scales():
    three = Scale.parse("-1, 0, 1")
    assert three.values == (-1.0, 0.0, 1.0)
    assert three.check("1") == 1.0 and three.check("\u22121") == -1.0
    with pytest.raises(ScaleError, match="not on the scale"):
        three.check("0.5")
    seven = Scale.parse("-1 -2/3 -1/3 0 1/3 2/3 1")
    assert seven.check("0.3333333") == pytest.approx(1 / 3)
    assert Scale.parse("-1,-0.5,0,0.5,1").snap(0.7) == 0.5
    assert Scale.parse("-1,-0.5,0,0.5,1").snap(0.25) == 0.0   # ties go to the more neutral value
    for bad, message in [("0", "at least two"), ("-2,0,1", "within"), ("1,0,-1", "increasing"), ("0,0,1", "increasing"),
                         ("a,b", "expected a number"), ("nan,1", "finite")]:
        with pytest.raises(ScaleError, match=message):
            Scale.parse(bad)


@pytest.mark.parametrize("spelling", ["[MASK]", "[mask]", "<mask>", "<MASK>", "[ MASK ]", "{mask}"])
def test_any_mask_spelling_becomes_the_canonical_mask(spelling):
    masked = split_mask(f"Why wilt {spelling} be offended by that?")
    assert masked.text == "Why wilt [MASK] be offended by that?"
    assert (masked.left, masked.right, masked.spelling) == ("Why wilt ", " be offended by that?", spelling)
    assert masked.with_mask("<mask>") == "Why wilt <mask> be offended by that?"
    assert masked.filled("thou") == "Why wilt thou be offended by that?"


def test_mask_count_is_checked_and_extra_patterns_accepted():
    with pytest.raises(MaskError, match="no mask"):
        split_mask("No mask here.")
    with pytest.raises(MaskError, match="2 masks found"):
        split_mask("[MASK] and <mask>.")
    regex = mask_regex(r"_{3,}")
    assert split_mask("Fare ___ well.", regex).text == "Fare [MASK] well."
    with pytest.raises(MaskError, match="not a valid regular expression"):
        mask_regex("(")


def test_build_sample_like_input(sentences_csv, build_valence):
    from datasets import load_dataset

    folder = build_valence(sentences_csv)
    rows = load_dataset(str(folder), "sentences", split="test").to_list()
    assert [r["sentence_id"] for r in rows] == ["s1", "s2", "s3", "s4"]
    assert rows[1]["text"] == "Fare [MASK] well, sir." and rows[1]["mask_spelling"] == "<mask>"
    assert rows[2]["left"] == "Can " and rows[2]["right"] == " help me with this?"
    assert [r["rho"] for r in rows] == [-1.0, -1.0, 1.0, 0.0]
    assert rows[0]["source_row"] == 2   # header is row 1
    manifest = json.loads((folder / "histbench.json").read_text())
    assert manifest["options"]["scale"] == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert manifest["summary"]["sentences"]["groups"] == ["EME", "neutral", "ME"]
    assert manifest["summary"]["sentences"]["group_counts"] == {"EME": 2, "neutral": 1, "ME": 1}


def test_jsonl_and_tsv_inputs_and_generated_ids(tmp_path, build_valence):
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text(
        json.dumps({"sentence": "Hark, the bells [MASK] ringing.", "group": "eme", "rho": -0.5}) + "\n\n"
        + json.dumps({"sentence": "I will <mask> you later.", "group": "Me", "rho": 1, "notes": "texting"}) + "\n"
    )
    rows = _load(build_valence(jsonl, out=tmp_path / "a"))
    assert [(r["sentence_id"], r["group"], r["rho"]) for r in rows] == [("s001", "EME", -0.5), ("s002", "ME", 1.0)]
    tsv = tmp_path / "s.tsv"
    tsv.write_text("id\ttext\tgroup\trho\nx1\tThe [MASK], said she.\tneutral\t0\n")
    assert _load(build_valence(tsv, out=tmp_path / "b"))[0]["text"] == "The [MASK], said she."


def _load(folder):
    from datasets import load_dataset

    return load_dataset(str(folder), "sentences", split="test").to_list()


def _bad(tmp_path, body: str) -> str:
    path = tmp_path / "bad.csv"
    path.write_text("sentence_id,sentence,group,rho\n" + body)
    return str(path)


@pytest.mark.parametrize(
    ("body", "row", "message"),
    [
        ("a,Fine [MASK].,EME,-1\nb,Two [MASK] and [MASK].,EME,-1\n", 3, "field 'sentence': 2 masks found"),
        ("a,No mask at all.,EME,-1\n", 2, "field 'sentence': no mask found"),
        ("a,Fine [MASK].,EME,-0.7\n", 2, "field 'rho': rho '-0.7' is not on the scale {-1, -0.5, 0, 0.5, 1}"),
        ("a,Fine [MASK].,EME,\n", 2, "field 'rho': empty"),
        ("a,Fine [MASK].,EME,-1\na,Again [MASK].,ME,1\n", 3, "field 'sentence_id': 'a' is already used in row 2"),
        ("a,Fine [MASK].,,1\n", 2, "field 'group': empty"),
        ("a,[MASK],EME,1\n", 2, "the sentence is only a mask"),
        ("a b,Fine [MASK].,EME,1\n", 2, "field 'sentence_id'"),
    ],
)
def test_bad_rows_are_named(tmp_path, build_valence, body, row, message):
    with pytest.raises(SourceError) as caught:
        build_valence(_bad(tmp_path, body))
    assert f"bad.csv, row {row}: " in str(caught.value) and message in str(caught.value)
    assert not (tmp_path / "build" / "valence-1.0.0").exists()


def test_every_bad_row_is_listed(tmp_path, build_valence):
    with pytest.raises(SourceError) as caught:
        build_valence(_bad(tmp_path, "a,No mask.,EME,-1\nb,Fine [MASK].,EME,3\nc,Fine [MASK].,EME,1\n"))
    assert "2 of 3 sentence rows have problems" in str(caught.value)
    assert [d.split(":")[0] for d in caught.value.details] == ["row 2", "row 3"]


def test_missing_columns_and_declared_groups(tmp_path, build_valence):
    path = tmp_path / "cols.csv"
    path.write_text("sentence,rho\nFine [MASK].,1\n")
    with pytest.raises(SourceError, match="missing column\\(s\\) group"):
        build_valence(path)
    with pytest.raises(SourceError, match="field 'group': 'ME' is not one of early, late"):
        build_valence(_bad(tmp_path, "a,Fine [MASK].,early,-1\nb,Fine [MASK] too.,ME,1\n"), groups=["early", "late"])
    folder = build_valence(_bad(tmp_path, "a,Fine [MASK].,Early,-1\nb,Fine [MASK] too.,late,1\n"), groups=["early", "late"])
    assert [r["group"] for r in _load(folder)] == ["early", "late"]


def test_user_scale_is_used_and_recorded(tmp_path, build_valence):
    folder = build_valence(_bad(tmp_path, "a,Fine [MASK].,EME,-1\nb,Fine [MASK] too.,ME,1\n"), scale=[-1.0, 0.0, 1.0])
    assert json.loads((folder / "histbench.json").read_text())["options"]["scale"] == [-1.0, 0.0, 1.0]
    with pytest.raises(SourceError, match="not on the scale \\{-1, 0, 1\\}"):
        build_valence(_bad(tmp_path, "a,Fine [MASK].,EME,-0.5\n"), scale=[-1.0, 0.0, 1.0])


def test_cli_options_parse_scale_and_groups():
    import argparse

    from histbench.builders.valence import BUILDER

    parser = argparse.ArgumentParser()
    BUILDER.add_arguments(parser)
    options = BUILDER.options_from_args(parser.parse_args(["--scale=-1,0,1", "--groups", "EME,ME"]))
    assert options["scale"] == [-1.0, 0.0, 1.0] and options["groups"] == ["EME", "ME"]
    with pytest.raises(UsageError, match="--scale"):
        BUILDER.options_from_args(parser.parse_args(["--scale", "1,0"]))


def test_annotations_config_from_the_build(tmp_path, sentences_csv, build_valence, annotation_sheet):
    from datasets import load_dataset

    sheet = annotation_sheet([("s1", "thou", "-1"), ("s1", "Thou", "-1"), ("s3", "!", "skip")])
    folder = build_valence(sentences_csv, annotations=[sheet])
    loaded = load_dataset(str(folder), "annotations", split="test")
    rows = loaded.to_list()
    assert [(r["sentence_id"], r["token"], r["sigma"], r["skipped"]) for r in rows] == [
        ("s1", "thou", -1.0, False), ("s3", "!", None, True)]   # 'Thou' is an exact duplicate once case-folded
    # `method` is categorical: a ClassLabel for load_dataset users
    assert loaded.features["method"].int2str(rows[0]["method"]) == "manual" and rows[0]["annotator"] == "ann1"
    bad = annotation_sheet([("s1", "thou", "-1"), ("s9", "you", "0")], name="bad.csv")
    with pytest.raises(SourceError, match="bad.csv, row 3: field 'sentence_id': unknown sentence 's9'"):
        build_valence(sentences_csv, annotations=[bad])
