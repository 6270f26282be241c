"""Scoring a run folder, the report (Tables 1-3, Figures 1-3 style) and packaging a run."""

from __future__ import annotations

import argparse
import csv
import math

import pytest

from histbench.eval.valence import EVALUATOR
from histbench.eval.valence.scoring import ScoreOptions, score_run
from histbench.eval.valence.vocabulary import import_annotations


@pytest.fixture
def annotated_run(synthetic_run, annotation_sheet):
    import_annotations(synthetic_run, [annotation_sheet()])
    return synthetic_run


def _pairs(scores):
    return {(p["model"], p["sentence_id"]): p for p in scores.pairs}


def test_beta_and_delta_per_model_and_sentence(annotated_run):
    """Hand-computed from the fixture's predictions and annotations (Eq. 3-4):
    early/s1: thou .5 (-1), not .2, you .1, ##st .05 (piece)   -> beta -0.5,  delta 0.75, renorm -0.625
    early/s2: you .4, thee .3, ye .1 (all -1), [UNK] .05        -> beta -0.8,  delta 0.9,  renorm -1
    early/s3: thou .3 (-1), you .3 (0), ye .2 (-1), ! skipped   -> beta -0.5,  delta 0.25 (rho +1)
    early/s4: night .6, wind .2, morrow .1 (-1), air .05        -> beta -0.1,  delta 0.95
    modern/s1: you .6, they .2, not .1 (0), thou .05 (-1)       -> beta -0.05, delta 0.525
    modern/s2: you .7 (-1 here: 'fare you well'), them .1, ye .05 (-1) -> beta -0.75, delta 0.875
    modern/s3: you .7 (0 here), someone, they (0), u .05 (+1)   -> beta 0.05,  delta 0.525
    modern/s4: all neutral                                     -> beta 0,     delta 1"""
    scores = score_run(annotated_run.sentences(), annotated_run.predictions(), annotated_run.annotations(), ScoreOptions())
    pairs = _pairs(scores)
    expected = {
        ("early", "s1"): (-0.5, 0.75), ("early", "s2"): (-0.8, 0.9), ("early", "s3"): (-0.5, 0.25),
        ("early", "s4"): (-0.1, 0.95), ("modern", "s1"): (-0.05, 0.525), ("modern", "s2"): (-0.75, 0.875),
        ("modern", "s3"): (0.05, 0.525), ("modern", "s4"): (0.0, 1.0),
    }
    for key, (beta, delta) in expected.items():
        assert pairs[key]["beta"] == pytest.approx(beta), key
        assert pairs[key]["delta"] == pytest.approx(delta), key
        assert pairs[key]["status"] == "ok"
    assert pairs[("early", "s1")]["beta_renormalised"] == pytest.approx(-0.625)
    assert pairs[("early", "s2")]["beta_renormalised"] == pytest.approx(-1.0)
    assert pairs[("early", "s2")]["delta_renormalised"] == pytest.approx(1.0)
    assert pairs[("early", "s1")]["mass_subword"] == pytest.approx(0.05)
    summary = {(r["model"], r["group"]): r for r in scores.summary}
    assert summary[("early", "EME")]["beta_raw_mean"] == pytest.approx(-0.65)
    assert summary[("modern", "EME")]["beta_raw_mean"] == pytest.approx(-0.4)
    assert summary[("early", "all")]["delta_raw_mean"] == pytest.approx((0.75 + 0.9 + 0.25 + 0.95) / 4)
    assert summary[("early", "EME")]["beta_raw_low"] <= -0.65 <= summary[("early", "EME")]["beta_raw_high"]
    assert scores.groups == ["EME", "neutral", "ME"]


def test_renormalised_mode_leads_when_asked(annotated_run):
    scores = score_run(annotated_run.sentences(), annotated_run.predictions(), annotated_run.annotations(),
                       ScoreOptions(mode="renormalised"))
    assert _pairs(scores)[("early", "s3")]["beta"] == pytest.approx(-0.625)


def test_incomplete_pairs_are_counted_not_dropped(synthetic_run, annotation_sheet):
    rows = [("s1", "thou", "-1"), ("s1", "not", "0"), ("s1", "you", "0")]   # 'they' (modern/s1) left out
    import_annotations(synthetic_run, [annotation_sheet(rows)], partial=True)
    scores = score_run(synthetic_run.sentences(), synthetic_run.predictions(), synthetic_run.annotations(), ScoreOptions())
    pairs = _pairs(scores)
    assert pairs[("early", "s1")]["status"] == "ok" and pairs[("modern", "s1")]["status"] == "incomplete"
    assert math.isnan(pairs[("modern", "s1")]["beta"])
    assert scores.counts["status"] == {"ok": 1, "incomplete": 7}
    lenient = score_run(synthetic_run.sentences(), synthetic_run.predictions(), synthetic_run.annotations(),
                        ScoreOptions(allow_unannotated=True))
    assert _pairs(lenient)[("modern", "s1")]["beta"] == pytest.approx(-0.05)
    assert _pairs(lenient)[("modern", "s1")]["mass_unannotated"] == pytest.approx(0.2)


