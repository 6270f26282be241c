"""Bradley-Terry strengths for partial-credit scoring (paper section 5.2.2, Appendix A.2.2, C.1).

The estimator is the authors' (bt/fit.py and bt/tau.py of their repository):

- Anchors: the options' strengths theta have the posterior of the Bradley-Terry model
  P(i beats j) = sigmoid(theta_i - theta_j) under a zero-sum normal prior with scale
  sigma (default 1): theta = B z with B an orthonormal basis of the sum-zero subspace and
  z ~ N(0, sigma^2 I), which is PyMC's ZeroSumNormal(sigma). Every trial is one
  comparison; conflicting trials are kept as they are.
- A candidate is scored by cut inference: for every posterior draw of the anchors, its
  strength has the one-dimensional posterior of the candidate's own comparisons under a
  N(0, sigma^2) prior, on the authors' grid (801 points on [-8, 8]); the candidate's data
  never moves the anchors. delta = theta_c - mean(theta of the ground truths) is taken
  per draw.

The authors sample the anchor posterior with NUTS (PyMC, 4 chains x 500 draws). Here the
same posterior is integrated by self-normalised importance sampling: a multivariate t
proposal (5 degrees of freedom) centred on the posterior mode with the inverse Hessian as
scale, `draws` seeded draws (default 4000); the mode is choix.opt_pairwise with the
Gaussian penalty alpha = 1/(2 sigma^2), whose optimum lies in the sum-zero subspace, so it
is the mode under the zero-sum prior too. Posterior means and the candidate's delta are
weighted averages (the conditional expectation on the grid is computed exactly, not
sampled); `delta_draws` returns weighted-resampled draws for the judgment layer of the
bootstrap. On the same tournaments this reproduces the authors' PyMC numbers to Monte
Carlo precision (tests/chronologic_generation/test_bradley_terry.py).

Tournaments where one group sweeps the other have no finite maximum-likelihood estimate
(Ford 1957, Hunter 2004); the prior keeps the posterior proper.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_PRIOR_SD = 1.0
DEFAULT_DRAWS = 4000
PROPOSAL_DF = 5.0
GRID = np.linspace(-8.0, 8.0, 801)  # bt/tau.py score_candidate: grid_half_width 8, 801 points
# Conditional expectations are sums over a grid of a smooth unimodal density; half the
# authors' resolution changes them by less than 1e-6 and halves the work.
EXPECTATION_GRID = np.linspace(-8.0, 8.0, 401)


def _as_pairs(wins: Iterable[Sequence[int]], n_items: int) -> np.ndarray:
    pairs = []
    for n, pair in enumerate(wins):
        winner, loser = int(pair[0]), int(pair[1])
        if winner == loser:
            raise ValueError(f"comparison {n} pits item {winner} against itself")
        if not (0 <= winner < n_items and 0 <= loser < n_items):
            raise ValueError(f"comparison {n} names item outside 0..{n_items - 1}: {pair!r}")
        pairs.append((winner, loser))
    return np.asarray(pairs, dtype=int).reshape(-1, 2)


def sum_zero_basis(n: int) -> np.ndarray:
    """(n, n-1) orthonormal basis of {theta : sum(theta) = 0}."""
    q, _ = np.linalg.qr(np.column_stack([np.ones(n), np.eye(n)[:, : n - 1]]))
    return q[:, 1:n]


def log_posterior(theta: np.ndarray, pairs: np.ndarray, prior_sd: float) -> np.ndarray:
    """Log posterior (up to a constant) of strengths (..., n) given (winner, loser) pairs."""
    theta = np.asarray(theta, dtype=float)
    margin = theta[..., pairs[:, 0]] - theta[..., pairs[:, 1]]
    return -np.logaddexp(0.0, -margin).sum(axis=-1) - (theta**2).sum(axis=-1) / (2.0 * prior_sd**2)


def posterior_mode(n_items: int, pairs: np.ndarray, prior_sd: float) -> np.ndarray:
    import choix

    if not len(pairs):
        return np.zeros(n_items)
    theta = choix.opt_pairwise(n_items, [tuple(p) for p in pairs], alpha=1.0 / (2.0 * prior_sd**2),
                               method="Newton-CG", tol=1e-12)
    return np.asarray(theta, dtype=float)


@dataclass
class Posterior:
    """Weighted draws of the anchors' strengths (draws: (S, n), weights sum to 1)."""

    draws: np.ndarray
    weights: np.ndarray
    prior_sd: float

    @property
    def mean(self) -> np.ndarray:
        return self.weights @ self.draws

    @property
    def effective_size(self) -> float:
        return float(1.0 / np.sum(self.weights**2))

    def to_json(self) -> dict:
        return {"theta": [float(t) for t in self.mean], "effective_draws": round(self.effective_size, 1)}


