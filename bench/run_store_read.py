"""What checking every line costs when a run folder is read (issue 39, run-store integrity).

    .venv/bin/python bench/run_store_read.py [--records 20000] [--runs 3]

Writes a records.jsonl of N answered generate requests (a chat prompt of about 300
characters and a 100-character answer each, the shape of a ChronoCulture or MHER run) with
an in-process backend, then opens the folder with RunStore.open, interleaved:

  baseline  the line rule alone: each line validated (invalid_result) and kept or not,
            without recomputing its key (the foreign-line check switched off);
  checked   RunStore.open as shipped: each line's key recomputed from its request with the
            model in hand, so that a line of another model or configuration is named;

in the order baseline, checked, baseline, checked, ... and prints wall and CPU time of each
and the ratio checked / baseline (mean over runs).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from histbench.core.backends.base import GENERATE, Backend, GenerateRequest, GenerateResult
from histbench.core.runstore import RunStore


class _Quick(Backend):
    kind = "quick"

    def __init__(self) -> None:
        super().__init__("quick:bench", "bench")
        self.supports = frozenset({GENERATE})

    def _generate_batch(self, requests, indices):
        yield indices, [GenerateResult(text="x" * 100, finish_reason="stop") for _ in requests]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    backend = _Quick()
    requests = [GenerateRequest(messages=[{"role": "system", "content": "You are a historian. " * 5},
                                          {"role": "user", "content": f"Question {n}: " + "In which year ... " * 10}])
                for n in range(args.records)]
    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder) / "run"
        RunStore.open(run, backend=backend).run(requests)
        size = (run / "records.jsonl").stat().st_size
        print(f"records.jsonl: {args.records:,} records, {size / 2**20:.1f} MiB")
        times: dict[str, list[tuple[float, float]]] = {"baseline": [], "checked": []}
        original = RunStore._foreign
        for _ in range(args.runs):
            for name in ("baseline", "checked"):
                RunStore._foreign = (lambda self, record: None) if name == "baseline" else original
                wall, cpu = time.perf_counter(), time.process_time()
                store = RunStore.open(run, backend=backend)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                assert len(store) == args.records
                times[name].append((wall, cpu))
                print(f"  {name:9s} wall {wall:6.2f} s  cpu {cpu:6.2f} s")
        RunStore._foreign = original
    mean = {name: tuple(sum(t[i] for t in runs) / len(runs) for i in (0, 1)) for name, runs in times.items()}
    print(f"checked / baseline: wall {mean['checked'][0] / mean['baseline'][0]:.2f}, "
          f"cpu {mean['checked'][1] / mean['baseline'][1]:.2f} "
          f"(per record: {1e6 * (mean['checked'][1] - mean['baseline'][1]) / args.records:.0f} us CPU more)")


if __name__ == "__main__":
    main()
