"""Writing files and folders so that readers never see them half-written.

Both helpers hand out a hidden temporary sibling of the target; only when the block
finishes without an error does it replace the target (one `os.replace`). On any error,
Ctrl-C and SIGTERM included (see signals.py), the temporary is removed, the earlier target,
if any, is untouched, and parent folders the helper created are removed again. The
dataset writer (writer.py) does the same for whole builds, keeping the old build until the
new one is in place.

A process killed outright (kill -9) cannot clean up: its `.NAME.PID-XXXXXXXX.tmp` (and,
if it died between the two renames of a folder, `.NAME.PID-XXXXXXXX.old`) stay. The next
write of the same target removes the ones whose process no longer runs, and puts an
`.old` back when the target itself is missing (POSIX; on other systems they stay).

An OSError that names no file (a full disk reported by a write) is raised again naming the
target, so the command line can say which output it could not write.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_SIBLING_RE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)-[0-9a-f]{8}\.(?P<kind>tmp|old)$")


def _sibling(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


def process_alive(pid: int) -> bool:
    """Whether a process of this id is running (POSIX; elsewhere: assumed so)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:   # it exists, and belongs to someone else
        return True
    return True


def remove_stale_siblings(path: Path) -> list[Path]:
    """Remove the temporaries that dead processes left beside `path` (see the module);
    returns what was removed or put back."""
    path = Path(path)
    if os.name != "posix":
        return []
    done = []
    try:
        candidates = sorted(path.parent.glob(f".{glob.escape(path.name)}.*"))
    except OSError:
        return []
    for entry in candidates:
        match = _SIBLING_RE.match(entry.name)
        if not match or match["name"] != path.name:
            continue
        pid = int(match["pid"])
        if pid == os.getpid() or process_alive(pid):
            continue
        try:
            if match["kind"] == "old" and not path.exists() and not path.is_symlink():
                os.replace(entry, path)   # killed between the two renames: the earlier target comes back
            elif entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except OSError:
            continue   # another process got there first, or it cannot be removed: left as it is
        done.append(entry)
    return done


def remove_stepped_aside(old: Path) -> None:
    """Remove what an atomic replace moved aside: a folder with its content, but a symbolic
    link (the target was a link to a folder elsewhere) or a file only itself, never what a
    link points at; nothing of it is left behind beside the target."""
    if old.is_symlink() or not old.is_dir():
        old.unlink(missing_ok=True)
    else:
        shutil.rmtree(old, ignore_errors=True)


def make_parents(folder: Path) -> list[Path]:
    """mkdir -p, returning the folders it created (outermost first)."""
    missing = []
    for parent in [folder, *folder.parents]:
        if parent.exists() or parent.is_symlink():
            break
        missing.append(parent)
    folder.mkdir(parents=True, exist_ok=True)
    return list(reversed(missing))


def remove_created(created: list[Path]) -> None:
    for folder in reversed(created):
        try:
            folder.rmdir()
        except OSError:
            return   # not empty (someone else wrote there): kept


def _naming(exc: BaseException, target: Path, tmp: Path) -> BaseException:
    """An OSError naming the target where it named nothing, or the hidden temporary (what
    the user asked for is the target, and the temporary is gone)."""
    if not isinstance(exc, OSError) or exc.errno is None:
        return exc
    if exc.filename is None:
        where = target
    else:
        name = Path(os.fsdecode(exc.filename))
        if name != tmp and tmp not in name.parents:
            return exc
        where = target / name.relative_to(tmp) if name != tmp else target
    named = OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(where))
    named.__traceback__ = exc.__traceback__
    return named


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path to write the file `path` to; it becomes `path` when the block succeeds."""
    path = Path(path)
    created = make_parents(path.parent)
    remove_stale_siblings(path)
    tmp = _sibling(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        remove_created(created)
        named = _naming(exc, path, tmp)
        if named is not exc:
            raise named from exc
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
    created = make_parents(path.parent)
    remove_stale_siblings(path)
    tmp = _sibling(path)
    try:
        tmp.mkdir()
    except BaseException as exc:
        remove_created(created)
        named = _naming(exc, path, tmp)
        if named is not exc:
            raise named from exc
        raise
    try:
        yield tmp
        if path.exists():
            # the old folder steps aside first, so that no moment leaves neither in place
            old = tmp.with_name(tmp.name[: -len(".tmp")] + ".old")
            os.replace(path, old)
            try:
                os.replace(tmp, path)
            except BaseException:
                os.replace(old, path)
                raise
            remove_stepped_aside(old)
        else:
            os.replace(tmp, path)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        remove_created(created)
        named = _naming(exc, path, tmp)
        if named is not exc:
            raise named from exc
        raise
