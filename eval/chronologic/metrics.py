"""Likelihood metrics of Chronologic-EN (paper sections 5.1 and 6.1, Table 3), as pure
functions of per-option log-likelihoods, computed as the authors' evaluation code
computes them (GitHub Historical-AI-Lab/GPT-1914, chronologic/evalcode/
benchmark_evaluation.py: lls_to_probabilities, calculate_brier_score, platt_scale_cv,
bootstrap_evaluate); docs/chronologic.md compares paper, their code and ours rule by rule.

Per question with options i = 1..n (n = 4..8), summed log-likelihood s_i of the option
after the prompt, its token count t_i, its length in characters c_i and its released
answer probability y_i (1 for a ground truth, 0.5 for a partly acceptable distractor, 0):

- mean per-token log-likelihood m_i = s_i / t_i (0.0 for an option scored over no token,
  which only the authors' tokenisation boundary produces, as their code does); p =
  softmax(m) over the question's own options. The model's *choice* is the first option
  with the highest p (numpy argmax).

Table 3 (the headline metrics):

- brier : Platt-calibrated Brier, 5-fold cross-validated. Every option is a point
  (m_i, y_i); folds are question positions mod 5 in release order; for each fold a
  logistic model q_i = sigmoid(a * m_i + b) is fitted on the other folds' options
  (weighted maximum likelihood with the fractional y as they stand) and applied to the
  fold's options; the question scores (1/n) sum_i (q_i - y_i)^2, averaged over
  questions. In every bootstrap resample the folds are fitted again with the resample's
  question counts as weights (their bootstrap_evaluate), so the interval includes the
  calibration's own variation. A fold whose training options lack a target above or
  below 0.5 falls back to q = sigmoid(m), as theirs does. The fit is theirs by default
  (scipy's Nelder-Mead from (1, 0), which stops short of the optimum in a few resample
  folds), so that figures compare with the published ones; `platt_fit="newton"` gives the
  exact maximum-likelihood fit (checked against statsmodels).
- acc   : the choice is the ground truth the release ranks first (the first maximum of
  answer_probabilities, option 0 in every released question): a question with two
  ground truths is wrong when the model picks the second one.
- Both are quoted as the bootstrap median with the 2.5 and 97.5 percentiles, as the
  authors' leaderboard quotes them (`median`, `low`, `high`; `estimate` is the value
  on the full sample).

Secondary columns:

- acc_any      : the choice is any ground truth (answer_probabilities == 1.0); exact
                 ties score the share of ground truths among the tied options.
- acc_sum      : the same choosing by summed s_i (lm-evaluation-harness `acc`);
  acc_norm     : by s_i / c_i (lm-evaluation-harness `acc_norm`).
- brier_softmax: (1/n) * sum_i (p_i - u_i)^2 with u_i = 1/k on each of the k ground
                 truths, 0 elsewhere (the softmax of the options against a uniform
                 target over the ground truths);
  brier_softmax_graded: the same against answer_probabilities / their sum;
  brier_softmax_sum   : sum_i (p_i - u_i)^2 (the multi-class sum, without 1/n).
- p_truth: softmax probability mass on the ground truths.

Every metric is reported overall, per group and per reasoning type, over one shared set
of resamples (histbench.eval.stats.bootstrap_counts, which draws the same resamples as
the authors' loop of `rng.integers(0, n, size=n)` from `np.random.default_rng(seed)`).
A resample holding no question of a scope is left out of that scope's percentiles (the
authors' code counts it as 0.0; it never happens for Table 3's overall and group scopes
of a real release).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from histbench.builders.chronologic.taxonomy import (
    GROUND_TRUTH_PROBABILITY,
    GROUP_OF,
    GROUPS,
    REASONING_TYPES,
)
from histbench.core.errors import EvalError

#: folds of the cross-validated Platt calibration (question position mod N_FOLDS)
N_FOLDS = 5
#: per-question metrics (one value per question, averaged over a scope)
PER_QUESTION: tuple[str, ...] = (
    "acc", "acc_any", "acc_sum", "acc_norm", "brier_softmax", "brier_softmax_graded", "brier_softmax_sum", "p_truth",
)
METRICS: tuple[str, ...] = ("brier", *PER_QUESTION)
#: the Table 3 metrics, quoted as bootstrap medians like the authors' leaderboard
TABLE3_METRICS: tuple[str, ...] = ("brier", "acc")
LOWER_IS_BETTER = frozenset({"brier", "brier_softmax", "brier_softmax_graded", "brier_softmax_sum"})
METRIC_DEFINITIONS: dict[str, str] = {
    "brier": "Table 3 Brier (the authors' computation): each option's mean per-token log-likelihood m is "
             "calibrated by q = sigmoid(a m + b), fitted by weighted maximum likelihood on the options of the "
             "other folds (5 folds: question position mod 5 in release order) against answer_probabilities as "
             "released; a question scores (1/n) sum_i (q_i - y_i)^2 over its n options; mean over questions. "
             "Refitted in every bootstrap resample. Quoted as the bootstrap median. Lower is better.",
    "acc": "Table 3 accuracy (the authors' rule): the first option with the highest softmax probability of the "
           "mean per-token log-likelihoods is the ground truth ranked first in the release (the first maximum of "
           "answer_probabilities). Quoted as the bootstrap median. Random choice: 1/n, the chance of picking it.",
    "acc_any": "the option with the highest mean per-token log-likelihood is any ground truth "
               "(answer_probabilities == 1.0); exact ties score the share of ground truths among the tied options.",
    "acc_sum": "as acc_any, choosing by summed log-likelihood (lm-evaluation-harness acc).",
    "acc_norm": "as acc_any, choosing by summed log-likelihood / characters of the answer string "
                "(lm-evaluation-harness acc_norm).",
    "brier_softmax": "mean over questions of (1/n) * sum_i (p_i - u_i)^2; p = softmax of mean per-token "
                     "log-likelihoods over the question's own n options; u_i = 1/k on each of the k ground truths, "
                     "0 elsewhere. Lower is better.",
    "brier_softmax_graded": "as brier_softmax, with u = answer_probabilities / sum(answer_probabilities).",
    "brier_softmax_sum": "as brier_softmax without the 1/n (multi-class Brier summed over options).",
    "p_truth": "probability mass (softmax of mean per-token log-likelihoods) on the ground truths.",
}


def softmax(values: Sequence[float]) -> np.ndarray:
    from scipy.special import softmax as _softmax

    return _softmax(np.asarray(values, dtype=float))


def sigmoid(values) -> np.ndarray:
    from scipy.special import expit

    return expit(values)


def truth_mask(answer_probabilities: Sequence[float]) -> np.ndarray:
    return np.asarray(answer_probabilities, dtype=float) == GROUND_TRUTH_PROBABILITY


def uniform_target(answer_probabilities: Sequence[float]) -> np.ndarray:
    """Mass 1 split equally over the ground truths."""
    truth = truth_mask(answer_probabilities)
    if not truth.any():
        raise EvalError("a question without a ground truth (no answer_probabilities == 1.0)")
    return truth / truth.sum()


def graded_target(answer_probabilities: Sequence[float]) -> np.ndarray:
    """answer_probabilities normalised to sum to 1."""
    values = np.asarray(answer_probabilities, dtype=float)
    return values / values.sum()


def brier(probabilities: Sequence[float], target: Sequence[float]) -> float:
    """(1/n) * sum_i (p_i - y_i)^2 over the question's own n options."""
    p, y = np.asarray(probabilities, dtype=float), np.asarray(target, dtype=float)
    return float(np.mean((p - y) ** 2))


