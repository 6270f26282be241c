"""Likelihood metrics of Chronologic-EN (paper sections 5.1 and 6.1, Table 3), as pure
functions of per-option log-likelihoods.

Per question with options i = 1..n (n = 4..8), summed log-likelihood s_i of the option
after the prompt, its token count t_i and its length in characters c_i:

- mean per-token log-likelihood m_i = s_i / t_i. The model's *choice* is the option with
  the highest m_i, and its probability over the options is p = softmax(m) (section 5.1).
- acc       : the choice (highest m_i) is a ground truth (answer_probabilities == 1.0);
  acc_sum   : the same with the highest summed s_i (lm-evaluation-harness `acc`);
  acc_norm  : the same with the highest s_i / c_i (lm-evaluation-harness `acc_norm`,
              c_i = characters of the answer string).
- Ties: when several options share the highest score exactly, the question scores the
  fraction of those tied options that are ground truths (the expected accuracy of
  breaking the tie uniformly at random); the ledger's `choice` is the lowest tied index
  and `tied` says how many options tied. No tie-break ever favours option 0 (which is
  always a ground truth in the release).
- brier       : (1/n) * sum_i (p_i - y_i)^2 with y_i = 1/k on each of the k ground truths
                (k = 1 or 2) and 0 elsewhere: the squared error averaged over the
                question's own options, then averaged over questions. Uniform p gives
                (1 - 1/n)/n for one ground truth (0.16 for n = 5), the scale of Table 3.
  brier_graded: the same with y = answer_probabilities / sum(answer_probabilities)
                (partly acceptable distractors keep their share).
  brier_sum   : sum_i (p_i - y_i)^2 (the multi-class sum, without 1/n), for comparison.
- p_truth: probability mass on the ground truths, sum of p_i over them.

Every headline number gets a percentile bootstrap 95% interval over questions
(histbench.eval.stats; one set of resamples shared by every metric and scope).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from histbench.builders.chronologic.taxonomy import (
    GROUND_TRUTH_PROBABILITY,
    GROUP_OF,
    GROUPS,
    REASONING_TYPES,
)
from histbench.builders.core.errors import EvalError

METRICS: tuple[str, ...] = ("brier", "brier_graded", "brier_sum", "acc", "acc_sum", "acc_norm", "p_truth")
LOWER_IS_BETTER = frozenset({"brier", "brier_graded", "brier_sum"})
METRIC_DEFINITIONS: dict[str, str] = {
    "brier": "mean over questions of (1/n) * sum_i (p_i - y_i)^2; p = softmax of mean per-token "
             "log-likelihoods over the question's own n options; y_i = 1/k on each of the k ground "
             "truths (answer_probabilities == 1.0), 0 elsewhere. Lower is better.",
    "brier_graded": "as brier, with y = answer_probabilities / sum(answer_probabilities).",
    "brier_sum": "as brier without the 1/n (multi-class Brier summed over options).",
    "acc": "the option with the highest mean per-token log-likelihood is a ground truth "
           "(the paper's choice rule, section 5.1); exact ties score the fraction of tied options "
           "that are ground truths.",
    "acc_sum": "as acc, choosing by summed log-likelihood (lm-evaluation-harness acc).",
    "acc_norm": "as acc, choosing by summed log-likelihood / characters of the answer string "
                "(lm-evaluation-harness acc_norm).",
    "p_truth": "probability mass (softmax of mean per-token log-likelihoods) on the ground truths.",
}


def softmax(values: Sequence[float]) -> np.ndarray:
    from scipy.special import softmax as _softmax

    return _softmax(np.asarray(values, dtype=float))


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
    acc_sum: float
    acc_norm: float
    brier: float
    brier_graded: float
    brier_sum: float
    p_truth: float

    def to_json(self) -> dict:
        return dict(self.__dict__)


def score_question(question: dict, loglik: Sequence[float], n_tokens: Sequence[int]) -> QuestionScore:
    """Score one question from its options' summed log-likelihoods and token counts."""
    number = question["question_number"]
    answers = question["answer_strings"]
    if not (len(loglik) == len(n_tokens) == len(answers)):
        raise EvalError(f"question {number}: {len(loglik)} scores for {len(answers)} options")
    s = np.asarray(loglik, dtype=float)
    t = np.asarray(n_tokens, dtype=float)
    if (t <= 0).any():
        bad = int(np.flatnonzero(t <= 0)[0])
        raise EvalError(f"question {number}: option {bad} was scored over {int(t[bad])} tokens")
    if np.isnan(s).any() or np.isposinf(s).any():
        bad = int(np.flatnonzero(np.isnan(s) | np.isposinf(s))[0])
        raise EvalError(f"question {number}: option {bad} has log-likelihood {s[bad]}")
    if np.isneginf(s).all():
        raise EvalError(f"question {number}: every option has log-likelihood -inf")
    c = np.asarray([len(a) for a in answers], dtype=float)
    mean = s / t
    p = softmax(mean)
    truth = truth_mask(question["answer_probabilities"])
    target = uniform_target(question["answer_probabilities"])
    top = top_options(mean)
    return QuestionScore(
        question_number=number,
        reasoning_type=question["reasoning_type"],
        group=GROUP_OF.get(question["reasoning_type"], question.get("group", "")),
        n_options=len(answers),
        n_ground_truths=int(truth.sum()),
        loglik=[float(v) for v in s],
        n_tokens=[int(v) for v in t],
        n_chars=[int(v) for v in c],
        mean_loglik=[float(v) for v in mean],
        probabilities=[float(v) for v in p],
        choice=int(top[0]),
        tied=int(top.size),
        choice_sum=int(top_options(s)[0]),
        choice_norm=int(top_options(s / c)[0]),
        acc=tie_accuracy(mean, truth),
        acc_sum=tie_accuracy(s, truth),
        acc_norm=tie_accuracy(s / c, truth),
        brier=brier(p, target),
        brier_graded=brier(p, graded_target(question["answer_probabilities"])),
        brier_sum=float(np.sum((p - target) ** 2)),
        p_truth=float(p[truth].sum()),
    )


