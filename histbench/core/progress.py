"""Progress for long loops, on stderr: a tqdm bar on a terminal; when stderr is not a
terminal (a log file, a batch job), one plain line every LOG_EVERY_S seconds with the
count, the average rate and the time left, and a last line at the end (a loop that ends
sooner prints nothing). Where the first item takes FIRST_LINE_AFTER_S or longer (a batch
of generations), a line comes as soon as it is done, so the rate and the time left show
from the first item instead of after the next tick; a line written before any item is
done says so instead of showing an unknown rate. HISTBENCH_PROGRESS=1 forces the bar,
HISTBENCH_PROGRESS=0 silences both.

`Steps` logs the steps of a long command (`histbench demo`): what each does, the time
since the command started, and each step's own wall and CPU time when it ends."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm.auto import tqdm
from tqdm.std import tqdm as std_tqdm

#: seconds between two progress lines when stderr is not a terminal
LOG_EVERY_S = 30.0
#: a first item that takes this long gets its line at once (rate and time left from the first item)
FIRST_LINE_AFTER_S = 5.0


class LogLines(std_tqdm):
    """A tqdm that writes a full line every `interval` seconds instead of redrawing a bar:
    a timer thread writes the count, the average rate and the time left, so a line also
    comes while a long batch is in flight, and counts that arrive in bursts are shown as
    they stand. close() writes a last line only if one was written before (and the count
    moved since)."""

    def __init__(self, *args, interval: float | None = None, **kwargs) -> None:
        self._interval = LOG_EVERY_S if interval is None else interval
        self._first_line_after = min(FIRST_LINE_AFTER_S, self._interval)
        self._first_done = False
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

    def update(self, n: float | None = 1) -> bool | None:
        shown = super().update(n)
        if not self._first_done and self.n > 0 and not getattr(self, "disable", True):
            self._first_done = True
            if self._time() - self.start_t >= self._first_line_after:
                self._write_line()
        return shown

    def __str__(self) -> str:
        if self.n == 0:
            what = f"0/{self.total:,} {self.unit}" if self.total else f"0 {self.unit}"
            return (f"{self.desc}: {what}, {self.format_interval(self._time() - self.start_t)} elapsed, "
                    "none done yet (rate and time left from the first)")
        return super().__str__()

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


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes:02d}:{secs:02d}"


class Steps:
    """The steps of a long command, logged: `with steps("chronologic: building the sample"):`
    writes `[00:12] == chronologic: building the sample` (the time since the Steps began) and,
    when the step ends, `[00:19]    done in 7.0 s (6.1 s CPU)` (this process's CPU time,
    all its threads)."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    @contextmanager
    def __call__(self, what: str) -> Iterator[None]:
        wall, cpu = time.monotonic(), time.process_time()
        log(f"[{_clock(wall - self.start)}] == {what}")
        yield
        now = time.monotonic()
        log(f"[{_clock(now - self.start)}]    done in {now - wall:.1f} s ({time.process_time() - cpu:.1f} s CPU)")


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
