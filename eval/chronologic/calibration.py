"""Calibrating Bradley-Terry distances into partial credit (paper Appendix A.2.2, section 8).

A candidate's distance from ground truth, delta = theta_c - mean(theta_GT), becomes a
probability that the answer fits its context,

    p_fit = sigmoid(a + b * delta),

with the intercept pinned, a = logit(0.9), so that an answer as strong as the average
ground truth (delta = 0) scores 0.9 (the paper's "standard-setting" choice), and the slope
b fitted on leave-one-out evidence whose acceptability is known: held-out ground truths
(label 1) and held-out distractors labelled by their `answer_probabilities` (0, or e.g. 0.5
for a partly acceptable one; fractional labels enter the binomial likelihood as soft
labels).

Weighting (`weighting`):

- "class-balance" (default; the authors' production fit, bt/calibrate.py fit_calibration
  with pin_p=0.9, class_balance=True, l2=0.01 as bt_context_scoring.py calibrate calls it):
  ground truths and the other options (distractors and partly acceptable answers) get
  equal total weight, each record weighing (n/2)/n_class so the weights sum to n; the
  loss is the weighted soft-label cross-entropy plus a ridge 0.01 * b^2.
- "ratio": histbench's earlier reading of the paper's "23 times more influential": the
  ground-truth records together weigh `gt_weight_ratio` (default 23) times the distractor
  records together, every distractor weighing 1, no ridge.

Uncertainty (the "instrument" layer of the Table 7 bootstrap): `calibration_draws` refits
the slope on cluster-bootstrap resamples of the evidence by question (the authors'
_cluster_bootstrap_calibration: 1000 replicates; class weights recomputed in each).

Worked example (C.1): GPT-4o's answer to question 888 has delta = -1.65 and p_fit = 0.159,
which fixes b = (logit(0.159) - logit(0.9)) / -1.65 = 2.341 (`slope_from_example`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

TARGET_AT_ZERO = 0.9
PAPER_GT_WEIGHT_RATIO = 23.0
RIDGE = 0.01
WEIGHTINGS = ("class-balance", "ratio")
PAPER_EXAMPLE_DELTA = -1.65
PAPER_EXAMPLE_P_FIT = 0.159

GROUND_TRUTH = "ground_truth"
DISTRACTOR = "distractor"


def logit(p: float) -> float:
    if not 0.0 < p < 1.0:
        raise ValueError(f"logit needs 0 < p < 1, got {p!r}")
    return math.log(p / (1.0 - p))


def sigmoid(x):
    from scipy.special import expit

    return expit(x)


def pinned_intercept(target: float = TARGET_AT_ZERO) -> float:
    """The intercept that gives p_fit = target at delta = 0."""
    return logit(target)


def slope_from_example(delta: float, p_fit: float, target: float = TARGET_AT_ZERO) -> float:
    """The slope that maps `delta` to `p_fit` under the pinned intercept."""
    if delta == 0:
        raise ValueError("delta = 0 is pinned to the target; it cannot fix a slope")
    return (logit(p_fit) - pinned_intercept(target)) / delta


@dataclass(frozen=True)
class Calibration:
    """p_fit = sigmoid(intercept + slope * delta), with the fit's evidence recorded."""

    slope: float
    intercept: float = field(default_factory=pinned_intercept)
    target_at_zero: float = TARGET_AT_ZERO
    weighting: str = "class-balance"
    ridge: float = RIDGE
    gt_weight_ratio: float | None = None
    n_ground_truth: int = 0
    n_distractor: int = 0
    source: str = "fitted"

    def p_fit(self, delta):
        value = sigmoid(self.intercept + self.slope * np.asarray(delta, dtype=float))
        return float(value) if np.ndim(value) == 0 else value

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Calibration:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def _check_inputs(delta, label, kinds):
    delta = np.asarray(delta, dtype=float)
    label = np.asarray(label, dtype=float)
    kinds = np.asarray(kinds, dtype=object)
    if not (delta.shape == label.shape == kinds.shape) or delta.ndim != 1:
        raise ValueError("delta, label and kinds must be 1-d arrays of the same length")
    if delta.size < 2:
        raise ValueError("calibration needs at least two records")
    if not np.all(np.isfinite(delta)):
        raise ValueError("calibration deltas must be finite")
    if np.any((label < 0) | (label > 1)):
        raise ValueError("calibration labels must lie in [0, 1]")
    unknown = set(kinds.tolist()) - {GROUND_TRUTH, DISTRACTOR}
    if unknown:
        raise ValueError(f"unknown observation kind(s) {sorted(unknown)}")
    return delta, label, kinds == GROUND_TRUTH


