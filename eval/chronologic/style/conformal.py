"""Conformal style scores: percentiles among matched authentic passages (paper A.1.1, A.1.2, section 8).

Neither judge's raw output is used as a verdict. Each candidate answer is placed among
authentic reference passages scored by the same model:

- window: reference passages published within +-10 years of the date the question
  targets (its `source_date`) and in the same of six length bins;
- date predictor: the candidate's signed residual (predicted mean date minus target
  date) against the window passages' own residuals (predicted mean minus true date);
- authenticity detector: the candidate's predicted probability of being authentic
  against the window passages' probabilities.

The percentile is `scipy.stats.percentileofscore(window, value, kind="mean") / 100`,
i.e. (#below + #equal / 2) / window size, in [0, 1]. Answers indistinguishable from
period prose give uniform percentiles. A model's divergence from that ideal is the
1-Wasserstein distance W between its percentiles' empirical distribution and U(0, 1)
(0 for a perfect match, 0.5 at most, when every percentile is 0 or every one is 1).
Even authentic passages show some divergence at a finite sample size n; W0(n) is the
mean W of n authentic reference passages drawn from the reference corpus, each placed
in its own window (itself left out). The score is

    f = 100 * (1 - max(0, W - W0) / (0.5 - W0))                              (A.1.1)

Exclusions (section 8), each counted: answers under 6 words skip authenticity; answers
that are not at least one sentence skip dating; an answer whose window holds fewer than
`min_window` passages is not scored on that judge.

Length bins: six bins of word count. By default the edges are the sextiles of the
reference corpus's word counts (so every bin holds a sixth of the reference); explicit
edges can be given instead. Both are recorded with the results.

"At least one sentence": after trimming, the text starts (past any opening quotes or
brackets) with an upper-case letter or a digit, ends with '.', '!' or '?' (before any
closing quotes or brackets) and has at least 3 words. Sentence-cloze answers and
paragraphs pass; phrase-cloze clauses and short answers ("126 wine gallons") do not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

WINDOW_YEARS = 10
N_LENGTH_BINS = 6
MIN_WORDS_AUTHENTICITY = 6
MIN_WORDS_SENTENCE = 3
DEFAULT_MIN_WINDOW = 20
W_MAX = 0.5

_WORD = re.compile(r"\S*\w\S*")
_SENTENCE = re.compile(r"""^[\s"'“‘(\[«]*[A-Z0-9À-Ý].*[.!?][\s"'”’)\]»]*$""", re.DOTALL)


def word_count(text: str) -> int:
    """Whitespace-separated tokens holding at least one letter or digit."""
    return len(_WORD.findall(text or ""))


def is_sentence(text: str) -> bool:
    """At least one complete sentence (see module docstring)."""
    text = (text or "").strip()
    return word_count(text) >= MIN_WORDS_SENTENCE and bool(_SENTENCE.match(text))


def length_bin_edges(word_counts, n_bins: int = N_LENGTH_BINS) -> np.ndarray:
    """The n_bins - 1 interior edges: quantiles of the reference word counts."""
    counts = np.asarray(word_counts, dtype=float)
    if counts.size == 0:
        raise ValueError("no reference passages to derive length bins from")
    edges = np.quantile(counts, np.arange(1, n_bins) / n_bins)
    edges = np.unique(edges)
    if edges.size != n_bins - 1:
        raise ValueError(
            f"the reference word counts do not support {n_bins} distinct length bins (quantile edges {edges.tolist()}); "
            "give explicit edges"
        )
    return edges


def length_bin(word_counts, edges) -> np.ndarray:
    """Bin index 0..len(edges) of each word count (a count equal to an edge goes up)."""
    return np.searchsorted(np.asarray(edges, dtype=float), np.asarray(word_counts, dtype=float), side="right")


def percentile_in(window: np.ndarray, value: float) -> float:
    from scipy.stats import percentileofscore

    return float(percentileofscore(window, value, kind="mean")) / 100.0


def wasserstein_to_uniform(percentiles) -> float | np.ndarray:
    """Exact 1-Wasserstein distance between the empirical distribution of values in
    [0, 1] and U(0, 1): the integral over [0, 1] of |F_n(x) - x| dx. A 2-d array gives one
    distance per row (vectorised for bootstrap replicates)."""
    p = np.sort(np.clip(np.asarray(percentiles, dtype=float), 0.0, 1.0), axis=-1)
    squeeze = p.ndim == 1
    p = np.atleast_2d(p)
    rows, n = p.shape
    if n == 0:
        return float("nan") if squeeze else np.full(rows, np.nan)
    knots = np.concatenate([np.zeros((rows, 1)), p, np.ones((rows, 1))], axis=1)
    a, b = knots[:, :-1], knots[:, 1:]
    c = np.broadcast_to(np.arange(n + 1) / n, a.shape)  # F_n on [a, b)
    below = (b * b - a * a) / 2 - c * (b - a)  # c <= a
    above = c * (b - a) - (b * b - a * a) / 2  # c >= b
    inside = ((c - a) ** 2 + (b - c) ** 2) / 2
    total = np.where(c <= a, below, np.where(c >= b, above, inside)).sum(axis=1)
    return float(total[0]) if squeeze else total


def fidelity(w: float, w0: float) -> float:
    """f = 100 * (1 - max(0, W - W0) / (0.5 - W0)) (A.1.1)."""
    if not 0 <= w0 < W_MAX:
        raise ValueError(f"W0 must lie in [0, 0.5), got {w0!r}")
    return 100.0 * (1.0 - max(0.0, w - w0) / (W_MAX - w0))


def expected_w0(pool, n: int, draws: int = 1000, seed: int = 0) -> float:
    """Mean W of `n` percentiles drawn from the authentic pool (without replacement when
    the pool is large enough, else with replacement)."""
    pool = np.asarray(pool, dtype=float)
    if pool.size == 0 or n < 1:
        return float("nan")
    rng = np.random.default_rng(seed)
    if n > pool.size:
        samples = rng.choice(pool, size=(draws, n), replace=True)
    else:
        samples = np.stack([rng.choice(pool, size=n, replace=False) for _ in range(draws)])
    return float(np.mean(wasserstein_to_uniform(samples)))


@dataclass
class Reference:
    """A scored reference corpus: per passage its true date, word count, length bin and
    the judges' values (signed date residual, probability authentic)."""

    date: np.ndarray
    words: np.ndarray
    edges: np.ndarray
    values: dict[str, np.ndarray]

    def __post_init__(self) -> None:
        self.date = np.asarray(self.date, dtype=float)
        self.words = np.asarray(self.words, dtype=float)
        self.edges = np.asarray(self.edges, dtype=float)
        self.bin = length_bin(self.words, self.edges)
        self.values = {k: np.asarray(v, dtype=float) for k, v in self.values.items()}

    def window(self, target_date: float, bin_index: int, exclude: int | None = None) -> np.ndarray:
        mask = (np.abs(self.date - target_date) <= WINDOW_YEARS) & (self.bin == bin_index)
        if exclude is not None:
            mask[exclude] = False
        return np.flatnonzero(mask)

    def place(self, kind: str, value: float, target_date: float, words: int, min_window: int = DEFAULT_MIN_WINDOW):
        """(percentile or None, window size) of a candidate value."""
        members = self.window(target_date, int(length_bin([words], self.edges)[0]))
        values = self.values[kind][members]
        values = values[np.isfinite(values)]
        if values.size < min_window:
            return None, int(values.size)
        return percentile_in(values, value), int(values.size)

    def self_percentiles(self, kind: str, max_pool: int = 20000, seed: int = 0,
                         min_window: int = DEFAULT_MIN_WINDOW, eligible=None) -> np.ndarray:
        """Percentiles of authentic passages in their own windows (themselves left out):
        the pool W0 is drawn from. At most `max_pool` passages (a seeded subsample)."""
        candidates = np.flatnonzero(np.isfinite(self.values[kind]) & (True if eligible is None else eligible))
        if candidates.size > max_pool:
            candidates = np.sort(np.random.default_rng(seed).choice(candidates, size=max_pool, replace=False))
        out = []
        for i in candidates:
            members = self.window(self.date[i], int(self.bin[i]), exclude=int(i))
            values = self.values[kind][members]
            values = values[np.isfinite(values)]
            if values.size >= min_window:
                out.append(percentile_in(values, self.values[kind][i]))
        return np.asarray(out, dtype=float)