def fit_posterior(n_items: int, wins: Iterable[Sequence[int]], prior_sd: float = DEFAULT_PRIOR_SD, *,
                  draws: int = DEFAULT_DRAWS, seed: int = 0) -> Posterior:
    """Posterior of `n_items` strengths from (winner, loser) pairs (see module docstring)."""
    if n_items < 1:
        raise ValueError("n_items must be at least 1")
    if not (prior_sd > 0 and np.isfinite(prior_sd)):
        raise ValueError(f"prior_sd must be a positive number, got {prior_sd!r}")
    pairs = _as_pairs(wins, n_items)
    if n_items == 1:
        return Posterior(np.zeros((1, 1)), np.ones(1), prior_sd)
    basis = sum_zero_basis(n_items)
    mode_z = basis.T @ posterior_mode(n_items, pairs, prior_sd)
    # Hessian of the negative log posterior in z
    theta = basis @ mode_z
    hessian = np.eye(n_items) / prior_sd**2
    if len(pairs):
        p = 1.0 / (1.0 + np.exp(-(theta[pairs[:, 0]] - theta[pairs[:, 1]])))
        w = p * (1.0 - p)
        for (a, b), wk in zip(pairs, w, strict=True):
            hessian[a, a] += wk
            hessian[b, b] += wk
            hessian[a, b] -= wk
            hessian[b, a] -= wk
    hz = basis.T @ hessian @ basis
    chol = np.linalg.cholesky(np.linalg.inv(hz))
    rng = np.random.default_rng(seed)
    dim = n_items - 1
    normal = rng.standard_normal((draws, dim))
    chi = rng.chisquare(PROPOSAL_DF, size=draws)
    z = mode_z + (normal @ chol.T) * np.sqrt(PROPOSAL_DF / chi)[:, None]
    # log density of the multivariate t proposal, up to a constant
    maha = np.sum(np.linalg.solve(chol, (z - mode_z).T) ** 2, axis=0)
    log_q = -0.5 * (PROPOSAL_DF + dim) * np.log1p(maha / PROPOSAL_DF)
    samples = z @ basis.T
    log_w = log_posterior(samples, pairs, prior_sd) - log_q
    weights = np.exp(log_w - log_w.max())
    return Posterior(samples, weights / weights.sum(), prior_sd)


