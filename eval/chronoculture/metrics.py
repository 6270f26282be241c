"""ChronoCulture metrics as pure, vectorised functions over arrays of temporal pairs.

Conventions shared by every function here:

- A set of distributions over ordered response options is a float array whose last
  axis holds the options, padded with zeros up to the longest scale in the batch
  (`pad_distributions`). Questions with three options and with five options live in
  the same array. An invalid prediction is a row of NaN; every distance computed from
  it is NaN, and the analysis counts and excludes it.
- Option positions `a_1 < ... < a_K` (appendix A.3) are an array of the same shape,
  padded by repeating the last position, so that the gaps after the last real option
  are zero (`option_positions`). Positions 1..K unless the dataset gives values.
- Ties and "identical" use one numerical tolerance, `TIE_TOLERANCE = 1e-12` (C.3);
  comparisons with a boundary (tau, 0.03, 0.10) allow the same 1e-12 on the included
  side, as the builder's shift categories do.
- W itself is the builder's `histbench.builders.chronoculture.distance.normalised_wasserstein`.

Section references are to "ChronoCulture: Evaluating Cultural Awareness Across Time in Large
Language Models" (Saha, Khurana, Huang and Huang).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

TIE_TOLERANCE = 1e-12

# Human-shift boundaries (Table 1; tighter and looser sets of F.1, Table 21):
# stable d <= b0 < moderate < b1 <= strong < b2 <= very strong.
BOUNDARY_SETS: dict[str, tuple[float, float, float]] = {
    "default": (0.03, 0.10, 0.20),
    "tighter": (0.02, 0.075, 0.15),
    "looser": (0.04, 0.125, 0.25),
}
# Comparisons with a boundary (tau, 0.03, 0.10) allow this much on the included side, as
# the builder's categories do: a distance equal to 0.1 in exact arithmetic is 0.1.
BOUNDARY_TOLERANCE = 1e-12
CATEGORIES = ("stable", "moderate", "strong", "very_strong")
CATEGORY_LABELS = {"stable": "Stable", "moderate": "Moderate", "strong": "Strong", "very_strong": "Very strong"}
STABLE, MODERATE, STRONG, VERY_STRONG = range(4)

# Accuracy tolerances of RF1 (4.2 uses 0.10; C.2 adds the others).
TAU = 0.10
TOLERANCES = (0.05, 0.10, 0.15, 0.20)

# RF1 pair outcomes (4.2, C.2).
OUTCOMES = ("both", "older_only", "newer_only", "neither")
BOTH, OLDER_ONLY, NEWER_ONLY, NEITHER = range(4)

# Temporal alignment (4.2, C.3); "tie" marks an equal distance within TIE_TOLERANCE.
ALIGNMENTS = ("separated", "older_aligned", "newer_aligned", "reversed", "tie")
SEPARATED, OLDER_ALIGNED, NEWER_ALIGNED, REVERSED, TIE = range(5)

# Stable-pair behaviour (D.3): preserves d_m <= stable boundary; large drift d_m >= 0.10.
STABILITY = ("preserves", "small_drift", "large_drift")
PRESERVES, SMALL_DRIFT, LARGE_DRIFT = range(3)
LARGE_DRIFT_BOUNDARY = 0.10

# Default survey year of the undated prediction (4.4, E.1).
DEFAULT_PERIODS = ("oldest", "intermediate", "newest")
OLDEST, INTERMEDIATE, NEWEST = range(3)

# Effect of naming a year (4.4, E.3).
BENEFIT_OUTCOMES = ("helped", "unchanged", "hurt")
HELPED, UNCHANGED, HURT = range(3)

MISSING = -1  # code of a pair whose metric is undefined (an invalid prediction)


# ---------------------------------------------------------------------------
# Arrays of distributions
# ---------------------------------------------------------------------------

def pad_distributions(rows: Sequence[Sequence[float] | None], width: int | None = None) -> np.ndarray:
    """(n, width) float array from ragged rows; None becomes a row of NaN."""
    lengths = [len(r) for r in rows if r is not None]
    width = width if width is not None else max(lengths, default=0)
    out = np.zeros((len(rows), width), dtype=float)
    for i, row in enumerate(rows):
        if row is None:
            out[i] = np.nan
        else:
            out[i, : len(row)] = row
    return out


def option_positions(n_options: np.ndarray, width: int, values: Sequence[Sequence[float] | None] | None = None) -> np.ndarray:
    """(n, width) option positions: 1..K (or the given values), padded with the last one."""
    n_options = np.asarray(n_options, dtype=int)
    if np.any(n_options < 2):
        raise ValueError("every question needs at least two ordered options")
    base = np.arange(1, width + 1, dtype=float)[None, :]
    positions = np.minimum(base, n_options[:, None].astype(float))
    if values is not None:
        for i, row in enumerate(values):
            if row is None:
                continue
            row = np.asarray(row, dtype=float)
            if row.size != n_options[i] or np.any(np.diff(row) <= 0):
                raise ValueError(f"row {i}: option values must be {n_options[i]} strictly increasing numbers")
            positions[i, : row.size] = row
            positions[i, row.size:] = row[-1]
    return positions


def cumulative(p: np.ndarray) -> np.ndarray:
    """Cumulative proportions F(a_j) along the last axis (A.3 eq. 6)."""
    return np.cumsum(p, axis=-1)


def wasserstein(p: np.ndarray, q: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Normalised 1-D Wasserstein distance W(p, q) in [0, 1] (A.3 eqs. 7-8), batched.

    p, q and positions broadcast against each other; the result drops the option axis.
    Rows are grouped by scale (their option positions) and each group goes through the
    builder's `normalised_wasserstein` (the one definition of W in histbench), so padded
    batches of three- and five-option questions give exactly the builder's d_h.
    """
    from histbench.builders.chronoculture.distance import normalised_wasserstein

    p, q, positions = np.broadcast_arrays(
        np.asarray(p, dtype=float), np.asarray(q, dtype=float), np.asarray(positions, dtype=float)
    )
    shape, width = p.shape[:-1], p.shape[-1]
    p, q, positions = p.reshape(-1, width), q.reshape(-1, width), positions.reshape(-1, width)
    out = np.empty(p.shape[0])
    if p.shape[0] == 0:
        return out.reshape(shape)
    scales, inverse = _scale_groups(positions)
    for s, scale in enumerate(scales):
        k = 1 + int(np.count_nonzero(np.diff(scale) > 0))
        rows = np.flatnonzero(inverse == s)
        out[rows] = normalised_wasserstein(p[rows, :k], q[rows, :k], scale[:k])
    return out.reshape(shape)


