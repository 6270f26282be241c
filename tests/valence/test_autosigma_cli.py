"""Automatic sigma from dated corpora, and the `histbench valence ...` commands' errors."""

from __future__ import annotations

import csv
from collections import Counter

import pytest

from histbench import cli
from histbench.builders.valence.scale import Scale
from histbench.eval.valence.autosigma import automatic_sigmas, count_corpus, count_dated, frequency_score


def test_frequency_score_hand_computed():
    """early 'thou thou thou you' (N=4), modern 'you you you thou' (N=4), V=2, a=0.5:
    f_early(thou) = 3.5/5 = 0.7, f_modern(thou) = 1.5/5 = 0.3 -> (0.3 - 0.7) / 1.0 = -0.4."""
    early, modern = Counter(thou=3, you=1), Counter(you=3, thou=1)
    assert frequency_score("thou", early, modern, 4, 4, 2) == pytest.approx(-0.4)
    assert frequency_score("you", early, modern, 4, 4, 2) == pytest.approx(0.4)
    only_early = Counter(doth=9, the=1)
    assert frequency_score("doth", only_early, Counter(the=10), 10, 10, 2) == pytest.approx((0.5 / 11 - 9.5 / 11) / (10 / 11))


def test_automatic_sigmas_snap_to_the_scale_and_skip_rare_words():
    vocabulary = {"s1": {"thou": {"token": "thou"}, "you": {"token": "you"}, "zounds": {"token": "zounds"}}}
    sentences = [{"sentence_id": "s1", "text": "Why wilt [MASK] go?", "left": "Why wilt ", "right": " go?"}]
    early, modern = Counter(thou=3, you=1), Counter(you=3, thou=1)
    rows = automatic_sigmas(vocabulary, sentences, early, modern, Scale(), min_count=2)
    by_token = {r["token"]: r for r in rows}
    assert by_token["thou"]["sigma"] == "-0.5" and by_token["you"]["sigma"] == "0.5"     # -0.4 and 0.4 snapped
    assert by_token["zounds"]["skip"] == "yes" and "too rare" in by_token["zounds"]["comment"]
    assert all(r["method"] == "automatic" and r["annotator"] == "automatic:relative-frequency" for r in rows)
    three = automatic_sigmas(vocabulary, sentences, early, modern, Scale.parse("-1,0,1"), min_count=2)
    assert {r["token"]: r["sigma"] for r in three}["thou"] == "0"                       # -0.4 is nearer 0


def test_corpus_readers(tmp_path):
    (tmp_path / "early").mkdir()
    (tmp_path / "early" / "a.txt").write_text("Thou art; thou ART.\n")
    (tmp_path / "early" / "b.txt").write_text("Doth he?")
    assert count_corpus([tmp_path / "early"]) == Counter(thou=2, art=2, doth=1, he=1)
    dated = tmp_path / "dated.csv"
    dated.write_text("year,text\n1600,thou art\n1950,you are\n,undated text\n")
    early, modern, stats = count_dated(dated, 1800)
    assert early == Counter(thou=1, art=1) and modern == Counter(you=1, are=1) and stats["rows_without_year"] == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("year,text\nabout 1600,thou\n")
    from histbench.core.errors import SourceError

    with pytest.raises(SourceError, match="bad.csv, row 2: field 'year'"):
        count_dated(bad, 1800)


def test_auto_sigma_command_writes_and_imports(synthetic_run, tmp_path, capsys):
    early, modern = tmp_path / "early.txt", tmp_path / "modern.txt"
    early.write_text("thou thee ye thou thee ye morrow night wind\n" * 3)
    modern.write_text("you they someone weather water u night wind\n" * 3)
    assert cli.main(["valence", "auto-sigma", str(synthetic_run.path), "--early", str(early), "--modern", str(modern),
                     "--min-count", "2", "--import"]) == 0
    out = capsys.readouterr().out
    assert "imported as method 'automatic'" in out
    stored = synthetic_run.annotations()
    assert stored and all(a["method"] == "automatic" for a in stored)
    values = {(a["sentence_id"], a["token"]): a["sigma"] for a in stored}
    assert values[("s1", "thou")] == -1.0 and values[("s3", "you")] == 1.0 and values[("s4", "night")] == 0.0
    # the report only uses them when asked
    assert cli.main(["report", "valence", str(synthetic_run.path), "--bootstrap", "20"]) == 2
    assert "holds only automatic annotations, none for --sigma-source manual" in capsys.readouterr().err
    assert cli.main(["report", "valence", str(synthetic_run.path), "--bootstrap", "20", "--sigma-source", "automatic",
                     "--allow-unannotated", "--out", str(synthetic_run.path / "report")]) == 0
    assert "automatic: derived from corpus frequencies" in (synthetic_run.path / "report" / "index.md").read_text()


