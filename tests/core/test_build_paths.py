"""Issue 43, item 6: a build argument that looks like a path and does not exist is refused in
one line saying how to build it, by every command that takes a build (eval, validate, push,
report, view), and is never looked up on the Hugging Face Hub."""

from __future__ import annotations

import shutil

import huggingface_hub
import pytest

from histbench.cli import main
from histbench.core.dataset import looks_like_path


@pytest.fixture
def no_hub(monkeypatch):
    """Any Hub download fails the test."""
    asked = []

    def snapshot_download(repo_id, *args, **kwargs):
        asked.append(repo_id)
        raise AssertionError(f"looked up {repo_id!r} on the Hub")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return asked


def _one_line_refusal(capsys, argv, folder: str, benchmark: str = "BENCHMARK") -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"histbench: error: no build folder {folder}: build it with `histbench build {benchmark}`", err


@pytest.mark.parametrize("text", ["build/x", "./x", "../builds/x", "~/x", "/abs/x", "a/b/c", "org\\name", "org/"])
def test_these_look_like_paths(text):
    assert looks_like_path(text)


def test_org_name_is_a_hub_id_unless_its_first_part_is_a_folder_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert not looks_like_path("some-org/chronologic")
    (tmp_path / "some-org").mkdir()
    assert looks_like_path("some-org/chronologic")


def test_eval_default_build_not_built_says_build_it(tmp_path, monkeypatch, capsys, no_hub):
    monkeypatch.chdir(tmp_path)
    _one_line_refusal(capsys, ["eval", "chronologic", "--baseline", "random", "--out", "runs/r"],
                      "build/chronologic-1.0.0", "chronologic")
    assert not no_hub and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name", ["chronologic", "chronoculture", "mher", "italian", "valence"])
def test_eval_dataset_path_missing(tmp_path, monkeypatch, capsys, no_hub, name):
    monkeypatch.chdir(tmp_path)
    _one_line_refusal(capsys, ["eval", name, "--model", "hf:gpt2", "--dataset", "build/x", "--out", "runs/r"],
                      "build/x", name)
    assert not no_hub


def test_validate_names_the_benchmark_from_the_folder_name(tmp_path, monkeypatch, capsys, no_hub):
    monkeypatch.chdir(tmp_path)
    _one_line_refusal(capsys, ["validate", "build/mher-1.0.0"], "build/mher-1.0.0", "mher")
    _one_line_refusal(capsys, ["validate", "./elsewhere"], "./elsewhere")
    assert not no_hub


def test_push(tmp_path, monkeypatch, capsys, no_hub):
    monkeypatch.chdir(tmp_path)
    _one_line_refusal(capsys, ["push", "build/valence-1.0.0", "--repo-id", "me/valence", "--dry-run"],
                      "build/valence-1.0.0", "valence")
    assert not no_hub


@pytest.fixture
def run_without_its_build(built_sample, tmp_path, monkeypatch):
    """A Chronologic random-baseline run whose build folder (build/chronologic-1.0.0) was removed."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(built_sample("chronologic"), tmp_path / "build" / "chronologic-1.0.0")
    assert main(["eval", "chronologic", "--baseline", "random", "--out", "runs/random"]) == 0
    shutil.rmtree(tmp_path / "build")
    return tmp_path / "runs" / "random"


def test_report_dataset_missing(run_without_its_build, capsys, no_hub):
    capsys.readouterr()
    _one_line_refusal(capsys, ["report", "chronologic", "runs/random", "--dataset", "build/y", "--out", "rep"],
                      "build/y", "chronologic")
    assert not no_hub and not (run_without_its_build.parent.parent / "rep").exists()


def test_view_of_a_run_whose_build_is_gone_says_so(run_without_its_build, capsys, no_hub):
    """The run format keeps each item's prompt in items.jsonl: the viewer of a finished run
    needs no build. Converting a folder written before the format reads the build; when it
    is gone, the page says so (and which command makes it again)."""
    assert main(["view", "runs/random"]) == 0
    items = (run_without_its_build / "viewer" / "items.jsonl").read_text(encoding="utf-8")
    assert "QUESTION:" in items
    for name in ("run.json", "results.json", "items.jsonl"):
        (run_without_its_build / name).unlink()
    (run_without_its_build / "chronologic.json").rename(run_without_its_build / "results.json")
    assert main(["convert-run", "runs/random"]) == 0
    assert main(["view", "runs/random"]) == 0
    page = (run_without_its_build / "viewer" / "index.html").read_text(encoding="utf-8")
    assert "no build folder build/chronologic-1.0.0: build it with `histbench build chronologic`" in page
    assert not no_hub
