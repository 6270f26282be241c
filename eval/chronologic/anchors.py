"""Frozen instruments of a benchmark release: judge reliability, Bradley-Terry anchors, calibration.

`histbench eval chronologic --mode anchors --dataset BUILD --judge SPEC [--partial-judge SPEC] --out anchors/`
runs once per dataset version and judge (paper A.2.1, A.2.2; the authors'
judge_alpha_reliability_nocontext.py and bt_context_scoring.py anchor-fit, loo, calibrate):

1. reliability: on every pass/fail question (partial_credit == 0) the pass/fail judge
   compares each ground truth with each distractor that has a penalty class, and the
   ground truths with each other, in both orders; alpha per question, pooled alpha and
   beta (judge.py). Questions with alpha above 0.25 are listed; the path of a question is
   its released `partial_credit` field, nothing else.
2. anchors: on every partial-credit question the partial judge compares every pair of
   options in both orders; a pair whose reply stays unparsed after the retry is dropped in
   both orders; the options' strengths are the Bradley-Terry posterior (bradley_terry.py).
3. calibration: every distractor, and every ground truth of a question with two or more,
   is held out in turn: the anchors are refitted without it and it is scored like a
   candidate (its trials against a seeded reference ground truth and the distractors;
   those identical to anchor comparisons are answered from the store); its delta and its
   known acceptability fit the calibration slope, and cluster-bootstrap resamples by
   question give the calibration draws of the bootstrap's instrument layer
   (calibration.py).

Published instruments (`published.py`): instead of asking a judge, steps 1-3 can take the
authors' frozen files (their reliability JSON, their judgment log of the anchor and
leave-one-out comparisons, their calibration fit), so that a new model's scores sit on
the paper's scale.

The folder holds anchors.json (everything above, with the dataset's identity, both
judges' identities, the prompt hashes, the prior and the weighting), anchors.csv (one row
per option), reliability.csv, calibration.csv, and the judges' run stores
(judge-pass-fail/, judge-partial/), so an interrupted build resumes without asking any
comparison twice. Scoring a candidate (`--mode judge`) refuses anchors built on another
dataset, with another partial judge or with another partial prompt.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from histbench.core.atomic import atomic_path
from histbench.core.errors import EvalError
from histbench.core.progress import log
from histbench.core.readers import read_json_object
from histbench.core.sheets import sheet_text

from . import bradley_terry as bt
from . import calibration as cal
from .generation import PromptSet, Question, load_prompts, load_questions, write_json_atomic
from .judge import (
    PARTIAL,
    PASS_FAIL,
    REFERENCE_SEED,
    anchor_trials,
    ask,
    derive_seed,
    judge_max_tokens,
    load_penalties,
    loo_trials,
    pooled_reliability,
    reliability_trials,
    tally_reliability,
)

ANCHORS_NAME = "anchors.json"
PASS_FAIL_STORE = "judge-pass-fail"
PARTIAL_STORE = "judge-partial"
CALIBRATION_DRAWS = 1000


def posterior_seed(seed: int, question: int, part: str = "anchor") -> int:
    return derive_seed(seed, question, part) % (2**32)


def wins_from(trials, verdicts) -> tuple[list[tuple[int, int]], int]:
    """(winner, loser) pairs of a set of forced-choice trials; a pair of items with any
    unparsed verdict is dropped in both orders (bt/collect.py). Returns (wins, dropped
    trials)."""
    bad_pairs = {t.pair() for t, v in zip(trials, verdicts, strict=True) if v not in ("A", "B")}
    wins, dropped = [], 0
    for trial, verdict in zip(trials, verdicts, strict=True):
        if trial.pair() in bad_pairs:
            dropped += 1
            continue
        winner = trial.winner(verdict)
        wins.append((winner, trial.second if winner == trial.first else trial.first))
    return wins, dropped


def outcomes_of(item: int, wins: Sequence[tuple[int, int]]) -> list[tuple[int, bool]]:
    """(opponent, item won) of every comparison involving `item`."""
    return [(l_, True) for w, l_ in wins if w == item] + [(w, False) for w, l_ in wins if l_ == item]


@dataclass
class Tournament:
    """The anchor tournament of one question: the wins, what could not be used, the fit."""

    question: int
    n_options: int
    ground_truths: list[int]
    wins: list[tuple[int, int]]
    dropped: int
    theta: list[float]
    seed: int
    effective_draws: float

    def to_json(self) -> dict:
        return {"question_number": self.question, "n_options": self.n_options, "ground_truths": self.ground_truths,
                "wins": [list(w) for w in self.wins], "dropped_trials": self.dropped, "theta": self.theta,
                "posterior_seed": self.seed, "effective_draws": self.effective_draws}


def fit_tournament(question: Question, wins, dropped: int, prior_sd: float, draws: int, seed: int) -> Tournament:
    q_seed = posterior_seed(seed, question.number)
    post = bt.fit_posterior(len(question.options), wins, prior_sd, draws=draws, seed=q_seed)
    return Tournament(question.number, len(question.options), question.ground_truths, list(wins), dropped,
                      [float(t) for t in post.mean], q_seed, round(post.effective_size, 1))


def loo_observation(question: Question, tournament: Tournament, option: int, outcomes, prior_sd: float, draws: int,
                    seed: int) -> dict:
    """The held-out delta of one option, as a calibration record."""
    is_gt = option in question.ground_truths
    base = {"question_number": question.number, "option_index": option, "item_id": question.item_ids[option],
            "answer_type": question.types[option]}
    try:
        held = bt.leave_one_out(tournament.n_options, tournament.wins, option, outcomes, question.ground_truths, prior_sd,
                                draws=draws, seed=posterior_seed(seed, question.number, f"loo:{option}"))
    except ValueError as exc:
        return {**base, "skipped": str(exc)}
    return {**base, "kind": cal.GROUND_TRUTH if is_gt else cal.DISTRACTOR,
            "label": 1.0 if is_gt else float(question.probabilities[option]),
            "theta": held.theta, "delta": held.delta, "n_trials": held.n_trials}


def held_out_options(question: Question) -> list[int]:
    gts = question.ground_truths
    return [i for i in range(len(question.options)) if i not in gts or len(gts) >= 2]


def fit_instrument(observations: Sequence[dict], weighting: str, gt_weight_ratio: float, seed: int,
                   n_draws: int = CALIBRATION_DRAWS) -> tuple[dict | None, list[float], str | None]:
    usable = [o for o in observations if "skipped" not in o]
    if not usable:
        return None, [], "no leave-one-out observation (no partial-credit question with usable comparisons)"
    args = ([o["delta"] for o in usable], [o["label"] for o in usable], [o["kind"] for o in usable])
    try:
        fit = cal.fit_calibration(*args, weighting=weighting, gt_weight_ratio=gt_weight_ratio)
    except ValueError as exc:
        return None, [], str(exc)
    draws = cal.calibration_draws(*args, [o["question_number"] for o in usable], fit, n_draws=n_draws, seed=seed)
    return fit.to_json(), [float(s) for s in draws], None


def build_anchors(built, pass_fail_backend, partial_backend, out_dir: str | os.PathLike, *, prompts: PromptSet | None = None,
                  prior_sd: float = bt.DEFAULT_PRIOR_SD, weighting: str = "class-balance",
                  gt_weight_ratio: float = cal.PAPER_GT_WEIGHT_RATIO, judge_effort: str = "medium",
                  draws: int = bt.DEFAULT_DRAWS, seed: int = 0, reference_seed: int = REFERENCE_SEED,
                  limit: int | None = None, published=None) -> dict:
    """Build (or resume) the frozen instruments; `published` (published.PublishedInstruments)
    replaces the judges' calls with the authors' frozen files where it has them."""
    from histbench.core.runstore import RunStore

    out_dir = Path(out_dir)
    prompts = prompts or load_prompts()
    penalties = load_penalties()
    questions = load_questions(built, limit)
    by_number = {q.number: q for q in questions}
    if published is not None and published.prior_sd is not None:
        prior_sd = published.prior_sd
    options = {"mode": "anchors", "prior_sd": prior_sd, "weighting": weighting,
               "gt_weight_ratio": gt_weight_ratio if weighting == "ratio" else None, "judge_effort": judge_effort,
               "draws": draws, "seed": seed, "reference_seed": reference_seed, "limit": limit,
               "published": published.describe() if published is not None else None}
    tokens = {p: judge_max_tokens(prompts, p, judge_effort) for p in (PASS_FAIL, PARTIAL)}
    paths = {q.number: (PARTIAL if q.partial_credit == 1 else PASS_FAIL) for q in questions}
    pass_fail_questions = [q for q in questions if paths[q.number] == PASS_FAIL]
    partial_questions = [q for q in questions if paths[q.number] == PARTIAL]
    counts: dict = {"questions": len(questions), "pass_fail_path": len(pass_fail_questions),
                    "partial_path": len(partial_questions)}

    # 1. reliability on the pass/fail path
    if published is not None and published.reliability is not None:
        reliability = published.reliability_for(pass_fail_questions)
        counts["reliability_trials"] = "published"
    else:
        plan = [(q, t, None) for q in pass_fail_questions for t in reliability_trials(q, penalties)]
        pf_store = RunStore.open(out_dir / PASS_FAIL_STORE, backend=pass_fail_backend, dataset=built,
                                 options={**options, "prompt_hash": prompts.hashes[PASS_FAIL]})
        log(f"chronologic anchors: {len(plan)} reliability trials on {len(pass_fail_questions)} pass/fail questions")
        answers = ask(pf_store, plan, prompts, max_new_tokens=tokens[PASS_FAIL], desc="chronologic: judge reliability")
        grouped: dict[int, tuple[list, list]] = {q.number: ([], []) for q in pass_fail_questions}
        for (q, trial, _), answer in zip(plan, answers, strict=True):
            grouped[q.number][0].append(trial)
            grouped[q.number][1].append(answer["verdict"])
        reliability = [tally_reliability(by_number[n], trials, verdicts, penalties) for n, (trials, verdicts) in grouped.items()]
        counts["reliability_trials"] = len(plan)
        counts["reliability_retried"] = sum(a["retried"] for a in answers)
    pooled = pooled_reliability(reliability)

    # 2. anchor tournaments, 3. leave-one-out trials
    tournaments: dict[int, Tournament] = {}
    loo_outcomes: dict[tuple[int, int], list] = {}
    if published is not None and published.judgments is not None:
        for q in partial_questions:
            wins, dropped = published.anchor_wins(q)
            tournaments[q.number] = fit_tournament(q, wins, dropped, prior_sd, draws, seed)
            for option in held_out_options(q):
                loo_outcomes[(q.number, option)] = published.loo_outcomes(q, option)
        counts["anchor_trials"] = "published"
    else:
        partial_store = RunStore.open(out_dir / PARTIAL_STORE, backend=partial_backend, dataset=built,
                                      options={**options, "prompt_hash": prompts.hashes[PARTIAL]})
        plan2 = [(q, t, None) for q in partial_questions for t in anchor_trials(q)]
        log(f"chronologic anchors: {len(plan2)} anchor comparisons on {len(partial_questions)} partial-credit questions")
        answers2 = ask(partial_store, plan2, prompts, max_new_tokens=tokens[PARTIAL], desc="chronologic: anchor comparisons")
        grouped2: dict[int, tuple[list, list]] = {q.number: ([], []) for q in partial_questions}
        for (q, trial, _), answer in zip(plan2, answers2, strict=True):
            grouped2[q.number][0].append(trial)
            grouped2[q.number][1].append(answer["verdict"])
        for n, (trials, verdicts) in grouped2.items():
            wins, dropped = wins_from(trials, verdicts)
            tournaments[n] = fit_tournament(by_number[n], wins, dropped, prior_sd, draws, seed)
        plan3 = [(q, t, None) for q in partial_questions for option in held_out_options(q)
                 for t in loo_trials(q, option, reference_seed)]
        log(f"chronologic anchors: {len(plan3)} leave-one-out comparisons (identical prompts are answered from the store)")
        answers3 = ask(partial_store, plan3, prompts, max_new_tokens=tokens[PARTIAL], desc="chronologic: leave-one-out")
        grouped3: dict[tuple[int, int], tuple[list, list]] = {}
        for (q, trial, _), answer in zip(plan3, answers3, strict=True):
            key = (q.number, int(trial.purpose.split(":")[1]))
            grouped3.setdefault(key, ([], []))
            grouped3[key][0].append(trial)
            grouped3[key][1].append(answer["verdict"])
        for (n, option), (trials, verdicts) in grouped3.items():
            wins, _ = wins_from(trials, verdicts)
            loo_outcomes[(n, option)] = outcomes_of(option, wins)
        counts["anchor_trials"] = len(plan2)
        counts["loo_trials"] = len(plan3)
        counts["partial_retried"] = sum(a["retried"] for a in answers2 + answers3)
    counts["anchor_dropped_trials"] = sum(t.dropped for t in tournaments.values())

    observations = [loo_observation(by_number[n], tournaments[n], option, outcomes, prior_sd, draws, seed)
                    for (n, option), outcomes in sorted(loo_outcomes.items())]
    if published is not None and published.calibration is not None:
        calibration, slope_draws, calibration_error = published.calibration, published.calibration_draws, None
    else:
        calibration, slope_draws, calibration_error = fit_instrument(observations, weighting, gt_weight_ratio, seed)
    counts["calibration_observations"] = sum("skipped" not in o for o in observations)
    counts["calibration_skipped"] = sum("skipped" in o for o in observations)

    from histbench.core.version import histbench_version

    result = {
        "kind": "chronologic-anchors",
        "histbench_version": histbench_version(),
        "dataset": built.identity(),
        "judges": {PASS_FAIL: pass_fail_backend.identity() if pass_fail_backend is not None else published.judge_identity(PASS_FAIL),
                   PARTIAL: partial_backend.identity() if partial_backend is not None else published.judge_identity(PARTIAL)},
        "prompt_hashes": {PASS_FAIL: prompts.hashes[PASS_FAIL], PARTIAL: prompts.hashes[PARTIAL]},
        "options": options,
        "counts": counts,
        "reliability": {"pooled": pooled, "questions": [r.to_json() for r in reliability]},
        "paths": {str(n): p for n, p in paths.items()},
        "tournaments": {str(n): t.to_json() for n, t in tournaments.items()},
        "calibration": calibration,
        "calibration_draws": slope_draws,
        "calibration_error": calibration_error,
        "calibration_observations": observations,
    }
    write_anchors(out_dir, result, questions)
    return result


def write_anchors(out_dir: Path, result: dict, questions: Sequence[Question]) -> None:
    by_number = {q.number: q for q in questions}
    write_json_atomic(out_dir / ANCHORS_NAME, result)
    _write_csv(out_dir / "reliability.csv", result["reliability"]["questions"])
    rows = []
    for key, t in result["tournaments"].items():
        q = by_number[int(key)]
        for i, theta in enumerate(t["theta"]):
            rows.append({"question_number": q.number, "option_index": i, "item_id": q.item_ids[i], "answer_type": q.types[i],
                         "answer_probability": q.probabilities[i], "is_ground_truth": i in q.ground_truths, "theta": theta,
                         "wins": sum(1 for w in t["wins"] if w[0] == i), "losses": sum(1 for w in t["wins"] if w[1] == i)})
    _write_csv(out_dir / "anchors.csv", rows)
    _write_csv(out_dir / "calibration.csv", result["calibration_observations"])


def _write_csv(path: Path, rows: list[dict]) -> None:
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    cleaned = [{k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else v) for k, v in row.items()}
               for row in rows]
    with atomic_path(path) as tmp:   # model answers and labels in it: formula triggers neutralised
        tmp.write_text(sheet_text(columns or ["empty"], cleaned), encoding="utf-8", newline="")


@dataclass
class Anchors:
    path: Path
    data: dict

    @property
    def paths(self) -> dict[int, str]:
        return {int(k): v for k, v in self.data["paths"].items()}

    def tournament(self, question: int) -> dict:
        return self.data["tournaments"][str(question)]

    def posterior(self, question: int) -> bt.Posterior:
        """The anchors' posterior, refitted from the frozen wins with the frozen seed (the
        same draws the build used)."""
        t = self.tournament(question)
        return bt.fit_posterior(t["n_options"], [tuple(w) for w in t["wins"]], self.prior_sd, draws=self.draws,
                                seed=int(t["posterior_seed"]))

    @property
    def calibration(self) -> cal.Calibration:
        if not self.data.get("calibration"):
            raise EvalError(f"these anchors have no calibration ({self.data.get('calibration_error')})", file=self.path)
        return cal.Calibration.from_json(self.data["calibration"])

    @property
    def calibration_draws(self) -> list[float]:
        return list(self.data.get("calibration_draws") or [])

    @property
    def prior_sd(self) -> float:
        return float(self.data["options"]["prior_sd"])

    @property
    def draws(self) -> int:
        return int(self.data["options"].get("draws", bt.DEFAULT_DRAWS))

    @property
    def reference_seed(self) -> int:
        return int(self.data["options"].get("reference_seed", REFERENCE_SEED))

    @property
    def published(self) -> bool:
        return bool(self.data["options"].get("published"))


def load_anchors(path: str | os.PathLike, built=None) -> Anchors:
    path = Path(path)
    file = path / ANCHORS_NAME if path.is_dir() else path
    if not file.is_file():
        raise EvalError(f"no {ANCHORS_NAME}: build anchors with `histbench eval chronologic --mode anchors --out {path}`", file=path)
    data = read_json_object(file, error=EvalError)
    if data.get("kind") != "chronologic-anchors":
        raise EvalError("not a chronologic anchors file", file=file)
    if "posterior_seed" not in next(iter((data.get("tournaments") or {}).values()), {"posterior_seed": 0}):
        raise EvalError("these anchors were built by an older histbench (MAP strengths); rebuild them with --mode anchors",
                        file=file)
    if built is not None:
        ours, theirs = built.identity().get("data_sha256"), (data.get("dataset") or {}).get("data_sha256")
        if ours and theirs and ours != theirs:
            raise EvalError(f"these anchors were built on dataset data {theirs[:12]}, not on this build ({ours[:12]}): "
                            "anchors are frozen per dataset version; build anchors for this one", file=file)
    return Anchors(file, data)
