"""Likelihood run folders in the run format (issue 43): run.json, results.json and
items.jsonl beside chronologic's own chronologic.json and questions.jsonl; folders written
before the format are refused with the command that converts them, and converted."""

from __future__ import annotations

import json
import shutil

import pytest

from histbench.cli import main
from histbench.core.dataset import BuiltDataset
from histbench.core.runfolder import OldRunFolder, RunFolder, schema, validate
from histbench.eval.chronologic import EVALUATOR
from histbench.eval.chronologic.likelihood import evaluate
from histbench.eval.chronologic.run_summary import is_own_folder, summarise

from .test_likelihood import TextBackend

CANONICAL = ("run.json", "results.json", "items.jsonl")


@pytest.fixture
def random_run(sample_build, tmp_path, capsys):
    """The random baseline through `histbench eval`, as a user runs it."""
    out = tmp_path / "random"
    assert main(["eval", "chronologic", "--baseline", "random", "--dataset", str(sample_build), "--out", str(out),
                 "--bootstrap", "50"]) == 0
    capsys.readouterr()
    return out


def test_a_baseline_run_has_the_three_files_and_they_validate(random_run, sample_build):
    assert all((random_run / name).is_file() for name in CANONICAL)
    folder = RunFolder.open(random_run, benchmark="chronologic")   # validates all three
    assert folder.run["baseline"] == "random" and folder.run["model"] is None and folder.label == "random choice"
    assert folder.run["build"]["data_sha256"] == BuiltDataset.open(sample_build).identity()["data_sha256"]
    assert set(folder.run["files"]["extras"]) == {"chronologic.json", "questions.jsonl"}
    assert folder.extra("chronologic.json").is_file() and folder.run["files"]["records"] is None
    own = json.loads((random_run / "chronologic.json").read_text())
    assert folder.results["signature"] == own["signature"]["text"] and folder.run["options"] == own["options"]
    assert len(folder.items) == 24 and {i["outcome"] for i in folder.items} == {"unscored"}
    assert {m["id"] for m in folder.metrics if m["headline"]} == {"brier/overall", "acc/overall"}
    # the index card's headlines, named as before
    assert [h.metric for h in EVALUATOR.headlines(random_run)] == ["calibrated Brier (Table 3, lower is better)",
                                                                    "accuracy % (Table 3 rule)"]
    # the run format's run.json is not a model's run store: the baseline reruns into its own folder
    assert main(["eval", "chronologic", "--baseline", "random", "--dataset", str(sample_build), "--out", str(random_run),
                 "--bootstrap", "50"]) == 0
    assert EVALUATOR.open_run(random_run).results == folder.results


def test_a_model_run_has_the_three_files_and_its_records_validate(sample_build, tmp_path):
    run = tmp_path / "text"
    evaluate(BuiltDataset.open(sample_build), backend=TextBackend(), run_dir=run, n_resamples=20)
    EVALUATOR.finish_run(run)
    folder = EVALUATOR.open_run(run)
    assert folder.run["model"] == "text:length" and folder.run["baseline"] is None
    assert folder.run["files"]["records"] == "records.jsonl" and "backend" in folder.run   # the run store's keys kept
    lines = (run / "records.jsonl").read_text().splitlines()
    assert lines
    for number, line in enumerate(lines, 1):
        validate("record", json.loads(line), run / "records.jsonl", row=number)
    assert schema("record")["$id"]
    outcomes = {i["outcome"] for i in folder.items}
    assert outcomes <= {"correct", "wrong", "abstained", "unscored"} and outcomes & {"correct", "wrong"}
    assert all(i["score_label"] == "softmax Brier" and len(i["options"]) >= 2 for i in folder.items)


def test_the_metrics_are_the_old_computations(random_run):
    """Every cell of chronologic.json's metrics is one metric, id <metric>/<scope>; Table 3's
    Brier and accuracy quote the bootstrap median, the others the full-sample value."""
    own = json.loads((random_run / "chronologic.json").read_text())["metrics"]
    metrics = {m["id"]: m for m in EVALUATOR.results(random_run).metrics.values()}
    assert set(metrics) == {f"{name}/{scope}" for name, scopes in own.items() for scope in scopes}
    for name, scopes in own.items():
        for scope, cell in scopes.items():
            metric = metrics[f"{name}/{scope}"]
            assert metric["estimate"] == (cell["median"] if name in ("brier", "acc") else cell["estimate"])
            assert metric["interval"] == [cell["low"], cell["high"]] and metric["n"] == cell["n"]
            assert metric["constant"] == (True if cell.get("constant") else None)
    # pinned: the random baseline's full-sample values on the 24 sample questions (no bootstrap in them)
    assert metrics["acc_any/overall"]["estimate"] == pytest.approx(0.22291666666666665)
    assert metrics["acc/overall"]["note"].endswith("the full-sample value is 0.202431")
    assert metrics["brier/overall"]["note"].endswith("the full-sample value is 0.174815")
    assert metrics["acc/group:cloze"]["n"] == 9 and metrics["acc/overall"]["unit"] == "proportion"
    assert metrics["brier/overall"]["higher_is_better"] is False and metrics["acc/overall"]["higher_is_better"] is True
    # an interval of no width says every resample was the same (constant) or why (note)
    for metric in metrics.values():
        if metric["interval"] and metric["interval"][0] == metric["interval"][1]:
            assert metric["constant"] or metric["note"]


def test_an_old_folder_is_refused_and_finish_run_converts_it(random_run, tmp_path, capsys):
    old = tmp_path / "old"
    shutil.copytree(random_run, old)
    before = json.loads((old / "results.json").read_text())
    own = (old / "chronologic.json").read_text()
    # as histbench wrote it before the run format: chronologic's results under results.json
    for name in CANONICAL:
        (old / name).unlink()
    (old / "chronologic.json").rename(old / "results.json")
    assert is_own_folder(old) and EVALUATOR.is_own_folder(old) and not EVALUATOR.is_run_folder(old)
    with pytest.raises(OldRunFolder, match="histbench convert-run"):
        EVALUATOR.open_run(old)
    assert main(["report", "chronologic", str(old), "--out", str(tmp_path / "report")]) == 2
    assert "histbench convert-run" in capsys.readouterr().err
    EVALUATOR.finish_run(old)
    assert (old / "chronologic.json").read_text() == own   # nothing that was in it is lost
    folder = EVALUATOR.open_run(old)
    assert folder.results["metrics"] == before["metrics"] and len(folder.items) == 24
    assert main(["report", "chronologic", str(old), "--out", str(tmp_path / "report")]) == 0
    # converting again (chronologic.json now there) changes no number
    EVALUATOR.finish_run(old)
    assert EVALUATOR.open_run(old).results["metrics"] == before["metrics"]


def test_folders_that_are_not_chronologic_runs(tmp_path, random_run):
    assert not is_own_folder(tmp_path / "nothing")
    other = tmp_path / "other"
    other.mkdir()
    (other / "results.json").write_text(json.dumps({"benchmark": "mher", "metrics": {}}))
    assert not is_own_folder(other)
    from histbench.core.errors import EvalError

    with pytest.raises(EvalError, match="not a Chronologic-EN run folder"):
        summarise(other)
    # the run format's own results.json is not taken for chronologic's older one
    (random_run / "chronologic.json").unlink()
    assert not is_own_folder(random_run)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "chronologic.json").write_text(json.dumps({"benchmark": "chronologic", "mode": "mystery"}))
    with pytest.raises(EvalError, match="mode 'mystery'"):
        summarise(broken)
