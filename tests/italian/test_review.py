"""The reviewers' step of the WSD pipeline (3.1) as a sheet loop, in the manner of the valence
annotation loop: `histbench review italian BUILD --out SHEET` writes one row per candidate,
a rebuild with `--reviews SHEET` applies keep / correct / drop-item / drop / replace, records
them per question and in the card, and exporting again loses no decision; a sheet holding
decisions is never overwritten, and a wrong sheet is one error naming its rows."""

import csv
from pathlib import Path

import pytest

from histbench.builders.italian.review import COLUMNS, export_sheet, read_reviews
from histbench.cli import main
from histbench.core.errors import SourceError, UsageError

from .conftest import SAMPLE, build, manifest, rows

GIVEN = {"leggomanzoni": str(SAMPLE / "leggomanzoni"), "wiktionary": str(SAMPLE / "wiktionary.jsonl")}


def _build(tmp: Path, **options) -> Path:
    return build(tmp, GIVEN, wsd_questions=0, **options)


def _read(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _write(path: Path, sheet: list[dict]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(sheet)
    return path


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("italian-review")
    return tmp, _build(tmp / "a")


def _decide(sheet: list[dict]) -> tuple[list[dict], dict]:
    """Fill a sheet as a reviewer would: keep the first question and drop one distractor, correct
    the second and replace a distractor, drop the third."""
    keys = list(dict.fromkeys(r["item_key"] for r in sheet))
    plan = {"keep": keys[0], "correct": keys[1], "drop": keys[2]}
    seen: dict[str, int] = {}
    for row in sheet:
        key = row["item_key"]
        n = seen[key] = seen.get(key, -1) + 1
        if key == plan["keep"]:
            row.update(reviewer="Ada", decision="keep" if row["role"] == "gold" else ("drop" if n == 1 else ""))
        elif key == plan["correct"]:
            if row["role"] == "gold":
                row.update(reviewer="Ada", decision="correct", replacement="Animo timoroso, vile", comment="più preciso")
            elif n == 2:
                row.update(reviewer="Ada", decision="replace", replacement="Animale selvatico")
        elif key == plan["drop"] and row["role"] == "gold":
            row.update(reviewer="Ada", decision="drop-item", comment="non è un senso")
    return sheet, plan


def test_the_review_loop_round_trips_without_losing_a_decision_3_1(first):
    tmp, built = first
    sheet_path = tmp / "sheet.csv"
    stats = export_sheet(built, sheet_path)
    sheet = _read(sheet_path)
    assert stats["questions"] == len(rows(built, "wsd")) and stats["reviewed"] == 0
    assert [c for c in sheet[0]] == list(COLUMNS) and sheet[0]["role"] == "gold" and sheet[0]["explanations"]
    filled, plan = _decide(sheet)
    dropped_distractor = next(r["candidate"] for r in filled if r["item_key"] == plan["keep"] and r["decision"] == "drop")
    replaced = next(r["candidate"] for r in filled if r["decision"] == "replace")
    _write(sheet_path, filled)

    again = _build(tmp / "b", wsd_reviews=str(sheet_path))
    by_key = {r["item_key"]: r for r in rows(again, "wsd")}
    assert plan["drop"] not in by_key                                          # the dropped question is left out
    kept = by_key[plan["keep"]]
    assert kept["review"]["status"] == "reviewed" and kept["review"]["reviewer"] == "Ada"
    assert dropped_distractor not in kept["candidates"] and kept["review"]["distractors_dropped"] == [dropped_distractor]
    assert len(kept["candidates"]) == 6 and kept["review"]["distractors_new"]   # the next usable one took its place
    corrected = by_key[plan["correct"]]
    assert corrected["answer"] == "Animo timoroso, vile" == corrected["candidates"][corrected["gold_index"]]
    assert corrected["synthesis_method"] == "reviewer's correction (Ada)" and corrected["review"]["original_answer"]
    assert "Animale selvatico" in corrected["candidates"] and replaced not in corrected["candidates"]
    assert corrected["candidate_sources"][corrected["candidates"].index("Animale selvatico")] == "reviewer (Ada)"
    review = manifest(again)["summary"]["tasks"]["wsd"]["review"]
    # the kept question had a distractor dropped: the one offered in its place was never seen, so it
    # counts as partly reviewed, not reviewed
    assert (review["questions_reviewed"], review["questions_partly_reviewed"]) == (1, 1)
    assert (review["gold_corrected"], review["items_dropped"]) == (1, 1)
    assert review["distractors_dropped"] == 1 and review["distractors_replaced"] == 1 and review["not_applied"] == 0
    card = (again / "README.md").read_text(encoding="utf-8")
    assert "Reviews (sheet.csv): 1 of" in card and "1 partly" in card and "1 answers corrected, 1 questions dropped" in card

    second = tmp / "sheet-2.csv"
    export_sheet(again, second)
    decisions = lambda sheet: {(r["item_key"], r["role"], r["candidate"], r["decision"], r["replacement"])  # noqa: E731
                               for r in sheet if r["decision"]}
    assert decisions(filled) - {d for d in decisions(filled) if d[3] == "keep" and d[1] == "distractor"} <= decisions(_read(second))
    assert any(r["decision"] == "drop-item" and r["item_key"] == plan["drop"] for r in _read(second))

    third = _build(tmp / "c", wsd_reviews=str(second))          # rebuilt from the re-exported sheet: the same questions
    strip = lambda r: {**r, "review": {**r["review"], "sheet": None}}  # noqa: E731
    assert [strip(r) for r in rows(third, "wsd")] == [strip(r) for r in rows(again, "wsd")]


def test_a_sheet_with_decisions_is_never_overwritten(first, tmp_path):
    _, built = first
    sheet = tmp_path / "sheet.csv"
    export_sheet(built, sheet)
    export_sheet(built, sheet)                                   # a blank sheet may be written again
    filled = _read(sheet)
    filled[0].update(decision="keep", reviewer="Ada")
    _write(sheet, filled)
    before = sheet.read_bytes()
    with pytest.raises(UsageError, match="1 of its rows hold a reviewer's decisions; a sheet is never overwritten"):
        export_sheet(built, sheet)
    assert sheet.read_bytes() == before
    other = tmp_path / "notes.csv"
    other.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(UsageError, match="not a blank review sheet"):
        export_sheet(built, other)
    with pytest.raises(UsageError, match=r"\.csv, \.tsv or \.jsonl"):
        export_sheet(built, tmp_path / "sheet.xlsx")


@pytest.mark.parametrize("change,message", [
    (lambda s: s[0].update(decision="maybe", reviewer="Ada"), "field 'decision': 'maybe' on a gold row"),
    (lambda s: s[0].update(decision="keep"), "field 'reviewer': empty"),
    (lambda s: s[0].update(decision="correct", reviewer="Ada"), "'correct' needs the corrected answer"),
    (lambda s: s[1].update(decision="drop", reviewer="Ada"), "decide on its gold row too"),
    (lambda s: (s[0].update(decision="keep", reviewer="Ada"), s[1].update(decision="replace")),
     "'replace' needs the reviewer's distractor"),
])
def test_a_wrong_sheet_names_its_rows_and_applies_nothing(first, tmp_path, change, message):
    _, built = first
    sheet = tmp_path / "sheet.csv"
    export_sheet(built, sheet)
    filled = _read(sheet)
    change(filled)
    _write(sheet, filled)
    with pytest.raises(SourceError, match=message) as error:
        read_reviews(sheet)
    assert "sheet.csv" in str(error.value) and "row " in str(error.value) and "no decision of this sheet was applied" in str(error.value)


def test_an_unknown_item_key_is_an_error_naming_its_row_and_exits_2(first, tmp_path, capsys):
    # issue 42, review loop defect 4: a mistyped key was accepted with exit 0 and applied to nothing
    _, built = first
    sheet = tmp_path / "sheet.csv"
    export_sheet(built, sheet)
    filled = _read(sheet)
    filled[0].update(decision="keep", reviewer="Ada")
    filled.append({**filled[0], "item_key": "cap9:1-2", "target_phrase": "altrove"})
    _write(sheet, filled)
    with pytest.raises(SourceError, match=r"item_key 'cap9:1-2' names no phrase") as error:
        _build(tmp_path / "out", wsd_reviews=str(sheet))
    assert f"row {len(filled) + 1}" in str(error.value) and not (tmp_path / "out").exists()
    filled[-1]["item_key"] = "cap1 43"                                       # not even a key's form
    _write(sheet, filled)
    with pytest.raises(SourceError, match="is not an item key"):
        read_reviews(sheet)
    argv = ["build", "italian", "--leggomanzoni", GIVEN["leggomanzoni"], "--embedding-model", "tfidf",
            "--reviews", str(sheet), "--out", str(tmp_path / "cli")]
    capsys.readouterr()
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("[italian]")]
    assert len(err) == 1 and "is not an item key" in err[0] and not (tmp_path / "cli").exists()


def test_keep_pins_the_distractors_the_reviewer_saw(first, tmp_path):
    # issue 42, review loop defect 1: after a rebuild whose sources offer other distractors, the
    # kept question still shows exactly the five the reviewer saw, each under its source
    _, built = first
    sheet = tmp_path / "sheet.csv"
    export_sheet(built, sheet)
    filled = _read(sheet)
    key = filled[0]["item_key"]
    filled[0].update(decision="keep", reviewer="Ada")
    _write(sheet, filled)
    before = next(r for r in rows(built, "wsd") if r["item_key"] == key)
    seen = sorted(c for i, c in enumerate(before["candidates"]) if i != before["gold_index"])
    again = build(tmp_path / "b", {"leggomanzoni": GIVEN["leggomanzoni"]}, wsd_questions=0, wsd_lexicon="none",
                  wsd_reviews=str(sheet))                        # no dictionary, no lexicon: other sources
    after = next(r for r in rows(again, "wsd") if r["item_key"] == key)
    assert sorted(c for i, c in enumerate(after["candidates"]) if i != after["gold_index"]) == seen
    assert sorted(after["candidate_sources"]) == sorted(before["candidate_sources"])
    assert after["review"]["distractors_new"] == []
    review = manifest(again)["summary"]["tasks"]["wsd"]["review"]
    assert (review["questions_reviewed"], review["questions_partly_reviewed"]) == (1, 0)


@pytest.mark.parametrize("target,message", [("gold", "is the question's answer"), ("other", "is already a candidate")])
def test_a_replacement_equal_to_the_gold_or_another_candidate_names_its_row(first, tmp_path, target, message):
    # issue 42, review loop defects 2 and 3: such a replacement was accepted (two right answers), or
    # made the question vanish with exit 0
    _, built = first
    sheet = tmp_path / "sheet.csv"
    export_sheet(built, sheet)
    filled = _read(sheet)
    key = filled[0]["item_key"]
    items = [r for r in filled if r["item_key"] == key]
    filled[0].update(decision="keep", reviewer="Ada")
    replacement = items[0]["candidate"] if target == "gold" else items[2]["candidate"].upper()
    items[1].update(decision="replace", reviewer="Ada", replacement=replacement)
    _write(sheet, filled)
    with pytest.raises(SourceError, match=message) as error:
        read_reviews(sheet)
    assert "row 3" in str(error.value) and "no decision of this sheet was applied" in str(error.value)


def test_decisions_about_phrases_this_build_makes_no_question_of_are_counted(first, tmp_path):
    # a key of the sources that this build does not draw (one question asked for) is counted, not an error
    _, built = first
    sheet = tmp_path / "sheet.csv"
    export_sheet(built, sheet)
    filled = _read(sheet)
    keys = list(dict.fromkeys(r["item_key"] for r in filled))
    for row in filled:
        if row["role"] == "gold":
            row.update(decision="keep", reviewer="Ada")
    _write(sheet, filled)
    review = manifest(build(tmp_path / "out", GIVEN, wsd_questions=1, wsd_reviews=str(sheet)))["summary"]["tasks"]["wsd"]["review"]
    assert review["not_applied"] == len(keys) - 1
    assert review["not_applied_examples"][0]["why"].startswith("the phrase is in the sources but not among this build's questions")


def test_the_review_command_writes_the_sheet(first, tmp_path, capsys):
    _, built = first
    out = tmp_path / "review.tsv"
    assert main(["review", "italian", str(built), "--out", str(out), "--only-unreviewed"]) == 0
    assert "rows for" in capsys.readouterr().out
    header = out.read_text(encoding="utf-8").splitlines()[0].split("\t")
    assert header == list(COLUMNS)
    assert main(["review", "italian", str(tmp_path / "missing"), "--out", str(tmp_path / "x.csv")]) == 2
