"""Writing files and folders so that readers never see them half-written.

Both helpers hand out a hidden temporary sibling of the target; only when the block
finishes without an error does it replace the target (one `os.replace`). On any error,
Ctrl-C included, the temporary is removed and the earlier target, if any, is untouched.
The dataset writer (writer.py) does the same for whole builds, keeping the old build
until the new one is in place.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _sibling(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path to write the file `path` to; it becomes `path` when the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """`Path(path).write_text(text)` (UTF-8) without ever leaving a partial file, and
    without any credential this process read (see secrets.py)."""
    from .secrets import scrub_text

    with atomic_path(path) as tmp:
        tmp.write_text(scrub_text(text), encoding="utf-8")


@contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """An empty temporary folder to fill; it replaces the folder `path` when the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(path)
    tmp.mkdir()
    try:
        yield tmp
        if path.exists():
            # the old folder steps aside first, so that no moment leaves neither in place
            old = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.old")
            os.replace(path, old)
            try:
                os.replace(tmp, path)
            except BaseException:
                os.replace(old, path)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
