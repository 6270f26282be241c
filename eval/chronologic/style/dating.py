"""Date bins, soft targets and CRPS of the date predictor (paper Appendix A.1.1).

The predictor is a 36-way softmax over ten-year bins spanning 1680-2040 (1680-1689, ...,
2030-2039). A passage dated y is trained against a Gaussian bump centred on y with
sigma = 15 years: the mass of N(y, 15^2) falling in each bin (differences of the normal
CDF at the bin edges), renormalised to sum to 1 over the 36 bins. The bins reach two
decades past the corpus (1700-2020) at each end so that renormalisation does not pull
edge labels inward.

A predicted distribution is read as a histogram density (uniform within each bin).
Its point prediction is the mean date, sum_k p_k * centre_k, and its error against the
true date y is the continuous ranked probability score

    CRPS(F, y) = integral (F(x) - 1{x >= y})^2 dx

in years, computed exactly for the piecewise-linear CDF of the histogram.
"""

from __future__ import annotations

import numpy as np

BIN_START = 1680
BIN_END = 2040
BIN_WIDTH = 10
N_BINS = (BIN_END - BIN_START) // BIN_WIDTH  # 36
SIGMA_YEARS = 15.0
EDGES = np.arange(BIN_START, BIN_END + 1, BIN_WIDTH, dtype=float)  # 37 edges
CENTRES = EDGES[:-1] + BIN_WIDTH / 2.0
CORE_PERIOD = (1831, 1930)


def in_range(date) -> np.ndarray:
    date = np.asarray(date, dtype=float)
    return (date >= BIN_START) & (date < BIN_END)


def soft_targets(dates, sigma: float = SIGMA_YEARS) -> np.ndarray:
    """(n, 36) Gaussian soft targets for publication years `dates` (renormalised)."""
    from scipy.stats import norm

    dates = np.atleast_1d(np.asarray(dates, dtype=float))
    if not np.all(in_range(dates)):
        bad = dates[~in_range(dates)]
        raise ValueError(f"dates must lie in [{BIN_START}, {BIN_END}), got {bad[:5].tolist()}")
    cdf = norm.cdf((EDGES[None, :] - dates[:, None]) / sigma)
    mass = np.diff(cdf, axis=1)
    return mass / mass.sum(axis=1, keepdims=True)


def mean_date(probs) -> np.ndarray:
    """Predicted mean date of each (n, 36) distribution."""
    probs = np.asarray(probs, dtype=float)
    return probs @ CENTRES


def crps(probs, dates) -> np.ndarray:
    """Exact CRPS (years) of histogram distributions (n, 36) against true dates (n,)."""
    probs = np.atleast_2d(np.asarray(probs, dtype=float))
    dates = np.atleast_1d(np.asarray(dates, dtype=float))
    if probs.shape[1] != N_BINS or probs.shape[0] != dates.shape[0]:
        raise ValueError(f"probs must be (n, {N_BINS}) and dates (n,)")
    probs = probs / probs.sum(axis=1, keepdims=True)
    cdf = np.concatenate([np.zeros((probs.shape[0], 1)), np.cumsum(probs, axis=1)], axis=1)
    cdf[:, -1] = 1.0
    left, right = EDGES[None, :-1], EDGES[None, 1:]
    f0, f1 = cdf[:, :-1], cdf[:, 1:]
    y = dates[:, None]
    split = np.clip(y, left, right)

    def f_at(x):
        return f0 + (f1 - f0) * (x - left) / BIN_WIDTH

    def segment(x0, x1, h):
        # integral over [x0, x1] of (F(x) - h)^2 with F linear: Simpson-exact for quadratics
        a, b = f_at(x0) - h, f_at(x1) - h
        return (x1 - x0) * (a * a + a * b + b * b) / 3.0

    total = (segment(left, split, 0.0) + segment(split, right, 1.0)).sum(axis=1)
    # outside the bins F is 0 (below) or 1 (above); the step function still counts there
    total += np.clip(BIN_START - dates, 0, None) + np.clip(dates - BIN_END, 0, None)
    return total
