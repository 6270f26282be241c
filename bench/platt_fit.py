"""The Chronologic Table 3 Platt fits: histbench's Nelder-Mead on the merged softplus
objective against the same batched Nelder-Mead on the authors' objective option by option
(histbench's implementation before issue 45), interleaved in one run.

Inputs: the bundled sample's questions repeated to `--questions` (release order kept, so
the authors' 5-fold split cuts the copies as it cuts a longer release), `--resamples`
bootstrap resamples (histbench's seeded draws) and either

- `--scorer random`: the random-choice baseline (every option's log-likelihood 0.0), the
  case whose whole evaluation the issue timed (`histbench eval chronologic --baseline
  random`), or
- `--scorer model`: mean log-likelihoods of a fixed random scorer (every option distinct).

Each pair runs `aggregate` (the Table 3 computation: full-sample fits and every resample's
5 folds) once with the baseline and once with the current fit, alternating which goes
first; prints wall and CPU seconds of each, the ratio's min/median/max, and the largest
difference between the two runs' Table 3 cells (Brier and accuracy, overall and per group,
estimate and 2.5/50/97.5 percentiles). `--scipy` also times scipy's `minimize` called once
per resample and fold (the authors' own loop) on the resample fits, once.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from functools import partial
from pathlib import Path

import numpy as np

from histbench.eval.chronologic import metrics

SAMPLE = Path(__file__).resolve().parents[1] / "sources" / "chronologic" / "sample" / "chronologic_sample.jsonl"
SCOPES = ("overall", "group:cloze", "group:generation", "group:knowledge")


def questions(n: int) -> list[dict]:
    base = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [dict(base[i % len(base)], question_number=i + 1) for i in range(n)]


def scores(qs: list[dict], scorer: str) -> list:
    if scorer == "random":
        return [metrics.random_choice_score(q) for q in qs]
    rng = np.random.default_rng(0)
    out = []
    for q in qs:
        n = len(q["answer_strings"])
        out.append(metrics.score_question(q, list(rng.normal(-12.0, 4.0, n)), [4] * n))
    return out


def baseline_aggregate(sc, resamples):
    """aggregate as it ran before: the authors' objective option by option, 100 resamples a chunk."""
    metrics.PLATT_FITS["authors-objective"] = partial(metrics.fit_platt_nelder_mead, objective="authors")
    cells, metrics.RESAMPLE_CELLS = metrics.RESAMPLE_CELLS, 0   # 100 resamples a chunk
    try:
        return metrics.aggregate(sc, n_resamples=resamples, seed=0, platt_fit="authors-objective")
    finally:
        metrics.RESAMPLE_CELLS = cells
        del metrics.PLATT_FITS["authors-objective"]


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def table3_difference(a: dict, b: dict) -> float:
    return max(abs(a[m][s][k] - b[m][s][k]) for m in ("brier", "acc") for s in SCOPES if s in a[m]
               for k in ("estimate", "low", "median", "high"))


def scipy_loop(sc, resamples) -> tuple[float, float]:
    """scipy's minimize once per resample and fold, on the authors' objective (their loop)."""
    from histbench.eval.stats import bootstrap_counts

    table = metrics.OptionTable.of(sc)
    counts = bootstrap_counts(table.n_questions, resamples, 0).astype(float)
    wall, cpu = time.perf_counter(), time.process_time()
    for fold in range(table.n_folds):
        train = table.fold != fold
        for row in counts[:, table.question][:, train]:
            metrics._scipy_platt(table.x[train], table.y[train], row, 400, 400)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--scorer", choices=("random", "model"), default="random")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--scipy", action="store_true", help="also time scipy's minimize one fit at a time (slow)")
    args = parser.parse_args()
    sc = scores(questions(args.questions), args.scorer)
    options = sum(s.n_options for s in sc)
    print(f"{args.questions} questions ({options} options, {args.scorer} scorer), {args.resamples} resamples x 5 folds")
    runs = {"baseline": [], "histbench": []}
    results = {}
    for pair in range(args.pairs):
        order = ("baseline", "histbench") if pair % 2 == 0 else ("histbench", "baseline")
        for name in order:
            fn = (lambda: baseline_aggregate(sc, args.resamples)) if name == "baseline" else (
                lambda: metrics.aggregate(sc, n_resamples=args.resamples, seed=0))
            results[name], wall, cpu = timed(fn)
            runs[name].append((wall, cpu))
            print(f"  pair {pair + 1} {name:9s} {wall:7.2f} s wall {cpu:7.2f} s CPU")
    for name, label in (("baseline", "baseline: authors' objective option by option (histbench before)"),
                        ("histbench", "histbench: merged softplus objective")):
        cpu = sorted(c for _, c in runs[name])
        print(f"{label}: CPU min/median/max {cpu[0]:.2f}/{statistics.median(cpu):.2f}/{cpu[-1]:.2f} s")
    ratios = sorted(b[1] / h[1] for b, h in zip(runs["baseline"], runs["histbench"], strict=True))
    walls = sorted(b[0] / h[0] for b, h in zip(runs["baseline"], runs["histbench"], strict=True))
    print(f"CPU ratio baseline/histbench min/median/max: {ratios[0]:.1f}/{statistics.median(ratios):.1f}/{ratios[-1]:.1f}x"
          f" (wall {walls[0]:.1f}/{statistics.median(walls):.1f}/{walls[-1]:.1f}x)")
    print(f"largest Table 3 difference between the two: {table3_difference(results['baseline'], results['histbench']):.3g}")
    if args.scipy:
        wall, cpu = scipy_loop(sc, args.resamples)
        print(f"scipy minimize one fit at a time (resample fits only): {wall:.2f} s wall, {cpu:.2f} s CPU")


if __name__ == "__main__":
    main()