def random_choice_score(question: dict) -> QuestionScore:
    """The random-choice baseline: every option equally likely (uniform p; accuracy k/n,
    the expected accuracy of picking an option uniformly at random)."""
    n = len(question["answer_strings"])
    return score_question(question, [0.0] * n, [1] * n)


def _scopes(scores: Sequence[QuestionScore]) -> dict[str, np.ndarray]:
    groups = np.asarray([s.group for s in scores])
    types = np.asarray([s.reasoning_type for s in scores])
    scopes = {"overall": np.ones(len(scores), dtype=bool)}
    for group in GROUPS:
        scopes[f"group:{group}"] = groups == group
    for rtype in REASONING_TYPES:
        scopes[f"type:{rtype}"] = types == rtype
    return scopes


def aggregate(scores: Sequence[QuestionScore], n_resamples: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """metric -> scope ("overall", "group:<g>", "type:<t>") -> {estimate, low, high, n}.

    Percentile bootstrap over questions (one set of resamples for every metric and scope:
    a scope's resampled mean uses the resampled questions that belong to it). Scopes
    without questions are left out.
    """
    from histbench.eval.stats import bootstrap_counts, bootstrap_means, percentile_interval

    if not scores:
        raise EvalError("no questions were scored")
    values = np.asarray([[getattr(s, m) for m in METRICS] for s in scores], dtype=float)
    counts = bootstrap_counts(len(scores), n_resamples, seed)
    out: dict[str, dict] = {m: {} for m in METRICS}
    for scope, mask in _scopes(scores).items():
        n = int(mask.sum())
        if n == 0:
            continue
        masked = np.where(mask[:, None], values, np.nan)
        samples = bootstrap_means(masked, counts)
        low, high = percentile_interval(samples, level)
        estimate = values[mask].mean(axis=0)
        for k, metric in enumerate(METRICS):
            out[metric][scope] = {
                "estimate": float(estimate[k]), "low": float(low[k]), "high": float(high[k]), "n": n,
            }
    return out


def finite_or_none(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else value
