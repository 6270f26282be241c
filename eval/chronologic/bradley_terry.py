"""Bradley-Terry strengths for partial-credit scoring (paper section 5.2.2, Appendix A.2.2, C.1).

Each partial-credit question has a handful of answer options (its ground truths and
distractors). The judge compares every pair of options in both orders; every trial is
one comparison (a win for one option, a loss for the other; conflicting trials are kept
as they are, never collapsed into a tie). The latent strengths theta of the options are
the maximum a posteriori estimate of the Bradley-Terry model

    P(i beats j) = sigmoid(theta_i - theta_j)

under an independent Gaussian prior theta_i ~ N(0, prior_sd^2) on every option. The
prior matters: graphs of 4-8 options often split into a group that beats every member
of the other group, and then the maximum likelihood estimate is infinite (Ford 1957,
Hunter 2004); `choix.ilsr_pairwise` / `choix.mm_pairwise` with alpha=0 fail outright
on such data. The prior keeps every strength finite.

The fit is `choix.opt_pairwise`, whose objective is the negative log-likelihood plus
`alpha * sum(theta**2)`. That is the Gaussian prior above with `alpha = 1 / (2 *
prior_sd**2)` (`alpha_from_prior_sd`; note the factor 2). `neg_log_posterior` writes
the same objective out explicitly so tests can check that choix's answer is its
minimiser.

The anchors' strengths are then frozen. A candidate answer is compared with every
anchor twice (both orders) and its own strength is the MAP estimate of one more item
under the same prior, with the anchors held fixed (`fit_candidate`). Because the
penalised fit puts the anchors' mean at exactly 0 (every comparison adds +g to one
gradient component and -g to another), a N(0, prior_sd^2) prior on the candidate is the
same prior the anchors had. Its distance from ground truth is

    delta = theta_c - mean(theta of the ground truths)            (A.2.2)

Default prior scale: prior_sd = 2.5 logits, the scale Gelman et al. (2008) recommend
for weakly informative priors on logistic coefficients (the paper cites that work and
gives no number). On a complete sweep of 6 options in both orders it spreads the
strengths over about +-2.6.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_PRIOR_SD = 2.5


def alpha_from_prior_sd(prior_sd: float) -> float:
    """choix's L2 penalty `alpha` for a N(0, prior_sd^2) prior on every strength."""
    if not (prior_sd > 0 and np.isfinite(prior_sd)):
        raise ValueError(f"prior_sd must be a positive number, got {prior_sd!r}")
    return 1.0 / (2.0 * prior_sd * prior_sd)


def _as_pairs(wins: Iterable[Sequence[int]], n_items: int) -> list[tuple[int, int]]:
    pairs = []
    for n, pair in enumerate(wins):
        winner, loser = int(pair[0]), int(pair[1])
        if winner == loser:
            raise ValueError(f"comparison {n} pits item {winner} against itself")
        if not (0 <= winner < n_items and 0 <= loser < n_items):
            raise ValueError(f"comparison {n} names item outside 0..{n_items - 1}: {pair!r}")
        pairs.append((winner, loser))
    return pairs


def neg_log_posterior(theta: np.ndarray, wins: Sequence[tuple[int, int]], prior_sd: float = DEFAULT_PRIOR_SD) -> float:
    """-log posterior (up to a constant) of strengths `theta` given (winner, loser) pairs."""
    theta = np.asarray(theta, dtype=float)
    pairs = np.asarray(wins, dtype=int).reshape(-1, 2)
    margin = theta[pairs[:, 0]] - theta[pairs[:, 1]]
    return float(np.logaddexp(0.0, -margin).sum() + np.sum(theta**2) / (2.0 * prior_sd**2))


