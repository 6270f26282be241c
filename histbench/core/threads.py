"""How many CPU threads torch should use here, now.

torch starts one intra-op thread per core it sees. On a machine shared with other jobs
those threads wait for each other at every operation while the scheduler hands their
cores to the other processes, and a model that answers in 4 s on idle cores takes a
minute (two busy processes beside SmolLM2 on two cores: 4 s -> 58 s per
generated answer). So the default is to use the cores that are free:

- usable: the CPUs this process may run on (its affinity mask, `os.sched_getaffinity`),
  capped by a cgroup CPU quota (`cpu.max`, cgroup v2) when one is set;
- busy: the share of those CPUs that other work kept busy over a short sample of
  `/proc/stat` (Linux), else the 1-minute load average; this process's own CPU time
  in the sample is not counted as busy (one sample serves every model loaded within
  REUSE_SECONDS);
- threads = usable - busy, rounded, at least 1 and at most usable.

`choose_threads(option)` takes an explicit number (the `threads` model option), or
"auto"/None for the rule above; `OMP_NUM_THREADS` set in the environment wins over
"auto" (it is the user's choice, and torch already read it). `apply_threads` sets torch's
intra-op threads to the choice and returns what it did. The load of a shared machine
changes during a long run, so `Retuner.check()`, called between batches, measures again
once REUSE_SECONDS have passed and resets the threads (torch's thread count belongs to
the thread that sets it: call it from the thread that runs the model).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable

from histbench.core.errors import EvalError

SAMPLE_SECONDS = 0.5
#: a measurement is reused for this long within a process (models loaded one after another),
#: and a long run measures again after this long (histbench.core.threads.Retuner)
REUSE_SECONDS = 30.0
_last: dict[str, float] = {}


def usable_cpus() -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup v2 CPU quota."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    quota = cgroup_quota()
    if quota is not None:
        count = min(count, max(1, math.ceil(quota)))
    return max(1, count)


def cgroup_quota(path: str = "/sys/fs/cgroup/cpu.max") -> float | None:
    """The cgroup v2 CPU quota in CPUs ("max" or no file: None)."""
    try:
        with open(path, encoding="ascii") as handle:
            fields = handle.read().split()
    except OSError:
        return None
    if len(fields) < 2 or fields[0] == "max":
        return None
    try:
        quota, period = float(fields[0]), float(fields[1])
    except ValueError:
        return None
    return quota / period if period > 0 else None


def _cpu_times(cpus: set[int], stat: str = "/proc/stat") -> tuple[float, float] | None:
    """(busy, total) jiffies summed over `cpus` from /proc/stat, or None where unreadable."""
    try:
        with open(stat, encoding="ascii") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    busy = total = 0.0
    seen = 0
    for line in lines:
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        try:
            cpu = int(name[3:])
            values = [float(v) for v in rest.split()]
        except ValueError:
            continue
        if cpu not in cpus or len(values) < 4:
            continue
        seen += 1
        idle = values[3] + (values[4] if len(values) > 4 else 0.0)  # idle + iowait
        # guest time is already counted in user time
        counted = sum(values[:8]) if len(values) >= 8 else sum(values)
        total += counted
        busy += counted - idle
    return (busy, total) if seen else None


def busy_cpus(usable: int, sample_s: float = SAMPLE_SECONDS) -> float:
    """How many of this process's CPUs other work keeps busy, measured now."""
    try:
        cpus = set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = set(range(os.cpu_count() or 1))
    first = _cpu_times(cpus)
    own_first = time.process_time()
    if first is not None:
        time.sleep(sample_s)
        second = _cpu_times(cpus)
        own = time.process_time() - own_first
        if second is not None and second[1] > first[1]:
            share = (second[0] - first[0]) / (second[1] - first[1])
            own_share = own / (sample_s * max(1, len(cpus)))
            return max(0.0, min(float(usable), (share - own_share) * len(cpus)))
    try:
        return max(0.0, min(float(usable), os.getloadavg()[0]))
    except (AttributeError, OSError):
        return 0.0


def choose_threads(option: int | str | None = "auto", *, measure: Callable[[int], float] | None = None,
                   fresh: bool = False) -> tuple[int | None, str]:
    """(threads, why). threads None: leave torch as it is (OMP_NUM_THREADS is set).
    fresh: measure now even if a measurement of the last REUSE_SECONDS exists."""
    if option not in (None, "auto"):
        if isinstance(option, bool) or not isinstance(option, int) or option < 1:
            raise EvalError(f"threads must be a positive integer or auto, got {option!r}", field="--model-option")
        return option, f"threads={option} (option)"
    if os.environ.get("OMP_NUM_THREADS"):
        return None, f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} (environment)"
    usable = usable_cpus()
    if measure is not None:
        busy = measure(usable)
    elif not fresh and _last and time.monotonic() - _last["at"] < REUSE_SECONDS and _last["usable"] == usable:
        busy = _last["busy"]
    else:
        busy = busy_cpus(usable)
        _last.update(at=time.monotonic(), usable=usable, busy=busy)
    threads = max(1, min(usable, int(usable - busy + 0.5)))
    return threads, f"auto: {usable} usable CPU(s), {busy:.1f} busy with other work"


def apply_threads(option: int | str | None = "auto", *, fresh: bool = False) -> dict:
    """Set torch's intra-op threads by `choose_threads`; returns {"threads", "why"}."""
    import torch

    threads, why = choose_threads(option, fresh=fresh)
    if threads is not None and threads != torch.get_num_threads():
        torch.set_num_threads(threads)
    return {"threads": torch.get_num_threads(), "why": why}


class Retuner:
    """Keeps torch's threads at the "auto" choice during a long run: `check()` between
    batches measures again when REUSE_SECONDS have passed since the last measurement."""

    def __init__(self, option: int | str | None = "auto") -> None:
        self.option = option
        self.last: dict | None = None
        self._at = 0.0

    def check(self, force: bool = False) -> dict | None:
        """Apply the choice now if it is due (always the first time; `force`: measure now);
        what was applied, or None."""
        due = force or self.last is None or (self.option in (None, "auto") and time.monotonic() - self._at >= REUSE_SECONDS)
        if not due:
            return None
        self.last = apply_threads(self.option, fresh=force or self.last is not None)
        self._at = time.monotonic()
        return self.last
