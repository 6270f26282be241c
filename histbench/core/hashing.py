"""The sha256 of a file, read in chunks by `hashlib.file_digest` (optionally with a progress bar).

Every file hash in histbench (source manifests, build manifests, validation, style-judge
weights, annotation sheets) goes through `sha256_path`, so there is one way to hash a file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


class _Counted:
    """A binary file whose reads advance a progress bar (what `hashlib.file_digest` reads through)."""

    def __init__(self, handle, bar) -> None:
        self.handle = handle
        self.bar = bar

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = self.handle.readinto(buffer)
        self.bar.update(count or 0)
        return count


def sha256_path(path: str | Path, *, show_progress: bool = False) -> str:
    """Hex sha256 of the file's bytes; `show_progress` shows a bar for large files (stderr, tty only)."""
    path = Path(path)
    with path.open("rb") as handle:
        if not show_progress:
            return hashlib.file_digest(handle, "sha256").hexdigest()
        from .progress import progress

        size = path.stat().st_size
        with progress(total=size, desc=f"sha256 {path.name}", unit="B", unit_scale=True) as bar:
            return hashlib.file_digest(_Counted(handle, bar), "sha256").hexdigest()
