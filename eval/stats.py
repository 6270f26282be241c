"""Statistics shared by every evaluator: bootstrap intervals, Wilson intervals, exact McNemar.

One interval method per kind of metric (issue 43): a proportion (successes out of n items,
accuracy, a share of items) gets the Wilson score interval, which has width at every n,
also at 0/n and n/n; every other statistic (a mean of continuous scores, a median, a
difference, a calibrated Brier) gets a percentile bootstrap over items. Every `Interval`
names its method and its n; a bootstrap interval whose resamples are all the same value is
marked `constant`, so a report says so in words rather than print "[0.0, 0.0]".

Bootstraps are vectorised: a resample is a row of multinomial counts over the n items
(how often each item is drawn), so the bootstrap means of any per-item values are one
matrix product, and several statistics can share the same resamples (paired bootstrap).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95

#: the names reports print beside an interval
WILSON = "Wilson"
BOOTSTRAP = "percentile bootstrap"


@dataclass(frozen=True)
class Interval:
    """A point estimate with its interval, the method that made it and n (the items it is
    over). `constant`: every bootstrap resample gave the same value (the interval's zero
    width is then no measure of certainty, and reports say so)."""

    estimate: float
    low: float
    high: float
    method: str | None = None
    n: int | None = None
    constant: bool = False

    def to_json(self) -> dict:
        out = {"estimate": self.estimate, "low": self.low, "high": self.high}
        if self.method is not None:
            out["method"] = self.method
        if self.n is not None:
            out["n"] = self.n
        if self.constant:
            out["constant"] = True
        return out


def all_equal(samples: np.ndarray) -> bool:
    """Whether every defined resample is the same value (up to float rounding: resampled
    means of equal values, 0.2 and 0.19999999999999998, are the same)."""
    defined = np.asarray(samples, dtype=float)
    defined = defined[~np.isnan(defined)]
    if not defined.size:
        return False
    low, high = float(defined.min()), float(defined.max())
    return high - low <= 1e-12 * max(1.0, abs(low), abs(high))


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
        return Interval(float("nan"), float("nan"), float("nan"), BOOTSTRAP, 0)
    samples = bootstrap_means(values, bootstrap_counts(values.size, n_resamples, seed))
    low, high = percentile_interval(samples, level)
    return Interval(float(defined.mean()), float(low), float(high), BOOTSTRAP, int(defined.size), all_equal(samples))


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
        return Interval(float("nan"), float("nan"), float("nan"), BOOTSTRAP, 0)
    index = bootstrap_indices(n, n_resamples, seed)
    samples = np.asarray(statistic(*(a[index] for a in arrays)), dtype=float)
    low, high = percentile_interval(samples, level)
    return Interval(estimate, float(low), float(high), BOOTSTRAP, n, all_equal(samples))


def wilson_intervals(successes, totals, level: float = DEFAULT_LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) Wilson score intervals of many proportions at once (statsmodels); NaN
    where a total is 0."""
    from statsmodels.stats.proportion import proportion_confint

    successes = np.asarray(successes, dtype=float)
    totals = np.asarray(totals, dtype=float)
    low = np.full(totals.shape, np.nan)
    high = np.full(totals.shape, np.nan)
    some = totals > 0
    if some.any():
        low[some], high[some] = proportion_confint(successes[some], totals[some], alpha=1.0 - level, method="wilson")
        # statsmodels' float arithmetic can leave n/n's upper limit at 0.9999999999999999
        # (12/12): the interval always holds the estimate
        p = successes[some] / totals[some]
        low[some], high[some] = np.minimum(low[some], p), np.maximum(high[some], p)
    return low, high


def wilson_interval(successes: int, total: int, level: float = DEFAULT_LEVEL) -> Interval:
    """Proportion with its Wilson score interval (statsmodels): the interval of every
    proportion a report shows (accuracy, a share of items), at any n; 0/n gives [0, high]
    with high > 0, n/n gives [low, 1]."""
    if total == 0:
        return Interval(float("nan"), float("nan"), float("nan"), WILSON, 0)
    low, high = wilson_intervals([successes], [total], level)
    return Interval(successes / total, float(low[0]), float(high[0]), WILSON, int(total))


def proportion_interval(outcomes, level: float = DEFAULT_LEVEL) -> Interval:
    """The Wilson interval of per-item 0/1 outcomes (NaN: an item left out). Outcomes other
    than 0 and 1 are not a proportion: a ValueError (use `bootstrap_mean`)."""
    values = np.asarray(outcomes, dtype=float)
    values = values[~np.isnan(values)]
    if not np.isin(values, (0.0, 1.0)).all():
        raise ValueError("a proportion's outcomes are 0 or 1")
    return wilson_interval(int(values.sum()), int(values.size), level)


def interval_note(method: str | None, n: int | None, constant: bool = False) -> str:
    """What a report prints beside an interval: "Wilson, n=40"; a constant bootstrap says
    that every resample was the same."""
    parts = [p for p in (method, None if n is None else f"n={n:,}") if p]
    text = ", ".join(parts)
    return f"{text}; every resample the same" if constant else text


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts b and c (binomial test)."""
    from scipy.stats import binomtest

    if b + c == 0:
        return 1.0
    return float(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)
