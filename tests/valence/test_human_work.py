"""The annotation loop never loses what a person wrote, and one bad sentence does not stop a
run (issue 17, points 9-12), through the `histbench` command as an annotator runs it."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

from histbench import cli

from .conftest import SENTENCES, write_csv


def _read(path: Path) -> list[dict]:
    with Path(path).open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _write(path: Path, rows: list[dict]) -> None:
    with Path(path).open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _fill(rows: list[dict], count: int, annotator: str = "ann1") -> list[dict]:
    """The first `count` rows get a sigma (skip for punctuation), the others stay blank."""
    for row in rows[:count]:
        row["annotator"] = annotator
        if row["token"] in ("!", ",", "."):
            row["skip"] = "yes"
        else:
            row["sigma"] = "-1" if row["token"] in ("thou", "thee", "ye", "morrow") else "0"
    return rows


# ----------------------------------------------------------------------------- point 9


def test_export_never_overwrites_a_sheet_holding_annotations(synthetic_run, tmp_path, capsys):
    sheet = tmp_path / "to_annotate.csv"
    assert cli.main(["valence", "export-vocabulary", str(synthetic_run.path), "--out", str(sheet)]) == 0
    rows = _fill(_read(sheet), 12)
    _write(sheet, rows)
    before = sheet.read_bytes()
    capsys.readouterr()
    assert cli.main(["valence", "export-vocabulary", str(synthetic_run.path), "--out", str(sheet)]) == 2
    err = capsys.readouterr().err
    assert f"{sheet}, field '--out': the sheet exists and 12 of its rows hold annotations" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert sheet.read_bytes() == before
    # a comment alone is human work too
    rows = _read(tmp_path / "to_annotate.csv")
    blank = [{**r, "sigma": "", "skip": "", "annotator": "", "comment": ""} for r in rows]
    blank[3]["comment"] = "ask Mary about this one"
    _write(sheet, blank)
    assert cli.main(["valence", "export-vocabulary", str(synthetic_run.path), "--out", str(sheet)]) == 2
    assert "1 of its rows hold annotations" in capsys.readouterr().err


def test_export_may_replace_its_own_blank_sheet_but_no_other_file(synthetic_run, tmp_path, capsys):
    sheet = tmp_path / "to_annotate.csv"
    assert cli.main(["valence", "export-vocabulary", str(synthetic_run.path), "--out", str(sheet)]) == 0
    assert cli.main(["valence", "export-vocabulary", str(synthetic_run.path), "--out", str(sheet)]) == 0
    other = write_csv(tmp_path / "results.csv", ["model", "beta"], [["m", "0.4"]])
    capsys.readouterr()
    assert cli.main(["valence", "export-vocabulary", str(synthetic_run.path), "--out", str(other)]) == 2
    assert "is not a blank annotation sheet" in capsys.readouterr().err
    assert _read(other) == [{"model": "m", "beta": "0.4"}]


def test_the_eval_hint_names_a_sheet_that_does_not_exist_yet(tiny_masked_lm, sentences_csv, build_valence, tmp_path,
                                                             monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    built = build_valence(sentences_csv)
    (tmp_path / "to_annotate.csv").write_text("sentence_id,token,sigma\ns1,thou,-1\n")
    assert cli.main(["eval", "valence", "--dataset", str(built), "--out", str(tmp_path / "run"), "--top-k", "3",
                     "--model", f"tiny=hf:{tiny_masked_lm}"]) == 0
    hint = [line for line in capsys.readouterr().out.splitlines() if line.startswith("next:")]
    assert hint == [f"next: histbench valence export-vocabulary {tmp_path / 'run'} --out to_annotate-2.csv"]


# ----------------------------------------------------------------------------- point 10


def test_a_half_filled_sheet_imports_with_partial_and_only_missing_lists_exactly_the_rest(synthetic_run, tmp_path, capsys):
    sheet = tmp_path / "to_annotate.csv"
    assert cli.main(["valence", "export-vocabulary", str(synthetic_run.path), "--out", str(sheet)]) == 0
    rows = _fill(_read(sheet), 9)
    rows[12]["annotator"] = "ann1"          # a name typed on a row not annotated yet: still blank
    _write(sheet, rows)
    capsys.readouterr()
    # without --partial: refused, naming the first blank row, nothing stored
    assert cli.main(["valence", "import-annotations", str(synthetic_run.path), str(sheet)]) == 2
    err = capsys.readouterr().err
    assert f"{sheet}, row 11: field 'sigma': token" in err and "--partial" in err
    assert not synthetic_run.annotations_path.exists()
    # with --partial: the 9 filled rows are stored, the 12 blank ones left for later
    assert cli.main(["valence", "import-annotations", str(synthetic_run.path), str(sheet), "--partial"]) == 0
    out = capsys.readouterr().out
    assert "9 annotations" in out and "12 rows not annotated yet (left for later)" in out
    assert "still unannotated (--partial): 12 sentence x word pairs" in out
    assert len(synthetic_run.annotations()) == 9
    rest = tmp_path / "rest.csv"
    assert cli.main(["valence", "export-vocabulary", str(synthetic_run.path), "--only-missing", "--out", str(rest)]) == 0
    expected = [(r["sentence_id"], r["token"]) for r in rows[9:]]
    assert [(r["sentence_id"], r["token"]) for r in _read(rest)] == expected
    # the rest filled and imported completes the set (no --partial needed)
    _write(rest, _fill(_read(rest), 12))
    assert cli.main(["valence", "import-annotations", str(synthetic_run.path), str(rest)]) == 0
    assert len(synthetic_run.annotations()) == 21


def test_a_reexport_prefills_stored_values_for_review(synthetic_run, tmp_path, capsys):
    sheet = tmp_path / "to_annotate.csv"
    assert cli.main(["valence", "export-vocabulary", str(synthetic_run.path), "--out", str(sheet)]) == 0
    rows = _fill(_read(sheet), 21)
    rows[0]["comment"] = "modern sense"
    _write(sheet, rows)
    assert cli.main(["valence", "import-annotations", str(synthetic_run.path), str(sheet)]) == 0
    review = tmp_path / "review.csv"
    assert cli.main(["valence", "export-vocabulary", str(synthetic_run.path), "--prefill", "--out", str(review)]) == 0
    assert "pre-filled with the values of ann1: 21 rows (0 still blank)" in capsys.readouterr().out
    shown = _read(review)
    assert [(r["token"], r["sigma"], r["skip"], r["annotator"]) for r in shown] == [
        (r["token"], r["sigma"], r["skip"], r["annotator"]) for r in rows]
    assert shown[0]["comment"] == "modern sense"
    # the reviewer revises one value; importing the sheet again replaces ann1's value
    target = next(r for r in shown if (r["sentence_id"], r["token"]) == ("s4", "morrow"))
    target["sigma"] = "-0.5"
    _write(review, shown)
    assert cli.main(["valence", "import-annotations", str(synthetic_run.path), str(review)]) == 0
    stored = {(a["sentence_id"], a["token"]): a["sigma"] for a in synthetic_run.annotations()}
    assert stored[("s4", "morrow")] == -0.5 and len(stored) == 21
    assert cli.main(["valence", "export-vocabulary", str(synthetic_run.path), "--prefill", "nobody",
                     "--out", str(tmp_path / "x.csv")]) == 2
    assert "no manual annotations by 'nobody'" in capsys.readouterr().err


# ----------------------------------------------------------------------------- point 11


def test_a_sentence_longer_than_the_window_fails_alone(tiny_masked_lm, build_valence, tmp_path, capsys):
    long_text = "Why wilt [MASK] be offended by " + " ".join(["that"] * 200) + "?"
    rows = [[sid, text, group, rho, ""] for sid, text, group, rho in SENTENCES]
    rows.insert(1, ["long1", long_text, "EME", "-1", ""])
    built = build_valence(write_csv(tmp_path / "sentences.csv", ["sentence_id", "sentence", "group", "rho", "notes"], rows))
    run = tmp_path / "run"
    assert cli.main(["eval", "valence", "--dataset", str(built), "--out", str(run), "--top-k", "3",
                     "--model", f"tiny=hf:{tiny_masked_lm}"]) == 0
    out = capsys.readouterr().out
    assert "tiny: 5 sentences (5 asked, 0 reused, 1 failed)" in out
    assert re.search(r"^  failed: sentence long1: the sentence is \d{3} tokens long, longer than the model's window "
                     r"of 128 tokens", out, re.MULTILINE)
    from histbench.eval.valence.runfolder import RunFolder

    predicted = {r["sentence_id"] for r in RunFolder.open(run).predictions()}
    assert predicted == {"s1", "s2", "s3", "s4"}


# ----------------------------------------------------------------------------- point 12


def test_a_failed_valence_report_leaves_the_earlier_report(synthetic_run, annotation_sheet, tmp_path, monkeypatch, capsys):
    from histbench.eval import report as report_module
    from histbench.eval.valence.vocabulary import import_annotations

    import_annotations(synthetic_run, [annotation_sheet()])
    args = ["report", "valence", str(synthetic_run.path), "--bootstrap", "20", "--no-vocabulary-check",
            "--out", str(synthetic_run.path / "report")]
    assert cli.main(args) == 0
    folder = synthetic_run.path / "report"
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert any(p.suffix == ".png" for p in before)

    def disk_full(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report_module, "markdown_to_html", disk_full)
    capsys.readouterr()
    assert cli.main([*args, "--plot", "violin"]) == 2   # figures are redrawn before the index fails
    assert "No space left on device" in capsys.readouterr().err
    after = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in synthetic_run.path.iterdir() if p.name.startswith(".")) == []


def test_a_first_eval_whose_model_fails_to_load_leaves_no_run_folder(tiny_masked_lm, sentences_csv, build_valence,
                                                                      tmp_path, capsys):
    """Before, the folder kept top-k 5 from the failed run and refused --top-k 3 afterwards."""
    built = build_valence(sentences_csv)
    broken = tmp_path / "broken"
    shutil.copytree(tiny_masked_lm, broken)
    for weights in broken.glob("*.safetensors"):
        weights.write_bytes(b"not a safetensors file")
    run = tmp_path / "run"
    assert cli.main(["eval", "valence", "--dataset", str(built), "--out", str(run), "--top-k", "5",
                     "--model", f"hf:{broken}"]) == 2
    assert "cannot load the model" in capsys.readouterr().err
    assert not run.exists()
    assert cli.main(["eval", "valence", "--dataset", str(built), "--out", str(run), "--top-k", "3",
                     "--model", f"tiny=hf:{tiny_masked_lm}"]) == 0
