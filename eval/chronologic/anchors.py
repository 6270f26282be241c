"""Frozen anchors of a benchmark release: judge reliability, Bradley-Terry anchors, calibration.

`histbench eval chronologic --mode anchors --dataset BUILD --judge SPEC [--partial-judge SPEC] --out anchors/`
runs once per dataset version and judge (paper A.2.1, A.2.2):

1. reliability: on every pass/fail question (partial_credit == 0) the pass/fail judge
   compares each ground truth with each eligible distractor and the ground truths with
   each other, in both orders; alpha per question, pooled alpha and beta. Questions with
   alpha > 0.25 move to the partial-credit path.
2. anchors: on every partial-credit-path question the partial judge compares every pair
   of options in both orders; the options' strengths theta are the MAP Bradley-Terry fit
   (bradley_terry.py) and are frozen.
3. calibration: every distractor, and every ground truth of a question with two or more,
   is held out in turn and scored like a candidate against anchors refitted without it
   (its own trials come from the same tournament, so this costs no judge call); the
   deltas and their known acceptability fit the calibration slope (calibration.py).

The folder holds anchors.json (everything above, with the dataset's identity, both
judges' identities, the prompt hashes, the prior and the weighting), anchors.csv (one row
per option), reliability.csv, calibration.csv, and the judges' run stores
(judge-pass-fail/, judge-partial/), so an interrupted build resumes without asking any
comparison twice. Scoring a candidate (`--mode judge`) refuses anchors built on another
dataset, with another partial judge or with another partial prompt.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from histbench.builders.core.atomic import atomic_path
from histbench.builders.core.errors import EvalError
from histbench.builders.core.progress import log
from histbench.builders.core.readers import read_json_object

from . import bradley_terry as bt
from . import calibration as cal
from .generation import PromptSet, Question, load_prompts, load_questions, write_json_atomic
from .judge import (
    PARTIAL,
    PASS_FAIL,
    STYLISTIC_FAMILIES,
    TIE,
    anchor_trials,
    judge_request,
    parse_judge_result,
    pooled_reliability,
    reliability_trials,
    tally_reliability,
    verdict_of,
)

ANCHORS_NAME = "anchors.json"
PASS_FAIL_STORE = "judge-pass-fail"
PARTIAL_STORE = "judge-partial"


@dataclass
class Tournament:
    """The anchor tournament of one question: the wins, what could not be used, the fit."""

    question: int
    n_options: int
    ground_truths: list[int]
    wins: list[tuple[int, int]]
    ties: int
    unparsed: int
    theta: list[float]

    def to_json(self) -> dict:
        return {"question_number": self.question, "n_options": self.n_options, "ground_truths": self.ground_truths,
                "wins": [list(w) for w in self.wins], "ties": self.ties, "unparsed": self.unparsed, "theta": self.theta}


def tournament_from_verdicts(question: Question, trials, verdicts, prior_sd: float) -> Tournament:
    wins: list[tuple[int, int]] = []
    ties = unparsed = 0
    for trial, verdict in zip(trials, verdicts, strict=True):
        if verdict is None:
            unparsed += 1
        elif verdict == TIE:
            ties += 1
        else:
            winner = trial.winner(verdict)
            wins.append((winner, trial.second if winner == trial.first else trial.first))
    theta = bt.fit_strengths(len(question.options), wins, prior_sd)
    return Tournament(question.number, len(question.options), question.ground_truths, wins, ties, unparsed,
                      [float(t) for t in theta])


def loo_observations(question: Question, tournament: Tournament, prior_sd: float) -> list[dict]:
    """Held-out deltas of every distractor and (with 2+ ground truths) every ground truth."""
    out = []
    gts = question.ground_truths
    for option in range(len(question.options)):
        is_gt = option in gts
        if is_gt and len(gts) < 2:
            continue
        try:
            held = bt.leave_one_out(tournament.n_options, tournament.wins, option, gts, prior_sd)
        except ValueError as exc:  # no usable trial for this option
            out.append({"question_number": question.number, "option_index": option, "skipped": str(exc)})
            continue
        out.append({
            "question_number": question.number,
            "option_index": option,
            "kind": cal.GROUND_TRUTH if is_gt else cal.DISTRACTOR,
            "label": 1.0 if is_gt else float(question.probabilities[option]),
            "answer_type": question.types[option],
            "theta": held.theta,
            "delta": held.delta,
            "n_trials": held.n_trials,
        })
    return out


def _run(store, requests, desc):
    return store.run(requests, parse=parse_judge_result, desc=desc)


def build_anchors(built, pass_fail_backend, partial_backend, out_dir: str | os.PathLike, *, prompts: PromptSet | None = None,
                  prior_sd: float = bt.DEFAULT_PRIOR_SD, gt_weight_ratio: float = cal.PAPER_GT_WEIGHT_RATIO,
                  stylistic_families: Sequence[str] = tuple(sorted(STYLISTIC_FAMILIES)),
                  judge_max_tokens: int = 64, limit: int | None = None) -> dict:
    from histbench.eval.runstore import RunStore, summarize

    out_dir = Path(out_dir)
    prompts = prompts or load_prompts()
    questions = load_questions(built, limit)
    by_number = {q.number: q for q in questions}
    options = {"mode": "anchors", "prior_sd": prior_sd, "gt_weight_ratio": gt_weight_ratio,
               "stylistic_families": list(stylistic_families), "judge_max_tokens": judge_max_tokens, "limit": limit}

    # 1. reliability on the pass/fail path
    pass_fail_questions = [q for q in questions if q.partial_credit == 0]
    plan = [(q, t) for q in pass_fail_questions for t in reliability_trials(q, stylistic_families)]
    pf_store = RunStore.open(out_dir / PASS_FAIL_STORE, backend=pass_fail_backend, dataset=built,
                             options={**options, "prompt_hash": prompts.hashes[PASS_FAIL]})
    log(f"chronologic anchors: {len(plan)} reliability trials on {len(pass_fail_questions)} pass/fail questions")
    pf_records = _run(pf_store, [judge_request(q, t, prompts, max_new_tokens=judge_max_tokens) for q, t in plan],
                      "chronologic: judge reliability")
    per_question: dict[int, tuple[list, list]] = {q.number: ([], []) for q in pass_fail_questions}
    for (q, trial), record in zip(plan, pf_records, strict=True):
        per_question[q.number][0].append(trial)
        per_question[q.number][1].append(verdict_of(record))
    reliability = [tally_reliability(by_number[n], trials, verdicts) for n, (trials, verdicts) in per_question.items()]
    pooled = pooled_reliability(reliability)
    moved = set(pooled["moved_to_partial"])
    paths = {q.number: (PARTIAL if q.partial_credit == 1 or q.number in moved else PASS_FAIL) for q in questions}

    # 2. anchor tournaments on the partial-credit path
    partial_questions = [q for q in questions if paths[q.number] == PARTIAL]
    plan2 = [(q, t) for q in partial_questions for t in anchor_trials(q)]
    partial_store = RunStore.open(out_dir / PARTIAL_STORE, backend=partial_backend, dataset=built,
                                  options={**options, "prompt_hash": prompts.hashes[PARTIAL]})
    log(f"chronologic anchors: {len(plan2)} anchor comparisons on {len(partial_questions)} partial-credit questions")
    partial_records = _run(partial_store, [judge_request(q, t, prompts, max_new_tokens=judge_max_tokens) for q, t in plan2],
                           "chronologic: anchor comparisons")
    grouped: dict[int, tuple[list, list]] = {q.number: ([], []) for q in partial_questions}
    for (q, trial), record in zip(plan2, partial_records, strict=True):
        grouped[q.number][0].append(trial)
        grouped[q.number][1].append(verdict_of(record))
    tournaments = {n: tournament_from_verdicts(by_number[n], trials, verdicts, prior_sd) for n, (trials, verdicts) in grouped.items()}

    # 3. calibration from leave-one-out scores
    observations = [o for q in partial_questions for o in loo_observations(q, tournaments[q.number], prior_sd)]
    usable = [o for o in observations if "skipped" not in o]
    calibration = None
    calibration_error = None
    if usable:
        try:
            calibration = cal.fit_calibration([o["delta"] for o in usable], [o["label"] for o in usable],
                                              [o["kind"] for o in usable], gt_weight_ratio=gt_weight_ratio)
        except ValueError as exc:
            calibration_error = str(exc)
    else:
        calibration_error = "no leave-one-out observation (no partial-credit question with usable comparisons)"

    from histbench.builders.core.writer import histbench_version

    result = {
        "kind": "chronologic-anchors",
        "histbench_version": histbench_version(),
        "dataset": built.identity(),
        "judges": {PASS_FAIL: pass_fail_backend.identity(), PARTIAL: partial_backend.identity()},
        "prompt_hashes": {PASS_FAIL: prompts.hashes[PASS_FAIL], PARTIAL: prompts.hashes[PARTIAL]},
        "options": options,
        "counts": {
            "questions": len(questions),
            "pass_fail_path": sum(p == PASS_FAIL for p in paths.values()),
            "partial_path": len(partial_questions),
            "moved_by_alpha": len(moved),
            "reliability_requests": summarize(pf_records),
            "anchor_requests": summarize(partial_records),
            "anchor_ties": sum(t.ties for t in tournaments.values()),
            "anchor_unparsed": sum(t.unparsed for t in tournaments.values()),
            "calibration_observations": len(usable),
            "calibration_skipped": len(observations) - len(usable),
        },
        "reliability": {"pooled": pooled, "questions": [r.to_json() for r in reliability]},
        "paths": {str(n): p for n, p in paths.items()},
        "tournaments": {str(n): t.to_json() for n, t in tournaments.items()},
        "calibration": calibration.to_json() if calibration else None,
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
            rows.append({"question_number": q.number, "option_index": i, "answer_type": q.types[i],
                         "answer_probability": q.probabilities[i], "is_ground_truth": i in q.ground_truths, "theta": theta,
                         "wins": sum(1 for w in t["wins"] if w[0] == i), "losses": sum(1 for w in t["wins"] if w[1] == i)})
    _write_csv(out_dir / "anchors.csv", rows)
    _write_csv(out_dir / "calibration.csv", result["calibration_observations"])


def _write_csv(path: Path, rows: list[dict]) -> None:
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    with atomic_path(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns or ["empty"])
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else v) for k, v in row.items()})


@dataclass
class Anchors:
    path: Path
    data: dict

    @property
    def paths(self) -> dict[int, str]:
        return {int(k): v for k, v in self.data["paths"].items()}

    def theta(self, question: int) -> list[float]:
        return self.data["tournaments"][str(question)]["theta"]

    @property
    def calibration(self) -> cal.Calibration:
        if not self.data.get("calibration"):
            raise EvalError(f"these anchors have no calibration ({self.data.get('calibration_error')})", file=self.path)
        return cal.Calibration.from_json(self.data["calibration"])

    @property
    def prior_sd(self) -> float:
        return float(self.data["options"]["prior_sd"])


def load_anchors(path: str | os.PathLike, built=None) -> Anchors:
    path = Path(path)
    file = path / ANCHORS_NAME if path.is_dir() else path
    if not file.is_file():
        raise EvalError(f"no {ANCHORS_NAME}: build anchors with `histbench eval chronologic --mode anchors --out {path}`", file=path)
    data = read_json_object(file, error=EvalError)
    if data.get("kind") != "chronologic-anchors":
        raise EvalError("not a chronologic anchors file", file=file)
    if built is not None:
        ours, theirs = built.identity().get("data_sha256"), (data.get("dataset") or {}).get("data_sha256")
        if ours and theirs and ours != theirs:
            raise EvalError(f"these anchors were built on dataset data {theirs[:12]}, not on this build ({ours[:12]}): "
                            "anchors are frozen per dataset version; build anchors for this one", file=file)
    return Anchors(file, data)
