"""Style scores of a candidate run: date fidelity, error in years, human authenticity (Table 4).

`histbench eval chronologic --mode style --run RUN_DIR --dataset BUILD --reference REF.parquet
 --date-model DIR --authenticity-model DIR` scores the run's answers with both trained
judges and places them conformally (conformal.py) among the reference corpus's
authentic passages, which are scored once per judge pair and cached
(`--reference-cache`, default RUN_DIR/../.style-cache).

- Date fidelity: f from the date percentiles (signed residuals) of the answers that are at
  least one sentence long; W0 from the reference corpus's own sentence passages at the
  same sample size.
- Error in years: the mean signed residual (predicted mean date minus the question's
  source_date) of the same answers; negative = sounds older than the target.
- Human authenticity: f from the authenticity percentiles of the answers of 6+ words.
- Also reported: mean CRPS of the answers' date distributions against the target date.

Intervals: 95% percentile bootstrap over answers (W recomputed in each replicate, W0 kept
at the full sample size), so the fidelity interval is one-sided when it reaches 100.
Every answer that is not scored on a judge is counted with its reason.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np

from histbench.builders.core.atomic import atomic_path
from histbench.builders.core.errors import EvalError
from histbench.builders.core.hashing import sha256_path
from histbench.builders.core.progress import log

from ..generation import load_questions, read_generation, write_json_atomic
from . import conformal, dating
from .corpus import read_reference_corpus
from .encoders import AUTHENTICITY, DATE, load_judge

STYLE_NAME = "style.json"


def score_reference(reference_path, judges: dict, cache_dir: Path | None, batch_size: int = 32):
    """The reference corpus with each judge's value per passage (cached as parquet)."""
    import pandas as pd

    corpus = read_reference_corpus(reference_path)
    frame = corpus.frame
    key_parts = {"reference": sha256_path(Path(reference_path)),
                 **{kind: judge.identity()["weights_sha256"] for kind, judge in judges.items()}}
    key = hashlib.sha256(json.dumps(key_parts, sort_keys=True).encode()).hexdigest()[:16]
    cache = Path(cache_dir) / f"reference-{key}.parquet" if cache_dir else None
    if cache is not None and cache.is_file():
        scored = pd.read_parquet(cache)
        if len(scored) == len(frame):
            return scored, corpus, key_parts
    scored = pd.DataFrame({"date": frame["date"].to_numpy(), "words": frame["text"].map(conformal.word_count).to_numpy(),
                           "is_sentence": frame["text"].map(conformal.is_sentence).to_numpy()})
    texts = frame["text"].tolist()
    if DATE in judges:
        log(f"style: dating {len(texts)} reference passages (cached afterwards)")
        probs = judges[DATE].predict(texts, batch_size)
        scored["residual"] = dating.mean_date(probs) - scored["date"].to_numpy()
    if AUTHENTICITY in judges:
        log(f"style: authenticity of {len(texts)} reference passages (cached afterwards)")
        scored["p_authentic"] = judges[AUTHENTICITY].predict(texts, batch_size)
    if cache is not None:
        with atomic_path(cache) as tmp:
            scored.to_parquet(tmp, index=False)
    return scored, corpus, key_parts


def fidelity_with_interval(percentiles: np.ndarray, w0: float, n_resamples: int, seed: int, level: float = 0.95) -> dict:
    from histbench.eval.stats import bootstrap_indices, percentile_interval

    n = len(percentiles)
    if n == 0 or not np.isfinite(w0):
        return {"estimate": None, "low": None, "high": None, "n": n, "W": None, "W0": None}
    w = conformal.wasserstein_to_uniform(percentiles)
    reps = conformal.wasserstein_to_uniform(percentiles[bootstrap_indices(n, n_resamples, seed)])
    f_reps = 100.0 * (1.0 - np.maximum(0.0, reps - w0) / (conformal.W_MAX - w0))
    low, high = percentile_interval(f_reps, level)
    return {"estimate": conformal.fidelity(w, w0), "low": float(low), "high": float(high), "n": n, "W": w, "W0": w0}


