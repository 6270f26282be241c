"""The two class fixes behind issue 26, point 3, on their own: every OSError reaching the
command line is one line naming the path and the operation (histbench.core.errors.
from_os_error), and a signal that ends a command ends it as Ctrl-C does, so staging is
removed (histbench.core.signals). The corpus (test_malformed_inputs.py) runs them through
real commands."""

from __future__ import annotations

import errno
import os
import signal
import time

import pytest

from histbench.core.errors import from_os_error
from histbench.core.signals import Terminated, signals_as_interrupts

from .conftest import FaultyFiles


def _raised(call) -> OSError:
    try:
        call()
    except OSError as exc:
        return exc
    raise AssertionError("no OSError")


@pytest.mark.parametrize(("fault", "call", "expected"), [
    ("read_only", lambda root: (root / "out").mkdir(), "out: cannot create the folder: Read-only file system"),
    ("read_only", lambda root: (root / "notes.txt").write_text("x"), "notes.txt: cannot write: Read-only file system"),
    ("read_only", lambda root: os.replace(root / "a", root / "b"), "a: cannot move it to"),
    ("unreadable", lambda root: (root / "a").read_bytes(), "a: cannot read: Permission denied (check the permissions)"),
    ("unreadable", lambda root: open(root / "a", "rb"), "a: cannot open: Permission denied"),
])
def test_an_os_error_is_one_line_naming_the_path_and_the_operation(fault, call, expected, tmp_path, monkeypatch):
    (tmp_path / "a").write_text("a")
    faults = FaultyFiles(monkeypatch)
    if fault == "read_only":
        faults.read_only(tmp_path)
    else:
        faults.unreadable(tmp_path / "a")
    error = from_os_error(_raised(lambda: call(tmp_path)))
    assert expected in str(error) and str(tmp_path) in str(error)
    assert "\n" not in str(error)


def test_an_os_error_without_a_path_still_says_what_failed():
    error = from_os_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    assert str(error) == "cannot write: No space left on device (free some space or write elsewhere)"
    assert "Connection refused" in str(from_os_error(ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")))


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_an_ending_signal_raises_terminated_in_the_main_thread_and_handlers_come_back(name):
    sig = getattr(signal, name)
    before = signal.getsignal(sig)
    cleaned = []
    with pytest.raises(Terminated) as caught, signals_as_interrupts():
        try:
            os.kill(os.getpid(), sig)
            time.sleep(5)   # the handler interrupts this
        finally:
            cleaned.append(True)   # what a writer's `finally` / `except BaseException` does
    assert caught.value.name == name and caught.value.signum == sig and isinstance(caught.value, KeyboardInterrupt)
    assert cleaned == [True]
    assert signal.getsignal(sig) == before


def test_an_ignored_hangup_stays_ignored():
    """Under nohup, SIGHUP is ignored on purpose: the command keeps running."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals_as_interrupts():
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.05)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_the_command_line_turns_an_os_error_into_one_line(tmp_path, monkeypatch, cli):
    """An OSError from anywhere (here: the report's own folder on a read-only mount) is one
    `histbench: error:` line and exit 2 at the command line."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    FaultyFiles(monkeypatch).read_only(mount)
    result = cli("report", "mher", str(tmp_path / "no-run"), "--out", str(mount / "report"))
    assert result.status == 2 and len(result.error_lines) == 1, result.stderr
    assert str(tmp_path) in result.error_lines[0]