def top_options(scores: Sequence[float]) -> np.ndarray:
    """Indices of the options sharing the highest score exactly (ascending)."""
    values = np.asarray(scores, dtype=float)
    return np.flatnonzero(values == values.max())


def tie_accuracy(scores: Sequence[float], truth: Sequence[bool]) -> float:
    """1/0 when one option is on top; the share of ground truths among tied top options."""
    top = top_options(scores)
    return float(np.asarray(truth, dtype=bool)[top].mean())


@dataclass(frozen=True)
class QuestionScore:
    """Everything computed for one question (one row of the run's ledger)."""

    question_number: int
    reasoning_type: str
    group: str
    n_options: int
    n_ground_truths: int
    answer_probabilities: list[float]
    loglik: list[float]
    n_tokens: list[int]
    n_chars: list[int]
    mean_loglik: list[float]
    probabilities: list[float]
    choice: int
    tied: int
    choice_sum: int
    choice_norm: int
    acc: float
    acc_any: float
    acc_sum: float
    acc_norm: float
    brier_softmax: float
    brier_softmax_graded: float
    brier_softmax_sum: float
    p_truth: float

    def to_json(self) -> dict:
        return dict(self.__dict__)


def score_question(question: dict, loglik: Sequence[float], n_tokens: Sequence[int]) -> QuestionScore:
    """Score one question from its options' summed log-likelihoods and token counts."""
    number = question["question_number"]
    answers = question["answer_strings"]
    if not (len(loglik) == len(n_tokens) == len(answers) == len(question["answer_probabilities"])):
        raise EvalError(f"question {number}: {len(loglik)} scores for {len(answers)} options")
    s = np.asarray(loglik, dtype=float)
    t = np.asarray(n_tokens, dtype=float)
    # 0 tokens only comes with the authors' tokenisation boundary (--tokenisation authors,
    # the default): an answer left with no token of its own, scored 0.0 by
    # their code, and so here (its mean is 0.0)
    invalid = (t < 0) | ((t == 0) & (s != 0.0))
    if invalid.any():
        bad = int(np.flatnonzero(invalid)[0])
        raise EvalError(f"question {number}: option {bad} was scored over {int(t[bad])} tokens")
    if np.isnan(s).any() or np.isposinf(s).any():
        bad = int(np.flatnonzero(np.isnan(s) | np.isposinf(s))[0])
        raise EvalError(f"question {number}: option {bad} has log-likelihood {s[bad]}")
    if np.isneginf(s).all():
        raise EvalError(f"question {number}: every option has log-likelihood -inf")
    c = np.asarray([len(a) for a in answers], dtype=float)
    mean = np.where(t == 0, 0.0, s / np.where(t == 0, 1.0, t))
    p = softmax(mean)
    released = np.asarray(question["answer_probabilities"], dtype=float)
    truth = truth_mask(released)
    target = uniform_target(released)
    choice = int(np.argmax(p))
    return QuestionScore(
        question_number=number,
        reasoning_type=question["reasoning_type"],
        group=GROUP_OF.get(question["reasoning_type"], question.get("group", "")),
        n_options=len(answers),
        n_ground_truths=int(truth.sum()),
        answer_probabilities=[float(v) for v in released],
        loglik=[float(v) for v in s],
        n_tokens=[int(v) for v in t],
        n_chars=[int(v) for v in c],
        mean_loglik=[float(v) for v in mean],
        probabilities=[float(v) for v in p],
        choice=choice,
        tied=int(top_options(mean).size),
        choice_sum=int(top_options(s)[0]),
        choice_norm=int(top_options(s / c)[0]),
        acc=float(choice == int(np.argmax(released))),
        acc_any=tie_accuracy(mean, truth),
        acc_sum=tie_accuracy(s, truth),
        acc_norm=tie_accuracy(s / c, truth),
        brier_softmax=brier(p, target),
        brier_softmax_graded=brier(p, graded_target(released)),
        brier_softmax_sum=float(np.sum((p - target) ** 2)),
        p_truth=float(p[truth].sum()),
    )


