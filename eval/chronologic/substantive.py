"""Substantive scoring of a candidate run (paper 5.2.2, A.2): pass/fail and partial credit.

`histbench eval chronologic --mode judge --run RUN_DIR --judge SPEC --anchors ANCHORS [--partial-judge SPEC]`
reads the candidate's answers (generation.json), the frozen anchors, and asks the judges:

- pass/fail path (anchors' paths): the candidate against each ground truth, one seeded
  order each; a split result with two ground truths gets one tie-break trial in the
  reversed order (judge.py). Score 0, 1/3, 2/3 or 1.
- partial-credit path: the candidate against every anchor in both orders; theta_c by MAP
  with the anchors frozen; delta = theta_c - mean(theta_GT); score p_fit from the anchors'
  calibration.

An empty answer is not judged and scores 0. A question whose needed verdicts could not
be parsed (or whose requests failed) has no score: it is left out of the means and
counted. Results go to RUN_DIR/judged-<judge>/ (substantive.json and ledger.csv); the
judges' answers stay in that folder's run stores, so a rerun or a resumed run asks no
comparison twice.

Group scores (Cloze, Generation, Knowledge; Table 4) are the mean question score x 100,
with 95% percentile bootstrap intervals over questions (Table 7). The bootstrap resamples
questions and, in the same replicate, refits the calibration slope on the anchors'
leave-one-out evidence reweighted by how often each question was drawn (the candidate's
questions and the calibration's questions are the same benchmark questions), so the
partial-credit intervals carry the calibration's uncertainty; the point estimate uses
the frozen slope, so those intervals need not be centred on it (as Table 7 notes).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from histbench.builders.core.errors import EvalError
from histbench.builders.core.progress import log

from . import bradley_terry as bt
from .anchors import Anchors, _write_csv
from .generation import PromptSet, load_prompts, load_questions, read_generation, write_json_atomic
from .judge import (
    CANDIDATE,
    PARTIAL,
    PASS_FAIL,
    TIE,
    candidate_partial_trials,
    candidate_pass_fail_trials,
    candidate_passes,
    judge_request,
    needs_tiebreak,
    parse_judge_result,
    pass_fail_score,
    tiebreak_trial,
    verdict_of,
)

SUBSTANTIVE_NAME = "substantive.json"
LEDGER_NAME = "ledger.csv"
GROUP_ORDER = ("cloze", "generation", "knowledge")


def judge_slug(spec: str) -> str:
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", spec.split("@")[0])[:48].strip("_")
    return f"{readable}-{hashlib.sha256(spec.encode()).hexdigest()[:8]}"


def judged_dir(run_dir: str | os.PathLike, pass_fail_spec: str) -> Path:
    return Path(run_dir) / f"judged-{judge_slug(pass_fail_spec)}"


def _check_identity(anchors: Anchors, partial_backend, prompts: PromptSet, allow_mismatch: bool) -> None:
    theirs = (anchors.data.get("judges") or {}).get(PARTIAL, {}).get("spec")
    if theirs and theirs != partial_backend.spec and not allow_mismatch:
        raise EvalError(f"the anchors were judged by {theirs!r}, but the partial-credit judge here is {partial_backend.spec!r}; "
                        "use the same judge (--partial-judge) or pass --allow-judge-mismatch", file=anchors.path)
    their_prompt = (anchors.data.get("prompt_hashes") or {}).get(PARTIAL)
    if their_prompt and their_prompt != prompts.hashes[PARTIAL] and not allow_mismatch:
        raise EvalError("the anchors were judged with another partial-credit prompt (its hash differs); rebuild the anchors "
                        "or pass --allow-judge-mismatch", file=anchors.path)


def judge_run(built, run_dir: str | os.PathLike, pass_fail_backend, partial_backend, anchors: Anchors, *,
              prompts: PromptSet | None = None, seed: int = 0, judge_max_tokens: int = 64, n_resamples: int = 1000,
              bootstrap_seed: int = 0, allow_judge_mismatch: bool = False) -> dict:
    from histbench.eval.runstore import RunStore, summarize
    from histbench.eval.signature import make_signature

    prompts = prompts or load_prompts()
    _check_identity(anchors, partial_backend, prompts, allow_judge_mismatch)
    generation = read_generation(run_dir)
    ours = built.identity().get("data_sha256")
    theirs = (generation.get("dataset") or {}).get("data_sha256")
    if ours and theirs and ours != theirs:
        raise EvalError(f"the run's answers were generated on dataset data {theirs[:12]}, not on this build ({ours[:12]})", file=run_dir)
    questions = {q.number: q for q in load_questions(built)}
    answers = {int(a["question_number"]): a for a in generation["answers"]}
    paths = anchors.paths
    unknown = sorted(set(answers) - set(questions))
    if unknown:
        raise EvalError(f"the run answers questions not in this build: {unknown[:10]}", file=run_dir)
    missing_path = sorted(n for n in answers if n not in paths)
    if missing_path:
        raise EvalError(f"the anchors cover no path for questions {missing_path[:10]} (anchors built with --limit?)", file=anchors.path)
    needs_partial = any(paths[n] == PARTIAL and not answers[n]["empty"] for n in answers)
    calibration = anchors.calibration if needs_partial else None  # an error only when partial credit is needed
    prior_sd = anchors.prior_sd
    out_dir = judged_dir(run_dir, pass_fail_backend.spec)
    options = {"mode": "judge", "seed": seed, "judge_max_tokens": judge_max_tokens, "anchors": str(anchors.path)}

    order = [n for n in questions if n in answers]
    judged = [n for n in order if not answers[n]["empty"]]
    pf = [n for n in judged if paths[n] == PASS_FAIL]
    partial = [n for n in judged if paths[n] == PARTIAL]

    def request(n, trial):
        return judge_request(questions[n], trial, prompts, candidate=answers[n]["answer"], max_new_tokens=judge_max_tokens)

    # pass/fail: first stage, then tie-breaks
    pf_store = RunStore.open(out_dir / "judge-pass-fail", backend=pass_fail_backend, dataset=built,
                             options={**options, "prompt_hash": prompts.hashes[PASS_FAIL]})
    stage1 = [(n, t) for n in pf for t in candidate_pass_fail_trials(questions[n], seed)]
    log(f"chronologic judge: {len(stage1)} pass/fail trials on {len(pf)} questions")
    records1 = pf_store.run([request(n, t) for n, t in stage1], parse=parse_judge_result, desc="chronologic: pass/fail judge")
    first: dict[int, list] = {n: [] for n in pf}
    for (n, trial), record in zip(stage1, records1, strict=True):
        first[n].append((trial, candidate_passes(trial, verdict_of(record)), verdict_of(record)))
    stage2 = []
    for n in pf:
        results = [r for _, r, _ in first[n]]
        if needs_tiebreak(results):
            failed = next(t for t, r, _ in first[n] if r is False)
            stage2.append((n, tiebreak_trial(failed)))
    records2 = pf_store.run([request(n, t) for n, t in stage2], parse=parse_judge_result, desc="chronologic: tie-breaks") if stage2 else []
    tiebreaks = {n: (trial, candidate_passes(trial, verdict_of(record)), verdict_of(record))
                 for (n, trial), record in zip(stage2, records2, strict=True)}

    # partial credit
    partial_store = RunStore.open(out_dir / "judge-partial", backend=partial_backend, dataset=built,
                                  options={**options, "prompt_hash": prompts.hashes[PARTIAL]})
    plan = [(n, t) for n in partial for t in candidate_partial_trials(questions[n])]
    log(f"chronologic judge: {len(plan)} partial-credit comparisons on {len(partial)} questions")
    records3 = partial_store.run([request(n, t) for n, t in plan], parse=parse_judge_result, desc="chronologic: partial-credit judge")
    outcomes: dict[int, dict] = {n: {"outcomes": [], "ties": 0, "unparsed": 0} for n in partial}
    for (n, trial), record in zip(plan, records3, strict=True):
        verdict = verdict_of(record)
        if verdict is None:
            outcomes[n]["unparsed"] += 1
        elif verdict == TIE:
            outcomes[n]["ties"] += 1
        else:
            anchor = trial.second if trial.first == CANDIDATE else trial.first
            outcomes[n]["outcomes"].append((anchor, trial.winner(verdict) == CANDIDATE))

    ledger = []
    for n in order:
        q = questions[n]
        a = answers[n]
        row = {"question_number": n, "reasoning_type": q.reasoning_type, "group": q.group, "path": paths[n],
               "n_ground_truths": len(q.ground_truths), "answer_words": len(a["answer"].split()), "empty_answer": a["empty"],
               "score": float("nan"), "status": "scored", "trials": 0, "passes": None, "tiebreak": None,
               "verdicts": "", "theta": None, "delta": None, "p_fit": None, "wins": None, "ties": None, "unparsed": 0}
        if a["empty"]:
            row.update(score=0.0, status="empty answer")
        elif paths[n] == PASS_FAIL:
            results = [r for _, r, _ in first[n]]
            tb = tiebreaks.get(n)
            row["verdicts"] = " ".join(f"{'c' if t.first == CANDIDATE else t.first}-{'c' if t.second == CANDIDATE else t.second}:{v}"
                                       for t, _, v in first[n] + ([tb] if tb else []))
            row["trials"] = len(results) + (1 if tb else 0)
            row["passes"] = sum(bool(r) for r in results) + (1 if tb and tb[1] else 0)
            row["tiebreak"] = None if tb is None else tb[1]
            row["unparsed"] = sum(r is None for r in results) + (1 if tb and tb[1] is None else 0)
            row["score"] = pass_fail_score(results, None if tb is None else tb[1])
            if math.isnan(row["score"]):
                row["status"] = "judge answer missing or unparsed"
        else:
            info = outcomes[n]
            row.update(trials=len(info["outcomes"]) + info["ties"] + info["unparsed"], ties=info["ties"], unparsed=info["unparsed"],
                       wins=sum(won for _, won in info["outcomes"]))
            if info["outcomes"]:
                anchors_theta = anchors.theta(n)
                theta = bt.fit_candidate(anchors_theta, info["outcomes"], prior_sd)
                delta = bt.candidate_delta(theta, anchors_theta, q.ground_truths)
                row.update(theta=theta, delta=delta, p_fit=calibration.p_fit(delta), score=calibration.p_fit(delta))
            else:
                row["status"] = "no usable comparison (all ties or unparsed)"
        ledger.append(row)

    aggregate = aggregate_substantive(ledger, anchors.data.get("calibration_observations") or [], calibration,
                                      n_resamples=n_resamples, seed=bootstrap_seed)
    signature = make_signature(dataset=built.identity(), backend=pass_fail_backend.identity(), decoding={"temperature": 0.0,
                               "max_new_tokens": judge_max_tokens, "order_seed": seed},
                               prompt_template_hash=prompts.hashes[PASS_FAIL], mode="judge",
                               partial_judge=partial_backend.spec, partial_prompt=prompts.hashes[PARTIAL][:12])
    result = {
        "kind": "chronologic-substantive",
        "signature": signature.to_dict(),
        "candidate": generation.get("model"),
        "candidate_signature": (generation.get("signature") or {}).get("text"),
        "dataset": built.identity(),
        "judges": {PASS_FAIL: pass_fail_backend.identity(), PARTIAL: partial_backend.identity()},
        "prompt_hashes": {PASS_FAIL: prompts.hashes[PASS_FAIL], PARTIAL: prompts.hashes[PARTIAL]},
        "anchors": {"path": str(anchors.path), "calibration": anchors.data.get("calibration"), "prior_sd": prior_sd,
                    "reliability": anchors.data["reliability"]["pooled"]},
        "options": {**options, "n_resamples": n_resamples, "bootstrap_seed": bootstrap_seed},
        "counts": {
            "questions": len(order),
            "empty_answers": sum(r["empty_answer"] for r in ledger),
            "pass_fail_questions": sum(r["path"] == PASS_FAIL for r in ledger),
            "partial_questions": sum(r["path"] == PARTIAL for r in ledger),
            "unscored_questions": sum(r["status"] not in ("scored", "empty answer") for r in ledger),
            "tiebreaks": len(stage2),
            "pass_fail_requests": summarize(list(records1) + list(records2)),
            "partial_requests": summarize(records3),
            "partial_ties": sum(o["ties"] for o in outcomes.values()),
        },
        "scores": aggregate,
        "ledger": ledger,
    }
    write_json_atomic(out_dir / SUBSTANTIVE_NAME, result)
    _write_csv(out_dir / LEDGER_NAME, ledger)
    return result


def aggregate_substantive(ledger: Sequence[dict], observations: Sequence[dict], calibration, *, n_resamples: int = 1000,
                          seed: int = 0, level: float = 0.95) -> dict:
    """Per-group and per-channel means (x 100) with bootstrap intervals (see module docstring)."""
    from histbench.eval.stats import bootstrap_counts, percentile_interval

    from .calibration import fit_slopes_bootstrap, observation_weights

    numbers = [r["question_number"] for r in ledger]
    index = {n: i for i, n in enumerate(numbers)}
    scores = np.array([r["score"] for r in ledger], dtype=float)
    delta = np.array([np.nan if r.get("delta") is None else r["delta"] for r in ledger], dtype=float)
    is_partial = np.array([r["path"] == PARTIAL and r.get("delta") is not None for r in ledger])
    groups = np.array([r["group"] for r in ledger], dtype=object)

    usable = [o for o in observations if "skipped" not in o] if calibration is not None else []
    obs_delta = np.array([o["delta"] for o in usable], dtype=float)
    obs_label = np.array([o["label"] for o in usable], dtype=float)
    obs_weight = observation_weights([o["kind"] for o in usable], calibration.gt_weight_ratio) if usable else np.zeros(0)
    # observations of questions this run does not cover keep a multiplicity of 1 in every replicate
    obs_index = np.array([index.get(o["question_number"], -1) for o in usable], dtype=int)

    n = len(ledger)
    counts = bootstrap_counts(n, n_resamples, seed)  # (B, n)
    if usable and is_partial.any():
        obs_counts = np.where(obs_index[None, :] >= 0, counts[:, np.clip(obs_index, 0, None)], 1)
        slopes = fit_slopes_bootstrap(obs_delta, obs_label, obs_weight, obs_counts, calibration.intercept, calibration.slope)
    else:
        slopes = np.full(n_resamples, calibration.slope if calibration is not None else np.nan)
    # replicate scores: pass/fail questions keep their score; partial ones use the replicate slope
    from scipy.special import expit

    rep_scores = np.broadcast_to(scores, (n_resamples, n)).copy()
    if is_partial.any() and calibration is not None:
        rep_scores[:, is_partial] = expit(calibration.intercept + slopes[:, None] * delta[None, is_partial])

    def summary(mask) -> dict:
        defined = mask & ~np.isnan(scores)
        if not defined.any():
            return {"estimate": None, "low": None, "high": None, "n": 0, "unscored": int((mask & np.isnan(scores)).sum())}
        c = counts[:, defined].astype(float)
        values = rep_scores[:, defined]
        with np.errstate(invalid="ignore", divide="ignore"):
            rep = (c * values).sum(axis=1) / c.sum(axis=1)
        estimate = 100 * float(scores[defined].mean())
        if np.isnan(rep).all():
            low = high = None
        else:
            low, high = (100 * float(v) for v in percentile_interval(rep, level))
        return {"estimate": estimate, "low": low, "high": high, "n": int(defined.sum()),
                "unscored": int((mask & np.isnan(scores)).sum())}

    out = {"groups": {g: summary(groups == g) for g in GROUP_ORDER},
           "channels": {PASS_FAIL: summary(np.array([r["path"] == PASS_FAIL for r in ledger])),
                        PARTIAL: summary(np.array([r["path"] == PARTIAL for r in ledger]))},
           "overall": summary(np.ones(n, dtype=bool)),
           "bootstrap": {"resamples": n_resamples, "seed": seed, "level": level,
                         "slope_replicates_undefined": int(np.isnan(slopes).sum())}}
    by_type: dict[str, dict] = {}
    for rtype in sorted({r["reasoning_type"] for r in ledger}):
        by_type[rtype] = summary(np.array([r["reasoning_type"] == rtype for r in ledger]))
    out["reasoning_types"] = by_type
    return out
