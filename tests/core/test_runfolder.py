"""The run format (histbench.core.runfolder, issue 43 item 1): what every benchmark's run
folder holds, validated on write and on read; hostile names and texts kept in their place."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histbench.core.errors import EvalError
from histbench.core.runfolder import (
    ITEM_CORE_KEYS,
    Metric,
    OldRunFolder,
    RunFolder,
    RunSummary,
    format_metric,
    schema,
    validate,
    write_run_folder,
)

DATASET = {"benchmark": "toy", "version": "1.0.0", "data_sha256": "ab" * 32, "path": "build/toy-1.0.0"}


def summary(**changes) -> RunSummary:
    values = dict(
        benchmark="toy", label="baseline:random", dataset=DATASET,
        metrics=[Metric("accuracy", "accuracy", 0.5, "proportion", (0.2, 0.8), "Wilson", 4, True, headline=True)],
        items=[{"id": "q1", "config": "items", "outcome": "correct", "score": 1.0, "gold": "A", "parsed": "A",
                "response": "A"}],
        baseline="random", signature="histbench:0.1.0|data:toy@1.0.0", extras={"predictions.jsonl": "one line per item"},
    )
    values.update(changes)
    return RunSummary(**values)


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "predictions.jsonl").write_text("{}\n")
    return folder


def test_written_folder_reads_back_and_every_item_has_the_core_keys(run_dir):
    write_run_folder(run_dir, summary())
    folder = RunFolder.open(run_dir, benchmark="toy")
    assert folder.label == "baseline:random" and folder.run["baseline"] == "random" and folder.run["model"] is None
    assert folder.run["build"]["data_sha256"] == "ab" * 32 and folder.run["files"]["extras"] == {
        "predictions.jsonl": "one line per item"}
    assert folder.results["signature"] == "histbench:0.1.0|data:toy@1.0.0"
    (item,) = folder.items
    assert set(ITEM_CORE_KEYS) <= set(item) and item["messages"] is None and item["outcome"] == "correct"
    assert folder.metrics[0] | {} == {**Metric("accuracy", "accuracy", 0.5, "proportion", (0.2, 0.8), "Wilson", 4, True,
                                               headline=True).to_json(), "interval": [0.2, 0.8]}
    assert folder.extra("predictions.jsonl") == run_dir / "predictions.jsonl"


def test_a_run_stores_keys_in_run_json_are_kept(run_dir):
    (run_dir / "run.json").write_text(json.dumps({"started": "2026-01-01T00:00:00.000Z", "sessions": [{"to_ask": 3}],
                                                  "options": {"seed": 1}}))
    write_run_folder(run_dir, summary(options={"seed": 99}))
    run = json.loads((run_dir / "run.json").read_text())
    assert run["sessions"] == [{"to_ask": 3}] and run["started"] == "2026-01-01T00:00:00.000Z"
    assert run["options"] == {"seed": 1}   # what the run store recorded, not overwritten
    assert run["run_format"] == 1 and run["versions"]["histbench"]


def test_a_zero_width_interval_must_say_whether_every_resample_was_identical(run_dir):
    flat = Metric("f1", "F1", 0.0, "proportion", (0.0, 0.0), "percentile bootstrap", 4)
    with pytest.raises(EvalError, match="zero-width interval"):
        write_run_folder(run_dir, summary(metrics=[flat]))
    assert not (run_dir / "results.json").exists()   # nothing half-written
    flat.constant = True
    write_run_folder(run_dir, summary(metrics=[flat]))
    shown = format_metric(RunFolder.open(run_dir).metrics[0])
    assert shown == "0.0 (every resample 0.0; percentile bootstrap, n=4)"


def test_an_interval_without_its_method_and_duplicate_ids_are_refused(run_dir):
    with pytest.raises(EvalError, match="method"):
        write_run_folder(run_dir, summary(metrics=[Metric("a", "a", 0.5, "proportion", (0.1, 0.9))]))
    with pytest.raises(EvalError, match="share one id"):
        write_run_folder(run_dir, summary(metrics=[Metric("a", "a", 0.5, "count"), Metric("a", "b", 1.0, "count")]))


def test_an_item_key_the_format_does_not_know_is_refused_naming_the_item(run_dir):
    with pytest.raises(EvalError, match=r"q9.*secret_header|secret_header.*q9"):
        write_run_folder(run_dir, summary(items=[{"id": "q9", "outcome": "wrong", "secret_header": "x"}]))


@pytest.mark.parametrize("name", ["../outside.txt", "/etc/passwd", "a/../../b", "..", "sub/./x"])
def test_an_extra_named_outside_the_folder_is_refused_by_the_schema(run_dir, name):
    run = {"run_format": 1, "benchmark": "toy", "label": "x", "model": None, "baseline": "b", "build": None,
           "options": {}, "versions": {"histbench": "0", "python": "3"}, "started": "s", "finished": "f",
           "files": {"results": "results.json", "items": "items.jsonl", "records": None, "extras": {name: "what"}}}
    with pytest.raises(EvalError, match="runfolder-run.json"):
        validate("run", run, run_dir / "run.json")


def test_an_extra_file_the_folder_lacks_is_refused(run_dir):
    with pytest.raises(EvalError, match="lacks: missing.json"):
        write_run_folder(run_dir, summary(extras={"missing.json": "x"}))


def test_an_extra_that_links_out_of_the_folder_is_not_followed(run_dir, tmp_path):
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(tmp_path / "secret.txt", run_dir / "link.txt")
    write_run_folder(run_dir, summary(extras={"link.txt": "a link"}))
    with pytest.raises(EvalError):
        RunFolder.open(run_dir).extra("link.txt")
    with pytest.raises(EvalError, match="no extra file"):
        RunFolder.open(run_dir).extra("results.json")


def test_a_folder_before_the_run_format_is_refused_with_the_command_that_converts_it(run_dir):
    (run_dir / "results.json").write_text(json.dumps({"model": "m", "tasks": {}}))
    with pytest.raises(OldRunFolder, match=r"histbench convert-run .*run"):
        RunFolder.open(run_dir)
    write_run_folder(run_dir, summary())
    run = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**run, "run_format": 2}))
    with pytest.raises(OldRunFolder, match="run format 2"):
        RunFolder.open(run_dir)


def test_a_broken_items_line_is_named_by_its_line(run_dir):
    write_run_folder(run_dir, summary())
    with (run_dir / "items.jsonl").open("a") as handle:
        handle.write('{"id": "q2", "outcome": "maybe"}\n')
    with pytest.raises(EvalError, match=r"items\.jsonl.*2"):
        RunFolder.open(run_dir)


def test_another_benchmarks_run_is_refused(run_dir):
    write_run_folder(run_dir, summary())
    with pytest.raises(EvalError, match="a run of toy, not of mher"):
        RunFolder.open(run_dir, benchmark="mher")


TEXT = st.text(st.characters(codec="utf-8"), max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(label=TEXT.filter(lambda t: t.strip()), answer=TEXT, gold=TEXT, prompt=TEXT)
def test_hostile_texts_come_back_as_they_were_written(run_dir, label, answer, gold, prompt):
    """Labels, answers and prompts are data: whatever characters they hold (quotes, line
    breaks, NUL, U+2028, lone surrogates excluded by UTF-8) they are read back unchanged."""
    item = {"id": "q1", "outcome": "wrong", "response": answer, "gold": gold, "prompt": prompt, "score": 0.0}
    write_run_folder(run_dir, summary(label=label, items=[item]))
    folder = RunFolder.open(run_dir)
    assert folder.label == label
    assert (folder.items[0]["response"], folder.items[0]["gold"], folder.items[0]["prompt"]) == (answer, gold, prompt)
    assert len((run_dir / "items.jsonl").read_text(encoding="utf-8").split("\n")) == 2   # one line per item


def test_the_schemas_are_valid_json_schemas():
    from jsonschema import Draft202012Validator

    for kind in ("run", "results", "item", "record"):
        Draft202012Validator.check_schema(schema(kind))
