"""The batched Nelder-Mead Platt fit (eval/chronologic/metrics.py) equals scipy's
Nelder-Mead run one resample at a time, bit for bit: the authors' Table 3 Brier (their
code: scipy.optimize.minimize(method="Nelder-Mead") from (1, 0) on each fold) depends on
where that optimiser stops, not only on the optimum."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from histbench.eval.chronologic.metrics import fit_platt_nelder_mead


def scipy_one_at_a_time(x, y, w, options=None):
    """The reference: the authors' objective, one minimize call per row of weights."""
    out = []
    for weights in np.atleast_2d(w):
        def loss(params, weights=weights):
            q = np.clip(1.0 / (1.0 + np.exp(-np.clip(params[0] * x + params[1], -500, 500))), 1e-12, 1.0 - 1e-12)
            return -(weights * (y * np.log(q) + (1.0 - y) * np.log(1.0 - q))).sum()

        out.append(minimize(loss, x0=[1.0, 0.0], method="Nelder-Mead", options=options).x)
    return np.array(out)


def _case(seed: int, options: int, resamples: int):
    rng = np.random.default_rng(seed)
    x = rng.normal(-2.5, 1.2, options) * rng.choice([0.1, 1.0, 5.0])   # mean per-token log-likelihoods
    y = (rng.random(options) < 0.3).astype(float)
    y[0], y[1] = 1.0, 0.0
    counts = rng.multinomial(options, np.full(options, 1 / options), size=resamples).astype(float)
    counts[: resamples // 4, : options // 3] = 0.0                    # resamples that miss questions
    return x, y, counts


@pytest.mark.parametrize("seed", range(12))
def test_equals_scipy_bit_for_bit(seed):
    x, y, w = _case(seed, options=[7, 19, 40, 96][seed % 4], resamples=60)
    got = fit_platt_nelder_mead(x, y, w)
    want = scipy_one_at_a_time(x, y, w)
    assert got.shape == want.shape == (60, 2)
    assert np.array_equal(got, want), np.abs(got - want).max()


def test_rows_that_reach_the_evaluation_limit_are_scipy_s_too():
    """With a small limit most rows stop part-way through an iteration, where scipy stops
    inside its wrapped objective: those rows are handed to scipy itself."""
    x, y, w = _case(3, options=40, resamples=30)
    got = fit_platt_nelder_mead(x, y, w, maxiter=25, maxfun=25)
    want = scipy_one_at_a_time(x, y, w, options={"maxiter": 25, "maxfev": 25})
    assert np.array_equal(got, want)
    assert not np.array_equal(got, fit_platt_nelder_mead(x, y, w))   # the limit did bind


def test_equals_scipy_on_the_chronologic_sample():
    """On the bundled sample's answer probabilities (the options' targets), with the
    log-likelihoods of a fixed random scorer and 40 Poisson resamples."""
    import json
    from pathlib import Path

    sample = Path(__file__).resolve().parents[2] / "sources" / "chronologic" / "sample" / "chronologic_sample.jsonl"
    y = np.asarray([float(p) for line in sample.read_text(encoding="utf-8").splitlines() if line.strip()
                    for p in json.loads(line)["answer_probabilities"]])
    rng = np.random.default_rng(0)
    x = rng.normal(-3.0, 1.0, len(y))
    w = rng.poisson(1.0, size=(40, len(y))).astype(float)
    assert np.array_equal(fit_platt_nelder_mead(x, y, w), scipy_one_at_a_time(x, y, w))


def test_merged_objective_is_the_authors_up_to_rounding():
    """_PlattObjective (options merged over equal x, softplus form inside |z| < 27, the
    clipped formula outside) against _platt_nll, the authors' objective, at parameters that
    reach far into the clipped region."""
    from histbench.eval.chronologic.metrics import _platt_nll, _PlattObjective

    rng = np.random.default_rng(7)
    x = np.round(rng.normal(-3.0, 2.0, 300), 1)     # many equal x: merged
    y = rng.choice([0.0, 0.5, 1.0], 300)
    w = rng.poisson(1.0, size=(50, 300)).astype(float)
    params = np.column_stack([rng.normal(0.0, 5.0, 50), rng.normal(0.0, 20.0, 50)])
    params[:10] = np.column_stack([rng.normal(0.5, 0.2, 10), rng.normal(0.0, 1.0, 10)])   # fitted-like
    objective = _PlattObjective(x, y, w)
    assert len(objective.x) < 100
    want = _platt_nll(x, y, w, params)
    got = objective(np.arange(50), params)
    assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()
    z = params[:, :1] * x + params[:, 1:]
    outside = (z.min(axis=1) <= -27) | (z.max(axis=1) >= 7)
    assert outside.any() and (~outside).any()


def test_authors_objective_option_is_the_reference_loop():
    x, y, w = _case(5, options=40, resamples=20)
    assert np.array_equal(fit_platt_nelder_mead(x, y, w, objective="authors"), scipy_one_at_a_time(x, y, w))
