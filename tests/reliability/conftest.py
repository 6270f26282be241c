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


class FaultyFiles:
    """File-system faults inside this process, for the faults a test cannot cause for real
    here (the suite runs as root, which reads any file and writes any folder, and cannot
    mount): a read-only mount, a full disk, a file nobody may read. Patched: `open`
    (builtins and io, which pathlib uses), `os.open`, `os.mkdir`, `os.rename`, `os.replace`,
    `os.unlink`, `os.rmdir`; what C extensions open themselves (pyarrow) is not affected.

    - read_only(root): creating, writing, moving or removing anything under root fails with
      EROFS, naming the path, as the kernel does; reading works;
    - full(root): files under root open, but every write fails with ENOSPC (naming no path,
      as a write() does);
    - unreadable(path): opening path to read fails with EACCES, naming it.
    """

    def __init__(self, monkeypatch) -> None:
        import builtins
        import errno
        import io
        import os

        self.read_only_roots: list[Path] = []
        self.full_roots: list[Path] = []
        self.unreadable_paths: set[Path] = set()
        real_open, real_os_open = io.open, os.open
        real = {name: getattr(os, name) for name in ("mkdir", "rename", "replace", "unlink", "rmdir")}

        def under(path, roots) -> bool:
            try:
                resolved = Path(os.path.abspath(os.fspath(path)))
            except TypeError:
                return False
            return any(resolved == root or root in resolved.parents for root in roots)

        def refuse(code: int, path, other=None) -> None:
            if other is None:
                raise OSError(code, os.strerror(code), os.fspath(path))
            raise OSError(code, os.strerror(code), os.fspath(path), None, os.fspath(other))

        def check(path, writing: bool, other=None) -> None:
            if writing and under(path, self.read_only_roots):
                refuse(errno.EROFS, path, other)
            if not writing and under(path, [Path(os.path.abspath(p)) for p in self.unreadable_paths]):
                refuse(errno.EACCES, path)

        def fake_open(file, mode="r", *args, **kwargs):
            if isinstance(file, str | bytes | os.PathLike):
                writing = any(c in mode for c in "wax+")
                check(file, writing)
                handle = real_open(file, mode, *args, **kwargs)
                return _FullFile(handle) if writing and under(file, self.full_roots) else handle
            return real_open(file, mode, *args, **kwargs)

        def fake_os_open(path, flags, *args, **kwargs):
            check(path, bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)))
            return real_os_open(path, flags, *args, **kwargs)

        def guarded(name):
            def call(*paths, **kwargs):
                named = [p for p in paths[:2] if isinstance(p, str | bytes | os.PathLike)]
                for path in named:   # as the kernel reports it: both paths of a move
                    check(path, True, named[1] if len(named) > 1 else None)
                return real[name](*paths, **kwargs)
            return call

        monkeypatch.setattr(builtins, "open", fake_open)
        monkeypatch.setattr(io, "open", fake_open)
        monkeypatch.setattr(os, "open", fake_os_open)
        for name in real:
            monkeypatch.setattr(os, name, guarded(name))

    def read_only(self, root: Path) -> Path:
        import os

        self.read_only_roots.append(Path(os.path.abspath(root)))
        return root

    def full(self, root: Path) -> Path:
        import os

        self.full_roots.append(Path(os.path.abspath(root)))
        return root

    def unreadable(self, path: Path) -> Path:
        self.unreadable_paths.add(Path(path))
        return path


class _FullFile:
    """A file on a full disk: it opens, and every write fails with ENOSPC."""

    def __init__(self, handle) -> None:
        self._handle = handle

    def write(self, data):
        import errno
        import os

        if data:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return 0

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()

    def __iter__(self):
        return iter(self._handle)

    def __getattr__(self, name):
        return getattr(self._handle, name)
