"""Calibrating Bradley-Terry distances into partial credit (paper Appendix A.2.2, section 8).

A candidate's distance from ground truth, delta = theta_c - mean(theta_GT), becomes a
probability that the answer fits its context,

    p_fit = sigmoid(a + b * delta),

with the intercept pinned, a = logit(0.9), so that an answer exactly as strong as the
average ground truth (delta = 0) scores 0.9 (a "standard-setting" choice in the paper),
and the slope b fitted by weighted maximum likelihood on leave-one-out evidence whose
acceptability is known:

- held-out ground truths (on questions with two or more), label 1;
- held-out distractors, labelled by their `answer_probabilities` value (0 for a plain
  distractor, e.g. 0.5 or 0.75 for a strong distractor the authors marked partly
  acceptable; fractional labels enter the binomial likelihood as y log p + (1-y) log(1-p)).

Weighting: the paper says the ground-truth evidence is 23 times more influential than
the distractor evidence. We read that as total weight: every ground-truth observation
weighs `ratio * n_distractors / n_ground_truths` and every distractor observation 1, so
the ground truths together weigh exactly `ratio` (default 23) times the distractors
together, whatever the counts. The fit is a binomial GLM (statsmodels) with the pinned
intercept as an offset and no free constant.

Worked example (C.1): GPT-4o's answer to question 888 has delta = -1.65 and
p_fit = 0.159, which fixes b = (logit(0.159) - logit(0.9)) / -1.65 = 2.341
(`slope_from_example`).

`fit_slopes_bootstrap` refits the slope for many reweightings at once (vectorised
Newton steps on the same concave objective) so that bootstrap intervals can carry the
calibration's own uncertainty.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np

TARGET_AT_ZERO = 0.9
PAPER_GT_WEIGHT_RATIO = 23.0
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
    gt_weight_ratio: float = PAPER_GT_WEIGHT_RATIO
    n_ground_truth: int = 0
    n_distractor: int = 0
    method: str = "weighted binomial GLM, pinned intercept (statsmodels)"

    def p_fit(self, delta):
        value = sigmoid(self.intercept + self.slope * np.asarray(delta, dtype=float))
        return float(value) if np.ndim(value) == 0 else value

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Calibration:
        return cls(**data)


def observation_weights(kinds, gt_weight_ratio: float = PAPER_GT_WEIGHT_RATIO) -> np.ndarray:
    """Weights giving the ground-truth observations `gt_weight_ratio` times the total
    weight of the distractor observations (each distractor weighs 1)."""
    kinds = np.asarray(kinds, dtype=object)
    unknown = set(kinds.tolist()) - {GROUND_TRUTH, DISTRACTOR}
    if unknown:
        raise ValueError(f"unknown observation kind(s) {sorted(unknown)}")
    is_gt = kinds == GROUND_TRUTH
    n_gt, n_d = int(is_gt.sum()), int((~is_gt).sum())
    weights = np.ones(kinds.size)
    if n_gt and n_d:
        weights[is_gt] = gt_weight_ratio * n_d / n_gt
    return weights


def _check_inputs(delta, label, weight):
    delta = np.asarray(delta, dtype=float)
    label = np.asarray(label, dtype=float)
    weight = np.asarray(weight, dtype=float)
    if not (delta.shape == label.shape == weight.shape) or delta.ndim != 1:
        raise ValueError("delta, label and weight must be 1-d arrays of the same length")
    if delta.size == 0:
        raise ValueError("calibration needs at least one observation")
    if not np.all(np.isfinite(delta)):
        raise ValueError("calibration deltas must be finite")
    if np.any((label < 0) | (label > 1)):
        raise ValueError("calibration labels must lie in [0, 1]")
    if np.any(weight < 0):
        raise ValueError("calibration weights must be >= 0")
    return delta, label, weight


def fit_slope(delta, label, weight, intercept: float | None = None) -> float:
    """Weighted maximum-likelihood slope of a logistic model whose intercept is fixed."""
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

    delta, label, weight = _check_inputs(delta, label, weight)
    intercept = pinned_intercept() if intercept is None else intercept
    informative = np.any((weight > 0) & (label > 0)) and np.any((weight > 0) & (label < 1))
    if not informative:
        raise ValueError("calibration needs both acceptable (label > 0) and unacceptable (label < 1) evidence")
    if not np.any((weight > 0) & (delta != 0)):
        raise ValueError("every calibration delta is 0: the slope is not identified")
    model = sm.GLM(
        label, delta[:, None], family=sm.families.Binomial(), offset=np.full(delta.size, intercept), var_weights=weight
    )
    with warnings.catch_warnings():
        # statsmodels flags fitted probabilities near 0 or 1 as "perfect separation" even when
        # the slope is well determined; real divergence is caught below
        warnings.simplefilter("ignore", category=PerfectSeparationWarning)
        result = model.fit(tol=1e-12, maxiter=200)
    slope = float(np.asarray(result.params)[0])
    if not np.isfinite(slope) or abs(slope) > 1e4:
        raise ValueError("the calibration slope diverged (the evidence separates perfectly)")
    return slope


def fit_calibration(
    delta, label, kinds, gt_weight_ratio: float = PAPER_GT_WEIGHT_RATIO, target_at_zero: float = TARGET_AT_ZERO
) -> Calibration:
    """Calibration from leave-one-out observations (kinds: 'ground_truth' / 'distractor')."""
    kinds = np.asarray(kinds, dtype=object)
    weights = observation_weights(kinds, gt_weight_ratio)
    intercept = pinned_intercept(target_at_zero)
    slope = fit_slope(delta, label, weights, intercept)
    return Calibration(
        slope=slope, intercept=intercept, target_at_zero=target_at_zero, gt_weight_ratio=gt_weight_ratio,
        n_ground_truth=int((kinds == GROUND_TRUTH).sum()), n_distractor=int((kinds == DISTRACTOR).sum()),
    )


def fit_slopes_bootstrap(delta, label, weight, counts, intercept: float, start: float, iterations: int = 50) -> np.ndarray:
    """Slopes refitted under many reweightings at once.

    counts: (B, n) multiplicities of each observation in each resample (0 = left out).
    Each row maximises sum_i counts[b, i] * weight[i] * loglik_i(slope), by Newton steps
    from `start` (the slope of the full fit), vectorised over the B resamples. Rows
    whose evidence separates perfectly (no finite maximum) come back as NaN.
    """
    from scipy.special import expit

    delta, label, weight = _check_inputs(delta, label, weight)
    w = np.asarray(counts, dtype=float) * weight[None, :]
    slopes = np.full(w.shape[0], float(start))
    for _ in range(iterations):
        p = expit(intercept + slopes[:, None] * delta[None, :])
        gradient = (w * (label[None, :] - p) * delta[None, :]).sum(axis=1)
        curvature = (w * p * (1 - p) * delta[None, :] ** 2).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(curvature > 0, gradient / curvature, np.nan)
        step = np.clip(step, -5.0, 5.0)
        slopes = slopes + step
        if np.all(~np.isfinite(step) | (np.abs(step) < 1e-12)):
            break
    p = expit(intercept + slopes[:, None] * delta[None, :])
    gradient = (w * (label[None, :] - p) * delta[None, :]).sum(axis=1)
    scale = np.maximum(w.sum(axis=1), 1.0)
    slopes[~np.isfinite(slopes) | (np.abs(gradient) / scale > 1e-6)] = np.nan
    return slopes
