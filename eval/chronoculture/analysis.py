"""Every number of the ChronoCulture report for one model, with bootstrap intervals.

`analyse` takes a `Benchmark` and a run's `Predictions` and returns an `Analysis`:

1. knowledge filter (4.1, B.2): K for every question x country with a valid undated
   prediction, ranked within survey x number-of-years groups, the `retention` share
   with the smallest K kept;
2. the analysed pairs: retained pairs whose dated predictions for both years are valid.
   Every table of the model that uses dated predictions uses exactly these pairs; each
   exclusion is counted. The default period of undated predictions (4.4, Tables 15-16)
   needs no dated prediction: it is computed on every retained combination, as 4.4
   defines it (every retained question x country combination);
3. per-pair values (d_old, d_new, d_m, r, cosine, alignment, benefit...);
4. cells: shares, means and medians over subsets of the analysed pairs (by shift
   category, survey...), each with a 95% percentile interval from `resamples` bootstrap
   resamples of the analysed pairs (seeded; the same resamples for every cell of a model;
   the default-period cells resample the retained combinations).

Cells are keyed by dotted names (such as `rf1.default.tau0.10.all.both`); `Analysis.cells`
maps each to a `Cell` (estimate, low, high, n = pairs in the cell's subset).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from histbench.eval import stats

from . import metrics as m
from .data import Benchmark, Predictions

SHIFTED = ("moderate", "strong", "very_strong")
SURVEYS = ("WVS", "ISSP")


@dataclass(frozen=True)
class Cell:
    """A cell's estimate, its 95% interval and n; `method` names the interval (Wilson for a
    share of items, a percentile bootstrap over pairs for means and medians) and `constant`
    says every bootstrap resample gave the same value."""

    estimate: float
    low: float
    high: float
    n: int
    method: str = stats.BOOTSTRAP
    constant: bool = False

    def to_json(self) -> dict:
        out = {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n, "method": self.method}
        if self.constant:
            out["constant"] = True
        return out


def _nan_cell(n: int = 0) -> Cell:
    return Cell(float("nan"), float("nan"), float("nan"), n)


class CellBatch:
    """Collects cells over the same n items and computes them on shared bootstrap resamples.

    Means (shares are means of 0/1 indicators) are one matrix product for all cells;
    medians are weighted medians of each cell's sorted values under the resample counts,
    equal to the median of the explicitly resampled values. A share's interval is Wilson's
    (a proportion: one method for every proportion, with width at every n, issue 43);
    means and medians keep the percentile bootstrap.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self._mean_keys: list[str] = []
        self._mean_values: list[np.ndarray] = []
        self._mean_subset: list[int] = []
        self._subsets: list[np.ndarray] = []
        self._subset_ids: dict[bytes, int] = {}
        self._medians: list[tuple[str, np.ndarray, np.ndarray]] = []
        self._shares: set[str] = set()

    def _subset(self, subset: np.ndarray) -> int:
        subset = np.asarray(subset, dtype=bool)
        key = np.packbits(subset).tobytes() + subset.size.to_bytes(8, "little")
        if key not in self._subset_ids:
            self._subset_ids[key] = len(self._subsets)
            self._subsets.append(subset)
        return self._subset_ids[key]

    def mean(self, key: str, values: np.ndarray, subset: np.ndarray) -> None:
        """Mean of values over the subset (NaN values also leave the subset)."""
        values = np.asarray(values, dtype=float)
        subset = np.asarray(subset, dtype=bool) & ~np.isnan(values)
        self._mean_keys.append(key)
        self._mean_values.append(np.where(subset, values, 0.0))
        self._mean_subset.append(self._subset(subset))

    def share(self, key: str, indicator: np.ndarray, subset: np.ndarray) -> None:
        """The share of the subset where `indicator` holds: a proportion (Wilson interval)."""
        self.mean(key, np.asarray(indicator, dtype=float), subset)
        self._shares.add(key)

    def median(self, key: str, values: np.ndarray, subset: np.ndarray) -> None:
        values = np.asarray(values, dtype=float)
        subset = np.asarray(subset, dtype=bool) & ~np.isnan(values)
        index = np.flatnonzero(subset)
        order = np.argsort(values[index], kind="stable")
        self._medians.append((key, index[order], values[index][order]))

    def definitions(self):
        """(kind, key, values, subset) of every cell, kind "mean" or "median" (e.g. for a naive re-computation)."""
        for key, values, subset in zip(self._mean_keys, self._mean_values, self._mean_subset, strict=True):
            yield "mean", key, values, self._subsets[subset]
        for key, index, values in self._medians:
            subset = np.zeros(self.n, dtype=bool)
            subset[index] = True
            full = np.full(self.n, np.nan)
            full[index] = values
            yield "median", key, full, subset

    def compute(self, resamples: int = stats.DEFAULT_RESAMPLES, seed: int = 0,
                level: float = stats.DEFAULT_LEVEL) -> dict[str, Cell]:
        cells: dict[str, Cell] = {}
        subsets = np.stack(self._subsets, axis=1).astype(float) if self._subsets else np.zeros((self.n, 0))
        sizes = subsets.sum(axis=0)
        counts = None
        if resamples > 0 and self.n > 0:
            counts = resample_counts(self.n, resamples, seed)
        if self._mean_keys:
            filled = np.stack(self._mean_values, axis=1)
            col_subset = np.array(self._mean_subset)
            with np.errstate(invalid="ignore", divide="ignore"):
                estimates = filled.sum(axis=0) / sizes[col_subset]
            if counts is not None:
                # float32 products: counts are small integers and the totals stay far below 2^24
                weights = counts.astype(np.float32)
                with np.errstate(invalid="ignore", divide="ignore"):
                    samples = ((weights @ filled.astype(np.float32)) / (weights @ subsets.astype(np.float32))[:, col_subset])
                samples = samples.astype(float)
                low, high = _interval(samples, level)
            else:
                low = high = np.full(len(self._mean_keys), np.nan)
            share = np.array([key in self._shares for key in self._mean_keys])
            if counts is not None and share.any():
                low, high = low.copy(), high.copy()
                low[share], high[share] = stats.wilson_intervals(
                    np.rint(filled[:, share].sum(axis=0)), sizes[col_subset[share]], level)
            for c, key in enumerate(self._mean_keys):
                n = int(sizes[col_subset[c]])
                if share[c]:
                    cells[key] = Cell(float(estimates[c]), float(low[c]), float(high[c]), n, stats.WILSON)
                    continue
                constant = counts is not None and stats.all_equal(samples[:, c])
                cells[key] = Cell(float(estimates[c]), float(low[c]), float(high[c]), n, constant=constant)
        for key, index, values in self._medians:
            if index.size == 0:
                cells[key] = _nan_cell()
                continue
            estimate = float(np.median(values))
            if counts is None:
                cells[key] = Cell(estimate, float("nan"), float("nan"), int(index.size))
                continue
            samples = weighted_medians(values, counts[:, index])
            low, high = _interval(samples[:, None], level)
            cells[key] = Cell(estimate, float(low[0]), float(high[0]), int(index.size),
                              constant=stats.all_equal(samples))
        return cells


