"""`histbench --help`: CPU of the shallow top-level parser (what the command runs now)
against building the full parser first (every benchmark's builder imported, as the command
did before issue 45), each in a fresh interpreter, interleaved (A, B, A, B ...).

Prints each run's child CPU (user + system, from getrusage) and wall seconds, min/median/max
of each, and the ratio of medians. The target: the shallow --help under 0.5 s of CPU.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

RUNS = {
    "full parser (before)": "from histbench.cli import make_parser; make_parser().parse_args(['--help'])",
    "histbench --help (now)": "from histbench.cli import main; main(['--help'])",
}


def run_once(code: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=False, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in RUNS}
    for pair in range(args.pairs):
        names = list(RUNS) if pair % 2 == 0 else list(RUNS)[::-1]
        for name in names:
            times[name].append(run_once(RUNS[name]))
    for name, runs in times.items():
        cpu = sorted(c for c, _ in runs)
        wall = sorted(w for _, w in runs)
        print(f"{name:24s} CPU min/median/max {cpu[0]:.3f}/{statistics.median(cpu):.3f}/{cpu[-1]:.3f} s, "
              f"wall {wall[0]:.3f}/{statistics.median(wall):.3f}/{wall[-1]:.3f} s")
    full, now = (statistics.median(c for c, _ in times[name]) for name in RUNS)
    print(f"CPU ratio full/now (medians): {full / now:.2f}x; --help under 0.5 s CPU: {now < 0.5}")


if __name__ == "__main__":
    main()