def _report_args(run, out, *extra):
    parser = argparse.ArgumentParser()
    EVALUATOR.add_report_arguments(parser)
    return parser.parse_args([str(run.path), "--out", str(out), "--bootstrap", "200", *extra])


def test_report_writes_tables_figures_and_csv(annotated_run, tmp_path, capsys):
    out = tmp_path / "report"
    EVALUATOR.run_report(_report_args(annotated_run, out, "--plot", "violin", "--examples", "s2", "s3"))
    index = (out / "index.md").read_text()
    for name in ("fig1_beta_by_group.png", "fig2_delta_by_group.png", "fig3_mean_beta.png"):
        assert (out / name).stat().st_size > 1000 and f"]({name})" in index
    assert "**s2** (EME, rho = -1): Fare [MASK] well, sir." in index
    assert "**s3** (ME, rho = 1)" in index and "**s1**" not in index
    assert "| early | EME | 2 | 2 | -1.00 | -0.650 [" in index
    sentences_md = (out / "sentences.md").read_text()
    assert "##st (subword)" in sentences_md and "[UNK] (special)" in sentences_md and "| skip |" in sentences_md
    assert (out / "scores.csv").read_text().count("\n") == 9
    assert (out / "index.html").is_file() and (out / "report.json").is_file()
    assert capsys.readouterr().out.strip() == str(out / "index.md")


def test_report_without_annotations_says_what_to_do(synthetic_run, tmp_path):
    from histbench.core.errors import EvalError

    with pytest.raises(EvalError, match="export-vocabulary"):
        EVALUATOR.run_report(_report_args(synthetic_run, tmp_path / "r"))


def test_conflict_policy_error_stops_the_report(annotated_run, annotation_sheet, tmp_path):
    from histbench.core.errors import EvalError

    import_annotations(annotated_run, [annotation_sheet([("s2", "you", "0")], "ann2", "b.csv")])
    with pytest.raises(EvalError, match="s2/you: ann1=-1, ann2=0"):
        EVALUATOR.run_report(_report_args(annotated_run, tmp_path / "r", "--conflicts", "error"))
    EVALUATOR.run_report(_report_args(annotated_run, tmp_path / "r2", "--conflicts", "prefer:ann2"))
    with (tmp_path / "r2" / "scores.csv").open(encoding="utf-8") as handle:
        rows = {(r["model"], r["sentence_id"]): r for r in csv.DictReader(handle)}
    # ann2 says 'you' is neutral in s2: early/s2 = 0.4 * 0 + 0.3 * -1 + 0.1 * -1 = -0.4
    assert float(rows[("early", "s2")]["beta"]) == pytest.approx(-0.4)
    assert rows[("early", "s2")]["conflicts"] == "1"
    EVALUATOR.run_report(_report_args(annotated_run, tmp_path / "r3"))   # mean: (-1 + 0) / 2 -> -0.2 -0.3 -0.1
    with (tmp_path / "r3" / "scores.csv").open(encoding="utf-8") as handle:
        rows = {(r["model"], r["sentence_id"]): r for r in csv.DictReader(handle)}
    assert float(rows[("early", "s2")]["beta"]) == pytest.approx(-0.6)


def test_package_writes_a_loadable_dataset(annotated_run, tmp_path):
    from datasets import load_dataset

    from histbench.builders.machinery.validate import validate_build
    from histbench.eval.valence.package import package_run

    folder = package_run(annotated_run, tmp_path / "valence-run-1.0.0")
    validate_build(folder)
    predictions = load_dataset(str(folder), "predictions", split="test")
    assert predictions.num_rows == 32 and set(predictions["model"]) == {"early", "modern"}
    assert load_dataset(str(folder), "annotations", split="test").num_rows == 21
    assert load_dataset(str(folder), "sentences", split="test").num_rows == 4


def test_figure3_legend_is_clear_of_the_data(annotated_run, tmp_path, legends_checked):
    """Issue 20: legends never cover data (the legend sat in the axes, over ME's mean-rho line)."""
    from histbench.eval.valence.reporting import plot_mean_bias

    scores = score_run(annotated_run.sentences(), annotated_run.predictions(), annotated_run.annotations(), ScoreOptions())
    plot_mean_bias(scores, tmp_path / "fig3.png")
    assert legends_checked
