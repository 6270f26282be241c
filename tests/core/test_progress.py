"""Progress on a stderr that is not a terminal (issue 13, engine): plain lines with count,
rate and time left every LOG_EVERY_S seconds; nothing for a loop that ends sooner."""

from __future__ import annotations

import re
import time

from histbench.core import progress as progress_module
from histbench.core.progress import LogLines, progress


def test_a_long_loop_logs_count_rate_and_time_left(monkeypatch, capsys):
    monkeypatch.setattr(progress_module, "LOG_EVERY_S", 0.05)
    monkeypatch.delenv("HISTBENCH_PROGRESS", raising=False)
    bar = progress(total=8, desc="chronologic likelihood", unit="req")  # pytest's stderr is not a terminal
    assert isinstance(bar, LogLines)
    for _ in range(8):
        time.sleep(0.02)
        bar.update(1)
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 2
    pattern = r"chronologic likelihood: (\d)/8 req \(\d+%\), *[\d.]+req/s, 00:00 elapsed, about 00:00 left"
    assert all(re.fullmatch(pattern, line) for line in lines), lines
    assert lines[-1].startswith("chronologic likelihood: 8/8 req (100%)")
    assert "\r" not in "".join(lines)


def test_a_short_loop_prints_nothing_and_the_switch_still_works(monkeypatch, capsys):
    monkeypatch.delenv("HISTBENCH_PROGRESS", raising=False)
    assert sum(progress(range(5), desc="quick")) == 10
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("HISTBENCH_PROGRESS", "0")
    assert not isinstance(progress(range(3)), LogLines)
    monkeypatch.setenv("HISTBENCH_PROGRESS", "1")
    bar = progress(range(3), desc="bar")
    assert not isinstance(bar, LogLines) and list(bar) == [0, 1, 2]
