"""What reading a build again costs the demo's viewers (issue 44, "work done twice").

    .venv/bin/python bench/demo_cost.py [--benchmark mher] [--rounds 3]

Builds the benchmark's bundled sample and runs its demo part once (`histbench demo --only
BENCHMARK`'s scoring step, not timed), then times the demo's next steps, the run format's
files of every run (`finish_run`, which reads the build to show each item's prompt) and a
per-item viewer and the headline numbers of every run (`site_runs`), in interleaved rounds:

  before  the previous path: every call of `load_build_config` loads the config again
          with `datasets.load_dataset` (nothing kept in the process) and parses the
          card's metadata with PyYAML's pure-Python parser;
  now     as shipped: a config whose files and card were verified unchanged comes from
          the process's memory, and the card is parsed with libyaml;

in the order before, now, before, now, ... and prints each round's CPU (this process) and
wall time, and the ratio now / before (medians). The rows and the pages written are the
same both ways (checked). MHER is the default: its viewers read its build most often
(11 s of the whole demo's 17 s of viewers before the change).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmark", default="mher", choices=["mher", "valence", "chronologic", "chronoculture", "italian"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

    import yaml

    from histbench.builders.machinery.build import discover_builders, run_build
    from histbench.core import dataset
    from histbench.core.dataset import BuiltDataset
    from histbench.core.progress import quiet_datasets
    from histbench.eval.plugin import discover_evaluators
    from histbench.eval.report import site_runs

    quiet_datasets()
    builders = discover_builders()
    builder = builders[args.benchmark]
    evaluator = discover_evaluators(builders)[args.benchmark]
    c_loader = getattr(yaml, "CSafeLoader", None)

    class Forgetful(dict):
        """_LOADED of the previous path: nothing is kept."""

        def __setitem__(self, key, value) -> None:
            pass

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = run_build(builder, builder.manifest().sample_paths(), options=builder.demo_options(), out_root=root)
        (root / "report" / args.benchmark).mkdir(parents=True)
        section = evaluator.demo(BuiltDataset.open(folder), root / "runs" / args.benchmark, root / "report" / args.benchmark)
        run_dirs = section.runs
        print(f"{args.benchmark}: {len(run_dirs)} run(s) on {folder.name}")
        times: dict[str, list[tuple[float, float]]] = {"before": [], "now": []}
        pages: dict[str, list[str]] = {}
        kept = dataset._LOADED
        for k in range(args.rounds):
            for name in ("before", "now"):
                if name == "before":
                    dataset._LOADED = Forgetful()
                    if c_loader is not None:
                        yaml.CSafeLoader = yaml.SafeLoader
                else:
                    dataset._LOADED = kept
                    kept.clear()   # each round starts as the demo's viewer step does: nothing loaded yet
                    if c_loader is not None:
                        yaml.CSafeLoader = c_loader
                site = root / f"site-{name}-{k}"
                wall, cpu = time.perf_counter(), time.process_time()
                for run_dir in run_dirs:
                    evaluator.finish_run(run_dir)
                runs = site_runs(evaluator, run_dirs, site, Path("viewer") / args.benchmark)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                times[name].append((cpu, wall))
                print(f"round {k + 1} {name:>6}: {cpu:6.2f} s CPU  {wall:6.2f} s wall")
                pages.setdefault(name, [])
                if k == 0:
                    pages[name] = sorted(p.relative_to(site).as_posix() + ":" + p.read_text(encoding="utf-8")
                                         for p in site.rglob("*") if p.is_file())
                    pages[name] += [(Path(r) / "items.jsonl").read_text(encoding="utf-8") for r in run_dirs]
                    pages[name + "-headlines"] = [repr([r.headlines for r in runs])]
        if c_loader is not None:
            yaml.CSafeLoader = c_loader
        dataset._LOADED = kept
    if pages["before"] != pages["now"] or pages["before-headlines"] != pages["now-headlines"]:
        raise SystemExit("the two paths wrote different viewers or headlines")
    before_cpu = statistics.median(c for c, _ in times["before"])
    now_cpu = statistics.median(c for c, _ in times["now"])
    before_wall = statistics.median(w for _, w in times["before"])
    now_wall = statistics.median(w for _, w in times["now"])
    print(f"median: before {before_cpu:.2f} s CPU ({before_wall:.2f} s wall), now {now_cpu:.2f} s CPU "
          f"({now_wall:.2f} s wall); now / before: {now_cpu / before_cpu:.2f}x CPU, {now_wall / before_wall:.2f}x wall; "
          "the same viewers and headlines")


if __name__ == "__main__":
    main()