def random_choice_score(question: dict) -> QuestionScore:
    """The random-choice baseline: every option equally likely (uniform p, the same mean
    log-likelihood for every option). Accuracy is the expected accuracy of a uniform
    random pick: 1/n for `acc` (the first-ranked ground truth is picked; the chance term
    of the authors' skill score, r = 1 of k options) and k/n for `acc_any`; the argmax of
    a tie would otherwise always pick option 0, a ground truth in every release."""
    n = len(question["answer_strings"])
    return replace(score_question(question, [0.0] * n, [1] * n), acc=1.0 / n)


# --------------------------------------------------------------------------- Platt calibration


@dataclass(frozen=True)
class OptionTable:
    """Every option of the scored questions as one row: mean log-likelihood, released
    target, the question's position and its fold."""

    x: np.ndarray
    y: np.ndarray
    question: np.ndarray
    fold: np.ndarray
    n_questions: int
    n_folds: int

    @classmethod
    def of(cls, scores: Sequence[QuestionScore], n_folds: int = N_FOLDS) -> OptionTable:
        x = np.concatenate([np.asarray(s.mean_loglik, dtype=float) for s in scores])
        y = np.concatenate([np.asarray(s.answer_probabilities, dtype=float) for s in scores])
        question = np.concatenate([np.full(s.n_options, q) for q, s in enumerate(scores)])
        return cls(x, y, question, question % n_folds, len(scores), n_folds)


