"""A ChronoCulture run folder in the run format (issue 43): run.json, results.json and
items.jsonl beside the evaluator's own chronoculture.json and predictions.jsonl, with the
metrics the report's analysis computes; a folder written before the format is refused
with the command that converts it, and `finish_run` converts it."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from histbench import cli
from histbench.core.runfolder import CANONICAL_FILES, OldRunFolder, RunFolder, validate
from histbench.eval.chronoculture import EVALUATOR
from histbench.eval.chronoculture.analysis import analyse
from histbench.eval.chronoculture.data import analysis_retention, load_benchmark, load_predictions

REF = re.compile(r"\[ref (\S+) (\S+)\]")


def _answer(messages):
    """A scripted model: uneven shares that depend on the pair and the period (so its
    bootstrap intervals have width), one invalid undated answer."""
    content = messages[-1]["content"]
    pair_id, period = REF.search(content).groups()
    labels = re.findall(r"Options: (.+)\n", content)[0].split("; ")
    if pair_id.startswith("wvs_q0_3") and period == "undated":
        return "I cannot say."
    seed = sum(map(ord, pair_id + period))
    weights = [1 + (seed * (j + 3)) % 7 for j in range(len(labels))]
    return json.dumps({label: 100 * w / sum(weights) for label, w in zip(labels, weights, strict=True)})


@pytest.fixture(scope="module")
def small_build(synthetic_build):
    """The session's synthetic build (tests/chronoculture_eval/conftest.py: 48 pairs, seed 0)."""
    return synthetic_build


@pytest.fixture(scope="module")
def baseline_run(small_build, tmp_path_factory):
    out = tmp_path_factory.mktemp("baseline") / "frozen"
    assert cli.main(["eval", "chronoculture", "--baseline", "frozen-oldest", "--dataset", str(small_build),
                     "--out", str(out)]) == 0
    return out


@pytest.fixture
def model_run(small_build, chat_server, tmp_path):
    server = chat_server(_answer)
    out = tmp_path / "model"
    assert cli.main(["eval", "chronoculture", "--model", server.spec(), "--model-option", "max_retries=0",
                     "--dataset", str(small_build), "--out", str(out), "--label", "scripted"]) == 0
    return out


def _bench(build):
    from histbench.core.dataset import BuiltDataset

    return load_benchmark(BuiltDataset.open(build, benchmark="chronoculture"))


def _check_folder(run_dir):
    for name in CANONICAL_FILES:
        assert (run_dir / name).is_file(), name
    folder = RunFolder.open(run_dir)            # validates all three against their schemas
    records = run_dir / "records.jsonl"
    if records.is_file():
        lines = [line for line in records.read_text(encoding="utf-8").splitlines() if line.strip()]
        assert lines
        for number, line in enumerate(lines, 1):
            validate("record", json.loads(line), records, row=number)
    return folder


def test_a_baseline_run_has_the_three_files_and_its_extras(baseline_run):
    folder = _check_folder(baseline_run)
    assert folder.benchmark == "chronoculture" and folder.label == "frozen oldest gold"
    assert folder.run["baseline"] == "frozen-oldest" and folder.run["model"] is None
    assert folder.run["build"]["benchmark"] == "chronoculture" and len(folder.run["build"]["data_sha256"]) == 64
    assert folder.run["files"]["records"] is None
    assert set(folder.run["files"]["extras"]) == {"predictions.jsonl", "chronoculture.json"}
    assert folder.extra("predictions.jsonl") == baseline_run / "predictions.jsonl"
    assert folder.results["signature"].startswith("histbench-chronoculture|baseline:frozen-oldest|data:")
    # one item per line of predictions.jsonl, in its order, with the viewer's facets
    rows = [json.loads(line) for line in (baseline_run / "predictions.jsonl").read_text().splitlines()]
    assert [item["id"] for item in folder.items] == [f"{r['pair_id']}:{r['period']}" for r in rows]
    assert {item["config"] for item in folder.items} == {"undated", "items", "mcq"}
    assert folder.run["viewer"]["labels"]["config"]["items"] == "dated prompts"
    # the headline: RF1 at tau 0.10 over all pairs, as the old index card named it
    [headline] = EVALUATOR.headlines(baseline_run)
    assert headline.metric == "RF1: both periods within tau 0.10, % of pairs"
    assert headline.value == "50.0 [36.4, 63.6] (Wilson 95%, n=48)"


def test_a_model_run_has_the_three_files_and_valid_records(model_run):
    folder = _check_folder(model_run)
    assert folder.run["model"].startswith("api:") and folder.run["baseline"] is None
    assert folder.run["files"]["records"] == "records.jsonl"
    assert folder.run["backend"] and folder.run["sessions"]         # the run store's keys are kept
    assert folder.run["options"]["decoding"]["temperature"] == 0.0
    items = {item["id"]: item for item in folder.items}
    assert items["wvs_q0_3__DEU:undated"]["outcome"] == "invalid" and items["wvs_q0_3__DEU:undated"]["parse_error"]
    assert all(item["messages"] and item["response"] for item in folder.items)