def test_import_error_through_the_command_is_one_line_naming_the_row(synthetic_run, tmp_path, capsys):
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("sentence_id,token,sigma,annotator\ns1,thou,-1,a\ns1,not,2,a\n")
    assert cli.main(["valence", "import-annotations", str(synthetic_run.path), str(sheet), "--partial"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"histbench: error: {sheet}, row 3: field 'sigma': sigma '2' is not on the scale")
    assert err.count("\n") == 1 and not synthetic_run.annotations_path.exists()


def test_commands_on_a_folder_that_is_not_a_run(tmp_path, capsys):
    assert cli.main(["valence", "export-vocabulary", str(tmp_path), "--out", str(tmp_path / "x.csv")]) == 2
    assert "not a valence run folder" in capsys.readouterr().err
    assert cli.main(["valence", "export-vocabulary", str(tmp_path), "--out", str(tmp_path / "x.xlsx")]) == 2


def test_export_command_writes_the_sheet(synthetic_run, tmp_path, capsys):
    out = tmp_path / "sheet.tsv"
    assert cli.main(["valence", "export-vocabulary", str(synthetic_run.path), "--out", str(out)]) == 0
    assert "21 sentence x word rows for 4 sentences" in capsys.readouterr().out
    with out.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    assert len(rows) == 21 and rows[0]["sentence_id"] == "s1"


def test_package_command(synthetic_run, annotation_sheet, tmp_path, capsys):
    assert cli.main(["valence", "import-annotations", str(synthetic_run.path), str(annotation_sheet())]) == 0
    assert "stored" in capsys.readouterr().out
    out = tmp_path / "pkg"
    assert cli.main(["valence", "package", str(synthetic_run.path), "--out", str(out)]) == 0
    assert cli.main(["validate", str(out)]) == 0


def test_results_json_holds_beta_and_delta_once_the_words_are_annotated(synthetic_run, annotation_sheet):
    """The run format (issue 43): before annotation a valence run has items and no metrics;
    `import-annotations` writes results.json again with beta and delta per model and group
    (3.2), the numbers the report's scoring gives with its defaults."""
    from histbench import api
    from histbench.core.runfolder import RunFolder
    from histbench.eval.valence import score_folder
    from histbench.eval.valence.runfolder import RunFolder as ValenceRun
    from histbench.eval.valence.scoring import ScoreOptions

    before = RunFolder.open(synthetic_run.path, benchmark="valence")
    assert before.metrics == [] and len(before.items) == 2 * 4
    assert {item["outcome"] for item in before.items} == {"invalid"}
    assert cli.main(["valence", "import-annotations", str(synthetic_run.path), str(annotation_sheet())]) == 0
    results = api.results("valence", synthetic_run.path)
    scores = score_folder(ValenceRun.open(synthetic_run.path), ScoreOptions(fold_case=True))
    for row in scores.summary:
        beta = results.metrics[f"{row['model']}/{row['group']}/beta_raw"]
        assert beta["estimate"] == row["beta_raw_mean"] and beta["interval"] == [row["beta_raw_low"], row["beta_raw_high"]]
        assert beta["method"] == "percentile bootstrap" and beta["system"] == row["model"]
    assert {m["id"] for m in results.metrics.values() if m["headline"]} == {
        f"{model}/all/{name}_raw" for model in ("early", "modern") for name in ("beta", "delta")}
    assert {item["outcome"] for item in results.records} == {"unscored"}
