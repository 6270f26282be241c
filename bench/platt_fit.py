"""The Chronologic Table 3 Platt fits: histbench's batched Nelder-Mead against scipy's
Nelder-Mead called once per resample (the authors' way), on the same inputs, in one run.

Inputs: the bundled sample's answer targets (24 questions), log-likelihoods of a fixed
random scorer, `--resamples` bootstrap resamples of the questions, every fold of the
authors' 5-fold split. Prints wall and CPU seconds of both, the ratio, and whether the fits
are equal bit for bit.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from histbench.eval.chronologic.metrics import fit_platt_nelder_mead

SAMPLE = Path(__file__).resolve().parents[1] / "sources" / "chronologic" / "sample" / "chronologic_sample.jsonl"


def one_at_a_time(x, y, w):
    out = []
    for weights in w:
        def loss(params, weights=weights):
            q = np.clip(1.0 / (1.0 + np.exp(-np.clip(params[0] * x + params[1], -500, 500))), 1e-12, 1.0 - 1e-12)
            return -(weights * (y * np.log(q) + (1.0 - y) * np.log(1.0 - q))).sum()

        out.append(minimize(loss, x0=[1.0, 0.0], method="Nelder-Mead").x)
    return np.array(out)


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    questions = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    question = np.concatenate([[i] * len(q["answer_probabilities"]) for i, q in enumerate(questions)])
    y = np.concatenate([q["answer_probabilities"] for q in questions]).astype(float)
    rng = np.random.default_rng(0)
    x = rng.normal(-3.0, 1.0, len(y))
    counts = rng.multinomial(len(questions), np.full(len(questions), 1 / len(questions)), size=args.resamples)
    folds = [(question % 5) != fold for fold in range(5)]
    weights = [counts[:, question][:, train] for train in folds]
    base, base_wall, base_cpu = timed(lambda: [one_at_a_time(x[t], y[t], w) for t, w in zip(folds, weights, strict=True)])
    ours, wall, cpu = timed(lambda: [fit_platt_nelder_mead(x[t], y[t], w) for t, w in zip(folds, weights, strict=True)])
    equal = all(np.array_equal(a, b) for a, b in zip(base, ours, strict=True))
    print(f"{args.resamples} resamples x 5 folds, {len(questions)} questions, {len(y)} options")
    print(f"baseline scipy one resample at a time: {base_wall:.2f} s wall, {base_cpu:.2f} s CPU")
    print(f"histbench batched Nelder-Mead:        {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"speed-up: {base_wall / wall:.1f}x wall, {base_cpu / cpu:.1f}x CPU; fits equal bit for bit: {equal}")


if __name__ == "__main__":
    main()
