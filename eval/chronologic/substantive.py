"""Substantive scoring of a candidate run (paper 5.2.2, A.2): pass/fail and partial credit.

`histbench eval chronologic --mode judge --run RUN_DIR --judge SPEC --anchors ANCHORS [--partial-judge SPEC]`
reads the candidate's answers, the frozen instruments, and asks the judges (the authors'
judge_scoring_nocontext.py, bt_context_scoring.py score and substantive/estimator.py):

- path: the question's released `partial_credit` field (0 pass/fail, 1 partial credit).
- automatic verdicts first (judge.auto_verdict): an answer identical to a ground truth
  scores 1, one identical to a probability-0 distractor scores 0 (on the pass/fail path
  only a distractor of penalty class question or both), with no judge call.
- pass/fail: the trials of judge.candidate_pass_fail_trials (three with two ground
  truths); an unparsed reply is retried once and then fails; the score is the share of
  trials passed.
- partial credit: the candidate against the seeded reference ground truth and every
  distractor, both orders; a pair unparsed after the retry is dropped; delta by cut
  inference against the anchors' posterior (bradley_terry.py); the score is
  sigmoid(intercept + slope * mean delta), the authors' plug-in point.

An empty answer is not judged and scores 0; a partial-credit question left with no usable
comparison has no score (left out of the means and counted).

Group scores (Cloze, Generation, Knowledge; Table 4) are count-weighted means over both
channels x 100. Intervals (Table 7): the authors' three-layer bootstrap,
`--bootstrap-layers` judgment,instrument,item (default all three): in each replicate the
judgment layer draws one delta from each partial-credit question's posterior draws, the
instrument layer one slope from the calibration draws, and the item layer resamples the
group's questions with replacement within each channel; the point estimate is the
plug-in, so the intervals need not be centred on it (as Table 7 notes). Results go to
RUN_DIR/judged-<judge>/ (substantive.json, ledger.csv, delta_draws.npz); the judges'
answers stay in that folder's run stores, so a rerun or a resumed run asks no comparison
twice.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from histbench.core.atomic import atomic_path
from histbench.core.errors import EvalError
from histbench.core.progress import log

from . import bradley_terry as bt
from .anchors import Anchors, _write_csv, outcomes_of, wins_from
from .generation import PromptSet, load_prompts, load_questions, read_generation, write_json_atomic
from .judge import (
    CANDIDATE,
    PARTIAL,
    PASS_FAIL,
    ask,
    auto_verdict,
    candidate_partial_trials,
    candidate_pass_fail_trials,
    candidate_passes,
    judge_max_tokens,
    load_penalties,
    pass_fail_score,
)

SUBSTANTIVE_NAME = "substantive.json"
LEDGER_NAME = "ledger.csv"
DELTA_DRAWS_NAME = "delta_draws.npz"
GROUP_ORDER = ("cloze", "generation", "knowledge")
LAYERS = ("judgment", "instrument", "item")
DELTA_DRAWS = 1000


def judge_slug(spec: str) -> str:
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", spec.split("@")[0])[:48].strip("_")
    return f"{readable}-{hashlib.sha256(spec.encode()).hexdigest()[:8]}"


def judged_dir(run_dir: str | os.PathLike, pass_fail_spec: str) -> Path:
    return Path(run_dir) / f"judged-{judge_slug(pass_fail_spec)}"


def _check_identity(anchors: Anchors, partial_backend, prompts: PromptSet, allow_mismatch: bool) -> None:
    theirs = (anchors.data.get("judges") or {}).get(PARTIAL, {}).get("spec")
    if theirs and not anchors.published and theirs != partial_backend.spec and not allow_mismatch:
        raise EvalError(f"the anchors were judged by {theirs!r}, but the partial-credit judge here is {partial_backend.spec!r}; "
                        "use the same judge (--partial-judge) or pass --allow-judge-mismatch", file=anchors.path)
    their_prompt = (anchors.data.get("prompt_hashes") or {}).get(PARTIAL)
    if their_prompt and their_prompt != prompts.hashes[PARTIAL] and not allow_mismatch:
        raise EvalError("the anchors were judged with another partial-credit prompt (its hash differs); rebuild the anchors "
                        "or pass --allow-judge-mismatch", file=anchors.path)


def judge_run(built, run_dir: str | os.PathLike, pass_fail_backend, partial_backend, anchors: Anchors, *,
              prompts: PromptSet | None = None, seed: int = 0, judge_effort: str = "medium", n_resamples: int = 2000,
              bootstrap_seed: int = 20260817, layers: Sequence[str] = LAYERS, allow_judge_mismatch: bool = False) -> dict:
    from histbench.eval.signature import make_signature

    prompts = prompts or load_prompts()
    penalties = load_penalties()
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
    out_dir = judged_dir(run_dir, pass_fail_backend.spec)
    options = {"mode": "judge", "seed": seed, "judge_effort": judge_effort, "anchors": str(anchors.path)}
    tokens = {p: judge_max_tokens(prompts, p, judge_effort) for p in (PASS_FAIL, PARTIAL)}

    order = [n for n in questions if n in answers]
    autos = {n: auto_verdict(questions[n], answers[n]["answer"], paths[n], penalties)
             for n in order if not answers[n]["empty"]}
    judged = [n for n in order if not answers[n]["empty"] and autos[n] is None]
    pf = [n for n in judged if paths[n] == PASS_FAIL]
    partial = [n for n in judged if paths[n] == PARTIAL]
    calibration = anchors.calibration if partial or any(paths[n] == PARTIAL for n in autos) else None

    from histbench.core.runstore import RunStore

    pf_store = RunStore.open(out_dir / "judge-pass-fail", backend=pass_fail_backend, dataset=built,
                             options={**options, "prompt_hash": prompts.hashes[PASS_FAIL]})
    plan = [(questions[n], t, answers[n]["answer"]) for n in pf for t in candidate_pass_fail_trials(questions[n], seed)]
    log(f"chronologic judge: {len(plan)} pass/fail trials on {len(pf)} questions")
    pf_answers = ask(pf_store, plan, prompts, max_new_tokens=tokens[PASS_FAIL], desc="chronologic: pass/fail judge")
    pf_results: dict[int, list] = {n: [] for n in pf}
    for (q, trial, _), answer in zip(plan, pf_answers, strict=True):
        pf_results[q.number].append((trial, answer))

    partial_store = RunStore.open(out_dir / "judge-partial", backend=partial_backend, dataset=built,
                                  options={**options, "prompt_hash": prompts.hashes[PARTIAL]})
    plan2 = [(questions[n], t, answers[n]["answer"]) for n in partial
             for t in candidate_partial_trials(questions[n], anchors.reference_seed)]
    log(f"chronologic judge: {len(plan2)} partial-credit comparisons on {len(partial)} questions")
    pc_answers = ask(partial_store, plan2, prompts, max_new_tokens=tokens[PARTIAL], desc="chronologic: partial-credit judge")
    pc_results: dict[int, tuple[list, list]] = {n: ([], []) for n in partial}
    for (q, trial, _), answer in zip(plan2, pc_answers, strict=True):
        pc_results[q.number][0].append(trial)
        pc_results[q.number][1].append(answer["verdict"])

    ledger = []
    delta_draws: dict[int, np.ndarray] = {}
    for n in order:
        q, a = questions[n], answers[n]
        row = {"question_number": n, "reasoning_type": q.reasoning_type, "group": q.group, "path": paths[n],
               "n_ground_truths": len(q.ground_truths), "answer_words": len(a["answer"].split()), "empty_answer": a["empty"],
               "score": float("nan"), "status": "scored", "auto_verdict": None, "trials": 0, "passes": None,
               "retried": 0, "verdicts": "", "reference_gt": None, "theta": None, "delta": None, "wins": None,
               "dropped_trials": None}
        if a["empty"]:
            row.update(score=0.0, status="empty answer")
        elif autos[n] is not None:
            row.update(score=1.0 if autos[n] == "pass" else 0.0, status="automatic verdict", auto_verdict=autos[n])
        elif paths[n] == PASS_FAIL:
            results = pf_results[n]
            passes = [candidate_passes(t, ans["verdict"]) for t, ans in results]
            row["verdicts"] = " ".join(f"{'c' if t.first == CANDIDATE else q.item_ids[t.first]}-"
                                       f"{'c' if t.second == CANDIDATE else q.item_ids[t.second]}:{ans['verdict'] or 'unparsed'}"
                                       for t, ans in results)
            row.update(trials=len(results), passes=sum(passes), retried=sum(ans["retried"] for _, ans in results),
                       score=pass_fail_score(passes))
        else:
            trials, verdicts = pc_results[n]
            wins, dropped = wins_from(trials, verdicts)
            outcomes = outcomes_of(CANDIDATE, wins)
            reference = next((t.second if t.first == CANDIDATE else t.first) for t in trials
                             if q.types[t.second if t.first == CANDIDATE else t.first] == "ground_truth")
            row.update(trials=len(trials), dropped_trials=dropped, wins=sum(w for _, w in outcomes),
                       reference_gt=q.item_ids[reference])
            if outcomes:
                posterior = anchors.posterior(n)
                score = bt.score_candidate(posterior, outcomes, q.ground_truths)
                row.update(theta=score.theta, delta=score.delta, score=calibration.p_fit(score.delta))
                delta_draws[n] = score.delta_draws(DELTA_DRAWS, seed=bt_seed(seed, n))
            else:
                row["status"] = "no usable comparison (every reply unparsed)"
        ledger.append(row)

    aggregate = aggregate_substantive(ledger, delta_draws, calibration, anchors.calibration_draws,
                                      n_resamples=n_resamples, seed=bootstrap_seed, layers=layers)
    signature = make_signature(dataset=built.identity(), backend=pass_fail_backend.identity(),
                               decoding={"temperature": 0.0, "judge_effort": judge_effort, "order_seed": seed},
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
        "anchors": {"path": str(anchors.path), "calibration": anchors.data.get("calibration"), "prior_sd": anchors.prior_sd,
                    "published": anchors.data["options"].get("published"),
                    "reliability": anchors.data["reliability"]["pooled"]},
        "options": {**options, "n_resamples": n_resamples, "bootstrap_seed": bootstrap_seed, "layers": list(layers)},
        "counts": {
            "questions": len(order),
            "empty_answers": sum(r["empty_answer"] for r in ledger),
            "automatic_verdicts": {"pass_fail": sum(1 for r in ledger if r["auto_verdict"] and r["path"] == PASS_FAIL),
                                   "partial": sum(1 for r in ledger if r["auto_verdict"] and r["path"] == PARTIAL)},
            "pass_fail_questions": sum(r["path"] == PASS_FAIL for r in ledger),
            "partial_questions": sum(r["path"] == PARTIAL for r in ledger),
            "two_ground_truth_pass_fail": sum(1 for r in ledger if r["path"] == PASS_FAIL and r["n_ground_truths"] == 2),
            "unscored_questions": sum(r["status"] not in ("scored", "empty answer", "automatic verdict") for r in ledger),
            "pass_fail_trials": len(plan),
            "pass_fail_retried": sum(a["retried"] for a in pf_answers),
            "pass_fail_unparsed": sum(a["verdict"] is None for a in pf_answers),
            "partial_trials": len(plan2),
            "partial_retried": sum(a["retried"] for a in pc_answers),
            "partial_dropped_trials": sum(r["dropped_trials"] or 0 for r in ledger),
        },
        "scores": aggregate,
        "ledger": ledger,
    }
    write_json_atomic(out_dir / SUBSTANTIVE_NAME, result)
    _write_csv(out_dir / LEDGER_NAME, ledger)
    with atomic_path(out_dir / DELTA_DRAWS_NAME) as tmp, tmp.open("wb") as handle:
        np.savez(handle, **{f"delta__{n}": d for n, d in delta_draws.items()})
    return result


def bt_seed(seed: int, question: int) -> int:
    from .judge import derive_seed

    return derive_seed(seed, question, "delta-draws") % (2**32)


def aggregate_substantive(ledger: Sequence[dict], delta_draws: dict, calibration, slope_draws: Sequence[float], *,
                          n_resamples: int = 2000, seed: int = 20260817, level: float = 0.95,
                          layers: Sequence[str] = LAYERS) -> dict:
    """Per-group, per-channel and per-type means (x 100) with the three-layer bootstrap
    (see module docstring)."""
    from scipy.special import expit

    unknown = set(layers) - set(LAYERS)
    if unknown:
        raise EvalError(f"unknown bootstrap layer(s) {sorted(unknown)} (choose from {', '.join(LAYERS)})", field="--bootstrap-layers")
    rng_layers, rng_items = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    n = len(ledger)
    scores = np.array([r["score"] for r in ledger], dtype=float)
    replicate = np.broadcast_to(scores[:, None], (n, n_resamples)).copy()
    partial_rows = [k for k, r in enumerate(ledger) if r["question_number"] in delta_draws]
    if partial_rows and calibration is not None:
        slopes = np.asarray(slope_draws, dtype=float)
        if "instrument" in layers and slopes.size:
            slope_r = slopes[rng_layers.integers(0, slopes.size, size=n_resamples)]
        else:
            slope_r = np.full(n_resamples, slopes.mean() if slopes.size else calibration.slope)
        for k in partial_rows:
            draws = np.asarray(delta_draws[ledger[k]["question_number"]], dtype=float)
            if "judgment" in layers:
                d = draws[rng_layers.integers(0, draws.size, size=n_resamples)]
            else:
                d = np.full(n_resamples, draws[0])
            replicate[k] = expit(calibration.intercept + slope_r * d)
    channel = np.array([r["path"] for r in ledger], dtype=object)

    def summary(mask) -> dict:
        defined = np.asarray(mask, dtype=bool) & ~np.isnan(scores)
        n_def = int(defined.sum())
        unscored = int((np.asarray(mask, dtype=bool) & np.isnan(scores)).sum())
        if not n_def:
            return {"estimate": None, "low": None, "high": None, "n": 0, "unscored": unscored}
        parts = []
        for path in (PASS_FAIL, PARTIAL):
            rows = np.flatnonzero(defined & (channel == path))
            if rows.size == 0:
                continue
            if "item" in layers:
                pick = rows[rng_items.integers(0, rows.size, size=(rows.size, n_resamples))]
                values = replicate[pick, np.arange(n_resamples)[None, :]]
            else:
                values = replicate[rows]
            parts.append(values.sum(axis=0))
        rep = np.sum(parts, axis=0) / n_def
        low, high = np.percentile(rep, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
        return {"estimate": 100 * float(scores[defined].mean()), "low": 100 * float(low), "high": 100 * float(high),
                "n": n_def, "n_pass_fail": int((defined & (channel == PASS_FAIL)).sum()),
                "n_partial": int((defined & (channel == PARTIAL)).sum()), "unscored": unscored}

    groups = np.array([r["group"] for r in ledger], dtype=object)
    out = {"groups": {g: summary(groups == g) for g in GROUP_ORDER},
           "channels": {PASS_FAIL: summary(channel == PASS_FAIL), PARTIAL: summary(channel == PARTIAL)},
           "overall": summary(np.ones(n, dtype=bool)),
           "bootstrap": {"resamples": n_resamples, "seed": seed, "level": level, "layers": list(layers),
                         "calibration_draws": len(slope_draws)}}
    types = np.array([r["reasoning_type"] for r in ledger], dtype=object)
    out["reasoning_types"] = {t: summary(types == t) for t in sorted(set(types.tolist()))}
    return out
