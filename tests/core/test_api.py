"""The Python API as a notebook user calls it: `import histbench`, then build, load,
evaluate, read the results and render a report; and the CLI giving the same."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

import histbench
from histbench.cli import main
from histbench.core.errors import UsageError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def notebook(tmp_path, monkeypatch):
    """A notebook's working folder (relative paths resolve there, as in a user's session)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_version_and_surface():
    assert histbench.__version__ == tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert set(histbench.__all__) == {"Results", "__version__", "benchmarks", "build", "evaluate", "load", "push",
                                      "report", "results", "validate"}
    assert set(histbench.benchmarks()) == {"chronoculture", "chronologic", "italian", "mher", "valence"}
    for name in histbench.__all__:
        assert name == "__version__" or getattr(histbench, name).__doc__, f"{name} is undocumented"


def test_a_notebook_session_on_chronologic(notebook, capsys):
    folder = histbench.build("chronologic", sample=True)
    assert folder == Path("build/chronologic-1.0.0") and (notebook / folder / "histbench.json").is_file()
    questions = histbench.load(folder, "questions", split="test")
    assert questions.num_rows == 24
    assert histbench.validate(folder)["benchmark"] == "chronologic"

    # 200 bootstrap resamples, as the CLI run below (the default 1,000 take ~25 s of CPU each)
    run = histbench.evaluate("chronologic", baseline="random", dataset=folder, bootstrap=200)
    assert isinstance(run, histbench.Results) and run.benchmark == "chronologic"
    assert run.path == Path("runs/chronologic/likelihood-random")   # the command's default run folder
    assert run.label == "random choice"
    assert run.signature.startswith("histbench:") and "|model:baseline:random|" in run.signature
    assert [int(r["id"]) for r in run.records] == sorted(questions["question_number"])
    assert run.metrics["acc/overall"]["n"] == 24 and 0 <= run.metrics["brier/overall"]["estimate"] <= 1
    assert len(run.to_pandas()) == 24 and json.dumps(run.to_json())
    assert histbench.results("chronologic", run.path).metrics == run.metrics

    report = histbench.report("chronologic", [run])
    assert report == Path("reports/chronologic") and "random choice" in (report / "index.md").read_text()
    assert (report / "index.html").is_file()

    # the command line writes the same numbers
    capsys.readouterr()
    assert main(["eval", "chronologic", "--baseline", "random", "--bootstrap", "200", "--dataset", str(folder),
                 "--out", "runs/cli"]) == 0
    cli = json.loads(Path("runs/cli/results.json").read_text())
    assert {m["id"]: m for m in cli["metrics"]} == run.metrics and cli["signature"] == run.signature


def test_inputs_are_keyword_arguments_named_by_role(notebook):
    """`histbench.build(..., questions=FILE)` is `histbench build ... --questions FILE`."""
    from histbench.builders.machinery.build import get_builder

    sample = get_builder("chronologic").manifest().sample_paths()["questions"][0]
    mine = histbench.build("chronologic", questions=sample, out="mine")
    bundled = histbench.build("chronologic", sample=True, out="bundled")
    manifest = [json.loads((folder / "histbench.json").read_text()) for folder in (mine, bundled)]
    assert manifest[0]["data_sha256"] == manifest[1]["data_sha256"]
    with pytest.raises(UsageError, match="either --sample or your own files"):
        histbench.build("chronologic", questions=sample, sample=True)


def test_options_are_checked_by_the_command_s_own_parser(notebook):
    folder = histbench.build("chronologic", sample=True)
    with pytest.raises(UsageError, match=r"no option 'n_bootstrap' \(did you mean 'bootstrap'\?\) \(options: .*bootstrap"):
        histbench.evaluate("chronologic", baseline="random", dataset=folder, n_bootstrap=10)
    with pytest.raises(UsageError, match="permute_frames is a flag: give True or False"):
        histbench.evaluate("chronologic", baseline="random", dataset=folder, permute_frames="yes")
    with pytest.raises(UsageError, match="invalid choice: 'coin'"):
        histbench.evaluate("chronologic", baseline="coin", dataset=folder)
    with pytest.raises(UsageError, match="unknown benchmark 'nope'"):
        histbench.evaluate("nope", baseline="random")
    run = histbench.evaluate("chronologic", baseline="random", dataset=folder, permute_frames=True, limit=8,
                             bootstrap=50, out=Path("runs") / "wrong-frames")
    assert run.path == Path("runs/wrong-frames") and len(run.records) == 8
    assert run.info["options"]["permute_frames"] is True and run.info["options"]["bootstrap_resamples"] == 50


