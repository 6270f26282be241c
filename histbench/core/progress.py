"""Progress for long loops, on stderr: a tqdm bar on a terminal; when stderr is not a
terminal (a log file, a batch job), one plain line every LOG_EVERY_S seconds with the
count, the average rate and the time left, and a last line at the end (a loop that ends
sooner prints nothing). HISTBENCH_PROGRESS=1 forces the bar, HISTBENCH_PROGRESS=0
silences both."""

from __future__ import annotations

import os
import sys
import threading

from tqdm.auto import tqdm
from tqdm.std import tqdm as std_tqdm

#: seconds between two progress lines when stderr is not a terminal
LOG_EVERY_S = 30.0


class LogLines(std_tqdm):
    """A tqdm that writes a full line every `interval` seconds instead of redrawing a bar:
    a timer thread writes the count, the average rate and the time left, so a line also
    comes while a long batch is in flight, and counts that arrive in bursts are shown as
    they stand. close() writes a last line only if one was written before (and the count
    moved since)."""

    def __init__(self, *args, interval: float | None = None, **kwargs) -> None:
        self._interval = LOG_EVERY_S if interval is None else interval
        self._lines = 0
        self._last_n = None
        self._write_lock = threading.Lock()
        self._stop = threading.Event()
        total = kwargs.get("total")
        if total is None and args and hasattr(args[0], "__len__"):
            total = len(args[0])
        unit = kwargs.get("unit", "it")
        kwargs["bar_format"] = (
            "{desc}: {n_fmt}/{total_fmt} " + unit + " ({percentage:.0f}%), {rate_fmt}, {elapsed} elapsed, "
            "about {remaining} left" if total else "{desc}: {n_fmt} " + unit + ", {rate_fmt}, {elapsed} elapsed"
        )
        # tqdm keeps the count current on every step but never draws (the timer does); the
        # rate is the average since the start
        kwargs.update(mininterval=0, miniters=1, maxinterval=1e9, delay=0, smoothing=0, dynamic_ncols=False)
        super().__init__(*args, **kwargs)
        self._timer = threading.Thread(target=self._tick, name="histbench-progress", daemon=True)
        self._timer.start()

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            if getattr(self, "disable", True):
                return
            self._write_line()

    def _write_line(self) -> None:
        with self._write_lock:
            self.fp.write(self.__str__() + "\n")
            self.fp.flush()
            self._lines += 1
            self._last_n = self.n

    def display(self, msg=None, pos=None) -> bool:
        return True  # the timer writes the lines

    def close(self) -> None:
        if getattr(self, "disable", True):
            return
        self._stop.set()
        if self._timer is not threading.current_thread():
            self._timer.join()
        if self._lines and self.n != self._last_n:
            self._write_line()
        self.disable = True
        self._decr_instances(self)


def progress(iterable=None, *, desc: str = "", total: int | None = None, disable: bool | None = None, **kwargs):
    """Wrap an iterable (or create a manual bar) with progress on stderr (see the module)."""
    forced = os.environ.get("HISTBENCH_PROGRESS")
    if disable is None and forced == "0":
        disable = True
    if disable is None and forced != "1" and not sys.stderr.isatty():
        return LogLines(iterable, desc=desc or "progress", total=total, file=sys.stderr, **kwargs)
    return tqdm(iterable, desc=desc, total=total, disable=bool(disable), file=sys.stderr, dynamic_ncols=True, **kwargs)


def log(message: str) -> None:
    """A status line for the user (stderr, so stdout stays machine-readable), without any
    credential: URLs lose their user part and secret query values, registered credentials
    are replaced (secrets.redact)."""
    from .secrets import redact

    print(redact(str(message)), file=sys.stderr, flush=True)


def quiet_datasets() -> None:
    """Silence the `datasets` library's own per-file bars (histbench shows its own)."""
    import datasets

    datasets.disable_progress_bars()
