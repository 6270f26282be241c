"""MHER metrics and statistics (paper sections 5.5-5.6, 6-8), as pure vectorised functions.

Encodings: gold 0 = same, 1 = different (binary core); action 0 = same, 1 = different,
2 = ambiguous (an abstention, never correct on the binary core); probabilities are
(n, 3) arrays over (same, different, ambiguous), rows summing to one.

- accuracy: ambiguous counts as wrong; macro-F1 over the two gold classes (an abstention
  is a missed item of its gold class and a false positive of neither); abstention rate;
  selective accuracy (accuracy among same/different decisions); mean probability of the
  gold relation; 3-way Brier score (sum of squared differences to the one-hot gold,
  averaged) and log loss (-log p_gold, clipped at machine epsilon as scikit-learn does).
- Wilson 95% intervals (statsmodels), exact two-sided McNemar (scipy binomial test) with
  Bonferroni adjustment over models.
- paired item bootstrap: all accuracies and differences share one set of resamples (index
  resamples tallied into per-item draw counts by histbench.eval.stats, block by block),
  so 200,000 resamples are a few matrix products.
- entity-cluster bootstrap (section 7.4, Table 6): canonical persons are resampled with
  replacement, as many draws as persons, and a resample's gain is computed from the items
  of the drawn persons. Estimator `distinct-items` (the default, the paper's: derived from
  Table 6 in docs/mher.md): every item with at least one drawn person enters once,
  however often its persons were drawn, and the gain is the plain mean over those items.
  Estimator `draw-weighted`: an item weighs the mean draw count of its distinct persons (a
  different pair is shared half and half), a cluster bootstrap that keeps multiplicity and
  reduces to the pair-level gain when every person is drawn once. All gains (one column per
  model) share the same person draws. Each result says whether every resample gave the
  same gain (`constant`), so a zero-width interval is known to be exact.
- one-pair-per-entity thinning: repeated random maximal subsets in which no person occurs
  in two items; the gain on each subset.
- leave-one-entity-out: the gain after removing every item that involves one person.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from histbench.eval import stats

SAME, DIFFERENT, AMBIGUOUS = 0, 1, 2
LABEL_CODES = {"same": SAME, "different": DIFFERENT}
ACTION_CODES = {"same": SAME, "different": DIFFERENT, "ambiguous": AMBIGUOUS}
PROMINENCE_ORDER = {"long-tail": 0, "mid": 1, "head": 2}
DEFAULT_BOOTSTRAP = 200_000
EPS = float(np.finfo(float).eps)


def correct_vector(gold, action) -> np.ndarray:
    gold = np.asarray(gold)
    action = np.asarray(action)
    return (action == gold) & (action != AMBIGUOUS)


def macro_f1(gold, action) -> float:
    from sklearn.metrics import f1_score

    gold = np.asarray(gold)
    if gold.size == 0:
        return float("nan")
    return float(f1_score(gold, np.asarray(action), labels=[SAME, DIFFERENT], average="macro", zero_division=0))


def brier_scores(gold, probabilities) -> np.ndarray:
    """Per-item 3-way Brier score against the one-hot binary gold."""
    probabilities = np.asarray(probabilities, dtype=float)
    onehot = np.zeros_like(probabilities)
    onehot[np.arange(len(gold)), np.asarray(gold, dtype=int)] = 1.0
    return ((probabilities - onehot) ** 2).sum(axis=1)


def log_losses(gold, probabilities) -> np.ndarray:
    probabilities = np.asarray(probabilities, dtype=float)
    p_gold = probabilities[np.arange(len(gold)), np.asarray(gold, dtype=int)]
    return -np.log(np.clip(p_gold, EPS, 1.0))


def binary_metrics(gold, action, probabilities=None, valid=None) -> dict:
    """Every Table 3 / section 8.3 number for one system on one item set."""
    gold = np.asarray(gold, dtype=int)
    action = np.asarray(action, dtype=int)
    n = int(gold.size)
    correct = correct_vector(gold, action)
    abstain = action == AMBIGUOUS
    decided = int((~abstain).sum())
    k = int(correct.sum())
    wilson = stats.wilson_interval(k, n)
    out = {
        "n": n,
        "correct": k,
        "accuracy": k / n if n else float("nan"),
        "accuracy_low": wilson.low,
        "accuracy_high": wilson.high,
        "macro_f1": macro_f1(gold, action),
        "abstentions": int(abstain.sum()),
        "abstention": float(abstain.mean()) if n else float("nan"),
        "decided": decided,
        "selective_accuracy": (k / decided) if decided else float("nan"),
        "false_same": int(((action == SAME) & (gold == DIFFERENT)).sum()),
        "missed_same": int(((action == DIFFERENT) & (gold == SAME)).sum()),
    }
    if probabilities is not None:
        probabilities = np.asarray(probabilities, dtype=float)
        out["mean_p_gold"] = float(probabilities[np.arange(n), gold].mean()) if n else float("nan")
        out["brier"] = float(brier_scores(gold, probabilities).mean()) if n else float("nan")
        out["log_loss"] = float(log_losses(gold, probabilities).mean()) if n else float("nan")
        out["mean_p_ambiguous"] = float(probabilities[:, AMBIGUOUS].mean()) if n else float("nan")
    if valid is not None:
        out["invalid"] = int((~np.asarray(valid, dtype=bool)).sum())
    return out


def transitions(correct_before, correct_after) -> dict:
    """Paired transitions from one condition to another, with the exact McNemar p."""
    before = np.asarray(correct_before, dtype=bool)
    after = np.asarray(correct_after, dtype=bool)
    w_c = int((~before & after).sum())
    c_w = int((before & ~after).sum())
    return {
        "W->C": w_c, "C->W": c_w, "C->C": int((before & after).sum()), "W->W": int((~before & ~after).sum()),
        "mcnemar_p": stats.mcnemar_exact(w_c, c_w),
    }


def bonferroni(p_values: Sequence[float], m: int | None = None) -> list[float]:
    """Bonferroni-adjusted p-values over a family of `m` tests (default: the p-values
    given); `m` may exceed their number when the family was fixed in advance."""
    m = len(p_values) if m is None else m
    if m < len(p_values):
        raise ValueError(f"a family of {m} tests cannot hold {len(p_values)} p-values")
    return [min(1.0, p * m) if np.isfinite(p) else float("nan") for p in p_values]


def paired_bootstrap(correct: np.ndarray, comparisons: Sequence[tuple[int, int]], n_resamples: int = DEFAULT_BOOTSTRAP,
                     seed: int = 0, level: float = stats.DEFAULT_LEVEL, counts: np.ndarray | None = None) -> dict:
    """Item bootstrap of accuracies and paired differences.

    correct: (n, k) 0/1 matrix (columns = system x condition, rows = the same items);
    comparisons: (after, before) column pairs; returns per-column accuracy intervals and,
    per comparison, the difference (after - before) with its percentile interval and
    bootstrap mean. All statistics share one set of resamples, drawn block by block
    (`counts`, the whole (B, n) count matrix, may be given instead).
    """
    correct = np.asarray(correct, dtype=np.float64)
    n, k = correct.shape
    blocks = [counts] if counts is not None else stats.iter_bootstrap_counts(n, n_resamples, seed, dtype=np.float32)
    # float32 is exact here: counts and 0/1 (or thirds-rounded) values sum to at most a few hundred
    values = correct.astype(np.float32)
    means = np.concatenate([np.asarray(block, dtype=np.float32) @ values for block in blocks]).astype(np.float64)
    means /= n
    low, high = stats.percentile_interval(means, level)
    point = correct.mean(axis=0) if n else np.full(k, np.nan)
    out = {"accuracy": [{"estimate": float(point[j]), "low": float(low[j]), "high": float(high[j])} for j in range(k)],
           "differences": []}
    if comparisons:
        after = np.array([a for a, _ in comparisons])
        before = np.array([b for _, b in comparisons])
        deltas = means[:, after] - means[:, before]
        d_low, d_high = stats.percentile_interval(deltas, level)
        d_mean = deltas.mean(axis=0)
        for j, (a, b) in enumerate(comparisons):
            out["differences"].append({
                "after": int(a), "before": int(b), "estimate": float(point[a] - point[b]),
                "low": float(d_low[j]), "high": float(d_high[j]), "bootstrap_mean": float(d_mean[j]),
                **({"constant": True} if stats.all_equal(deltas[:, j]) else {}),
            })
    return out


def entity_incidence(entities: Sequence[Sequence[str]]) -> tuple[list[str], np.ndarray]:
    """(persons, E x n matrix): each item's weight split equally over its distinct
    persons (a same pair belongs wholly to its person, a different pair half to each)."""
    persons = sorted({p for item in entities for p in item})
    index = {p: i for i, p in enumerate(persons)}
    incidence = np.zeros((len(persons), len(entities)), dtype=np.float64)
    for j, item in enumerate(entities):
        distinct = set(item)
        for p in distinct:
            incidence[index[p], j] = 1.0 / len(distinct)
    return persons, incidence


CLUSTER_ESTIMATORS = ("distinct-items", "draw-weighted")
DEFAULT_CLUSTER_ESTIMATOR = "distinct-items"


def cluster_bootstrap(values, entities: Sequence[Sequence[str]], n_resamples: int = DEFAULT_BOOTSTRAP, seed: int = 0,
                      level: float = stats.DEFAULT_LEVEL, estimator: str = DEFAULT_CLUSTER_ESTIMATOR,
                      chunk: int = 50_000) -> dict | list[dict]:
    """Entity-cluster bootstrap of the mean of per-item `values` (e.g. paired gains).

    Persons are drawn with replacement (as many draws as persons). `estimator`:
    "distinct-items" (the paper's, section 7.4): the resample is the set of items with at
    least one drawn person, each once, and the statistic is their plain mean;
    "draw-weighted": each item weighs the mean draw count of its distinct persons
    (`entity_incidence`) and the statistic is the weighted mean. `values` is (n,) or (n, k)
    (k models on the same items, one result each, the same draws for all)."""
    if estimator not in CLUSTER_ESTIMATORS:
        raise ValueError(f"cluster bootstrap estimator must be one of {', '.join(CLUSTER_ESTIMATORS)}, "
                         f"not {estimator!r}")
    values = np.asarray(values, dtype=np.float64)
    single = values.ndim == 1
    matrix = values[:, None] if single else values
    k = matrix.shape[1]
    persons, incidence = entity_incidence(entities)
    e = len(persons)
    if e == 0:
        empty = {"estimate": float("nan"), "bootstrap_mean": float("nan"), "low": float("nan"), "high": float("nan"),
                 "entities": 0, "estimator": estimator}
        return empty if single else [dict(empty) for _ in range(k)]
    # float32 is exact: draw counts, 0/1 and halves, and integer gains sum to a few hundred at most
    link = (incidence > 0).astype(np.float32) if estimator == "distinct-items" else incidence.astype(np.float32)
    gains = matrix.astype(np.float32)
    samples = np.empty((n_resamples, k))
    start = 0
    for draws in stats.iter_bootstrap_counts(e, n_resamples, seed, chunk=chunk, dtype=np.float32):
        weights = draws @ link
        if estimator == "distinct-items":
            weights = (weights > 0).astype(np.float32)
        total = weights.sum(axis=1, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            samples[start:start + len(draws)] = (weights @ gains).astype(np.float64) / total[:, None]
        start += len(draws)
    low, high = stats.percentile_interval(samples, level)
    estimate = matrix.mean(axis=0)
    boot_mean = np.nanmean(samples, axis=0)
    results = [{"estimate": float(estimate[j]), "bootstrap_mean": float(boot_mean[j]), "low": float(low[j]),
                "high": float(high[j]), "entities": e, "estimator": estimator,
                "constant": stats.all_equal(samples[:, j])} for j in range(k)]
    return results[0] if single else results


def one_pair_per_entity(values, entities: Sequence[Sequence[str]], repetitions: int = 2000, seed: int = 0,
                        level: float = stats.DEFAULT_LEVEL) -> dict:
    """Repeated thinning to subsets where each person occurs in at most one item."""
    values = np.asarray(values, dtype=np.float64)
    n = values.size
    if n == 0:
        return {"mean": float("nan"), "low": float("nan"), "high": float("nan"), "mean_items": 0.0}
    rng = np.random.default_rng(seed)
    sets = [set(item) for item in entities]
    estimates = np.empty(repetitions)
    sizes = np.empty(repetitions)
    for r in range(repetitions):
        used: set[str] = set()
        chosen = []
        for j in rng.permutation(n):
            if sets[j] & used:
                continue
            used |= sets[j]
            chosen.append(j)
        estimates[r] = values[chosen].mean()
        sizes[r] = len(chosen)
    low, high = stats.percentile_interval(estimates, level)
    return {"mean": float(estimates.mean()), "low": float(low), "high": float(high), "mean_items": float(sizes.mean()),
            "repetitions": repetitions, "constant": stats.all_equal(estimates)}


def leave_one_entity_out(values, entities: Sequence[Sequence[str]]) -> dict:
    values = np.asarray(values, dtype=np.float64)
    persons, incidence = entity_incidence(entities)
    per_entity = {}
    for i, person in enumerate(persons):
        keep = incidence[i] == 0
        per_entity[person] = float(values[keep].mean()) if keep.any() else float("nan")
    finite = [v for v in per_entity.values() if np.isfinite(v)]
    return {"min": min(finite) if finite else float("nan"), "max": max(finite) if finite else float("nan"),
            "per_entity": per_entity}


def slice_accuracy(correct, mask, action=None, gold=None) -> dict:
    """Correct decisions on the items of `mask`; with `action` and `gold`, also how the
    others went: abstentions, false same merges, missed same pairs."""
    correct = np.asarray(correct, dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    n = int(mask.sum())
    k = int(correct[mask].sum())
    out = {"n": n, "correct": k, "accuracy": k / n if n else float("nan")}
    if action is not None and gold is not None:
        action, gold = np.asarray(action)[mask], np.asarray(gold)[mask]
        out["abstained"] = int((action == AMBIGUOUS).sum())
        out["false_same"] = int(((action == SAME) & (gold == DIFFERENT)).sum())
        out["missed_same"] = int(((action == DIFFERENT) & (gold == SAME)).sum())
    return out


def prominence_spearman(correct, persons: Sequence[str], prominence: Sequence[str | None]) -> dict:
    """Entity-macro Spearman correlation between ordinal prominence and accuracy (8.4).

    Items (same pairs) are first averaged within their canonical person."""
    from scipy.stats import spearmanr

    correct = np.asarray(correct, dtype=float)
    per_person: dict[str, list[float]] = {}
    stratum: dict[str, str | None] = {}
    for value, person, level in zip(correct, persons, prominence, strict=True):
        per_person.setdefault(person, []).append(value)
        stratum[person] = level
    keys = [p for p in per_person if stratum[p] in PROMINENCE_ORDER]
    x = np.array([PROMINENCE_ORDER[stratum[p]] for p in keys], dtype=float)
    y = np.array([np.mean(per_person[p]) for p in keys])
    by_stratum = {s: float(np.mean([np.mean(per_person[p]) for p in keys if stratum[p] == s]))
                  for s in PROMINENCE_ORDER if any(stratum[p] == s for p in keys)}
    if len(keys) < 3 or np.unique(x).size < 2 or np.unique(y).size < 2:
        return {"rho": float("nan"), "p": float("nan"), "entities": len(keys), "by_stratum": by_stratum}
    result = spearmanr(x, y)
    return {"rho": float(result.statistic), "p": float(result.pvalue), "entities": len(keys), "by_stratum": by_stratum}


def unresolved_summary(action, probabilities) -> dict:
    action = np.asarray(action, dtype=int)
    probabilities = np.asarray(probabilities, dtype=float)
    n = int(action.size)
    abstain = int((action == AMBIGUOUS).sum())
    return {
        "n": n, "ambiguous": abstain,
        "abstention_share": abstain / n if n else float("nan"),
        "over_resolution": (n - abstain) / n if n else float("nan"),
        "mean_p_ambiguous": float(probabilities[:, AMBIGUOUS].mean()) if n else float("nan"),
    }
