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


def test_a_slow_first_item_shows_rate_and_time_left_at_once(monkeypatch, capsys):
    """Issue 44: a batch whose first item takes long (SmolLM2 generating 20 answers at a time)
    showed "0/20 (0%), about ? left" for minutes; now the line comes when the first is done."""
    monkeypatch.setattr(progress_module, "LOG_EVERY_S", 60.0)
    monkeypatch.setattr(progress_module, "FIRST_LINE_AFTER_S", 0.05)
    monkeypatch.delenv("HISTBENCH_PROGRESS", raising=False)
    bar = progress(total=4, desc="dated prompts", unit="req")
    time.sleep(0.1)
    bar.update(2)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and re.fullmatch(r"dated prompts: 2/4 req \(50%\), *[\d.]+req/s, 00:00 elapsed, about 00:00 left",
                                            lines[0]), lines
    bar.update(2)
    bar.close()
    assert capsys.readouterr().err.startswith("dated prompts: 4/4 req (100%)")


def test_a_line_before_any_item_is_done_says_so(monkeypatch, capsys):
    monkeypatch.setattr(progress_module, "LOG_EVERY_S", 0.05)
    monkeypatch.delenv("HISTBENCH_PROGRESS", raising=False)
    bar = progress(total=20, desc="undated prompts", unit="req")
    time.sleep(0.12)
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines and lines[0] == "undated prompts: 0/20 req, 00:00 elapsed, none done yet (rate and time left from the first)"
    assert "?" not in "".join(lines)


def test_steps_log_what_they_do_with_elapsed_and_cpu_time(capsys):
    from histbench.core.progress import Steps

    steps = Steps()
    with steps("chronologic: building the bundled sample"):
        sum(i * i for i in range(200_000))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "[00:00] == chronologic: building the bundled sample"
    assert re.fullmatch(r"\[00:00\]    done in \d+\.\d s \(\d+\.\d s CPU\)", lines[1]), lines
