"""histbench/core/atomic.py: targets are replaced whole or not at all."""

from __future__ import annotations

import pytest

from histbench.core.atomic import atomic_directory, atomic_path, write_text_atomic


def test_file_is_replaced_only_when_the_block_succeeds(tmp_path):
    target = tmp_path / "sub" / "results.json"
    write_text_atomic(target, "first\n")
    assert target.read_text() == "first\n"
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise KeyboardInterrupt
    assert target.read_text() == "first\n"
    assert [p.name for p in target.parent.iterdir()] == ["results.json"]


def test_directory_is_replaced_only_when_the_block_succeeds(tmp_path):
    target = tmp_path / "task"
    with atomic_directory(target) as tmp:
        (tmp / "a.txt").write_text("a")
    with pytest.raises(OSError), atomic_directory(target) as tmp:
        (tmp / "b.txt").write_text("b")
        raise OSError("disk full")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task"]
    assert [p.name for p in target.iterdir()] == ["a.txt"]
    with atomic_directory(target) as tmp:
        (tmp / "c.txt").write_text("c")
    assert [p.name for p in target.iterdir()] == ["c.txt"]


def _dead_pid() -> int:
    """The id of a process that has ended."""
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_what_a_killed_writer_left_is_removed_by_the_next_write(tmp_path):
    """kill -9 leaves .NAME.PID-X.tmp (file or folder); the next write of NAME removes what
    dead processes left, keeps what live ones are writing, and puts back an .old folder
    whose target is missing (killed between the two renames)."""
    import os

    dead = _dead_pid()
    target = tmp_path / "report"
    stale_dir = tmp_path / f".report.{dead}-0123abcd.tmp"
    (stale_dir / "figures").mkdir(parents=True)
    live_dir = tmp_path / f".report.{os.getppid()}-4567abcd.tmp"
    live_dir.mkdir()
    stale_file = tmp_path / f".results.json.{dead}-89abcdef.tmp"
    stale_file.write_text("half")
    other = tmp_path / f".reports.{dead}-0123abcd.tmp"   # another target's: not ours to remove
    other.mkdir()
    with atomic_directory(target) as tmp:
        (tmp / "index.md").write_text("new")
    write_text_atomic(tmp_path / "results.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([
        "report", live_dir.name, "results.json", other.name])
    old = tmp_path / f".report.{dead}-fedcba98.old"
    target.rename(old)
    with pytest.raises(RuntimeError), atomic_directory(target):
        raise RuntimeError("a later failure")
    assert (target / "index.md").read_text() == "new" and not old.exists()


def test_an_os_error_naming_no_file_or_the_staging_names_the_target(tmp_path):
    import errno

    target = tmp_path / "viewer"
    with pytest.raises(OSError) as caught, atomic_directory(target):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(target)
    with pytest.raises(OSError) as caught, atomic_directory(target) as tmp:
        raise OSError(errno.EROFS, "Read-only file system", str(tmp / "items" / "chunk-0001.js"))
    assert caught.value.filename == str(target / "items" / "chunk-0001.js")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
