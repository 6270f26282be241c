"""Which histbench is running: its release and, in a checkout, its git commit (recorded in
every build manifest and run folder)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def histbench_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("histbench")
    except PackageNotFoundError:
        return "0+unknown"


def histbench_commit() -> str | None:
    """The git commit of the histbench code that runs (None outside a checkout)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    if out.returncode != 0 or not commit:
        return None
    dirty = subprocess.run(
        ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, timeout=5, check=False,
    ).stdout.strip()
    return commit + ("+dirty" if dirty else "")