@lru_cache(maxsize=4)
def resample_counts(n: int, resamples: int = stats.DEFAULT_RESAMPLES, seed: int = 0) -> np.ndarray:
    """(resamples, n) int32: how often each item is drawn in each bootstrap resample.

    `histbench.eval.stats.bootstrap_counts`, cached (a model and its references share
    them); the array is read-only.
    """
    counts = stats.bootstrap_counts(n, resamples, seed)
    counts.flags.writeable = False
    return counts


def _interval(samples: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column; NaN for a column with no defined resample."""
    low = np.full(samples.shape[1], np.nan)
    high = np.full(samples.shape[1], np.nan)
    holes = np.isnan(samples)
    complete = ~holes.any(axis=0)
    if complete.any():  # the common case, without the slow NaN-aware percentile
        tail = (1.0 - level) / 2.0 * 100.0
        low[complete], high[complete] = np.percentile(samples[:, complete], [tail, 100.0 - tail], axis=0)
    partial = ~complete & ~holes.all(axis=0)
    if partial.any():
        low[partial], high[partial] = stats.percentile_interval(samples[:, partial], level)
    return low, high


def weighted_medians(sorted_values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Median of each resample, given sorted values and (B, n) draw counts per value.

    The resample holds value j counts[b, j] times; its median is the mean of the order
    statistics at 0-based positions floor((N-1)/2) and floor(N/2). NaN when N = 0.
    """
    cum = np.cumsum(counts, axis=1, dtype=np.int32)
    total = cum[:, -1]
    lo = np.floor((total - 1) / 2)
    hi = np.floor(total / 2)
    i_lo = np.minimum((cum <= lo[:, None]).sum(axis=1), sorted_values.size - 1)
    i_hi = np.minimum((cum <= hi[:, None]).sum(axis=1), sorted_values.size - 1)
    medians = (sorted_values[i_lo] + sorted_values[i_hi]) / 2.0
    return np.where(total > 0, medians, np.nan)


# ---------------------------------------------------------------------------
# Per-model analysis
# ---------------------------------------------------------------------------

@dataclass
class Analysis:
    """Everything computed for one model (or reference predictor) on one benchmark."""

    label: str
    retention: float
    counts: dict                        # pairs scored / retained / analysed and every exclusion
    analysed: np.ndarray                # bool (n,) over the benchmark's pairs
    k_score: np.ndarray                 # (n,) K, NaN without a valid undated prediction
    retained: np.ndarray                # bool (n,) kept by the knowledge filter
    per_pair: dict = field(default_factory=dict)   # arrays over the analysed pairs
    cells: dict = field(default_factory=dict)
    modal: dict | None = None

    def cell(self, key: str) -> Cell:
        return self.cells.get(key, _nan_cell())

    def to_json(self) -> dict:
        return {
            "label": self.label,
            "retention": self.retention,
            "counts": self.counts,
            "cells": {k: v.to_json() for k, v in sorted(self.cells.items())},
            "modal": self.modal,
        }


def select_pairs(bench: Benchmark, preds: Predictions, retention: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """Knowledge filter and validity: (K, retained, analysed, counts).

    Below 100% the filter ranks K, so a combination without a valid undated answer
    cannot be retained. At 100% nothing is filtered (F.2's 100% row, F.3's unfiltered
    sample, the reference runs): every pair the run answered is retained, and one without
    a valid undated answer is left out only of the cells that need that answer (RF3).
    Pairs the run has no answer for (outside its `--sample`) are counted as `not_asked`,
    apart from invalid answers."""
    distances = m.year_distances(preds.p_undated, bench.golds, bench.year_mask, bench.positions)
    k_score = m.knowledge_score(distances)
    asked = np.ones(bench.n, dtype=bool) if preds.asked is None else preds.asked
    if retention >= 1.0:
        retained = asked.copy()
    else:
        retained = m.knowledge_filter(k_score, bench.filter_groups(), retention)
    dated_ok = preds.valid("old") & preds.valid("new")
    analysed = retained & dated_ok
    scored = ~np.isnan(k_score)
    counts = {
        "pairs": bench.n,
        "not_asked": int((~asked).sum()),
        "scored": int(scored.sum()),
        "excluded_invalid_undated": int((asked & ~scored).sum()),
        "retained": int(retained.sum()),
        "excluded_by_filter": int((scored & ~retained).sum()),
        "excluded_invalid_dated": int((retained & ~dated_ok).sum()),
        "analysed": int(analysed.sum()),
        "by_survey": {
            survey: {"scored": int((scored & (bench.survey == survey)).sum()),
                     "retained": int((retained & (bench.survey == survey)).sum()),
                     "analysed": int((analysed & (bench.survey == survey)).sum())}
            for survey in SURVEYS
        },
    }
    return k_score, retained, analysed, counts


def pair_values(bench: Benchmark, preds: Predictions, idx: np.ndarray) -> dict:
    """Per-pair metric values on the pairs `idx` (indices into the benchmark)."""
    pos = bench.positions[idx]
    g_old, g_new = bench.g_old[idx], bench.g_new[idx]
    p_old, p_new, p_und = preds.p_old[idx], preds.p_new[idx], preds.p_undated[idx]
    d_old = m.wasserstein(p_old, g_old, pos)
    d_new = m.wasserstein(p_new, g_new, pos)
    d_m = m.wasserstein(p_old, p_new, pos)
    und_old = m.wasserstein(p_und, g_old, pos)
    und_new = m.wasserstein(p_und, g_new, pos)
    d_h = bench.d_h[idx]
    return {
        "index": idx,
        "d_h": d_h,
        "d_old": d_old,
        "d_new": d_new,
        "d_m": d_m,
        "zero_shift": m.identical(p_old, p_new),
        "ratio": m.magnitude_ratio(d_m, d_h),
        "cosine": m.direction_cosine(p_old, p_new, g_old, g_new),
        "alignment": m.alignment(p_old, p_new, g_old, g_new, pos),
        "b_old": und_old - d_old,
        "b_new": und_new - d_new,
        "identical_old": m.identical(p_old, p_und),
        "identical_new": m.identical(p_new, p_und),
        "undated_ok": ~np.isnan(p_und).any(axis=1),
        "n_years": bench.n_years[idx],
        "categories": {name: codes[idx] for name, codes in bench.categories.items()},
        "survey": bench.survey[idx],
    }


def _rf1_cells(batch: CellBatch, v: dict, sets) -> None:
    for set_name in sets:
        cat = v["categories"][set_name]
        taus = m.TOLERANCES if set_name == "default" else (m.TAU,)
        for tau in taus:
            outcome = m.period_outcome(v["d_old"], v["d_new"], tau)
            eps = m.BOUNDARY_TOLERANCE
            older_ok = v["d_old"] <= tau + eps
            newer_ok = v["d_new"] <= tau + eps
            for c_name in (*m.CATEGORIES, "all"):
                subset = np.ones(cat.size, bool) if c_name == "all" else cat == m.CATEGORIES.index(c_name)
                base = f"rf1.{set_name}.tau{tau:.2f}.{c_name}"
                if set_name == "default":
                    batch.share(f"{base}.older_accurate", older_ok, subset)
                    batch.share(f"{base}.newer_accurate", newer_ok, subset)
                for code, name in enumerate(m.OUTCOMES):
                    batch.share(f"{base}.{name}", outcome == code, subset)
                batch.share(f"{base}.one_only", (outcome == m.OLDER_ONLY) | (outcome == m.NEWER_ONLY), subset)


def _alignment_cells(batch: CellBatch, v: dict, sets) -> None:
    for set_name in sets:
        cat = v["categories"][set_name]
        for c_name in (*SHIFTED, "shifted"):
            subset = cat >= m.MODERATE if c_name == "shifted" else cat == m.CATEGORIES.index(c_name)
            base = f"align.{set_name}.{c_name}"
            for code, name in enumerate(m.ALIGNMENTS):
                batch.share(f"{base}.{name}", v["alignment"] == code, subset)
            same = (v["alignment"] == m.OLDER_ALIGNED) | (v["alignment"] == m.NEWER_ALIGNED)
            batch.share(f"{base}.same_period", same, subset)


def _rf2_cells(batch: CellBatch, v: dict, sets) -> None:
    nonzero = ~v["zero_shift"]
    for set_name in sets:
        cat = v["categories"][set_name]
        for c_name in SHIFTED:
            subset = cat == m.CATEGORIES.index(c_name)
            base = f"rf2.{set_name}.{c_name}"
            batch.share(f"{base}.zero_shift", v["zero_shift"], subset)
            batch.median(f"{base}.median_ratio", v["ratio"], subset & nonzero)
            batch.median(f"{base}.median_cosine", v["cosine"], subset & nonzero)
            if set_name == "default":
                batch.median(f"{base}.median_ratio_all", v["ratio"], subset)
                batch.share(f"{base}.right_direction", v["cosine"] > 0, subset & ~np.isnan(v["cosine"]))
        stable_boundary = m.BOUNDARY_SETS[set_name][0]
        behaviour = m.stability_behaviour(v["d_m"], stable_boundary)
        stable = cat == m.STABLE
        for survey in ("all", *SURVEYS):
            subset = stable if survey == "all" else stable & (v["survey"] == survey)
            for code, name in enumerate(m.STABILITY):
                batch.share(f"stable.{set_name}.{survey}.{name}", behaviour == code, subset)


def default_period_values(bench: Benchmark, preds: Predictions, combinations: np.ndarray) -> dict:
    """Default survey year (4.4, E.1) of the undated predictions of the benchmark rows `combinations`."""
    idx = np.asarray(combinations, dtype=int)
    distances = m.year_distances(preds.p_undated[idx], bench.golds[idx], bench.year_mask[idx], bench.positions[idx])
    default, tied = m.default_period(distances)
    return {"index": idx, "default_period": default, "default_tied": tied, "n_years": bench.n_years[idx]}


def default_period_cells(batch: CellBatch, dp: dict) -> None:
    """Tables 15-16: share of combinations whose undated prediction is closest to the oldest /
    an intermediate / the newest year, and the equal-choice baseline of E.2, by coverage."""
    n_years = dp["n_years"]
    chance = m.equal_choice(n_years)
    defined = dp["default_period"] >= 0
    for group, subset in (("all", np.ones(n_years.size, bool)), ("two", n_years == 2), ("three_plus", n_years >= 3)):
        for code, name in enumerate(m.DEFAULT_PERIODS):
            batch.share(f"rf3.default_period.{group}.{name}", dp["default_period"] == code, subset & defined)
            batch.mean(f"rf3.equal_choice.{group}.{name}", chance[:, code], subset & defined)


def _rf3_cells(batch: CellBatch, v: dict) -> None:
    cat = v["categories"]["default"]
    undated_ok = v["undated_ok"]   # all True below 100% retention (the filter needs the undated answer)
    for period in ("old", "new"):
        b = v[f"b_{period}"]
        outcome = m.benefit_outcome(b)
        for c_name in (*m.CATEGORIES, "all"):
            subset = undated_ok & (np.ones(cat.size, bool) if c_name == "all" else cat == m.CATEGORIES.index(c_name))
            base = f"rf3.benefit.{period}.{c_name}"
            batch.mean(f"{base}.mean", b, subset)
            for code, name in enumerate(m.BENEFIT_OUTCOMES):
                batch.share(f"{base}.{name}", outcome == code, subset)
            batch.share(f"{base}.identical", v[f"identical_{period}"], subset)


PARTS = ("rf1", "align", "rf2", "rf3")


def collect_cells(v: dict, parts: tuple[str, ...] = PARTS, sets: tuple[str, ...] = tuple(m.BOUNDARY_SETS)) -> CellBatch:
    """Every cell definition of the given parts over per-pair values `v` (see `pair_values`)."""
    batch = CellBatch(v["d_h"].size)
    if "rf1" in parts:
        _rf1_cells(batch, v, sets)
    if "align" in parts:
        _alignment_cells(batch, v, sets)
    if "rf2" in parts:
        _rf2_cells(batch, v, sets)
    if "rf3" in parts:
        _rf3_cells(batch, v)
    return batch


def analyse(
    bench: Benchmark,
    preds: Predictions,
    *,
    retention: float = 0.75,
    resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = 0,
    parts: tuple[str, ...] = PARTS,
    sets: tuple[str, ...] = tuple(m.BOUNDARY_SETS),
    pairs: np.ndarray | None = None,
) -> Analysis:
    """Every cell for one run (see the module docstring).

    pairs: analyse exactly these pairs (bool mask over the benchmark) instead of the
    run's own knowledge filter, e.g. a reference predictor on a model's retained pairs
    (C.1); pairs where the run's dated predictions are invalid are still excluded.
    """
    k_score, retained, analysed, counts = select_pairs(bench, preds, retention)
    if pairs is not None:
        retained = np.asarray(pairs, dtype=bool)
        analysed = retained & preds.valid("old") & preds.valid("new")
        counts = {**counts, "retained": int(retained.sum()), "analysed": int(analysed.sum()),
                  "excluded_by_filter": None, "excluded_invalid_dated": int((retained & ~analysed).sum()),
                  "pairs_from": "given"}
    idx = np.flatnonzero(analysed)
    v = pair_values(bench, preds, idx)
    cells = collect_cells(v, parts, sets).compute(resamples, seed)
    if "rf3" in parts:
        dp = default_period_values(bench, preds, np.flatnonzero(retained & preds.valid("undated")))
        batch = CellBatch(dp["index"].size)
        default_period_cells(batch, dp)
        cells.update(batch.compute(resamples, seed))
        counts["default_period_combinations"] = int(dp["index"].size)
        counts["default_period_ties"] = int(dp["default_tied"].sum())
    counts["categories"] = {name: int((v["categories"]["default"] == code).sum()) for code, name in enumerate(m.CATEGORIES)}
    counts["retained_categories"] = {name: int((retained & (bench.categories["default"] == code)).sum())
                                     for code, name in enumerate(m.CATEGORIES)}
    counts["alignment_ties"] = int((v["alignment"] == m.TIE).sum())
    counts["invalid_outputs"] = preds.invalid
    counts["missing_outputs"] = preds.missing
    result = Analysis(preds.label, retention, counts, analysed, k_score, retained, v, cells)
    if preds.choice_old is not None and bench.modal is not None:
        result.modal = modal_analysis(bench, preds)
    return result


# ---------------------------------------------------------------------------
# Modal answers (A.5)
# ---------------------------------------------------------------------------

def modal_analysis(bench: Benchmark, preds: Predictions) -> dict:
    """Table 5 and the 'correct mode, under half the shift' share.

    Pairs where the model answers neither period correctly are dropped (the A.5 filter,
    like the knowledge filter); both-correct is then the share by category. For shifted
    (strong and very strong) kept pairs, the second number is the share where both
    modes are right while the model's distribution predictions capture less than half
    of the human shift (r = d_m / d_h < 0.5); pairs without valid distribution
    predictions for both years are left out of that share and counted.
    """
    modal = bench.modal
    both, any_ok = m.modal_both_correct(preds.choice_old, preds.choice_new, modal.mode_old, modal.mode_new)
    answered = (preds.choice_old >= 0) & (preds.choice_new >= 0)
    out = {"pairs": modal.n, "answered_both": int(answered.sum()), "kept": int(any_ok.sum()),
           "excluded_neither_correct": int((~any_ok).sum()), "by_category": {}}
    for code in (m.STABLE, m.STRONG, m.VERY_STRONG):
        subset = any_ok & (modal.category == code)
        name = m.CATEGORIES[code]
        out["by_category"][name] = {
            "kept": int(subset.sum()),
            "both_correct": stats.wilson_interval(int((both & subset).sum()), int(subset.sum())).to_json(),
        }
    rows = modal.pair_index
    pos = bench.positions[rows]
    d_m = m.wasserstein(preds.p_old[rows], preds.p_new[rows], pos)
    ratio = m.magnitude_ratio(d_m, bench.d_h[rows])
    shifted = any_ok & (modal.category >= m.STRONG)
    defined = shifted & ~np.isnan(ratio)
    hidden = both & defined & (ratio < 0.5)
    out["shifted"] = {
        "kept": int(shifted.sum()),
        "with_distribution_predictions": int(defined.sum()),
        "correct_mode_under_half_shift": stats.wilson_interval(int(hidden.sum()), int(defined.sum())).to_json(),
    }
    return out