def _expected_cells(build, run_dir):
    """What the code before the run format computed as the run's metrics (the old
    `results.run_results`): the report's analysis of the run, 1,000 resamples, seed 0."""
    bench = _bench(build)
    preds = load_predictions(bench, run_dir)
    return analyse(bench, preds, retention=analysis_retention(preds.kind, preds.info), resamples=1000, seed=0)


def _same(value, expected):
    if expected is None or (isinstance(expected, float) and not np.isfinite(expected)):
        return value is None
    return value == pytest.approx(expected, rel=0, abs=0)


def test_the_metrics_are_the_analysis_cells(model_run, small_build):
    metrics = EVALUATOR.results(model_run).metrics
    analysis = _expected_cells(small_build, model_run)
    assert analysis.retention == 0.75 and metrics["counts.retained"]["estimate"] == analysis.counts["retained"]
    for key, cell in analysis.cells.items():
        metric = metrics[key]
        assert _same(metric["estimate"], cell.estimate), key
        assert metric["n"] == cell.n, key
        if metric["interval"] is None:
            assert not (np.isfinite(cell.low) and np.isfinite(cell.high)), key
        else:
            assert metric["interval"] == [cell.low, cell.high], key
            assert metric["method"].startswith(cell.method), key
    cells = {m for m in metrics if not m.startswith(("counts.", "modal"))}
    assert cells == set(analysis.cells)
    assert [m for m in metrics if metrics[m]["headline"]] == ["rf1.default.tau0.10.all.both"]
    # pinned: the scripted model on the 48-pair synthetic build (numbers of the report's code)
    headline = metrics["rf1.default.tau0.10.all.both"]
    assert headline["n"] == 34 and headline["estimate"] == 6 / 34
    assert headline["method"] == "Wilson 95%" and headline["unit"] == "proportion"
    benefit = metrics["rf3.benefit.new.all.mean"]
    assert benefit["estimate"] == pytest.approx(-0.02424001956413873, abs=1e-9)
    assert benefit["interval"] == pytest.approx([-0.04121788358315825, -0.007555702456738804], abs=1e-9)
    assert benefit["method"] == "percentile bootstrap 95% over temporal pairs, 1,000 resamples (seed 0)"
    assert benefit["constant"] is False and benefit["unit"] == "points"


def test_a_zero_width_interval_says_every_resample_agreed(baseline_run, small_build):
    metrics = EVALUATOR.results(baseline_run).metrics
    analysis = _expected_cells(small_build, baseline_run)
    zero = [m for m in metrics.values() if m["interval"] and m["interval"][0] == m["interval"][1]]
    assert zero and all(m["constant"] is True or m["note"] for m in zero)
    assert metrics["rf2.default.strong.median_ratio_all"]["constant"] is True   # a frozen oracle never moves
    # Table 5 (A.5): the oracle's modal answers, Wilson over the kept pairs
    both = metrics["modal.stable.both_correct"]
    expected = analysis.modal["by_category"]["stable"]["both_correct"]
    assert both["estimate"] == expected["estimate"] == 1.0 and both["n"] == expected["n"]
    assert both["interval"] == [expected["low"], expected["high"]]


def test_an_old_folder_is_refused_and_finish_run_converts_it(baseline_run, tmp_path):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(baseline_run, old)
    before = RunFolder.open(old)
    for name in CANONICAL_FILES:
        (old / name).unlink()
    assert EVALUATOR.is_own_folder(old)
    with pytest.raises(OldRunFolder, match="histbench convert-run"):
        EVALUATOR.open_run(old)
    EVALUATOR.finish_run(old)
    after = EVALUATOR.open_run(old)
    assert after.results["metrics"] == before.results["metrics"] and after.items == before.items
    assert not EVALUATOR.is_own_folder(tmp_path)


def test_the_report_refuses_an_old_folder_with_the_command_that_converts_it(baseline_run, tmp_path, capsys):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(baseline_run, old)
    (old / "run.json").unlink()
    assert cli.main(["report", "chronoculture", str(old), "--out", str(tmp_path / "report")]) == 2
    assert "histbench convert-run" in capsys.readouterr().err


def test_a_likelihood_run_records_its_modal_accuracies(small_build, tiny_causal_lm, tmp_path):
    out = tmp_path / "likelihood"
    assert cli.main(["eval", "chronoculture", "--dataset", str(small_build), "--mode", "likelihood",
                     "--model", f"hf:{tiny_causal_lm}", "--model-option", "dtype=float32", "--limit", "4",
                     "--out", str(out)]) == 0
    folder = _check_folder(out)
    info = json.loads((out / "chronoculture.json").read_text())["modal_likelihood"]
    metrics = EVALUATOR.results(out).metrics
    assert metrics["modal_likelihood.all.accuracy"]["estimate"] == info["accuracy"]
    assert metrics["modal_likelihood.new.accuracy_norm"]["estimate"] == info["by_period"]["new"]["accuracy_norm"]
    assert metrics["modal_likelihood.all.accuracy"]["n"] == info["prompts"] == len(folder.items)
    table5 = info["table5"]["by_category"]
    for category, entry in table5.items():
        assert metrics[f"modal.{category}.both_correct"]["n"] == entry["both_correct"]["n"]
    assert {item["config"] for item in folder.items} == {"mcq"}