def test_results_of_chronoculture_and_mher_runs(notebook):
    chronoculture = histbench.build("chronoculture", sample=True)
    run = histbench.evaluate("chronoculture", baseline="uniform", dataset=chronoculture, out="runs/uniform")
    assert run.label == "uniform" and run.signature.startswith("histbench-chronoculture|baseline:uniform|")
    assert run.metrics["counts.analysed"]["estimate"] == run.metrics["counts.scored"]["estimate"] > 0
    cell = run.metrics["rf1.default.tau0.10.all.both"]  # RF1: both periods within tau = 0.10
    low, high = cell["interval"]
    assert low <= cell["estimate"] <= high and cell["unit"] == "proportion" and cell["n"] > 0
    assert cell["method"].startswith("Wilson")   # a share of pairs is a proportion (issue 43)
    assert {r["group"] for r in run.records} and all(r["id"] and r["outcome"] for r in run.records)

    mher = histbench.build("mher", sample=True)
    baselines = histbench.evaluate("mher", baseline="table2", dataset=mher, out="runs/mher-baselines")
    exact = baselines.metrics["exact/name_only/test/accuracy"]
    assert exact["n"] == sum(1 for r in baselines.records if r["system"] == "exact" and r["group"] == "test")
    assert 0 <= exact["interval"][0] <= exact["estimate"] <= exact["interval"][1] <= 1 and exact["method"] == "Wilson"
    assert all(r["gold"] in ("same", "different") for r in baselines.records)
    assert baselines.signature.startswith("histbench:") and "|model:baseline:table2|" in baselines.signature


def test_results_of_italian_and_valence_runs(notebook, tiny_masked_lm):
    from histbench.builders.machinery.build import get_builder

    cavalcanti = get_builder("italian").manifest().sample_paths()["cavalcanti"][0]
    italian = histbench.build("italian", cavalcanti=cavalcanti)
    run = histbench.evaluate("italian", baseline="random", dataset=italian, out="runs/italian-random")
    assert set(run.metrics) == {"head/accuracy", "deprel/accuracy"} and run.signature.startswith("histbench:")
    assert {r["config"] for r in run.records} == {"head", "deprel"}
    assert sum(run.metrics[t]["n"] for t in run.metrics) == len(run.records)
    assert run.info["baseline"] == "random" and run.info["build"]["benchmark"] == "italian"
    assert run.to_pandas().groupby("config").size().to_dict() == {m["config"]: m["n"] for m in run.metrics.values()}

    valence = histbench.build("valence", sample=True)
    run = histbench.evaluate("valence", model=f"tiny=hf:{tiny_masked_lm}", dataset=valence, top_k=3,
                             model_option={"device": "cpu"}, out="runs/valence")
    assert run.label == "tiny" and run.signature is None and run.info["model"] == f"hf:{tiny_masked_lm}"
    if run.metrics:  # the tiny model's fillers happen to be annotated in the sample
        assert "tiny/all/beta_raw" in run.metrics
    else:
        assert any("annotat" in note for note in run.info["viewer"]["notes"]) and len(run.records) == 3 * 30


def test_the_anchors_and_judged_file_names_are_those_the_modes_write():
    from histbench.eval.chronologic import anchors, run_summary, substantive
    from histbench.eval.chronologic.style import scoring

    assert run_summary.ANCHORS_NAME == anchors.ANCHORS_NAME
    assert run_summary.SUBSTANTIVE_NAME == substantive.SUBSTANTIVE_NAME
    assert run_summary.STYLE_NAME == scoring.STYLE_NAME
