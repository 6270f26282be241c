"""MHER run folders in the run format (issue 43): run.json, results.json and items.jsonl
written after `histbench eval mher`, their metrics equal to what mher's own code computes,
and older folders refused until converted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from histbench.cli import main
from histbench.core.runfolder import CANONICAL_FILES, OldRunFolder, RunFolder, schema
from histbench.eval.mher import EVALUATOR
from histbench.eval.mher import metrics as M
from histbench.eval.mher.analysis import System, analyse_models
from histbench.eval.mher.data import align, read_run


@pytest.fixture(scope="module")
def runs(sample_build, tmp_path_factory):
    """A Table 2 baselines run and a lexical reference run of the sample build."""
    root = tmp_path_factory.mktemp("mher-runs")
    assert main(["eval", "mher", "--baseline", "table2", "--dataset", str(sample_build),
                 "--out", str(root / "baselines")]) == 0
    assert main(["eval", "mher", "--reference", "lexical", "--dataset", str(sample_build),
                 "--out", str(root / "lexical")]) == 0
    return root


def _copy(runs: Path, name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(runs / name, tmp_path / name))


def _metrics(run_dir: Path) -> dict[str, dict]:
    return {m["id"]: m for m in RunFolder.open(run_dir).metrics}


@pytest.mark.parametrize("name", ["baselines", "lexical"])
def test_an_eval_writes_the_three_files_and_they_validate(runs, name):
    run_dir = runs / name
    assert all((run_dir / f).is_file() for f in CANONICAL_FILES)
    folder = RunFolder.open(run_dir, benchmark="mher")
    predictions = read_run(run_dir).predictions
    assert len(folder.items) == len(predictions) > 0
    assert folder.run["files"]["extras"].keys() == {"mher_run.json", "mher_predictions.jsonl"}
    assert folder.extra("mher_predictions.jsonl") == run_dir / "mher_predictions.jsonl"
    assert folder.run["build"]["benchmark"] == "mher" and folder.run["build"]["data_sha256"]
    assert folder.results["signature"].startswith("histbench:")
    assert folder.run["model"] is None
    if name == "baselines":
        assert folder.run["baseline"] == "table2" and folder.label == "baselines"
        systems = {p.system for p in predictions}
        assert {m["system"] for m in folder.metrics} == systems == {i["system"] for i in folder.items}
        assert len(systems) > 1
        assert sum(m["headline"] for m in folder.metrics) == len(systems)   # one headline per system
    else:
        assert folder.run["baseline"] == "reference:lexical"


def test_metrics_equal_what_mhers_code_computes(runs, sample_bench):
    run_dir = runs / "lexical"
    metrics = _metrics(run_dir)
    run = read_run(run_dir)
    system = "reference: lexical logistic"
    # every cell: metrics.binary_metrics / unresolved_summary, as the results of the old format gave them
    for condition in ("name_only", "context_only", "source_grounded", "shuffled_a", "unresolved"):
        for split in ("dev", "test") if condition != "unresolved" else ("test",):
            aligned = align(sample_bench, run.predictions, system, condition, split)
            if condition == "unresolved":
                cell = M.unresolved_summary(aligned.action, aligned.probabilities)
                keys = ("ambiguous", "abstention_share", "over_resolution", "mean_p_ambiguous")
            else:
                cell = M.binary_metrics(aligned.gold, aligned.action, aligned.probabilities, aligned.valid)
                keys = ("accuracy", "macro_f1", "abstention", "selective_accuracy", "false_same", "missed_same",
                        "mean_p_gold", "brier", "log_loss", "invalid")
            for key in keys:
                metric = metrics[f"{system}/{condition}/{split}/{key}"]
                assert metric["estimate"] == pytest.approx(cell[key]), (condition, split, key)
                assert metric["n"] == cell["n"] and metric["config"] == condition and metric["system"] == system
            if "accuracy" in cell:
                assert metrics[f"{system}/{condition}/{split}/accuracy"]["interval"] == pytest.approx(
                    [cell["accuracy_low"], cell["accuracy_high"]])
    # pinned: 40 of the 78 Source-grounded TEST pairs, the headline, with its Wilson interval
    headline = [m for m in metrics.values() if m["headline"]]
    assert [m["id"] for m in headline] == [f"{system}/source_grounded/test/accuracy"]
    assert headline[0]["estimate"] == pytest.approx(40 / 78) and headline[0]["method"] == "Wilson"
    assert headline[0]["interval"] == pytest.approx([0.403927, 0.620510], abs=1e-6)
    assert headline[0]["label"] == "accuracy, Source-grounded TEST"
    # Tables 4-6: what the report's analysis gives this system at its defaults
    analysis = analyse_models(sample_bench, [System(system, system, run.predictions, "reference")])
    result = analysis["models"][system]
    base = f"{system}/paired/test"
    for key, diff in result["bootstrap_difference"].items():
        metric = metrics[f"{base}/difference/{key}"]
        assert metric["estimate"] == pytest.approx(diff["estimate"])
        assert metric["interval"] == pytest.approx([diff["low"], diff["high"]])
        assert metric["constant"] is bool(diff.get("constant"))
    gain = metrics[f"{base}/difference/source_grounded-name_only"]
    assert gain["estimate"] == pytest.approx(-16 / 78) and gain["interval"] == pytest.approx([-27 / 78, -5 / 78])
    # Source-grounded and Context-only decide every pair alike: every resample gives a gain of 0
    same = metrics[f"{base}/difference/source_grounded-context_only"]
    assert same["interval"] == [0.0, 0.0] and same["constant"] is True
    cluster = result["entity_robustness"]["cluster_bootstrap"]
    metric = metrics[f"{base}/entity_robustness/cluster_bootstrap"]
    assert metric["estimate"] == pytest.approx(cluster["bootstrap_mean"])
    assert metric["interval"] == pytest.approx([cluster["low"], cluster["high"]])
    assert metric["n"] == cluster["entities"] == 20 and metric["constant"] is False
    t = result["transitions"]["name_only"]
    assert metrics[f"{base}/mcnemar/name_only"]["estimate"] == pytest.approx(t["mcnemar_p"])
    assert (metrics[f"{base}/transitions/name_only/W->C"]["estimate"],
            metrics[f"{base}/transitions/name_only/C->W"]["estimate"]) == (9, 25)


def test_results_and_view_read_the_run_format(runs):
    results = EVALUATOR.results(runs / "baselines")
    exact = results.metrics["exact/name_only/test/accuracy"]
    mine = [r for r in results.records if r["system"] == "exact" and r["group"] == "test"]
    assert exact["n"] == len(mine) and exact["estimate"] == pytest.approx(
        sum(r["outcome"] == "correct" for r in mine) / len(mine))
    viewed = EVALUATOR.view_items(runs / "baselines")
    assert viewed.labels["system"]["exact"] and viewed.aliases["config"]["source_grounded"] == ["Source"]
    headlines = EVALUATOR.headlines(runs / "lexical")
    assert [(h.run, h.metric) for h in headlines] == [("reference: lexical logistic", "accuracy, Source-grounded TEST")]


def test_an_old_folder_is_refused_until_converted(runs, tmp_path):
    old = _copy(runs, "lexical", tmp_path)
    before = _metrics(old)
    for name in CANONICAL_FILES:
        (old / name).unlink()
    assert EVALUATOR.is_own_folder(old) and not EVALUATOR.is_run_folder(old)
    with pytest.raises(OldRunFolder, match="histbench convert-run"):
        EVALUATOR.open_run(old)
    assert main(["report", "mher", str(old), "--out", str(tmp_path / "report"), "--resamples", "50"]) == 2
    EVALUATOR.finish_run(old)
    assert EVALUATOR.open_run(old).label == "reference: lexical logistic"
    assert _metrics(old) == before
    assert main(["report", "mher", str(old), "--out", str(tmp_path / "report"), "--resamples", "50",
                 "--thinning", "10"]) == 0


def test_a_model_run_and_a_zero_width_cluster_interval(sample_build, chat_server, tmp_path):
    """A model that answers `different` to every pair under both conditions gains nothing on
    any pair: every cluster resample gives 0, said as constant (not a lack of resamples)."""
    server = chat_server(lambda m: '{"same": 0.2, "different": 0.7, "ambiguous": 0.1}')
    out = tmp_path / "model"
    assert main(["eval", "mher", "--model", server.spec(), "--dataset", str(sample_build), "--out", str(out),
                 "--conditions", "name_only", "source_grounded", "--max-concurrency", "8", "--label", "flat"]) == 0
    folder = RunFolder.open(out, benchmark="mher")
    assert folder.run["model"] == server.spec() and folder.run["baseline"] is None
    assert folder.run["files"]["records"] == "records.jsonl" and folder.run["backend"]   # the run store's keys kept
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema("record"))
    lines = (out / "records.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines and all(not list(validator.iter_errors(json.loads(line))) for line in lines)
    assert all(i["messages"] and i["response"] for i in folder.items)
    metrics = {m["id"]: m for m in folder.metrics}
    cluster = metrics["flat/paired/test/entity_robustness/cluster_bootstrap"]
    assert cluster["estimate"] == 0.0 and cluster["interval"] == [0.0, 0.0] and cluster["constant"] is True
    thinning = metrics["flat/paired/test/entity_robustness/one_pair_per_entity"]
    assert thinning["interval"] == [0.0, 0.0] and thinning["constant"] is True
    # the report reads the new folder through its run.json and says so in Table 6 too
    report = tmp_path / "report"
    assert main(["report", "mher", str(out), "--out", str(report), "--resamples", "200", "--thinning", "20"]) == 0
    row = next(line for line in (report / "index.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| flat | +0.00 |"))
    assert row.count("(every resample 0.00)") == 2 and "95% of resamples" not in row


def test_a_partial_run_is_summarised_on_what_it_answered(sample_build, chat_server, tmp_path):
    server = chat_server(lambda m: '{"same": 0.5, "different": 0.4, "ambiguous": 0.1}')
    out = tmp_path / "partial"
    assert main(["eval", "mher", "--model", server.spec(), "--dataset", str(sample_build), "--out", str(out),
                 "--limit", "4", "--conditions", "name_only"]) == 0
    metrics = RunFolder.open(out).metrics
    accuracy = next(m for m in metrics if m["id"].endswith("/name_only/test/accuracy"))
    assert accuracy["n"] == 4 and "4 of" in accuracy["note"] and accuracy["headline"]
    assert not any("/paired/" in m["id"] for m in metrics)


def test_cluster_bootstrap_and_thinning_say_when_every_resample_was_equal():
    entities = [("a", "a"), ("b", "c"), ("c", "c"), ("d", "a")]
    flat = M.cluster_bootstrap(np.zeros(4), entities, n_resamples=200)
    assert (flat["low"], flat["high"], flat["constant"]) == (0.0, 0.0, True)
    varied = M.cluster_bootstrap(np.array([1.0, 0.0, -1.0, 0.0]), entities, n_resamples=200)
    assert varied["constant"] is False
    assert M.one_pair_per_entity(np.ones(4), entities, repetitions=20)["constant"] is True
    assert M.one_pair_per_entity(np.array([1.0, 0.0, -1.0, 0.0]), entities, repetitions=50)["constant"] is False