def style_run(built, run_dir, reference_path, *, date_model=None, authenticity_model=None, length_edges=None,
              min_window: int = conformal.DEFAULT_MIN_WINDOW, w0_draws: int = 1000, w0_pool: int = 20000, seed: int = 0,
              n_resamples: int = 1000, device: str | None = None, batch_size: int = 32, cache_dir=None) -> dict:
    from histbench.eval.stats import bootstrap_mean

    if not date_model and not authenticity_model:
        raise EvalError("give --date-model and/or --authenticity-model")
    generation = read_generation(run_dir)
    questions = {q.number: q for q in load_questions(built)}
    judges = {}
    if date_model:
        judges[DATE] = load_judge(date_model, DATE, device)
    if authenticity_model:
        judges[AUTHENTICITY] = load_judge(authenticity_model, AUTHENTICITY, device)
    cache_dir = Path(cache_dir) if cache_dir else Path(run_dir).resolve().parent / ".style-cache"
    ref_table, corpus, ref_key = score_reference(reference_path, judges, cache_dir, batch_size)
    words_ref = ref_table["words"].to_numpy()
    edges = np.asarray(length_edges, dtype=float) if length_edges is not None else conformal.length_bin_edges(words_ref)
    if edges.size != conformal.N_LENGTH_BINS - 1:
        raise EvalError(f"length bins need {conformal.N_LENGTH_BINS - 1} interior edges, got {edges.tolist()}", field="--length-bins")
    values = {}
    if DATE in judges:
        values[DATE] = np.where(ref_table["is_sentence"].to_numpy(), ref_table["residual"].to_numpy(), np.nan)
    if AUTHENTICITY in judges:
        values[AUTHENTICITY] = np.where(words_ref >= conformal.MIN_WORDS_AUTHENTICITY, ref_table["p_authentic"].to_numpy(), np.nan)
    reference = conformal.Reference(ref_table["date"].to_numpy(), words_ref, edges, values)

    answers = generation["answers"]
    rows = []
    skipped: dict[str, Counter] = {DATE: Counter(), AUTHENTICITY: Counter()}
    date_texts, date_rows, auth_texts, auth_rows = [], [], [], []
    for a in answers:
        q = questions.get(int(a["question_number"]))
        text = a["answer"]
        row = {"question_number": a["question_number"], "target_date": q.source_date if q else None,
               "words": conformal.word_count(text), "is_sentence": conformal.is_sentence(text)}
        rows.append(row)
        for kind in judges:
            reason = None
            if a["empty"]:
                reason = "empty answer"
            elif row["target_date"] is None:
                reason = "question has no source_date"
            elif kind == DATE and not row["is_sentence"]:
                reason = "less than one sentence"
            elif kind == AUTHENTICITY and row["words"] < conformal.MIN_WORDS_AUTHENTICITY:
                reason = f"under {conformal.MIN_WORDS_AUTHENTICITY} words"
            if reason:
                skipped[kind][reason] += 1
                row[f"{kind}_skipped"] = reason
            elif kind == DATE:
                date_texts.append(text)
                date_rows.append(row)
            else:
                auth_texts.append(text)
                auth_rows.append(row)
    if date_rows:
        probs = judges[DATE].predict(date_texts, batch_size)
        means = dating.mean_date(probs)
        crps = dating.crps(probs, [r["target_date"] for r in date_rows])
        for row, mean, score in zip(date_rows, means, crps, strict=True):
            row.update(predicted_date=float(mean), residual=float(mean - row["target_date"]), crps=float(score))
            pct, size = reference.place(DATE, row["residual"], row["target_date"], row["words"], min_window)
            row.update(date_percentile=pct, date_window=size)
            if pct is None:
                skipped[DATE]["reference window too small"] += 1
                row["date_skipped"] = "reference window too small"
    if auth_rows:
        probs = judges[AUTHENTICITY].predict(auth_texts, batch_size)
        for row, p in zip(auth_rows, probs, strict=True):
            row["p_authentic"] = float(p)
            pct, size = reference.place(AUTHENTICITY, float(p), row["target_date"], row["words"], min_window)
            row.update(authenticity_percentile=pct, authenticity_window=size)
            if pct is None:
                skipped[AUTHENTICITY]["reference window too small"] += 1
                row["authenticity_skipped"] = "reference window too small"

    scores: dict = {}
    pools = {}
    for kind, column in ((DATE, "date_percentile"), (AUTHENTICITY, "authenticity_percentile")):
        if kind not in judges:
            continue
        percentiles = np.array([r[column] for r in rows if r.get(column) is not None], dtype=float)
        pool = reference.self_percentiles(kind, max_pool=w0_pool, seed=seed, min_window=min_window)
        pools[kind] = int(pool.size)
        w0 = conformal.expected_w0(pool, len(percentiles), w0_draws, seed) if len(percentiles) else float("nan")
        scores["date_fidelity" if kind == DATE else "human_authenticity"] = fidelity_with_interval(percentiles, w0, n_resamples, seed)
    if DATE in judges:
        residuals = np.array([r["residual"] for r in rows if r.get("date_percentile") is not None], dtype=float)
        crps_values = np.array([r["crps"] for r in rows if r.get("date_percentile") is not None], dtype=float)
        err = bootstrap_mean(residuals, n_resamples, seed) if residuals.size else None
        scores["error_years"] = {**err.to_json(), "n": int(residuals.size)} if err else {"estimate": None, "n": 0}
        scores["crps_years"] = float(crps_values.mean()) if crps_values.size else None

    result = {
        "kind": "chronologic-style",
        "dataset": built.identity(),
        "candidate": generation.get("model"),
        "candidate_signature": (generation.get("signature") or {}).get("text"),
        "judges": {kind: judge.identity() for kind, judge in judges.items()},
        "reference": {"file": str(reference_path), **ref_key, "passages": int(len(ref_table)), "excluded": dict(corpus.excluded),
                      "length_bin_edges": edges.tolist(), "length_bins": "given" if length_edges is not None else "reference sextiles",
                      "window_years": conformal.WINDOW_YEARS, "min_window": min_window, "w0_pool": pools},
        "options": {"w0_draws": w0_draws, "seed": seed, "n_resamples": n_resamples},
        "counts": {"answers": len(rows), "skipped": {k: dict(v) for k, v in skipped.items() if k in judges}},
        "scores": scores,
        "answers": rows,
    }
    key = hashlib.sha256(json.dumps({k: v["weights_sha256"] for k, v in result["judges"].items()}, sort_keys=True).encode()).hexdigest()[:10]
    out_dir = Path(run_dir) / f"style-{key}"
    write_json_atomic(out_dir / STYLE_NAME, result)
    from ..anchors import _write_csv

    _write_csv(out_dir / "style_answers.csv", rows)
    return result
