"""Conformal style scores: percentiles among matched authentic passages (paper A.1.1, A.1.2, section 8).

Neither judge's raw output is a verdict. Each candidate answer is placed among authentic
reference passages scored by the same model, as the authors' stylejudge/typicality.py
and score_style.py do:

- window: reference passages dated within +-10 years of the date the question targets
  (its `source_date`, integer years, both ends included) and in the same of six length
  bins (frozen cut points on log word count, sources/chronologic/style_length_bins.yaml);
  word count = whitespace-separated tokens;
- date predictor: the candidate's signed residual (predicted mean date minus target
  date) against the window passages' own residuals;
- authenticity detector: the candidate's probability of being model-written,
  p(synthetic) = 1 - p(authentic), against the window passages' p(synthetic).

A percentile is the share of window values strictly lower than the candidate's (a tie
does not count in the candidate's favour; typicality.q_score).

Scores of a model's n answers with percentiles q:

- date fidelity f = 100 * (1 - max(0, W - W0) / (0.5 - W0)), W the exact 1-Wasserstein
  distance of the date percentiles from U(0, 1);
- human authenticity = 100 * (1 - max(0, T - mu0) / (1 - mu0)), T the mean percentile of
  p(synthetic): one-sided, as there is no "too authentic" direction;
- error in years: the mean of each answer's residual minus its window's mean residual
  (the instrument's local bias removed).

W0 and mu0 come from pseudo-models (typicality.simulate_pseudo_model): every reference
passage gets its own percentiles in its own window with its own volume left out; a
pseudo-model draws, for each (decade of target date, length bin) cell of the model's
answers, as many passages of that cell as the model has there, round-robin across
volumes; W0 is the mean W and mu0 the mean T over `null_draws` pseudo-models (2000,
seeded 20260809 as the authors'). A reference corpus without a `volume` column treats
every passage as its own volume.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

WINDOW_YEARS = 10
N_LENGTH_BINS = 6
MIN_WORDS = 6
DEFAULT_MIN_WINDOW = 1
NULL_SEED = 20260809
W_MAX = 0.5
DATE = "date"
AUTHENTICITY = "authenticity"


def word_count(text: str) -> int:
    """Whitespace-separated tokens (measure_length_distribution.count_words)."""
    return len((text or "").split())


_SENTENCE = re.compile(r"""^[\s"'“‘(\[«]*[A-Z0-9À-Ý].*[.!?][\s"'”’)\]»]*$""", re.DOTALL)


def is_sentence(text: str) -> bool:
    """At least one complete sentence: after trimming, an upper-case letter or a digit first
    (past opening quotes or brackets), '.', '!' or '?' last (before closing ones), 3+ words.
    Used to keep fragments out of the date predictor's training corpus (A.1.1)."""
    text = (text or "").strip()
    return word_count(text) >= 3 and bool(_SENTENCE.match(text))


def default_length_edges() -> dict[str, list[float]]:
    """{judge kind: the authors' frozen cut points on log word count}."""
    import yaml

    from histbench.core.resources import Resources

    data = yaml.safe_load((Resources.default().source_dir("chronologic") / "style_length_bins.yaml").read_text(encoding="utf-8"))
    return {kind: [float(e) for e in data[kind]["edges"]] for kind in (DATE, AUTHENTICITY)}


def length_bin(word_counts, edges) -> np.ndarray:
    """Bin index 0..len(edges): how many cut points are <= log(max(words, 1))."""
    logs = np.log(np.maximum(np.asarray(word_counts, dtype=float), 1.0))
    return np.searchsorted(np.asarray(edges, dtype=float), logs, side="right")


def percentile_in(window, value: float) -> float:
    """Share of `window` strictly below `value` (NaN for an empty window)."""
    window = np.asarray(window, dtype=float)
    if window.size == 0:
        return float("nan")
    return float(np.count_nonzero(window < value)) / window.size


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


def fidelity(w, w0: float):
    """f = 100 * (1 - max(0, W - W0) / (0.5 - W0)), clipped to [0, 100] (A.1.1)."""
    if not 0 <= w0 < W_MAX:
        raise ValueError(f"W0 must lie in [0, 0.5), got {w0!r}")
    value = 100.0 * (1.0 - np.maximum(0.0, np.asarray(w, dtype=float) - w0) / (W_MAX - w0))
    value = np.clip(value, 0.0, 100.0)
    return float(value) if np.ndim(value) == 0 else value


def authenticity_score(t, mu0: float):
    """100 * (1 - max(0, T - mu0) / (1 - mu0)), clipped to [0, 100] (one-sided; A.1.2)."""
    if not 0 <= mu0 < 1:
        raise ValueError(f"mu0 must lie in [0, 1), got {mu0!r}")
    value = 100.0 * (1.0 - np.maximum(0.0, np.asarray(t, dtype=float) - mu0) / (1.0 - mu0))
    value = np.clip(value, 0.0, 100.0)
    return float(value) if np.ndim(value) == 0 else value


@dataclass
class Reference:
    """A scored reference corpus: per passage its date, word count, volume and each judge's
    value (signed date residual; p(synthetic)). `edges`: {judge kind: cut points}."""

    date: np.ndarray
    words: np.ndarray
    volume: np.ndarray
    values: dict[str, np.ndarray]
    edges: dict[str, list[float]]
    bins: dict[str, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        self.date = np.asarray(self.date, dtype=int)
        self.words = np.asarray(self.words, dtype=float)
        self.volume = np.asarray(self.volume, dtype=object)
        self.values = {k: np.asarray(v, dtype=float) for k, v in self.values.items()}
        self.bins = {k: length_bin(self.words, self.edges[k]) for k in self.values}

    def window(self, kind: str, target_date: int, bin_index: int, exclude_volume=None) -> np.ndarray:
        mask = (np.abs(self.date - int(target_date)) <= WINDOW_YEARS) & (self.bins[kind] == bin_index)
        mask &= np.isfinite(self.values[kind])
        if exclude_volume is not None:
            mask &= self.volume != exclude_volume
        return np.flatnonzero(mask)

    def place(self, kind: str, value: float, target_date: int, words: int, min_window: int = DEFAULT_MIN_WINDOW) -> dict:
        """percentile, window size and (date) the window's mean value of one answer."""
        members = self.window(kind, target_date, int(length_bin([words], self.edges[kind])[0]))
        window = self.values[kind][members]
        if window.size < max(1, min_window):
            return {"percentile": None, "window": int(window.size), "window_mean": None}
        return {"percentile": percentile_in(window, value), "window": int(window.size), "window_mean": float(window.mean())}

    def own_percentiles(self, kind: str) -> np.ndarray:
        """Every passage's percentile in its own window with its own volume left out
        (typicality.compute_lovo_qs); NaN for an empty window. One sorted window per
        (length bin, year), then the passage's own volume subtracted."""
        values, bins = self.values[kind], self.bins[kind]
        out = np.full(self.date.size, np.nan)
        finite = np.isfinite(values)
        for b in np.unique(bins[finite]):
            in_bin = np.flatnonzero(finite & (bins == b))
            for year in np.unique(self.date[in_bin]):
                window = np.sort(values[in_bin[np.abs(self.date[in_bin] - year) <= WINDOW_YEARS]])
                targets = in_bin[self.date[in_bin] == year]
                below = np.searchsorted(window, values[targets], side="left").astype(float)
                size = np.full(targets.size, float(window.size))
                for k, i in enumerate(targets):
                    same = in_bin[(self.volume[in_bin] == self.volume[i]) & (np.abs(self.date[in_bin] - year) <= WINDOW_YEARS)]
                    size[k] -= same.size
                    below[k] -= np.count_nonzero(values[same] < values[i])
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[targets] = np.where(size > 0, below / np.maximum(size, 1), np.nan)
        return out


def _volume_blocked(cell: dict, n: int, rng: random.Random) -> list[int]:
    """n passages from {volume: [passages]}: each volume's passages in a shuffled order,
    then the volumes in a shuffled order, taken one passage per volume per round and
    revisited once exhausted (the draws of the authors' typicality.volume_blocked_sample,
    so the same seed gives the same pseudo-model)."""
    shuffled = {v: rng.sample(rows, len(rows)) for v, rows in cell.items() if rows}
    if not shuffled or n <= 0:
        return []
    volumes = list(shuffled)
    rng.shuffle(volumes)
    rounds = (shuffled[v][r % len(shuffled[v])] for r in itertools.count() for v in volumes)
    return list(itertools.islice(rounds, n))


def decade(date) -> int:
    return (int(date) // 10) * 10


def null_baseline(reference: Reference, kind: str, profile: Counter, draws: int = 2000, seed: int = NULL_SEED) -> dict:
    """W0 (date) or mu0 (authenticity): the mean statistic of `draws` pseudo-models drawn
    to the model's (decade, length bin) profile from the reference's own percentiles.
    Returns {"value", "sd", "draws", "unmet"} (unmet: pseudo-answers an empty cell could
    not supply, summed over draws)."""
    own = reference.own_percentiles(kind)
    cells: dict = {}
    for i in np.flatnonzero(np.isfinite(reference.values[kind])):
        key = (decade(reference.date[i]), int(reference.bins[kind][i]))
        cells.setdefault(key, {}).setdefault(reference.volume[i], []).append(int(i))
    rng = random.Random(seed)
    stats, unmet = [], 0
    for _ in range(draws):
        drawn = []
        for key, n in profile.items():
            cell = cells.get(key)
            if not cell:
                unmet += n
                continue
            rows = _volume_blocked(cell, n, rng)
            unmet += max(0, n - len(rows))
            drawn += rows
        values = own[drawn]
        values = values[np.isfinite(values)]
        if kind == DATE:
            stats.append(wasserstein_to_uniform(values) if values.size else math.nan)
        else:
            stats.append(float(values.mean()) if values.size else math.nan)
    stats = np.asarray(stats, dtype=float)
    return {"value": float(np.nanmean(stats)), "sd": float(np.nanstd(stats)), "draws": draws, "unmet": unmet}
