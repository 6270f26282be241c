"""`histbench report` writes its folder atomically (issue 17, point 12).

A report whose reporter fails half-way (figures already redrawn, index.md not yet written)
leaves the earlier report byte for byte as it was; before the fix the figures were
replaced and index.md was stale. A folder that is not a report is never replaced.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from histbench.core.errors import EvalError, UsageError
from histbench.eval.plugin import BenchmarkEvaluator
from histbench.eval.report import ReportSection, run_report, write_report


class FigureReport(BenchmarkEvaluator):
    """A reporter as the benchmarks write them: figures first, then the index; it can be
    told to fail between the two, and it names its ledger's path in the text."""

    name = "toy"

    def run_report(self, args: argparse.Namespace) -> None:
        out = Path(args.out)
        (out / "figures").mkdir(parents=True, exist_ok=True)
        (out / "figures" / "plot.png").write_bytes(b"\x89PNG figure " + args.version.encode())
        (out / "ledger.csv").write_text(f"version\n{args.version}\n")
        if args.fail:
            raise EvalError("the model column is missing")
        index = write_report([ReportSection("Numbers", f"version {args.version}; ledger: `{out / 'ledger.csv'}`")],
                             out, "Toy report")
        print(index)


def _report(out: Path, version: str, fail: bool = False) -> None:
    run_report(FigureReport(), argparse.Namespace(out=out, version=version, fail=fail, runs=[]))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_failed_report_leaves_the_earlier_one_as_it_was(tmp_path):
    out = tmp_path / "report"
    _report(out, "v1")
    before = _snapshot(out)
    assert set(before) == {"figures/plot.png", "ledger.csv", "index.md", "index.html", "toy.html", "report.json"}
    with pytest.raises(EvalError, match="model column"):
        _report(out, "v2", fail=True)
    assert _snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["report"]   # no staging folder left behind
    _report(out, "v3")
    after = _snapshot(out)
    assert after["figures/plot.png"].endswith(b"v3") and b"version v3" in after["index.md"]


def test_paths_written_while_staging_name_the_final_folder(tmp_path, capsys):
    out = tmp_path / "report"
    _report(out, "v1")
    assert capsys.readouterr().out.strip() == str(out / "index.md")
    text = (out / "index.md").read_text()
    assert f"ledger: `{out / 'ledger.csv'}`" in text and ".tmp" not in text


def test_a_folder_that_is_not_a_report_is_never_replaced(tmp_path):
    out = tmp_path / "notes"
    out.mkdir()
    (out / "my-notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="holds no report"):
        _report(out, "v1")
    assert _snapshot(out) == {"my-notes.txt": b"mine"}
    empty = tmp_path / "empty"
    empty.mkdir()
    _report(empty, "v1")
    assert (empty / "index.md").is_file()


def test_the_cli_stages_every_benchmark_report(tmp_path, capsys):
    """Through `histbench report`: an italian report over a run folder that does not exist
    fails before anything is written, and an earlier report stays."""
    from histbench.cli import main

    out = tmp_path / "report"
    _report(out, "v1")
    before = _snapshot(out)
    assert main(["report", "italian", str(tmp_path / "no-such-run"), "--out", str(out)]) == 2
    assert "no such run folder" in capsys.readouterr().err
    assert _snapshot(out) == before