def fit_platt(x: np.ndarray, y: np.ndarray, w: np.ndarray, max_iter: int = 100, tol: float = 1e-12) -> np.ndarray:
    """Weighted logistic fits q = sigmoid(a x + b) with fractional targets, many at once.

    x, y: (m,) points; w: (..., m) non-negative weights, one row per fit. Returns (..., 2)
    arrays of (a, b) minimising -sum w (y log q + (1 - y) log(1 - q)): Newton's method
    with step halving, started at a = 0, b = logit(weighted mean of y). A fit whose points
    all share one x (no slope to learn) keeps a = 0. Checked against statsmodels' GLM in
    the tests.
    """
    from scipy.special import log_expit

    w = np.asarray(w, dtype=float)
    shape = w.shape[:-1]
    w = w.reshape(-1, w.shape[-1])
    total = w.sum(axis=1)
    ybar = np.clip((w @ y) / np.where(total > 0, total, 1.0), 1e-9, 1 - 1e-9)
    xbar = (w @ x) / np.where(total > 0, total, 1.0)
    flat = (w @ (x * x)) / np.where(total > 0, total, 1.0) - xbar**2 <= 1e-24
    a = np.zeros(len(w))
    b = np.log(ybar) - np.log1p(-ybar)

    def loss(a, b):
        z = a[:, None] * x + b[:, None]
        return -(w * (y * log_expit(z) + (1 - y) * log_expit(-z))).sum(axis=1)

    current = loss(a, b)
    active = np.ones(len(w), dtype=bool)
    for _ in range(max_iter):
        if not active.any():
            break
        z = a[:, None] * x + b[:, None]
        q = sigmoid(z)
        r = w * (q - y)
        h = w * q * (1 - q)
        ga, gb = r @ x, r.sum(axis=1)
        haa, hab, hbb = h @ (x * x), h @ x, h.sum(axis=1)
        det = haa * hbb - hab**2
        ok = (det > 1e-300) & ~flat
        da = np.where(ok, (hbb * ga - hab * gb) / np.where(ok, det, 1.0), 0.0)
        db = np.where(ok, (haa * gb - hab * ga) / np.where(ok, det, 1.0), gb / np.where(hbb > 0, hbb, 1.0))
        da, db = np.where(active, da, 0.0), np.where(active, db, 0.0)
        step = np.ones(len(w))
        for _ in range(40):
            trial = loss(a - step * da, b - step * db)
            worse = (trial > current + 1e-12 * np.abs(current)) & active
            if not worse.any():
                break
            step = np.where(worse, step / 2, step)
        a, b = a - step * da, b - step * db
        new = loss(a, b)
        moved = np.abs(step * da) + np.abs(step * db)
        active &= (moved > tol * (1 + np.abs(a) + np.abs(b))) & (np.abs(current - new) > 0)
        current = new
    return np.stack([a, b], axis=-1).reshape(*shape, 2)


def _platt_nll(x: np.ndarray, y: np.ndarray, weights: np.ndarray, params: np.ndarray) -> np.ndarray:
    """The authors' Platt objective at params[k] = (a, b) with weights[k]: shape (k,). Each
    row is computed with the same operations, in the same order, as their scalar objective, so
    a row's value is bit for bit the one scipy's Nelder-Mead sees."""
    z = np.clip(params[:, :1] * x + params[:, 1:], -500, 500)
    q = np.clip(1.0 / (1.0 + np.exp(-z)), 1e-12, 1.0 - 1e-12)
    return -(weights * (y * np.log(q) + (1.0 - y) * np.log(1.0 - q))).sum(axis=1)