def _scale_groups(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of `positions` and each row's group (fast path: a 1-D key per row)."""
    probe = np.random.default_rng(12345).random(positions.shape[1]) + 1.0
    keys = positions @ probe
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    scales = positions[first]
    if not np.array_equal(scales[inverse], positions):  # two scales with the same key: exact grouping
        scales, inverse = np.unique(positions, axis=0, return_inverse=True)
    return scales, inverse.reshape(-1)


def identical(p: np.ndarray, q: np.ndarray, tol: float = TIE_TOLERANCE) -> np.ndarray:
    """True where two distributions are equal option by option (within tol); False if either is NaN."""
    with np.errstate(invalid="ignore"):
        return np.max(np.abs(p - q), axis=-1) <= tol


# ---------------------------------------------------------------------------
# Shift categories (3.5, F.1)
# ---------------------------------------------------------------------------

def shift_category(d: np.ndarray, boundaries: tuple[float, float, float] = BOUNDARY_SETS["default"]) -> np.ndarray:
    """Category code per pair: stable d<=b0, moderate b0<d<b1, strong b1<=d<b2, very strong d>=b2.

    The builder's `shift_category_codes` (same 1e-12 boundary tolerance as the dataset's
    shift_category columns); NaN distances get MISSING.
    """
    from histbench.builders.chronoculture.distance import shift_category_codes

    d = np.asarray(d, dtype=float)
    codes = shift_category_codes(np.nan_to_num(d, nan=0.0), tuple(boundaries)).astype(np.int8)
    codes[np.isnan(d)] = MISSING
    return codes


# ---------------------------------------------------------------------------
# Knowledge filter (4.1, B.2)
# ---------------------------------------------------------------------------

def year_distances(p_undated: np.ndarray, golds: np.ndarray, year_mask: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """(m, Y) W(P_undated, G_t) for every available year t; NaN where no year.

    p_undated (m, K), golds (m, Y, K), year_mask (m, Y) bool, positions (m, K).
    """
    d = wasserstein(p_undated[:, None, :], golds, positions[:, None, :])
    return np.where(year_mask, d, np.nan)


def knowledge_score(distances: np.ndarray) -> np.ndarray:
    """K = min over available years of W(P_undated, G_t) (B.2 eq. 9); NaN for an invalid prediction."""
    out = np.full(distances.shape[0], np.nan)
    valid = ~np.all(np.isnan(distances), axis=1)
    out[valid] = np.nanmin(distances[valid], axis=1)
    return out


def knowledge_filter(k: np.ndarray, groups: np.ndarray, level: float = 0.75) -> np.ndarray:
    """Keep the `level` share with the smallest K within each group (B.2 Selection).

    Groups are survey x number of available years. Within a group of n scored
    combinations, floor(level * n) are kept (the paper's 2,420 of 3,228 WVS pairs at 75%
    is a sum of such floors); K equal to 12 decimals keep their dataset order. NaN K (no
    valid undated prediction) is never kept.
    """
    k = np.asarray(k, dtype=float)
    groups = np.asarray(groups)
    keep = np.zeros(k.shape[0], dtype=bool)
    scored = np.flatnonzero(~np.isnan(k))
    if scored.size == 0:
        return keep
    _, group_ids = np.unique(groups[scored], return_inverse=True)
    # K equal within ~1e-12 (float noise of parsing and normalising) ranks as a tie.
    order = np.lexsort((scored, np.round(k[scored], 12), group_ids))
    sorted_groups = group_ids[order]
    starts = np.searchsorted(sorted_groups, sorted_groups, side="left")
    rank = np.arange(order.size) - starts
    sizes = np.bincount(group_ids)
    quota = np.floor(level * sizes + 1e-9).astype(int)
    keep[scored[order[rank < quota[sorted_groups]]]] = True
    return keep


# ---------------------------------------------------------------------------
# RF1: period accuracy and temporal alignment (4.2, C.1-C.3)
# ---------------------------------------------------------------------------

def period_outcome(d_old: np.ndarray, d_new: np.ndarray, tau: float = TAU) -> np.ndarray:
    """both / older only / newer only / neither: a prediction is accurate when d <= tau."""
    with np.errstate(invalid="ignore"):
        old_ok, new_ok = d_old <= tau + BOUNDARY_TOLERANCE, d_new <= tau + BOUNDARY_TOLERANCE
    codes = np.select([old_ok & new_ok, old_ok, new_ok], [BOTH, OLDER_ONLY, NEWER_ONLY], NEITHER).astype(np.int8)
    codes[np.isnan(d_old) | np.isnan(d_new)] = MISSING
    return codes


def alignment(
    p_old: np.ndarray, p_new: np.ndarray, g_old: np.ndarray, g_new: np.ndarray, positions: np.ndarray,
    tol: float = TIE_TOLERANCE,
) -> np.ndarray:
    """Which gold distribution each prediction is closer to (4.2 "Alignment of predictions").

    separated: P_old nearer G_old and P_new nearer G_new; reversed: each nearer the other
    year; older-/newer-aligned: both nearer G_old / G_new; tie: a distance difference
    within tol (C.3), counted apart rather than forced into a class.
    """
    old_margin = wasserstein(p_old, g_new, positions) - wasserstein(p_old, g_old, positions)
    new_margin = wasserstein(p_new, g_old, positions) - wasserstein(p_new, g_new, positions)
    with np.errstate(invalid="ignore"):
        codes = np.select(
            [
                (np.abs(old_margin) <= tol) | (np.abs(new_margin) <= tol),
                (old_margin > 0) & (new_margin > 0),
                (old_margin > 0) & (new_margin < 0),
                (old_margin < 0) & (new_margin > 0),
                (old_margin < 0) & (new_margin < 0),
            ],
            [TIE, SEPARATED, OLDER_ALIGNED, NEWER_ALIGNED, REVERSED],
            MISSING,
        ).astype(np.int8)
    codes[np.isnan(old_margin) | np.isnan(new_margin)] = MISSING
    return codes


# ---------------------------------------------------------------------------
# RF2: magnitude, direction, stability (4.3, D.1-D.4)
# ---------------------------------------------------------------------------

def magnitude_ratio(d_m: np.ndarray, d_h: np.ndarray) -> np.ndarray:
    """r = d_m / d_h; NaN where d_h is zero (no human shift to compare with)."""
    d_m, d_h = np.asarray(d_m, dtype=float), np.asarray(d_h, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d_h > 0, d_m / np.where(d_h > 0, d_h, 1.0), np.nan)


def direction_cosine(
    p_old: np.ndarray, p_new: np.ndarray, g_old: np.ndarray, g_new: np.ndarray, tol: float = TIE_TOLERANCE,
) -> np.ndarray:
    """Cosine between g = F(G_new) - F(G_old) and p = F(P_new) - F(P_old) (4.3 eq. 4).

    NaN where the model's two predictions are identical (direction undefined, excluded
    by the paper) or where the gold distributions do not differ.
    """
    g = cumulative(g_new) - cumulative(g_old)
    p = cumulative(p_new) - cumulative(p_old)
    g_norm = np.linalg.norm(g, axis=-1)
    p_norm = np.linalg.norm(p, axis=-1)
    defined = (g_norm > tol) & (p_norm > tol) & ~identical(p_old, p_new, tol)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.sum(g * p, axis=-1) / (g_norm * p_norm)
    return np.where(defined, np.clip(cos, -1.0, 1.0), np.nan)


def stability_behaviour(d_m: np.ndarray, stable_boundary: float = 0.03, large: float = LARGE_DRIFT_BOUNDARY) -> np.ndarray:
    """preserves (d_m <= stable boundary), small drift (< 0.10), large drift (d_m >= 0.10) (D.3)."""
    d_m = np.asarray(d_m, dtype=float)
    eps = BOUNDARY_TOLERANCE
    codes = np.select([d_m <= stable_boundary + eps, d_m < large - eps, d_m >= large - eps],
                      [PRESERVES, SMALL_DRIFT, LARGE_DRIFT], MISSING)
    return codes.astype(np.int8)


# ---------------------------------------------------------------------------
# RF3: default period and the benefit of naming a year (4.4, E.1-E.4)
# ---------------------------------------------------------------------------

def default_period(distances: np.ndarray, tol: float = TIE_TOLERANCE) -> tuple[np.ndarray, np.ndarray]:
    """Default survey year of each undated prediction: oldest / intermediate / newest.

    distances (m, Y): W(P_undated, G_t) with the available years first, in ascending
    year order, NaN after them (see `year_distances`). The default year is the closest
    one; distances within tol of the minimum are a tie, resolved to the earliest year.
    Returns (codes, tied) where tied flags rows with such a tie.
    """
    m = distances.shape[0]
    codes = np.full(m, MISSING, dtype=np.int8)
    tied = np.zeros(m, dtype=bool)
    valid = ~np.all(np.isnan(distances), axis=1)
    if not valid.any():
        return codes, tied
    d = distances[valid]
    n_years = np.sum(~np.isnan(d), axis=1)
    best = np.nanmin(d, axis=1)
    with np.errstate(invalid="ignore"):
        near = d <= best[:, None] + tol
    index = np.argmax(near, axis=1)
    tied[valid] = near.sum(axis=1) > 1
    codes[valid] = np.select([index == 0, index == n_years - 1], [OLDEST, NEWEST], INTERMEDIATE)
    return codes, tied


def equal_choice(n_years: np.ndarray) -> np.ndarray:
    """(m, 3) chance of oldest / intermediate / newest when one available year is drawn uniformly (E.2)."""
    n = np.asarray(n_years, dtype=float)
    return np.stack([1.0 / n, (n - 2.0) / n, 1.0 / n], axis=1)


def benefit(p_dated: np.ndarray, p_undated: np.ndarray, gold: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """b_t = W(P_undated, G_t) - W(P_t, G_t) (4.4 eq. 5): positive when naming the year helps."""
    return wasserstein(p_undated, gold, positions) - wasserstein(p_dated, gold, positions)


def benefit_outcome(b: np.ndarray, tol: float = TIE_TOLERANCE) -> np.ndarray:
    """helped (b > 0), unchanged (|b| <= tol), hurt (b < 0)."""
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        codes = np.select([b > tol, b < -tol], [HELPED, HURT], UNCHANGED).astype(np.int8)
    codes[np.isnan(b)] = MISSING
    return codes


# ---------------------------------------------------------------------------
# Agreement across models (C.4)
# ---------------------------------------------------------------------------

def kendalls_w(scores: np.ndarray) -> float:
    """Kendall's coefficient of concordance of m raters (rows) over n groups (columns).

    Each row is ranked (ties get average ranks); W = 12 S / (m^2 (n^3 - n) - m sum T),
    with the usual tie correction T = sum (t^3 - t) per row. NaN with fewer than two
    raters or two groups, or when every row is all ties.
    """
    from scipy.stats import rankdata

    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2 or scores.shape[0] < 2 or scores.shape[1] < 2 or np.isnan(scores).any():
        return float("nan")
    m, n = scores.shape
    ranks = rankdata(scores, axis=1)
    totals = ranks.sum(axis=0)
    s = float(np.sum((totals - totals.mean()) ** 2))
    ties = 0.0
    for row in scores:
        _, counts = np.unique(row, return_counts=True)
        ties += float(np.sum(counts.astype(float) ** 3 - counts))
    denominator = m**2 * (n**3 - n) - m * ties
    return float(12.0 * s / denominator) if denominator > 0 else float("nan")


# ---------------------------------------------------------------------------
# Modal answers (A.5)
# ---------------------------------------------------------------------------

def modal_both_correct(choice_old: np.ndarray, choice_new: np.ndarray, mode_old: np.ndarray, mode_new: np.ndarray):
    """(both correct, at least one correct) per pair; a choice of -1 (invalid) is wrong."""
    old_ok = (choice_old >= 0) & (choice_old == mode_old)
    new_ok = (choice_new >= 0) & (choice_new == mode_new)
    return old_ok & new_ok, old_ok | new_ok
