"""Inter-process file locks (the `filelock` package: fcntl on POSIX, msvcrt on Windows).

`file_lock(path)` holds an exclusive lock on `path` for the duration of a `with` block.
When another process holds it, the call waits (telling the user once, through `on_wait`,
what it is waiting for) unless `wait=False`, in which case `busy` is raised at once.
A lock held by a process that died (kill -9 included) is released by the operating system.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import HistbenchError


@contextmanager
def file_lock(
    path: str | Path,
    *,
    wait: bool = True,
    timeout: float | None = None,
    on_wait: Callable[[], None] | None = None,
    busy: Callable[[], HistbenchError] | None = None,
) -> Iterator[None]:
    """Hold the lock on `path` (created if needed) for the block.

    wait=False: raise `busy()` when another process holds it. wait=True: call `on_wait()`
    once, then block until the lock is free, or `timeout` seconds have passed (then
    `busy()` is raised).
    """
    from filelock import FileLock, Timeout

    lock = FileLock(str(path), thread_local=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if not wait:
            raise (busy() if busy else HistbenchError(f"{path} is locked by another process")) from None
        if on_wait is not None:
            on_wait()
        try:
            lock.acquire(timeout=-1 if timeout is None else timeout)
        except Timeout:
            raise (busy() if busy else HistbenchError(f"{path} is locked by another process")) from None
    try:
        yield
    finally:
        lock.release()