def _aggregate(outcomes: Sequence[tuple[int, bool]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(opponents, wins, trials): both presentation orders of an opponent pooled into one
    binomial, as bt/tau.py aggregate_candidate_counts does."""
    table: dict[int, list[int]] = {}
    for opponent, won in outcomes:
        cell = table.setdefault(int(opponent), [0, 0])
        cell[0] += int(bool(won))
        cell[1] += 1
    opponents = np.array(sorted(table), dtype=int)
    return opponents, np.array([table[o][0] for o in opponents], float), np.array([table[o][1] for o in opponents], float)


def _conditional_log_posterior(opponents: np.ndarray, wins: np.ndarray, trials: np.ndarray, prior_sd: float,
                               grid: np.ndarray = GRID) -> np.ndarray:
    """(S, G) log posterior of a new item's strength on `grid`, per anchor draw.
    opponents: (S, J) the opponents' strengths in each draw; wins, trials: (J,).
    Uses log sigmoid(-x) = log sigmoid(x) - x, so only one log-sigmoid array is formed."""
    from scipy.special import log_expit

    diff = grid[None, :, None] - opponents[:, None, :]
    losses = trials - wins
    linear = losses.sum() * grid[None, :] - (opponents @ losses)[:, None]  # sum_j (m_j - k_j) (g - theta_j)
    loglik = log_expit(diff) @ trials - linear
    out = loglik - 0.5 * (grid / prior_sd) ** 2
    return out - out.max(axis=1, keepdims=True)


@dataclass
class CandidateScore:
    """delta = theta_c - mean(theta of the reference ground truths), by cut inference."""

    delta: float
    theta: float
    n_trials: int
    posterior: Posterior
    outcomes: tuple
    references: tuple

    def delta_draws(self, n: int = 1000, seed: int = 0) -> np.ndarray:
        """`n` draws of delta: anchor draws resampled by weight, theta_c by inverse CDF on the
        grid within each (as bt/tau.py samples them)."""
        rng = np.random.default_rng(seed)
        post = self.posterior
        pick = rng.choice(len(post.weights), size=n, p=post.weights)
        index, wins, trials = _aggregate(self.outcomes)
        logp = _conditional_log_posterior(post.draws[pick][:, index], wins, trials, post.prior_sd)
        cdf = np.cumsum(np.exp(logp), axis=1)
        cdf /= cdf[:, -1:]
        u = rng.random(n)
        k = np.argmax(cdf >= u[:, None], axis=1)
        rows = np.arange(n)
        previous = np.where(k > 0, cdf[rows, np.maximum(k - 1, 0)], 0.0)
        mass = cdf[rows, k] - previous
        frac = np.where(mass > 0, (u - previous) / np.maximum(mass, 1e-300), 0.5)
        cell = GRID[1] - GRID[0]
        theta_c = GRID[k] + (frac - 0.5) * cell
        return theta_c - post.draws[pick][:, list(self.references)].mean(axis=1)


def score_candidate(posterior: Posterior, outcomes: Iterable[tuple[int, bool]], references: Sequence[int],
                    chunk: int = 1024) -> CandidateScore:
    """Cut-inference score of one new item against frozen anchors. outcomes: (anchor index,
    the new item won) per trial; references: the ground-truth anchors delta is measured from."""
    outcomes = tuple((int(i), bool(w)) for i, w in outcomes)
    if not outcomes:
        raise ValueError("a candidate needs at least one comparison with an anchor")
    references = tuple(int(r) for r in references)
    if not references:
        raise ValueError("a question needs at least one ground truth to measure delta")
    n = posterior.draws.shape[1]
    index, wins, trials = _aggregate(outcomes)
    if index.min() < 0 or index.max() >= n or min(references) < 0 or max(references) >= n:
        raise ValueError(f"an outcome or reference names an anchor outside 0..{n - 1}")
    expected = np.empty(len(posterior.weights))
    for start in range(0, len(expected), chunk):
        logp = _conditional_log_posterior(posterior.draws[start:start + chunk][:, index], wins, trials, posterior.prior_sd,
                                          EXPECTATION_GRID)
        p = np.exp(logp)
        expected[start:start + chunk] = (p @ EXPECTATION_GRID) / p.sum(axis=1)
    reference_mean = posterior.draws[:, list(references)].mean(axis=1)
    theta = float(posterior.weights @ expected)
    delta = float(posterior.weights @ (expected - reference_mean))
    return CandidateScore(delta, theta, len(outcomes), posterior, outcomes, references)


@dataclass(frozen=True)
class HeldOut:
    """Leave-one-out score of one option: anchors refitted without it, then it is scored
    against them like a candidate from its own trials."""

    option: int
    theta: float
    delta: float
    n_trials: int


def leave_one_out(n_items: int, anchor_wins: Sequence[tuple[int, int]], held_out: int, outcomes: Sequence[tuple[int, bool]],
                  ground_truths: Sequence[int], prior_sd: float = DEFAULT_PRIOR_SD, *, draws: int = DEFAULT_DRAWS,
                  seed: int = 0) -> HeldOut:
    """Score option `held_out` against anchors fitted on the comparisons among the other
    options (bt_context_scoring.py cmd_loo). outcomes: (opponent option, held-out won) of
    the held-out option's own trials; delta is measured from the remaining ground truths."""
    pairs = _as_pairs(anchor_wins, n_items)
    rest = [i for i in range(n_items) if i != held_out]
    position = {item: k for k, item in enumerate(rest)}
    remaining_gt = [position[g] for g in ground_truths if g != held_out]
    if not remaining_gt:
        raise ValueError(f"option {held_out} is the only ground truth: nothing to measure its delta against")
    sub = [(position[w], position[l_]) for w, l_ in pairs if held_out not in (w, l_)]
    posterior = fit_posterior(len(rest), sub, prior_sd, draws=draws, seed=seed)
    mapped = [(position[o], won) for o, won in outcomes if o != held_out]
    if not mapped:
        raise ValueError(f"option {held_out} has no usable comparison with the other options")
    score = score_candidate(posterior, mapped, remaining_gt)
    return HeldOut(held_out, score.theta, score.delta, score.n_trials)
