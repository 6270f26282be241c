"""Progress bars for long loops (tqdm on stderr; silent when stderr is not a terminal
unless HISTBENCH_PROGRESS=1)."""

from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm


def progress(iterable=None, *, desc: str = "", total: int | None = None, disable: bool | None = None, **kwargs):
    """Wrap an iterable (or create a manual bar) with a tqdm progress bar on stderr."""
    if disable is None:
        forced = os.environ.get("HISTBENCH_PROGRESS")
        disable = False if forced == "1" else (True if forced == "0" else not sys.stderr.isatty())
    return tqdm(iterable, desc=desc, total=total, disable=disable, file=sys.stderr, dynamic_ncols=True, **kwargs)


def log(message: str) -> None:
    """A status line for the user (stderr, so stdout stays machine-readable)."""
    print(message, file=sys.stderr, flush=True)


def quiet_datasets() -> None:
    """Silence the `datasets` library's own per-file bars (histbench shows its own)."""
    import datasets

    datasets.disable_progress_bars()
