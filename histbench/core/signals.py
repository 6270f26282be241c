"""Signals that end a command end it the way Ctrl-C does.

`histbench` runs every command inside `signals_as_interrupts()`: SIGTERM (what `kill`, a
batch scheduler or a container stop sends) and SIGHUP (the terminal closed) raise
`Terminated`, a `KeyboardInterrupt`, in the main thread. So every `finally` and `except
BaseException` block that removes a staging folder (builds, reports, viewers, atomic
files) runs, the run store keeps what it flushed, and the command exits with 128 + the
signal's number after one line on stderr. A second signal while that clean-up runs gets
the signal's default action (the process ends at once), as a second Ctrl-C would; SIGKILL
cannot be caught, and what it leaves behind is removed by the next command that writes the
same output (see atomic.py and the dataset writer).

Only the command line installs the handlers (a library must not); they are restored
when the command returns.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: the signals that end a command and are turned into `Terminated`
ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """A signal other than Ctrl-C's ended the command."""

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        self.name = signal.Signals(signum).name
        super().__init__(self.name)


@contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise `Terminated` in the main thread (once;
    a second one ends the process). Outside the main thread it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, object] = {}

    def handler(signum, _frame):
        for sig in ENDING_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)   # a second signal: the default action, at once
        raise Terminated(signum)

    for sig in ENDING_SIGNALS:
        if signal.getsignal(sig) is signal.SIG_IGN:
            continue   # ignored on purpose (nohup): stays ignored
        try:
            previous[sig] = signal.signal(sig, handler)
        except (OSError, ValueError):   # a signal this platform will not let us handle
            continue
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