def fit_strengths(n_items: int, wins: Iterable[Sequence[int]], prior_sd: float = DEFAULT_PRIOR_SD) -> np.ndarray:
    """MAP Bradley-Terry strengths of `n_items` items from (winner, loser) pairs (choix)."""
    import choix

    if n_items < 1:
        raise ValueError("n_items must be at least 1")
    pairs = _as_pairs(wins, n_items)
    if not pairs:
        return np.zeros(n_items)
    theta = choix.opt_pairwise(n_items, pairs, alpha=alpha_from_prior_sd(prior_sd), method="Newton-CG", tol=1e-10)
    return np.asarray(theta, dtype=float)


def fit_candidate(
    anchor_theta: Sequence[float], outcomes: Iterable[tuple[int, bool]], prior_sd: float = DEFAULT_PRIOR_SD
) -> float:
    """MAP strength of one new item given frozen anchors.

    outcomes: (anchor index, candidate won) for every trial. The log posterior is
    strictly concave, so its unique maximum is the root of the gradient, found by
    Brent's method inside a bracket that provably contains it (|theta| <= trials *
    prior_sd^2 + max|anchor|).
    """
    from scipy.optimize import brentq
    from scipy.special import expit

    anchors = np.asarray(anchor_theta, dtype=float)
    outcomes = list(outcomes)
    if not outcomes:
        raise ValueError("a candidate needs at least one comparison with an anchor")
    index = np.array([int(i) for i, _ in outcomes])
    if index.min() < 0 or index.max() >= anchors.size:
        raise ValueError(f"an outcome names an anchor outside 0..{anchors.size - 1}")
    sign = np.array([1.0 if won else -1.0 for _, won in outcomes])
    opponents = anchors[index]
    variance = prior_sd * prior_sd

    def gradient(t: float) -> float:
        return float(np.sum(sign * expit(-sign * (t - opponents))) - t / variance)

    bound = len(outcomes) * variance + float(np.max(np.abs(anchors))) + 1.0
    return float(brentq(gradient, -bound, bound, xtol=1e-12, rtol=1e-12, maxiter=500))


def candidate_delta(theta_c: float, anchor_theta: Sequence[float], ground_truths: Sequence[int]) -> float:
    """delta = theta_c - mean(theta of the ground-truth anchors) (A.2.2)."""
    if not len(ground_truths):
        raise ValueError("a question needs at least one ground truth to measure delta")
    anchors = np.asarray(anchor_theta, dtype=float)
    return float(theta_c - anchors[list(ground_truths)].mean())


@dataclass(frozen=True)
class HeldOut:
    """Leave-one-out score of one option: the strengths of the other options refitted
    without it, and the held-out option then scored against them as a candidate."""

    option: int
    theta: float
    delta: float
    n_trials: int


def leave_one_out(
    n_items: int, wins: Sequence[tuple[int, int]], held_out: int, ground_truths: Sequence[int],
    prior_sd: float = DEFAULT_PRIOR_SD,
) -> HeldOut:
    """Score option `held_out` like a candidate against anchors fitted without it.

    The anchors are refitted on the comparisons between the remaining options; the
    held-out option's own comparisons with them (both orders, from the same tournament)
    are its candidate trials. delta is measured against the remaining ground truths, so
    a held-out ground truth needs another ground truth to be compared with.
    """
    pairs = _as_pairs(wins, n_items)
    rest = [i for i in range(n_items) if i != held_out]
    position = {item: k for k, item in enumerate(rest)}
    remaining_gt = [position[g] for g in ground_truths if g != held_out]
    if not remaining_gt:
        raise ValueError(f"option {held_out} is the only ground truth: nothing to measure its delta against")
    sub_wins = [(position[w], position[l_]) for w, l_ in pairs if held_out not in (w, l_)]
    anchors = fit_strengths(len(rest), sub_wins, prior_sd)
    outcomes = [(position[l_], True) for w, l_ in pairs if w == held_out] + [
        (position[w], False) for w, l_ in pairs if l_ == held_out
    ]
    if not outcomes:
        raise ValueError(f"option {held_out} has no comparison with the other options")
    theta = fit_candidate(anchors, outcomes, prior_sd)
    return HeldOut(held_out, theta, candidate_delta(theta, anchors, remaining_gt), len(outcomes))
