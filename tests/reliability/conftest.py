"""Helpers of the reliability tests: the bundled samples, and running the real command line
the way a user does (exit status, stderr), for the malformed-input corpus."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = REPO / "sources"

#: a Python exception's own line ("KeyError: 'head'", "OverflowError: ..."), i.e. a traceback's end
PYTHON_EXCEPTION_LINE = re.compile(r"^\w+(\.\w+)*(Error|Exception|Interrupt|Warning)\b.*:")


@dataclass
class CliResult:
    status: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("histbench: error: ")]


@pytest.fixture
def cli(capsys):
    """cli(*argv) -> CliResult: `histbench ARGV` in this process, as `histbench.cli.main`."""
    from histbench.cli import main

    def run(*argv: str | Path) -> CliResult:
        capsys.readouterr()
        status = main([str(a) for a in argv])
        captured = capsys.readouterr()
        return CliResult(status, captured.out, captured.err)

    return run


def copy_sample(benchmark: str, relative: str, dest: Path) -> Path:
    """A copy of a bundled sample file or folder (sources/<benchmark>/sample/<relative>) under dest."""
    src = SOURCES / benchmark / "sample" / relative
    target = Path(dest) / Path(relative).name
    if src.is_dir():
        shutil.copytree(src, target)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, target)
    return target
