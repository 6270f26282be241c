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
