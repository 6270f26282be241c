"""Scoring a run: beta and delta per (model, sentence), and summaries per model and group.

Inputs are the run's tables (sentences, predictions, annotations). See metrics.py for the
formulas and for what is and is not scored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .metrics import (
    DEFAULT_MODE,
    PROBABILITY_MODES,
    Candidate,
    attach_sigmas,
    resolve_sigmas,
    score_candidates,
)


@dataclass
class ScoreOptions:
    mode: str = DEFAULT_MODE                 # raw | renormalised: which beta/delta the report leads with
    conflicts: str = "mean"                  # mean | error | prefer:NAME
    sigma_source: str = "manual"             # manual | automatic | manual+automatic
    allow_unannotated: bool = False
    fold_case: bool = True
    bootstrap: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in PROBABILITY_MODES:
            raise ValueError(f"unknown probability mode {self.mode!r} ({', '.join(PROBABILITY_MODES)})")

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in ("mode", "conflicts", "sigma_source", "allow_unannotated", "fold_case", "bootstrap", "seed")}


@dataclass
class Scores:
    pairs: list[dict]                       # one row per (model, sentence)
    candidates: list[dict]                  # one row per prediction, with status and sigma
    summary: list[dict]                     # one row per (model, group) and (model, "all")
    models: list[str]
    groups: list[str]
    options: ScoreOptions
    counts: dict = field(default_factory=dict)


def score_run(sentences: Sequence[dict], predictions: Sequence[dict], annotations: Sequence[dict],
              options: ScoreOptions | None = None, groups: Sequence[str] | None = None) -> Scores:
    options = options or ScoreOptions()
    sigmas = resolve_sigmas(annotations, fold_case=options.fold_case, policy=options.conflicts, source=options.sigma_source)
    by_pair: dict[tuple[str, str], list[Candidate]] = {}
    for p in sorted(predictions, key=lambda r: r["rank"]):
        by_pair.setdefault((p["model"], p["sentence_id"]), []).append(
            Candidate(p["rank"], p["token"], p["word"], p["kind"], float(p["probability"]))
        )
    # keep the order in which models appear in the predictions table (the run's order)
    models = list(dict.fromkeys(p["model"] for p in predictions))
    from histbench.builders.valence.sentences import GroupSet

    seen_groups = list(dict.fromkeys(s["group"] for s in sentences))
    group_order = [g for g in GroupSet(tuple(groups) if groups else None).order(seen_groups) if g in seen_groups]
    pairs, candidates = [], []
    for model in models:
        for s in sentences:
            cands = by_pair.get((model, s["sentence_id"]))
            if cands is None:
                pairs.append(_missing_pair(model, s))
                continue
            attach_sigmas(cands, s["sentence_id"], sigmas, options.fold_case)
            result = score_candidates(cands, s["rho"], allow_unannotated=options.allow_unannotated)
            pairs.append({
                "model": model, "sentence_id": s["sentence_id"], "group": s["group"], "rho": s["rho"],
                **result,
                "beta": result[f"beta_{options.mode}"], "delta": result[f"delta_{options.mode}"],
                "conflicts": sum(
                    1 for c in cands if c.status == "scored" and sigmas.get((s["sentence_id"], _key(c.word, options.fold_case))) is not None
                    and sigmas[(s["sentence_id"], _key(c.word, options.fold_case))].conflict
                ),
            })
            for c in cands:
                resolved = sigmas.get((s["sentence_id"], _key(c.word, options.fold_case))) if c.kind == "word" else None
                candidates.append({
                    "model": model, "sentence_id": s["sentence_id"], "rank": c.rank, "token": c.token, "word": c.word,
                    "kind": c.kind, "probability": c.probability, "sigma": c.sigma, "status": c.status,
                    "annotators": len(resolved.annotators) if resolved else 0,
                    "conflict": bool(resolved.conflict) if resolved else False,
                    "method": resolved.method if resolved else None,
                })
    summary = summarise(pairs, models, group_order, options)
    counts = {
        "pairs": len(pairs),
        "status": _count(pairs, "status"),
        "candidates": len(candidates),
        "candidate_status": _count(candidates, "status"),
        "conflicting_pairs_used": sum(1 for key, r in sigmas.items() if r.conflict),
        "sigma_methods": sorted({r.method for r in sigmas.values()}),
    }
    return Scores(pairs, candidates, summary, models, group_order, options, counts)


def _key(word: str, fold: bool) -> str:
    from .metrics import key_of

    return key_of(word, fold)


def _missing_pair(model: str, s: dict) -> dict:
    nan = float("nan")
    return {
        "model": model, "sentence_id": s["sentence_id"], "group": s["group"], "rho": s["rho"], "k": 0, "n_scored": 0,
        "n_unannotated": 0, "mass_topk": 0.0, "mass_scored": 0.0, "mass_subword": 0.0, "mass_special": 0.0,
        "mass_skipped": 0.0, "mass_unannotated": 0.0, "beta_raw": nan, "beta_renormalised": nan, "delta_raw": nan,
        "delta_renormalised": nan, "status": "no prediction", "beta": nan, "delta": nan, "conflicts": 0,
    }


def _count(rows: Sequence[dict], column: str) -> dict:
    out: dict = {}
    for r in rows:
        out[r[column]] = out.get(r[column], 0) + 1
    return out


def summarise(pairs: Sequence[dict], models: Sequence[str], groups: Sequence[str], options: ScoreOptions) -> list[dict]:
    """Mean (with a percentile bootstrap interval over sentences), median and SD of beta and
    delta per model and group, plus each model over all sentences ("all")."""
    from histbench.eval.stats import bootstrap_mean

    rows = []
    for model in models:
        for group in [*groups, "all"]:
            chosen = [p for p in pairs if p["model"] == model and (group == "all" or p["group"] == group)]
            if not chosen:
                continue
            row = {"model": model, "group": group, "sentences": len(chosen),
                   "scored": sum(p["status"] == "ok" for p in chosen),
                   "not_scored": sum(p["status"] != "ok" for p in chosen),
                   "mean_rho": float(np.mean([p["rho"] for p in chosen]))}
            for mode in PROBABILITY_MODES:
                for metric in ("beta", "delta"):
                    values = np.array([p[f"{metric}_{mode}"] for p in chosen], dtype=float)
                    defined = values[~np.isnan(values)]
                    interval = bootstrap_mean(values, n_resamples=options.bootstrap, seed=options.seed)
                    row[f"{metric}_{mode}_mean"] = interval.estimate
                    row[f"{metric}_{mode}_low"] = interval.low
                    row[f"{metric}_{mode}_high"] = interval.high
                    row[f"{metric}_{mode}_n"] = interval.n
                    if interval.constant:
                        row[f"{metric}_{mode}_constant"] = True
                    row[f"{metric}_{mode}_median"] = float(np.median(defined)) if defined.size else math.nan
                    row[f"{metric}_{mode}_sd"] = float(np.std(defined, ddof=1)) if defined.size > 1 else math.nan
            row["mass_scored_mean"] = float(np.mean([p["mass_scored"] for p in chosen]))
            row["mass_subword_mean"] = float(np.mean([p["mass_subword"] for p in chosen]))
            row["mass_unannotated_mean"] = float(np.mean([p["mass_unannotated"] for p in chosen]))
            rows.append(row)
    return rows