def _scipy_platt(x: np.ndarray, y: np.ndarray, weights: np.ndarray, maxiter: int, maxfun: int) -> np.ndarray:
    """One fit, by scipy.optimize.minimize itself (the reference the batched fit equals)."""
    from scipy.optimize import minimize

    def loss(params):
        return float(_platt_nll(x, y, weights[None, :], np.asarray(params, dtype=float)[None, :])[0])

    return minimize(loss, x0=[1.0, 0.0], method="Nelder-Mead", options={"maxiter": maxiter, "maxfev": maxfun}).x


#: the logits z where _PlattObjective uses its softplus form: above -27, q = sigmoid(z) is
#: never clipped to 1e-12 by the authors' objective; below 7, their log(1 - q) loses at most
#: about 1e-13 (relative) to the cancellation in 1 - q, which grows as e^z (at z = 20 it is
#: 1e-8, enough to reorder two nearly equal simplex values): beyond these, their formula
_SOFTPLUS_LOGITS = (-27.0, 7.0)


class _PlattObjective:
    """The authors' Platt objective for many weight rows at once, in a cheaper form.

    Options sharing one x are merged (their weighted targets added: W1 = sum w y, W0 = sum
    w (1 - y) per distinct x; the random baseline's options all share x = 0, so its fits
    become sums over one point). Where every logit z = a x + b lies inside
    _SOFTPLUS_LOGITS, the objective -sum w (y log q + (1 - y) log(1 - q)) equals
    sum (W1 + W0) softplus(-z) + a sum W0 x + b sum W0 (log q = -softplus(-z),
    log(1 - q) = log q - z): one exp and one log1p per distinct x instead of an exp and two
    logs per option. Elsewhere the clipped formula of `_platt_nll` is used on the merged
    points. Mathematically the same function; in floating point it differs from
    `_platt_nll` by rounding (about 1e-16 relative), which the tests check leaves
    Nelder-Mead's path, and so Table 3, unchanged."""

    def __init__(self, x: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:
        ux, inverse = np.unique(x, return_inverse=True)
        wy, wn = w * y, w * (1.0 - y)
        if len(ux) < len(x):
            order = np.argsort(inverse, kind="stable")
            starts = np.searchsorted(inverse[order], np.arange(len(ux)))
            wy = np.add.reduceat(wy[:, order], starts, axis=1)
            wn = np.add.reduceat(wn[:, order], starts, axis=1)
        else:
            order = np.argsort(x, kind="stable")
            wy, wn = wy[:, order], wn[:, order]
        self.x, self.w1, self.w0 = ux, wy, wn
        self.total = wy + wn
        self.slope = wn @ ux          # sum W0 x, per row
        self.offset = wn.sum(axis=1)  # sum W0, per row
        self.low, self.high = float(ux[0]), float(ux[-1])

    def __call__(self, rows: np.ndarray, params: np.ndarray) -> np.ndarray:
        a, b = params[:, 0], params[:, 1]
        ends = np.stack([a * self.low + b, a * self.high + b])
        low, high = _SOFTPLUS_LOGITS
        safe = (ends.min(axis=0) > low) & (ends.max(axis=0) < high)
        if safe.all():
            return self._softplus(rows, a, b)
        out = np.empty(len(rows))
        if safe.any():
            out[safe] = self._softplus(rows[safe], a[safe], b[safe])
        rest = ~safe
        rr = rows[rest]
        z = np.clip(a[rest, None] * self.x + b[rest, None], -500, 500)
        q = np.clip(1.0 / (1.0 + np.exp(-z)), 1e-12, 1.0 - 1e-12)
        out[rest] = -(np.einsum("ij,ij->i", self.w1[rr], np.log(q)) + np.einsum("ij,ij->i", self.w0[rr], np.log(1.0 - q)))
        return out

    def _softplus(self, rows: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        # -z = (-a) x - b exactly (negation is exact); computed in place: the temporaries of
        # a (rows x points) expression cost more than its exp and log1p
        work = np.multiply.outer(-a, self.x)
        work -= b[:, None]
        np.exp(work, out=work)
        np.log1p(work, out=work)
        total = self.total if len(rows) == len(self.total) else self.total[rows]
        return np.einsum("ij,ij->i", total, work) + a * self.slope[rows] + b * self.offset[rows]


def fit_platt_nelder_mead(x: np.ndarray, y: np.ndarray, w: np.ndarray, maxiter: int = 400,
                          maxfun: int = 400, objective: str = "merged") -> np.ndarray:
    """The fits of fit_platt the way the authors' code makes them: scipy's Nelder-Mead
    with its default tolerances from (a, b) = (1, 0), on the negative log-likelihood with
    the logits clipped to [-500, 500] and q to [1e-12, 1 - 1e-12]. It stops short of the
    optimum in some folds (see docs/chronologic.md); here to reproduce their figures.

    The rows of `w` (one bootstrap resample each) are fitted together: scipy's algorithm
    (1.17, two parameters, no bounds, non-adaptive: reflection 1, expansion 2, contraction
    0.5, shrink 0.5, initial simplex (1, 0), (1.05, 0), (1, 0.00025), xatol = fatol = 1e-4,
    at most 400 iterations and 400 evaluations) stepped for every row at once, with the
    objective of `_PlattObjective` (the same function as theirs, merged over equal x and
    computed through softplus; equal to theirs up to rounding). The fits equal scipy's on
    the authors' objective to within 1e-12 (tests/chronologic/test_platt_batched.py
    compares them on random and real inputs; Nelder-Mead takes the same steps); a row that
    could reach the evaluation limit inside an iteration, where scipy stops part-way, is
    fitted by scipy itself. Doing 1,000 resamples x 5 folds one `minimize` call at a time
    took most of a Table 3 run's CPU.

    objective="authors" steps the same algorithm on `_platt_nll` itself, option by option
    (every value bit for bit the authors' scalar objective's): slower, kept as the
    reference that tests and bench/platt_fit.py compare with."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    w = np.atleast_2d(np.asarray(w, dtype=float))
    rows = len(w)
    if not (np.isfinite(x).all() and np.isfinite(w).all()):
        return np.array([_scipy_platt(x, y, weights, maxiter, maxfun) for weights in w]).reshape(rows, 2)
    if objective == "merged":
        objective = _PlattObjective(x, y, w)
    elif objective == "authors":
        def objective(rows, params):
            return _platt_nll(x, y, w[rows], params)
    else:
        raise EvalError(f"unknown Platt objective {objective!r} (known: merged, authors)")
    everyone = np.arange(rows)
    xatol = fatol = 1e-4
    rho, chi, psi, sigma = 1, 2, 0.5, 0.5
    sim = np.empty((rows, 3, 2))
    sim[:, 0] = (1.0, 0.0)
    sim[:, 1] = ((1 + 0.05) * 1.0, 0.0)
    sim[:, 2] = (1.0, 0.00025)
    fsim = np.stack([objective(everyone, sim[:, k]) for k in range(3)], axis=1)
    calls = np.full(rows, 3)
    iterations = np.ones(rows, dtype=int)
    order = np.argsort(fsim, axis=1, kind="stable")
    sim, fsim = np.take_along_axis(sim, order[:, :, None], 1), np.take_along_axis(fsim, order, 1)
    running = np.ones(rows, dtype=bool)
    by_scipy = np.zeros(rows, dtype=bool)
    while True:
        running &= (calls < maxfun) & (iterations < maxiter)
        converged = ((np.abs(sim[:, 1:] - sim[:, :1]).reshape(rows, -1).max(axis=1) <= xatol)
                     & (np.abs(fsim[:, :1] - fsim[:, 1:]).max(axis=1) <= fatol))
        running &= ~converged
        risky = running & (calls > maxfun - 4)   # up to 4 evaluations in one iteration
        by_scipy |= risky
        running &= ~risky
        live = np.flatnonzero(running)
        if not len(live):
            break
        s, f = sim[live], fsim[live]
        worst = s[:, 2]
        xbar = np.add.reduce(s[:, :2], 1) / 2
        xr = (1 + rho) * xbar - rho * worst
        fxr = objective(live, xr)
        calls[live] += 1
        new_point, new_value = xr.copy(), fxr.copy()
        shrink = np.zeros(len(live), dtype=bool)
        expand = fxr < f[:, 0]
        if expand.any():
            xe = (1 + rho * chi) * xbar[expand] - rho * chi * worst[expand]
            fxe = objective(live[expand], xe)
            calls[live[expand]] += 1
            better = fxe < fxr[expand]
            new_point[expand] = np.where(better[:, None], xe, xr[expand])
            new_value[expand] = np.where(better, fxe, fxr[expand])
        contract = ~expand & (fxr >= f[:, 1])
        outside = contract & (fxr < f[:, 2])
        if outside.any():
            xc = (1 + psi * rho) * xbar[outside] - psi * rho * worst[outside]
            fxc = objective(live[outside], xc)
            calls[live[outside]] += 1
            keep = fxc <= fxr[outside]
            new_point[outside], new_value[outside] = xc, fxc
            shrink[np.flatnonzero(outside)[~keep]] = True
        inside = contract & ~outside
        if inside.any():
            xcc = (1 - psi) * xbar[inside] + psi * worst[inside]
            fxcc = objective(live[inside], xcc)
            calls[live[inside]] += 1
            keep = fxcc < f[inside, 2]
            new_point[inside], new_value[inside] = xcc, fxcc
            shrink[np.flatnonzero(inside)[~keep]] = True
        replace = ~shrink
        s[replace, 2], f[replace, 2] = new_point[replace], new_value[replace]
        if shrink.any():
            for j in (1, 2):
                s[shrink, j] = s[shrink, 0] + sigma * (s[shrink, j] - s[shrink, 0])
                f[shrink, j] = objective(live[shrink], s[shrink, j])
            calls[live[shrink]] += 2
        iterations[live] += 1
        order = np.argsort(f, axis=1, kind="stable")
        sim[live], fsim[live] = np.take_along_axis(s, order[:, :, None], 1), np.take_along_axis(f, order, 1)
    out = sim[:, 0].copy()
    for row in np.flatnonzero(by_scipy):
        out[row] = _scipy_platt(x, y, w[row], maxiter, maxfun)
    return out


#: (resample, distinct x) cells per chunk of aggregate's Platt fits, and (resample, option)
#: cells at most (memory: a few arrays of this many floats)
RESAMPLE_CELLS = 200_000
RESAMPLE_OPTION_CELLS = 4_000_000

#: how calibrated_brier fits the Platt models
PLATT_FITS = {"newton": fit_platt, "nelder-mead": fit_platt_nelder_mead}


#: the default Platt fit: the authors' optimiser, so that figures compare with their published ones
DEFAULT_PLATT_FIT = "nelder-mead"


def calibrated_brier(table: OptionTable, counts: np.ndarray, fit: str = DEFAULT_PLATT_FIT) -> np.ndarray:
    """(B, n) per-question cross-validated Platt Brier for each row of question counts
    (the resample's weights in both the fit and, later, the average). `fit`:
    "nelder-mead" (the authors' optimiser, default) or "newton" (the exact
    maximum-likelihood fit)."""
    if fit not in PLATT_FITS:
        raise EvalError(f"unknown Platt fit {fit!r} (known: {', '.join(PLATT_FITS)})", field="--platt-fit")
    counts = np.atleast_2d(np.asarray(counts, dtype=float))
    per_option = counts[:, table.question]                     # (B, m)
    out_option = np.empty_like(per_option)
    for fold in range(table.n_folds):
        test = table.fold == fold
        train_questions = int((np.arange(table.n_questions) % table.n_folds != fold).sum())
        weights = np.where(test, 0.0, per_option)              # (B, m): training options only
        positive = weights > 0
        has_high = (positive & (table.y > 0.5)).any(axis=1)
        has_low = (positive & (table.y < 0.5)).any(axis=1)
        usable = has_high & has_low & (weights.sum(axis=1) > 1e-12) & (train_questions >= 2)
        q = np.empty((len(counts), int(test.sum())))
        if usable.any():
            train = ~test  # the training options alone, in release order (as the authors' fit sees them)
            ab = PLATT_FITS[fit](table.x[train], table.y[train], weights[usable][:, train])
            q[usable] = sigmoid(ab[:, :1] * table.x[test] + ab[:, 1:])
        if (~usable).any():  # the authors' fallback: uncalibrated sigmoid of the log-likelihood
            q[~usable] = sigmoid(table.x[test])
        out_option[:, test] = (q - table.y[test]) ** 2
    sums = np.zeros((len(counts), table.n_questions))
    np.add.at(sums.T, table.question, out_option.T)
    sizes = np.bincount(table.question, minlength=table.n_questions)
    return sums / sizes


# --------------------------------------------------------------------------- aggregation


def _scopes(scores: Sequence[QuestionScore]) -> dict[str, np.ndarray]:
    groups = np.asarray([s.group for s in scores])
    types = np.asarray([s.reasoning_type for s in scores])
    scopes = {"overall": np.ones(len(scores), dtype=bool)}
    for group in GROUPS:
        scopes[f"group:{group}"] = groups == group
    for rtype in REASONING_TYPES:
        scopes[f"type:{rtype}"] = types == rtype
    return scopes


def _weighted_means(values: np.ndarray, counts: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per resample, the count-weighted mean of values[b, q] (or values[q]) over the scope."""
    weights = counts * mask
    totals = weights.sum(axis=1)
    sums = (weights * values).sum(axis=1) if values.ndim == 2 else weights @ values
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, sums / np.where(totals > 0, totals, 1.0), np.nan)


def aggregate(scores: Sequence[QuestionScore], n_resamples: int = 1000, seed: int = 0, level: float = 0.95,
              platt_fit: str = DEFAULT_PLATT_FIT) -> dict:
    """metric -> scope ("overall", "group:<g>", "type:<t>") -> {estimate, median, low, high, n}.

    `estimate` is the value on the full sample, `median`/`low`/`high` the bootstrap median
    and percentile interval over questions (one set of resamples for every metric and
    scope; a scope's resampled value uses the resampled questions that belong to it).
    Scopes without questions are left out.
    """
    from histbench.eval.stats import BOOTSTRAP, all_equal, bootstrap_counts

    if not scores:
        raise EvalError("no questions were scored")
    n = len(scores)
    values = np.asarray([[getattr(s, m) for m in PER_QUESTION] for s in scores], dtype=float)
    counts = bootstrap_counts(n, n_resamples, seed).astype(float)
    table = OptionTable.of(scores)
    full_brier = calibrated_brier(table, np.ones((1, n)), platt_fit)[0]
    # resamples fitted together in chunks of about RESAMPLE_CELLS (resample, distinct x)
    # cells, the size of the merged objective's arrays (larger ones leave the cache), and at
    # most RESAMPLE_OPTION_CELLS (resample, option) cells: fewer chunks, fewer passes of the
    # batched Nelder-Mead's per-iteration bookkeeping (the random baseline: one chunk)
    distinct = len(np.unique(table.x))
    chunk = max(100, min(RESAMPLE_CELLS // distinct, RESAMPLE_OPTION_CELLS // len(table.x)))
    resampled_brier = np.concatenate([calibrated_brier(table, counts[i : i + chunk], platt_fit)
                                      for i in range(0, n_resamples, chunk)])
    tail = (1.0 - level) / 2.0 * 100.0
    out: dict[str, dict] = {m: {} for m in METRICS}
    for scope, mask in _scopes(scores).items():
        size = int(mask.sum())
        if size == 0:
            continue
        fmask = mask.astype(float)
        columns = {"brier": (float(full_brier[mask].mean()), _weighted_means(resampled_brier, counts, fmask))}
        for k, metric in enumerate(PER_QUESTION):
            columns[metric] = (float(values[mask, k].mean()), _weighted_means(values[:, k], counts, fmask))
        for metric, (estimate, samples) in columns.items():
            low, median, high = np.nanpercentile(samples, [tail, 50.0, 100.0 - tail])
            # Table 3's own method for every metric (the authors' bootstrap median and
            # percentile interval), also for accuracy: the published rows are quoted so
            out[metric][scope] = {"estimate": estimate, "median": float(median), "low": float(low),
                                  "high": float(high), "n": size, "method": BOOTSTRAP}
            if all_equal(samples):
                out[metric][scope]["constant"] = True
    return out


def finite_or_none(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else value
