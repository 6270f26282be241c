"""Statistics shared by every evaluator: bootstrap intervals, Wilson intervals, exact McNemar.

Bootstraps are vectorised: a resample is a row of multinomial counts over the n items
(how often each item is drawn), so the bootstrap means of any per-item values are one
matrix product, and several statistics can share the same resamples (paired bootstrap).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A point estimate with a percentile interval."""

    estimate: float
    low: float
    high: float

    def to_json(self) -> dict:
        return {"estimate": self.estimate, "low": self.low, "high": self.high}


def bootstrap_counts(n: int, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> np.ndarray:
    """(n_resamples, n) int32 matrix: how often each of n items is drawn in each resample.

    The tallies of `bootstrap_indices(n, n_resamples, seed)` (bincounts, much faster than
    multinomial draws over thousands of items), so statistics computed from counts and from
    indices with the same seed see the same resamples.
    """
    out = np.empty((n_resamples, max(n, 0)), dtype=np.int32)
    start = 0
    for block in iter_bootstrap_counts(n, n_resamples, seed):
        out[start:start + len(block)] = block
        start += len(block)
    return out


def iter_bootstrap_counts(n: int, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0, chunk: int = 20_000,
                          dtype=np.int32):
    """The rows of `bootstrap_counts(n, n_resamples, seed)` in blocks of at most `chunk`
    resamples (the same resamples: a generator draws the same stream in blocks as at once),
    so a statistic can be accumulated without holding the whole matrix."""
    if n <= 0:
        for start in range(0, n_resamples, chunk):
            yield np.zeros((min(chunk, n_resamples - start), 0), dtype=dtype)
        return
    rng = np.random.default_rng(seed)
    index_dtype = np.int64 if n > 2**31 - 1 else np.int32
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        index = rng.integers(0, n, size=(size, n), dtype=index_dtype)
        if size * n > 2**31 - 1:
            index = index.astype(np.int64)
        index += (np.arange(size, dtype=index.dtype) * n)[:, None]
        yield np.bincount(index.ravel(), minlength=size * n).reshape(size, n).astype(dtype, copy=False)


def bootstrap_indices(n: int, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> np.ndarray:
    """(n_resamples, n) matrix of item indices drawn with replacement (for statistics that
    are not means, e.g. medians or ratios of sums)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_resamples, n), dtype=np.int64 if n > 2**31 - 1 else np.int32)


def bootstrap_means(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Resampled means of per-item `values` ((n,) or (n, k)), NaN-aware.

    Items whose value is NaN are left out of each resample's mean (their weight is 0), so a
    metric undefined for some items is averaged over the items where it is defined.
    Returns (B,) or (B, k); NaN where a resample holds no defined item.
    """
    values = np.asarray(values, dtype=float)
    squeeze = values.ndim == 1
    if squeeze:
        values = values[:, None]
    defined = ~np.isnan(values)
    filled = np.where(defined, values, 0.0)
    counts = counts.astype(float)
    totals = counts @ filled
    weights = counts @ defined.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = totals / weights
    return means[:, 0] if squeeze else means


def percentile_interval(samples: np.ndarray, level: float = DEFAULT_LEVEL, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The (low, high) percentile interval of bootstrap samples, ignoring NaN resamples."""
    tail = (1.0 - level) / 2.0 * 100.0
    samples = np.asarray(samples)
    # np.percentile gives the same numbers when nothing is NaN, several times faster
    percentile = np.nanpercentile if np.isnan(samples).any() else np.percentile
    low, high = percentile(samples, [tail, 100.0 - tail], axis=axis)
    return low, high


def bootstrap_mean(values, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = DEFAULT_LEVEL) -> Interval:
    """Mean of per-item values with a percentile bootstrap interval over items (NaN-aware)."""
    values = np.asarray(values, dtype=float)
    defined = values[~np.isnan(values)]
    if defined.size == 0:
        return Interval(float("nan"), float("nan"), float("nan"))
    samples = bootstrap_means(values, bootstrap_counts(values.size, n_resamples, seed))
    low, high = percentile_interval(samples, level)
    return Interval(float(defined.mean()), float(low), float(high))


def bootstrap_statistic(
    statistic, arrays: tuple[np.ndarray, ...], n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
    level: float = DEFAULT_LEVEL,
) -> Interval:
    """Any statistic of item-aligned arrays, resampling items jointly.

    `statistic(*arrays)` is called on the full data for the estimate, and with arrays of
    shape (B, n, ...) for the resamples (vectorise it over the leading axis).
    """
    arrays = tuple(np.asarray(a) for a in arrays)
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays):
        raise ValueError("arrays must be aligned on their first axis")
    estimate = float(statistic(*arrays))
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"))
    index = bootstrap_indices(n, n_resamples, seed)
    samples = np.asarray(statistic(*(a[index] for a in arrays)), dtype=float)
    low, high = percentile_interval(samples, level)
    return Interval(estimate, float(low), float(high))


def wilson_interval(successes: int, total: int, level: float = DEFAULT_LEVEL) -> Interval:
    """Proportion with its Wilson score interval (statsmodels)."""
    from statsmodels.stats.proportion import proportion_confint

    if total == 0:
        return Interval(float("nan"), float("nan"), float("nan"))
    low, high = proportion_confint(successes, total, alpha=1.0 - level, method="wilson")
    return Interval(successes / total, float(low), float(high))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts b and c (binomial test)."""
    from scipy.stats import binomtest

    if b + c == 0:
        return 1.0
    return float(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)