def record_weights(is_gt, counts=None, weighting: str = "class-balance", gt_weight_ratio: float = PAPER_GT_WEIGHT_RATIO):
    """Per-record weights, one row per resample when `counts` (B, n) gives multiplicities.

    class-balance: (n/2)/n_gt for ground truths, (n/2)/n_other otherwise (n counted with
    multiplicity), flat when a class is empty; ratio: gt_weight_ratio * n_other / n_gt for
    ground truths and 1 otherwise."""
    is_gt = np.asarray(is_gt, dtype=bool)
    c = np.ones((1, is_gt.size)) if counts is None else np.asarray(counts, dtype=float)
    n_gt = (c * is_gt).sum(axis=1, keepdims=True)
    n_other = (c * ~is_gt).sum(axis=1, keepdims=True)
    both = (n_gt > 0) & (n_other > 0)
    if weighting == "class-balance":
        n = n_gt + n_other
        w = np.where(is_gt[None, :], n / 2.0 / np.maximum(n_gt, 1), n / 2.0 / np.maximum(n_other, 1))
    elif weighting == "ratio":
        w = np.where(is_gt[None, :], gt_weight_ratio * n_other / np.maximum(n_gt, 1), 1.0)
    else:
        raise ValueError(f"unknown calibration weighting {weighting!r} (one of {', '.join(WEIGHTINGS)})")
    w = np.where(both, w, 1.0)
    return w[0] if counts is None else w


def _newton_slopes(delta, label, weights, intercept: float, ridge: float, iterations: int = 100) -> np.ndarray:
    """Slopes minimising sum(w * soft-label cross-entropy) + ridge * b^2 for each row of
    `weights` (B, n) (weight 0 = record absent). Strictly convex when ridge > 0."""
    w = np.atleast_2d(weights)
    slopes = np.ones(w.shape[0])
    for _ in range(iterations):
        p = sigmoid(intercept + slopes[:, None] * delta[None, :])
        gradient = (w * (p - label[None, :]) * delta[None, :]).sum(axis=1) + 2 * ridge * slopes
        curvature = (w * p * (1 - p) * delta[None, :] ** 2).sum(axis=1) + 2 * ridge
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(curvature > 0, gradient / curvature, np.nan)
        step = np.clip(step, -5.0, 5.0)
        slopes = slopes - step
        if np.all(~np.isfinite(step) | (np.abs(step) < 1e-13)):
            break
    p = sigmoid(intercept + slopes[:, None] * delta[None, :])
    gradient = (w * (p - label[None, :]) * delta[None, :]).sum(axis=1) + 2 * ridge * slopes
    slopes[~np.isfinite(slopes) | (np.abs(gradient) / np.maximum(w.sum(axis=1), 1.0) > 1e-7) | (np.abs(slopes) > 1e4)] = np.nan
    return slopes


def fit_calibration(delta, label, kinds, *, weighting: str = "class-balance", gt_weight_ratio: float = PAPER_GT_WEIGHT_RATIO,
                    target_at_zero: float = TARGET_AT_ZERO, ridge: float | None = None) -> Calibration:
    """Calibration from leave-one-out records (kinds: 'ground_truth' / 'distractor')."""
    delta, label, is_gt = _check_inputs(delta, label, kinds)
    if not (np.any(label > 0) and np.any(label < 1)):
        raise ValueError("calibration needs both acceptable (label > 0) and unacceptable (label < 1) evidence")
    if not np.any(delta != 0):
        raise ValueError("every calibration delta is 0: the slope is not identified")
    ridge = (RIDGE if weighting == "class-balance" else 0.0) if ridge is None else ridge
    intercept = pinned_intercept(target_at_zero)
    slope = float(_newton_slopes(delta, label, record_weights(is_gt, None, weighting, gt_weight_ratio)[None, :], intercept,
                                 ridge)[0])
    if not np.isfinite(slope):
        raise ValueError("the calibration slope diverged (the evidence separates perfectly)")
    return Calibration(slope=slope, intercept=intercept, target_at_zero=target_at_zero, weighting=weighting, ridge=ridge,
                       gt_weight_ratio=gt_weight_ratio if weighting == "ratio" else None,
                       n_ground_truth=int(is_gt.sum()), n_distractor=int((~is_gt).sum()))


def calibration_draws(delta, label, kinds, clusters, calibration: Calibration, *, n_draws: int = 1000, seed: int = 0) -> np.ndarray:
    """Slopes refitted on `n_draws` cluster-bootstrap resamples of the records by question
    (`clusters`: the question of each record); replicates whose resample has no acceptable
    or no unacceptable evidence are dropped. Returns the finite slopes."""
    delta, label, is_gt = _check_inputs(delta, label, kinds)
    clusters = np.asarray(clusters)
    names, index = np.unique(clusters, return_inverse=True)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(names), size=(n_draws, len(names)))
    per_cluster = np.zeros((n_draws, len(names)))
    np.add.at(per_cluster, (np.repeat(np.arange(n_draws), len(names)), picks.ravel()), 1.0)
    counts = per_cluster[:, index]
    informative = ((counts * (label > 0)).sum(axis=1) > 0) & ((counts * (label < 1)).sum(axis=1) > 0)
    counts = counts[informative]
    weights = counts * record_weights(is_gt, counts, calibration.weighting, calibration.gt_weight_ratio or PAPER_GT_WEIGHT_RATIO)
    slopes = _newton_slopes(delta, label, weights, calibration.intercept, calibration.ridge)
    return slopes[np.isfinite(slopes)]
