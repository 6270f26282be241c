"""The `histbench` command: help, one-line errors with exit status 2, build/validate/push wiring."""

from __future__ import annotations

import pytest

from histbench import cli
from histbench.builders.machinery import build as build_module
from histbench.core import resources as resources_module


@pytest.fixture
def toy_cli(monkeypatch, toy_builder, toy_resources):
    monkeypatch.setattr(build_module, "discover_builders", lambda: {"toy": toy_builder})
    monkeypatch.setattr(resources_module.Resources, "default", classmethod(lambda cls: toy_resources))
    return toy_builder


def test_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    for command in ("build", "validate", "push", "eval", "report", "demo"):
        assert command in out


def test_build_help_shows_input_roles(toy_cli, capsys):
    with pytest.raises(SystemExit):
        cli.main(["build", "toy", "--help"])
    out = capsys.readouterr().out
    assert "--text FILE [FILE ...]" in out and "--allow-checksum-mismatch" in out and "[.txt]" in out


def test_missing_input_is_one_line_and_exit_2(toy_cli, tmp_path, capsys):
    missing = tmp_path / "absent.txt"
    code = cli.main(["build", "toy", "--text", str(missing), "--out", str(tmp_path / "build")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("histbench: error: ") and str(missing) in err and "does not exist" in err
    assert not (tmp_path / "build").exists()


def test_usage_error_is_one_line_and_exit_2(capsys):
    assert cli.main(["validate"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the following arguments are required: path" in err


def test_build_validate_push_dry_run(toy_cli, toy_sample, tmp_path, capsys):
    out_root = tmp_path / "build"
    assert cli.main(["build", "toy", "--text", str(toy_sample), "--out", str(out_root), "--seed", "3"]) == 0
    folder = out_root / "toy-1.0.0"
    assert capsys.readouterr().out.strip() == str(folder)
    assert cli.main(["validate", str(folder)]) == 0
    assert capsys.readouterr().out.startswith("ok: toy 1.0.0")
    assert cli.main(["push", str(folder), "--repo-id", "org/toy", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would upload 6 files" in out and "data/items/dev-00000-of-00001.parquet" in out


def test_validate_failure_prints_details(toy_cli, toy_sample, tmp_path, capsys):
    out_root = tmp_path / "build"
    cli.main(["build", "toy", "--text", str(toy_sample), "--out", str(out_root)])
    capsys.readouterr()
    (out_root / "toy-1.0.0" / "data" / "pairs" / "test-00000-of-00001.parquet").write_bytes(b"garbage")
    assert cli.main(["validate", str(out_root / "toy-1.0.0")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("histbench: error: ") and "problem(s)" in err[0]
    assert any("unreadable parquet" in line for line in err[1:])


def test_validate_not_a_build(tmp_path, capsys):
    assert cli.main(["validate", str(tmp_path)]) == 2
    assert "histbench.json is missing" in capsys.readouterr().err
