"""ChronoCulture build speed and memory on a WVS-scale time-series file.

    .venv/bin/python bench/chronoculture_build.py [--respondents 400000] [--filler 220]

Writes once (cached in bench/.cache/, git-ignored) a synthetic WVS time-series .sav with
400,000 respondents, 100 countries x 5 waves (3-7), the registry's 86 WVS question
variables plus labelled filler variables (>= 300 labelled question variables in all), then
runs, each in a fresh process:

  baseline  pyreadstat.read_sav of only the columns the build needs (usecols), nothing else;
  build     the whole `histbench build chronoculture --wvs FILE` (hashing, metadata checks,
            reading, gold cells, pairs, noise, prompts, schema check, parquet, card).

and prints both times, their ratio (target <= 2) and each process's peak RSS (target
<= 4 GB).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache" / "chronoculture"
WAVES = (3, 4, 5, 6, 7)
YEARS = {3: 1996, 4: 2001, 5: 2006, 6: 2012, 7: 2018}


def _registry():
    sys.path.insert(0, str(ROOT))
    from histbench.builders.chronoculture.registry import load_registry
    from histbench.builders.core.resources import Resources

    return load_registry(Resources.default().source_dir("chronoculture") / "registry.yaml")


def make_file(path: Path, respondents: int, filler: int, seed: int = 0) -> None:
    import pandas as pd
    import pyreadstat

    from histbench.builders.chronoculture.countries import CountryTable
    from histbench.builders.core.resources import Resources

    rng = np.random.default_rng(seed)
    registry = _registry()
    table = CountryTable.load(Resources.default().source_dir("chronoculture") / "countries.csv")
    countries = [c.iso_numeric for c in table.countries][:100]
    n_groups = len(countries) * len(WAVES)
    group = np.sort(rng.integers(0, n_groups, respondents))
    columns = {
        "S002VS": np.array(WAVES, float)[group % len(WAVES)],
        "S003": np.array(countries, float)[group // len(WAVES)],
        "S020": np.array([YEARS[w] for w in WAVES], float)[group % len(WAVES)],
        "S017": rng.uniform(0.3, 2.5, respondents).round(4),
    }
    labels = {"S003": {c.iso_numeric: c.name for c in table.countries}}
    missing = {-1: "Don't know", -2: "No answer", -4: "Not asked in survey", -5: "Missing"}
    specs = [(q.variable, [c for o in q.options for c in o.codes], dict(zip([o.codes[0] for o in q.options], q.labels, strict=True)))
             for q in registry.wvs_questions]
    specs += [(f"Z{i:03d}", [1.0, 2.0, 3.0, 4.0, 5.0], {1: "a", 2: "b", 3: "c", 4: "d", 5: "e"}) for i in range(filler)]
    for variable, codes, value_labels in specs:
        k = len(codes)
        probs = rng.dirichlet(np.full(k, 1.5), size=n_groups)
        cum = np.cumsum(probs, axis=1)[group]
        answer = (rng.random(respondents)[:, None] > cum).sum(axis=1)
        values = np.asarray(codes, float)[np.minimum(answer, k - 1)]
        invalid = rng.random(respondents) < 0.04
        values[invalid] = rng.choice([-1.0, -2.0, -5.0], invalid.sum())
        not_asked_groups = rng.random(n_groups) < 0.15
        values[not_asked_groups[group]] = -4.0
        columns[variable] = values
        labels[variable] = {**{int(c): str(v) for c, v in value_labels.items()}, **missing}
    frame = pd.DataFrame(columns)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.sav")
    pyreadstat.write_sav(frame, tmp, variable_value_labels=labels, row_compress=True)
    tmp.replace(path)


def _peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss it does not carry over
    the parent's peak across fork + exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child_baseline(path: Path) -> dict:
    import pyreadstat

    registry = _registry()
    v = registry.wvs.variables
    columns = [v["wave"], v["year"], v["weight"], v["country"]] + [q.variable for q in registry.wvs_questions]
    start, cpu = time.perf_counter(), _cpu()
    frame, _ = pyreadstat.read_sav(str(path), usecols=columns, user_missing=True, apply_value_formats=False)
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    return {"seconds": seconds, "cpu": cpu, "peak_rss_mb": _peak_rss_mb(), "rows": len(frame),
            "columns": frame.shape[1]}


def child_build(path: Path) -> dict:
    from histbench.builders.chronoculture import BUILDER
    from histbench.builders.core.build import run_build

    start, cpu = time.perf_counter(), _cpu()
    folder = run_build(BUILDER, {"wvs": path}, out_root=CACHE / "build")
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    manifest = json.loads((folder / "histbench.json").read_text())
    return {"seconds": seconds, "cpu": cpu, "peak_rss_mb": _peak_rss_mb(),
            "pairs": manifest["rows"]["pairs"]["test"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--respondents", type=int, default=400_000)
    parser.add_argument("--filler", type=int, default=220, help="labelled variables beyond the registry's")
    parser.add_argument("--child", choices=["baseline", "build", "make"], help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "make":
        make_file(args.file, args.respondents, args.filler)
        return
    if args.child:
        result = child_baseline(args.file) if args.child == "baseline" else child_build(args.file)
        print(json.dumps(result))
        return

    path = CACHE / f"wvs_timeseries_{args.respondents}x{args.filler}.sav"
    if not path.exists():
        print(f"writing {path} (once) ...", file=sys.stderr)
        start = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--child", "make", "--file", str(path), "--respondents",
                        str(args.respondents), "--filler", str(args.filler)], check=True)
        print(f"  {time.perf_counter() - start:.1f} s, {path.stat().st_size / 1e6:.0f} MB", file=sys.stderr)

    def child(kind: str) -> dict:
        out = subprocess.run([sys.executable, __file__, "--child", kind, "--file", str(path)], check=True,
                             capture_output=True, text=True, env={**_env(), "HISTBENCH_PROGRESS": "0"})
        return json.loads(out.stdout.strip().splitlines()[-1])

    baseline = child("baseline")
    build = child("build")
    ratio = build["seconds"] / baseline["seconds"]
    cpu_ratio = build["cpu"] / baseline["cpu"]
    print(f"file: {path.name} ({path.stat().st_size / 1e6:.0f} MB, {baseline['rows']:,} respondents)")
    print(f"baseline  pyreadstat.read_sav, needed columns only ({baseline['columns']}): "
          f"{baseline['seconds']:.2f} s wall, {baseline['cpu']:.2f} s CPU, peak RSS {baseline['peak_rss_mb']:.0f} MB")
    print(f"build     histbench build chronoculture ({build['pairs']:,} pairs): "
          f"{build['seconds']:.2f} s wall, {build['cpu']:.2f} s CPU, peak RSS {build['peak_rss_mb']:.0f} MB")
    print(f"ratio     build / baseline read = {ratio:.2f} wall, {cpu_ratio:.2f} CPU (target <= 2.0); "
          f"peak RSS {'within' if build['peak_rss_mb'] <= 4096 else 'ABOVE'} 4 GB")


def _env() -> dict:
    import os

    return dict(os.environ)


if __name__ == "__main__":
    main()
