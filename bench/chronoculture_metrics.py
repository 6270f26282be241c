"""Speed of the ChronoCulture analysis at the paper's scale.

    .venv/bin/python bench/chronoculture_metrics.py [--pairs 10360] [--models 6] [--resamples 1000]

A synthetic benchmark with the paper's size (10,360 temporal pairs, scales of 3 to 10
options, 2 to 5 survey years, WVS and ISSP, seven regions) and six synthetic models
(noisy gold distributions, some identical predictions, a few invalid answers). It times:

1. histbench: everything `histbench report chronoculture` computes before rendering:
   for each model the knowledge filter, every cell of every table with 1,000 bootstrap
   resamples over temporal pairs (three boundary sets, four tolerances, RF1-RF3), the
   uniform and static references with intervals, the 50% and 100% retention variants,
   then the topic/region breakdowns with Kendall's W across the six models;
2. baseline "naive per-resample loop": the same cells computed the textbook way, one
   resample at a time (draw indices, re-select each cell's pairs, take the mean or median).
   It runs a few resamples and is extrapolated linearly to the full count (printed as such).

Target: (1) under 30 s on two CPU cores.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from histbench.builders.chronoculture.distance import normalised_wasserstein, shift_category_codes
from histbench.eval import stats
from histbench.eval.chronoculture import metrics as m
from histbench.eval.chronoculture.analysis import collect_cells, pair_values, select_pairs
from histbench.eval.chronoculture.breakdowns import across_models
from histbench.eval.chronoculture.data import Benchmark, Predictions
from histbench.eval.chronoculture.reporting import prepare

REGIONS = ["Western", "Eastern Europe and Central Asia", "Latin America", "East Asia", "South and Southeast Asia",
           "Middle East and North Africa", "Sub-Saharan Africa"]


def synthetic_benchmark(n: int, seed: int = 0) -> Benchmark:
    rng = np.random.default_rng(seed)
    k = rng.choice([3, 4, 5, 7, 10], size=n, p=[0.2, 0.35, 0.25, 0.1, 0.1])
    width = int(k.max())
    positions = m.option_positions(k, width)
    n_years = rng.integers(2, 6, size=n)
    years = np.full((n, 5), -1)
    golds = np.zeros((n, 5, width))
    g_old = np.zeros((n, width))
    g_new = np.zeros((n, width))
    for i in range(n):
        a = rng.dirichlet(np.full(k[i], 2.0))
        b = 0.7 * a + 0.3 * rng.dirichlet(np.full(k[i], 2.0)) if rng.random() < 0.6 else a * 0.95 + 0.05 / k[i]
        for j in range(n_years[i]):
            t = j / (n_years[i] - 1)
            golds[i, j, : k[i]] = (1 - t) * a + t * b
            years[i, j] = 1995 + 6 * j
        g_old[i, : k[i]], g_new[i, : k[i]] = a, b
    d_h = np.array([normalised_wasserstein(g_old[i, : k[i]], g_new[i, : k[i]]) for i in range(n)])
    survey = np.where(rng.random(n) < 0.31, "WVS", "ISSP").astype(object)
    topic = np.array([f"topic {t}" for t in rng.integers(0, 8, size=n)], dtype=object)
    return Benchmark(
        pair_id=np.array([f"p{i}" for i in range(n)], dtype=object), survey=survey,
        question_id=np.array([f"q{i % 408}" for i in range(n)], dtype=object), question_text=np.full(n, "?", dtype=object),
        topic=topic, topic_category=topic, country=np.array([f"c{i % 72}" for i in range(n)], dtype=object),
        region=np.array([REGIONS[i % 7] for i in range(n)], dtype=object), options=[[str(j) for j in range(x)] for x in k],
        k=k, positions=positions, g_old=g_old, g_new=g_new, d_h=d_h,
        categories={name: shift_category_codes(d_h, name).astype(np.int8) for name in m.BOUNDARY_SETS},
        year_old=years[:, 0], year_new=years[np.arange(n), n_years - 1], years=years, golds=golds,
    )


def synthetic_model(bench: Benchmark, seed: int) -> Predictions:
    rng = np.random.default_rng(seed)
    valid = np.arange(bench.width)[None, :] < bench.k[:, None]

    def noisy(g, scale):
        p = np.where(valid, np.clip(g + rng.normal(0, scale, g.shape), 0, None) + 1e-3, 0.0)
        return p / p.sum(axis=1, keepdims=True)

    undated = noisy(0.5 * (bench.g_old + bench.g_new), 0.05)
    old = noisy(bench.g_old, 0.06)
    new = np.where((rng.random(bench.n) < 0.35)[:, None], old, noisy(bench.g_new, 0.06))
    for array in (undated, old, new):
        array[rng.random(bench.n) < 0.01] = np.nan
    return Predictions(f"model {seed}", "model", old, new, undated)


def naive_seconds(bench: Benchmark, preds: Predictions, resamples: int, seed: int = 0) -> float:
    """The baseline: every cell re-selected and re-computed per resample (fancy indexing)."""
    _, _, analysed, _ = select_pairs(bench, preds, 0.75)
    idx = np.flatnonzero(analysed)
    batch = collect_cells(pair_values(bench, preds, idx))
    definitions = list(batch.definitions())
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for _ in range(resamples):
        draw = rng.integers(0, idx.size, size=idx.size)
        for kind, _, values, subset in definitions:
            chosen = values[draw][subset[draw]]
            if chosen.size:
                _ = chosen.mean() if kind == "mean" else np.median(chosen)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=10360)
    parser.add_argument("--models", type=int, default=6)
    parser.add_argument("--resamples", type=int, default=stats.DEFAULT_RESAMPLES)
    parser.add_argument("--naive-resamples", type=int, default=20, help="resamples actually run by the naive baseline")
    args = parser.parse_args()

    t0 = time.perf_counter()
    bench = synthetic_benchmark(args.pairs)
    runs = [synthetic_model(bench, seed) for seed in range(1, args.models + 1)]
    print(f"synthetic data: {args.pairs:,} pairs x {args.models} models ({time.perf_counter() - t0:.1f} s to make)")

    start = time.perf_counter()
    entries = prepare(bench, runs, resamples=args.resamples, seed=0)
    across_models(bench, [e.analysis for e in entries])
    ours = time.perf_counter() - start
    n_cells = sum(len(e.analysis.cells) for e in entries)
    print(f"histbench: {n_cells:,} cells with {args.resamples:,} resamples, references, retention variants and "
          f"breakdowns for {args.models} models: {ours:.1f} s")

    measured = naive_seconds(bench, runs[0], args.naive_resamples)
    per_model_cells = len(entries[0].analysis.cells)
    naive_total = measured / args.naive_resamples * args.resamples * args.models
    print(f"baseline 'naive per-resample loop': {measured:.1f} s for {args.naive_resamples} resamples of one model's "
          f"{per_model_cells:,} cells -> {naive_total:.0f} s extrapolated to {args.resamples:,} resamples x {args.models} "
          "models (main cells only: no references, retention variants or breakdowns)")
    print(f"ratio: histbench is {naive_total / ours:.0f}x faster than the naive loop; target < 30 s: "
          f"{'met' if ours < 30 else 'NOT met'}")


if __name__ == "__main__":
    main()
