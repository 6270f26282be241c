"""Normalised Wasserstein distance on ordered response options, and shift categories.

Paper appendix A.3: for distributions p, q over ordered options a_1 < ... < a_K with
cumulative distributions F_p, F_q,

    W_1(p, q) = sum_{j=1}^{K-1} |F_p(a_j) - F_q(a_j)| (a_{j+1} - a_j)
    W(p, q)   = W_1(p, q) / (a_K - a_1)            (in [0, 1])

The option positions a_j are 1..K unless a question's registry entry gives other
values (the `option_values` column of every config). Everything here is vectorised:
`p` and `q` may be single distributions (shape (K,)) or stacks (shape (..., K)), and the
result has the leading shape. This module is shared by the builder (human shift d_h,
sampling noise) and the evaluator (d_old, d_new, d_m, K): import it as
`histbench.builders.chronoculture.distance`. It only needs numpy.

Shift categories (paper 3.5, Table 1; appendix F.1): a pair with human shift d_h is

    stable       d_h <= s
    moderate     s < d_h < m
    strong       m <= d_h < v
    very_strong  d_h >= v

with (s, m, v) = (0.03, 0.10, 0.20) by default, (0.02, 0.075, 0.15) tighter and
(0.04, 0.125, 0.25) looser. Comparisons allow a tolerance of 1e-12 on the side the
table includes, so that a distance which equals a boundary in exact arithmetic (e.g.
0.1 computed as 0.09999999999999998) falls in the same category as the exact value.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

SHIFT_BOUNDARIES: dict[str, tuple[float, float, float]] = {
    "default": (0.03, 0.10, 0.20),
    "tighter": (0.02, 0.075, 0.15),
    "looser": (0.04, 0.125, 0.25),
}
SHIFT_CATEGORIES: tuple[str, ...] = ("stable", "moderate", "strong", "very_strong")
BOUNDARY_TOLERANCE = 1e-12


def option_positions(k: int, values=None) -> np.ndarray:
    """The scale positions a_1..a_K: `values` if given (strictly increasing), else 1..K."""
    if values is None:
        return np.arange(1, k + 1, dtype=float)
    positions = np.asarray(values, dtype=float)
    if positions.shape != (k,):
        raise ValueError(f"option values must have one value per option ({k}), got shape {positions.shape}")
    if k >= 2 and not np.all(np.diff(positions) > 0):
        raise ValueError(f"option values must be strictly increasing, got {positions.tolist()}")
    return positions


@lru_cache(maxsize=256)
def _scale(k: int, values: tuple | None) -> tuple[np.ndarray, float]:
    """(a_{j+1} - a_j for j < K, a_K - a_1) of a scale, worked out once per scale."""
    positions = option_positions(k, values)
    gaps = np.diff(positions)
    gaps.setflags(write=False)
    return gaps, positions[-1] - positions[0]


def normalised_wasserstein(p, q, values=None):
    """W(p, q) of appendix A.3 along the last axis; a float for 1-D inputs, else an array.

    p and q must have the same number of options K >= 2 (they broadcast otherwise) and
    are used as given: pass normalised distributions.
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    k = p.shape[-1]
    if q.shape[-1] != k:
        raise ValueError(f"distributions have different numbers of options: {k} and {q.shape[-1]}")
    if k < 2:
        raise ValueError("the Wasserstein distance needs at least two ordered options")
    try:
        gaps, span = _scale(k, None if values is None else tuple(values))
    except TypeError:  # values that cannot be a cache key (nested lists): option_positions says why
        positions = option_positions(k, values)
        gaps, span = np.diff(positions), positions[-1] - positions[0]
    cdf_gap = np.abs(p.cumsum(axis=-1) - q.cumsum(axis=-1))[..., :-1]
    distance = (cdf_gap @ gaps) / span
    if distance.ndim == 0:  # one pair (the builder's case, once per pair): clipped as np.clip would
        return min(max(float(distance), 0.0), 1.0)
    return np.clip(distance, 0.0, 1.0)


def shift_category_codes(d, boundaries: tuple[float, float, float] | str = "default") -> np.ndarray:
    """Category index (0 stable, 1 moderate, 2 strong, 3 very_strong) for each distance."""
    s, m, v = SHIFT_BOUNDARIES[boundaries] if isinstance(boundaries, str) else boundaries
    d = np.asarray(d, dtype=float)
    eps = BOUNDARY_TOLERANCE
    codes = np.full(d.shape, 1, dtype=np.int64)
    codes[d <= s + eps] = 0
    codes[d >= m - eps] = 2
    codes[d >= v - eps] = 3
    return codes


def shift_category(d, boundaries: tuple[float, float, float] | str = "default"):
    """Category name(s) of a distance or an array of distances (see the module doc)."""
    if isinstance(d, int | float) and not isinstance(d, bool):  # one distance: plain comparisons
        s, m, v = SHIFT_BOUNDARIES[boundaries] if isinstance(boundaries, str) else boundaries
        eps = BOUNDARY_TOLERANCE
        index = 3 if d >= v - eps else 2 if d >= m - eps else 0 if d <= s + eps else 1
        return SHIFT_CATEGORIES[index]
    codes = shift_category_codes(d, boundaries)
    names = np.asarray(SHIFT_CATEGORIES, dtype=object)[codes]
    return str(names) if np.ndim(codes) == 0 else names.tolist()
