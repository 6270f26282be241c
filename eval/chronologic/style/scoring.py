"""Style scores of a candidate run: date fidelity, error in years, human authenticity (Table 4).

`histbench eval chronologic --mode style --run RUN_DIR --dataset BUILD --reference REF.parquet
 --date-model DIR --authenticity-model DIR` scores the run's answers with both trained
judges and places them conformally (conformal.py, the authors' stylejudge/score_style.py)
among the reference corpus's authentic passages, which are scored once per judge pair and
cached (`--reference-cache`, default RUN_DIR/../.style-cache).

- Answers under 6 words, and answers to questions without a `source_date`, are not
  scored (counted by reason); an answer whose window is empty is not scored on that judge.
- Date fidelity: f from the date percentiles of the signed residuals; W0 from
  pseudo-models matched on the answers' (decade, length bin) profile.
- Error in years: mean of residual minus window mean residual; negative = sounds older.
- Human authenticity: the one-sided score on the mean percentile of p(synthetic); mu0
  from the same pseudo-models.
- Also reported: the raw mean residual, mean CRPS against the target date, W, W0, T, mu0.

Intervals: 95% percentile bootstrap over answers with W0 and mu0 held at their point
values (as the authors hold them); the fidelity interval is one-sided where it reaches 100.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np

from histbench.core.atomic import atomic_path
from histbench.core.errors import EvalError
from histbench.core.hashing import sha256_path
from histbench.core.progress import log

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
    volume = frame["volume"].astype(str).to_numpy() if "volume" in frame.columns else np.array([f"row{i}" for i in range(len(frame))])
    scored = pd.DataFrame({"date": frame["date"].to_numpy(), "words": frame["text"].map(conformal.word_count).to_numpy(),
                           "volume": volume})
    texts = frame["text"].tolist()
    if DATE in judges:
        log(f"style: dating {len(texts)} reference passages (cached afterwards)")
        probs = judges[DATE].predict(texts, batch_size)
        scored["residual"] = dating.mean_date(probs) - scored["date"].to_numpy()
    if AUTHENTICITY in judges:
        log(f"style: authenticity of {len(texts)} reference passages (cached afterwards)")
        scored["p_synthetic"] = 1.0 - judges[AUTHENTICITY].predict(texts, batch_size)
    if cache is not None:
        with atomic_path(cache) as tmp:
            scored.to_parquet(tmp, index=False)
    return scored, corpus, key_parts


def _interval(values: np.ndarray, statistic, n_resamples: int, seed: int, level: float = 0.95):
    from histbench.eval.stats import bootstrap_indices, percentile_interval

    reps = statistic(values[bootstrap_indices(values.size, n_resamples, seed)])
    low, high = percentile_interval(reps, level)
    return float(low), float(high)


def summarise(kind: str, rows: list[dict], reference: conformal.Reference, null_draws: int, n_resamples: int,
              seed: int) -> dict:
    """The model-level scores of one judge from its placed answers."""
    placed = [r for r in rows if r.get(f"{kind}_percentile") is not None]
    if not placed:
        return {"estimate": None, "low": None, "high": None, "n": 0}
    q = np.array([r[f"{kind}_percentile"] for r in placed], dtype=float)
    profile = Counter((conformal.decade(r["target_date"]), r[f"{kind}_bin"]) for r in placed)
    null = conformal.null_baseline(reference, kind, profile, null_draws)
    if kind == conformal.DATE:
        w, w0 = conformal.wasserstein_to_uniform(q), null["value"]
        low, high = _interval(q, lambda x: conformal.fidelity(conformal.wasserstein_to_uniform(x), w0), n_resamples, seed)
        return {"estimate": conformal.fidelity(w, w0), "low": low, "high": high, "n": len(placed), "W": w, "W0": w0,
                "W0_sd": null["sd"], "null_draws": null_draws, "null_unmet": null["unmet"]}
    t, mu0 = float(q.mean()), null["value"]
    low, high = _interval(q, lambda x: conformal.authenticity_score(x.mean(axis=-1), mu0), n_resamples, seed)
    return {"estimate": conformal.authenticity_score(t, mu0), "low": low, "high": high, "n": len(placed), "T": t, "mu0": mu0,
            "mu0_sd": null["sd"], "null_draws": null_draws, "null_unmet": null["unmet"]}


def style_run(built, run_dir, reference_path, *, date_model=None, authenticity_model=None, length_edges=None,
              min_window: int = conformal.DEFAULT_MIN_WINDOW, null_draws: int = 2000, seed: int = 0,
              n_resamples: int = 1000, device: str | None = None, batch_size: int = 32, cache_dir=None,
              judges: dict | None = None) -> dict:
    """Score a generation run's answers with the style judges (see module docstring).
    `judges` ({kind: judge}) replaces loading them from folders (tests)."""
    from histbench.eval.stats import bootstrap_mean

    generation = read_generation(run_dir)
    questions = {q.number: q for q in load_questions(built)}
    if judges is None:
        if not date_model and not authenticity_model:
            raise EvalError("give --date-model and/or --authenticity-model")
        judges = {}
        if date_model:
            judges[DATE] = load_judge(date_model, DATE, device)
        if authenticity_model:
            judges[AUTHENTICITY] = load_judge(authenticity_model, AUTHENTICITY, device)
    cache_dir = Path(cache_dir) if cache_dir else Path(run_dir).resolve().parent / ".style-cache"
    ref_table, corpus, ref_key = score_reference(reference_path, judges, cache_dir, batch_size)
    frozen = conformal.default_length_edges()
    if length_edges is not None:
        if len(length_edges) != conformal.N_LENGTH_BINS - 1:
            raise EvalError(f"length bins need {conformal.N_LENGTH_BINS - 1} interior edges, got {list(length_edges)}",
                            field="--length-bins")
        frozen = {kind: [float(e) for e in length_edges] for kind in frozen}
    values = {}
    if DATE in judges:
        values[conformal.DATE] = ref_table["residual"].to_numpy()
    if AUTHENTICITY in judges:
        values[conformal.AUTHENTICITY] = ref_table["p_synthetic"].to_numpy()
    reference = conformal.Reference(ref_table["date"].to_numpy(), ref_table["words"].to_numpy(), ref_table["volume"].to_numpy(),
                                    values, frozen)

    rows = []
    skipped: dict[str, Counter] = {kind: Counter() for kind in values}
    scorable = []
    for a in generation["answers"]:
        q = questions.get(int(a["question_number"]))
        text = a["answer"]
        row = {"question_number": a["question_number"], "target_date": q.source_date if q else None,
               "words": conformal.word_count(text)}
        rows.append(row)
        reason = None
        if a["empty"]:
            reason = "empty answer"
        elif row["target_date"] is None:
            reason = "question has no source_date"
        elif row["words"] < conformal.MIN_WORDS:
            reason = f"under {conformal.MIN_WORDS} words"
        if reason:
            for kind in values:
                skipped[kind][reason] += 1
                row[f"{kind}_skipped"] = reason
        else:
            scorable.append((row, text))
    texts = [t for _, t in scorable]
    if DATE in judges and scorable:
        probs = judges[DATE].predict(texts, batch_size)
        means = dating.mean_date(probs)
        crps = dating.crps(probs, [r["target_date"] for r, _ in scorable])
        for (row, _), mean, score in zip(scorable, means, crps, strict=True):
            row.update(predicted_date=float(mean), residual=float(mean - row["target_date"]), crps=float(score))
    if AUTHENTICITY in judges and scorable:
        p_authentic = judges[AUTHENTICITY].predict(texts, batch_size)
        for (row, _), p in zip(scorable, p_authentic, strict=True):
            row["p_synthetic"] = float(1.0 - p)
    for row, _ in scorable:
        for kind, key in ((conformal.DATE, "residual"), (conformal.AUTHENTICITY, "p_synthetic")):
            if kind not in values:
                continue
            row[f"{kind}_bin"] = int(conformal.length_bin([row["words"]], frozen[kind])[0])
            placed = reference.place(kind, row[key], row["target_date"], row["words"], min_window)
            row.update({f"{kind}_percentile": placed["percentile"], f"{kind}_window": placed["window"]})
            if kind == conformal.DATE:
                row["window_mean_residual"] = placed["window_mean"]
                row["corrected_residual"] = None if placed["window_mean"] is None else row["residual"] - placed["window_mean"]
            if placed["percentile"] is None:
                skipped[kind]["reference window too small"] += 1
                row[f"{kind}_skipped"] = "reference window too small"

    scores: dict = {}
    if conformal.DATE in values:
        scores["date_fidelity"] = summarise(conformal.DATE, rows, reference, null_draws, n_resamples, seed)
        corrected = np.array([r["corrected_residual"] for r in rows if r.get("corrected_residual") is not None], dtype=float)
        raw = np.array([r["residual"] for r in rows if r.get("corrected_residual") is not None], dtype=float)
        crps_values = np.array([r["crps"] for r in rows if r.get("corrected_residual") is not None], dtype=float)
        err = bootstrap_mean(corrected, n_resamples, seed) if corrected.size else None
        scores["error_years"] = {**err.to_json(), "n": int(corrected.size)} if err else {"estimate": None, "n": 0}
        scores["raw_residual_years"] = float(raw.mean()) if raw.size else None
        scores["crps_years"] = float(crps_values.mean()) if crps_values.size else None
    if conformal.AUTHENTICITY in values:
        scores["human_authenticity"] = summarise(conformal.AUTHENTICITY, rows, reference, null_draws, n_resamples, seed)

    result = {
        "kind": "chronologic-style",
        "dataset": built.identity(),
        "candidate": generation.get("model"),
        "candidate_signature": (generation.get("signature") or {}).get("text"),
        "judges": {kind: judge.identity() for kind, judge in judges.items()},
        "reference": {"file": str(reference_path), **ref_key, "passages": int(len(ref_table)), "excluded": dict(corpus.excluded),
                      "volumes": "volume column" if "volume" in corpus.frame.columns else "none (each passage its own volume)",
                      "length_bin_edges": frozen, "length_bins": "given" if length_edges is not None else "authors' frozen edges",
                      "window_years": conformal.WINDOW_YEARS, "min_window": min_window},
        "options": {"null_draws": null_draws, "null_seed": conformal.NULL_SEED, "seed": seed, "n_resamples": n_resamples},
        "counts": {"answers": len(rows), "skipped": {k: dict(v) for k, v in skipped.items()}},
        "scores": scores,
        "answers": rows,
    }
    key = hashlib.sha256(json.dumps({k: v.get("weights_sha256") for k, v in result["judges"].items()}, sort_keys=True).encode()).hexdigest()[:10]
    out_dir = Path(run_dir) / f"style-{key}"
    write_json_atomic(out_dir / STYLE_NAME, result)
    from ..anchors import _write_csv

    _write_csv(out_dir / "style_answers.csv", rows)
    return result
