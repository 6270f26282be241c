"""Analyses of the Chronologic-EN paper beyond Tables 3, 4 and 7.

    --mode self-rejection   --run RUN --model SPEC [--judged DIR]   paper 5.3
    --mode memorisation     --passages FILE --model SPEC --out DIR  paper section 3
    --mode human-agreement  --human FILE [--out DIR]                paper section 8, Appendix B

Self-rejection (5.3): the free-generation answers the scoring pipeline scored below 0.5
are offered back to the model that wrote them, against a ground truth of the question, as
a forced choice (the authors' evalcode/benchmark_binary_eval.py prompt, the ground truth
in a seeded random position; the reply's first standalone A or B is the choice). The
result is the share of trials in which the model rejects its own answer, with a one-sided
exact binomial test against a coin flip (scipy.stats.binomtest).

Memorisation (section 3, after Chang et al. 2023): passages with one proper noun replaced
by [MASK] are given to the model with Chang et al.'s name-cloze prompt; a guess is
correct when it equals the masked name (case and surrounding punctuation ignored). With
options (a multiple-choice reframing) an item also gets a skill score,
(correct - 1/k) / (1 - 1/k) for k options. Per book the mean skill is correlated (Pearson,
scipy.stats.pearsonr) with the model's mean substantive score on the benchmark questions
from the same volume (`source_htid`), taken from a judged run (`--run`).

Human agreement (section 8, Figure 3): each row is a pair of answers to one question with
the two answers' scores on the 0-100 scale and the answer a human reader preferred. A
logistic model of "the reader prefers the higher-scoring answer" on the score gap gives
the preference probability per gap (the paper: 10 points ~ 5 points above a coin flip)
and the smallest gap whose 95% interval excludes 0.5 (the paper: 11 points).

The judgment layer of the Table 7 bootstrap is in substantive.py and the per-type
distractor penalty classes in judge.py (sources/chronologic/distractor_penalties.yaml).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from histbench.core.errors import EvalError, UsageError

from . import Mode
from .generation import (
    PromptSet,
    Question,
    fill,
    load_prompts,
    load_questions,
    read_generation,
    write_json_atomic,
)
from .judge import seeded_flip

SELF_REJECTION_NAME = "self_rejection.json"
MEMORISATION_NAME = "memorisation.json"
HUMAN_AGREEMENT_NAME = "human_agreement.json"
_LETTER = re.compile(r"\b([AB])\b")
_NAME = re.compile(r"<name>(.*?)</name>", re.DOTALL | re.IGNORECASE)


# --------------------------------------------------------------------------- self-rejection


def parse_letter(text: str | None) -> str:
    """The first standalone A or B of a reply (benchmark_binary_eval._parse_letter)."""
    match = _LETTER.search((text or "").strip())
    if not match:
        raise ValueError("no A or B in the reply")
    return match.group(1)


def self_rejection_request(question: Question, answer: str, ground_truth: str, ground_truth_first: bool, prompts: PromptSet,
                           prompt_style: str = "chat", max_new_tokens: int = 16):
    from histbench.core.backends import GenerateRequest

    section = prompts.section("self_rejection")
    a, b = (ground_truth, answer) if ground_truth_first else (answer, ground_truth)
    user = fill(section["user"], {"frame": question.frame, "question": question.question, "answer_a": a, "answer_b": b})
    if prompt_style == "plain":
        return GenerateRequest(prompt=section["system"] + section["plain_joiner"] + user, max_new_tokens=max_new_tokens)
    return GenerateRequest(messages=[{"role": "system", "content": section["system"]}, {"role": "user", "content": user}],
                           max_new_tokens=max_new_tokens)


def _latest_substantive(run_dir: Path, judged: Path | None) -> dict:
    from .substantive import SUBSTANTIVE_NAME

    paths = [Path(judged) / SUBSTANTIVE_NAME] if judged else sorted(Path(run_dir).glob(f"judged-*/{SUBSTANTIVE_NAME}"))
    if not paths or not paths[-1].is_file():
        raise EvalError("no judged results in the run folder: run `--mode judge` first (or give --judged DIR)", file=run_dir)
    return json.loads(paths[-1].read_text(encoding="utf-8"))


def binomial_summary(correct: int, trials: int) -> dict:
    from scipy.stats import binomtest

    if trials == 0:
        return {"trials": 0, "correct": 0, "accuracy": None, "p_value": None}
    test = binomtest(correct, trials, 0.5, alternative="greater")
    low, high = test.proportion_ci(0.95, method="exact")
    return {"trials": trials, "correct": correct, "accuracy": correct / trials, "low": float(low), "high": float(high),
            "p_value": float(test.pvalue)}


def self_rejection(built, run_dir, backend, *, judged: Path | None = None, threshold: float = 0.5, seed: int = 0,
                   prompts: PromptSet | None = None, prompt_style: str = "chat") -> dict:
    from histbench.core.runstore import RunStore

    prompts = prompts or load_prompts()
    run_dir = Path(run_dir)
    generation = read_generation(run_dir)
    substantive = _latest_substantive(run_dir, judged)
    questions = {q.number: q for q in load_questions(built)}
    answers = {int(a["question_number"]): a for a in generation["answers"]}
    low = [r for r in substantive["ledger"] if r["score"] is not None and r["score"] == r["score"] and r["score"] < threshold
           and not answers[r["question_number"]]["empty"] and r.get("auto_verdict") is None]
    trials = []
    for r in low:
        q = questions[r["question_number"]]
        truth = q.options[q.ground_truths[0]]
        first = seeded_flip(seed, "self-rejection", q.number)
        trials.append((q, first, self_rejection_request(q, answers[q.number]["answer"], truth, first, prompts, prompt_style)))
    store = RunStore.open(run_dir / "self-rejection", backend=backend, dataset=built, options={"mode": "self-rejection"})

    def parse(result) -> dict:
        return {"choice": parse_letter(getattr(result, "text", None))}

    records = store.run([t[2] for t in trials], parse=parse, desc="chronologic: self-rejection")
    rows, correct, unparsed = [], 0, 0
    for (q, first, _), record in zip(trials, records, strict=True):
        choice = record.parsed.get("choice") if record.parse_error is None and isinstance(record.parsed, dict) else None
        rejected = choice is not None and (choice == "A") == first
        unparsed += choice is None
        correct += rejected
        rows.append({"question_number": q.number, "group": q.group, "ground_truth_position": "A" if first else "B",
                     "choice": choice, "rejected_own_answer": rejected})
    result = {"kind": "chronologic-self-rejection", "threshold": threshold, "judged_by": substantive.get("judges"),
              "model": backend.identity(), "unparsed": unparsed, **binomial_summary(correct, len(trials)),
              "by_group": {g: binomial_summary(sum(r["rejected_own_answer"] for r in rows if r["group"] == g),
                                               sum(1 for r in rows if r["group"] == g)) for g in sorted({r["group"] for r in rows})},
              "rows": rows}
    write_json_atomic(run_dir / "self-rejection" / SELF_REJECTION_NAME, result)
    return result


# --------------------------------------------------------------------------- memorisation


def read_cloze_items(path: str | Path) -> list[dict]:
    """Name-cloze items (JSONL, or CSV/TSV with `options` as a JSON array): `book` (the
    volume, e.g. a source_htid), `passage` (with one [MASK]), `answer`, optional `options`."""
    from .style.corpus import read_table

    frame = read_table(path)
    missing = [c for c in ("book", "passage", "answer") if c not in frame.columns]
    if missing:
        raise EvalError(f"the cloze items lack column(s) {', '.join(missing)}", file=path)
    items = []
    for n, row in enumerate(frame.to_dict("records")):
        if "[MASK]" not in str(row["passage"]):
            raise EvalError("the passage has no [MASK]", file=path, row=n, field="passage")
        options = row.get("options")
        if isinstance(options, str) and options.strip():
            try:
                options = json.loads(options)
            except ValueError as exc:
                raise EvalError(f"options is not a JSON array: {exc}", file=path, row=n, field="options") from exc
        if options is not None and not isinstance(options, list | tuple | np.ndarray):
            options = None
        items.append({"book": str(row["book"]), "passage": str(row["passage"]), "answer": str(row["answer"]),
                      "options": [str(o) for o in options] if options is not None and len(options) else None})
    return items


def parse_name(text: str | None) -> str:
    """The guess inside <name>...</name>, else the reply's first line."""
    text = (text or "").strip()
    match = _NAME.search(text)
    return (match.group(1) if match else text.splitlines()[0] if text else "").strip()


def same_name(guess: str, answer: str) -> bool:
    strip = " \t\"'“”‘’.,;:!?()[]"
    return guess.strip(strip).casefold() == answer.strip(strip).casefold() and bool(answer.strip(strip))


def skill_score(correct: bool, n_options: int | None) -> float:
    """(correct - 1/k) / (1 - 1/k): 0 at chance, 1 when right; the exact-match rate without options."""
    if not n_options or n_options < 2:
        return float(correct)
    chance = 1.0 / n_options
    return (float(correct) - chance) / (1.0 - chance)


def pearson(x: Sequence[float], y: Sequence[float]) -> dict:
    from scipy.stats import pearsonr

    if len(x) < 3:
        return {"n": len(x), "r": None, "p": None}
    result = pearsonr(np.asarray(x, float), np.asarray(y, float))
    return {"n": len(x), "r": float(result.statistic), "p": float(result.pvalue)}


def memorisation(built, items: list[dict], backend, out_dir, *, run_dir=None, prompts: PromptSet | None = None) -> dict:
    from histbench.core.backends import GenerateRequest
    from histbench.core.runstore import RunStore

    prompts = prompts or load_prompts()
    section = prompts.section("memorisation")
    requests = [GenerateRequest(messages=[{"role": "user", "content": fill(section["user"], {"passage": item["passage"]})}],
                                max_new_tokens=int(section["max_tokens"])) for item in items]
    store = RunStore.open(Path(out_dir), backend=backend, dataset=built, options={"mode": "memorisation"})
    records = store.run(requests, parse=None, desc="chronologic: name cloze")
    rows = []
    for item, record in zip(items, records, strict=True):
        guess = parse_name(record.text if record.response is not None else None)
        correct = same_name(guess, item["answer"])
        rows.append({**item, "guess": guess, "correct": correct,
                     "skill": skill_score(correct, len(item["options"]) if item["options"] else None)})
    books = sorted({r["book"] for r in rows})
    by_book = {b: float(np.mean([r["skill"] for r in rows if r["book"] == b])) for b in books}
    result = {"kind": "chronologic-memorisation", "model": backend.identity(), "items": len(rows),
              "correct": sum(r["correct"] for r in rows), "books": len(books), "skill_by_book": by_book, "rows": rows}
    if run_dir is not None:
        substantive = _latest_substantive(Path(run_dir), None)
        volume = {q.number: q for q in load_questions(built)}
        htid = {row["question_number"]: row.get("source_htid") for row in built.load("questions", "test").to_list()}
        per_book: dict[str, list[float]] = {}
        for r in substantive["ledger"]:
            if r["question_number"] in volume and r["score"] == r["score"]:
                per_book.setdefault(str(htid.get(r["question_number"])), []).append(float(r["score"]))
        shared = [b for b in books if b in per_book]
        result["benchmark_score_by_book"] = {b: float(np.mean(per_book[b])) for b in shared}
        result["correlation"] = pearson([by_book[b] for b in shared], [result["benchmark_score_by_book"][b] for b in shared])
    write_json_atomic(Path(out_dir) / MEMORISATION_NAME, result)
    return result


# --------------------------------------------------------------------------- human agreement


def read_human_pairs(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(gap, agree) from rows with `score_a`, `score_b` (0-100) and `preferred` (a or b);
    ties of score are left out (no higher-scoring answer)."""
    from .style.corpus import read_table

    frame = read_table(path)
    missing = [c for c in ("score_a", "score_b", "preferred") if c not in frame.columns]
    if missing:
        raise EvalError(f"the human judgments lack column(s) {', '.join(missing)}", file=path)
    gap, agree = [], []
    for n, row in enumerate(frame.to_dict("records")):
        choice = str(row["preferred"]).strip().lower()
        if choice not in ("a", "b"):
            raise EvalError(f"preferred must be a or b, got {row['preferred']!r}", file=path, row=n, field="preferred")
        a, b = float(row["score_a"]), float(row["score_b"])
        if a == b:
            continue
        gap.append(abs(a - b))
        agree.append(1.0 if (a > b) == (choice == "a") else 0.0)
    return np.asarray(gap), np.asarray(agree)


def human_agreement(gap, agree, *, step: float = 10.0, level: float = 0.95) -> dict:
    """Logistic fit of P(reader prefers the higher-scoring answer) = sigmoid(a + b * gap)."""
    import statsmodels.api as sm
    from scipy.special import expit
    from scipy.stats import norm

    gap, agree = np.asarray(gap, float), np.asarray(agree, float)
    if gap.size < 3 or agree.min() == agree.max():
        raise EvalError("the human-agreement fit needs at least three pairs with both agreeing and disagreeing readers")
    fit = sm.GLM(agree, sm.add_constant(gap), family=sm.families.Binomial()).fit()
    a, b = (float(v) for v in fit.params)
    cov = np.asarray(fit.cov_params())
    z = norm.ppf(0.5 + level / 2)
    grid = np.linspace(0, 100, 1001)
    se = np.sqrt(cov[0, 0] + 2 * grid * cov[0, 1] + grid**2 * cov[1, 1])
    lower = expit(a + b * grid - z * se)
    above = grid[lower > 0.5]
    return {"pairs": int(gap.size), "observed_agreement": float(agree.mean()), "intercept": a, "slope": b,
            "p_at_step": float(expit(a + b * step)), "step": step, "gain_per_step": float(expit(a + b * step) - 0.5),
            "significant_gap": float(above[0]) if above.size else None, "level": level}


# --------------------------------------------------------------------------- modes


def _add_arguments(group) -> None:
    group.add_argument("--judged", type=Path, metavar="DIR", help="self-rejection: the judged folder (default: the run's newest)")
    group.add_argument("--rejection-threshold", type=float, default=0.5,
                       help="self-rejection: answers scoring below this are offered back (default 0.5)")
    group.add_argument("--passages", type=Path, metavar="FILE", help="memorisation: name-cloze items (book, passage, answer[, options])")
    group.add_argument("--human", type=Path, metavar="FILE", help="human-agreement: pairs (score_a, score_b, preferred)")


def _dataset(args):
    from histbench.core.dataset import BuiltDataset

    return BuiltDataset.open(args.dataset, revision=args.revision, benchmark="chronologic")


def run_self_rejection(args: argparse.Namespace) -> None:
    from histbench.core.backends import backend_from_args

    if not args.run:
        raise UsageError("--mode self-rejection needs --run RUN_FOLDER (a judged --mode generate run)", field="--run")
    backend = backend_from_args(args)
    try:
        result = self_rejection(_dataset(args), args.run, backend, judged=args.judged, threshold=args.rejection_threshold,
                                seed=args.seed, prompt_style=args.prompt_style)
    finally:
        backend.close()
    print(f"rejected its own answer in {result['correct']} of {result['trials']} forced choices "
          f"({result['accuracy']}), one-sided binomial p = {result['p_value']}; {result['unparsed']} unparsed")


def run_memorisation(args: argparse.Namespace) -> None:
    from histbench.core.backends import backend_from_args

    if not args.passages or not args.out:
        raise UsageError("--mode memorisation needs --passages FILE and --out DIR", field="--passages")
    backend = backend_from_args(args)
    try:
        result = memorisation(_dataset(args), read_cloze_items(args.passages), backend, args.out, run_dir=args.run)
    finally:
        backend.close()
    print(f"{result['correct']} of {result['items']} names guessed exactly; correlation with benchmark scores by book: "
          f"{result.get('correlation')}")


def run_human_agreement(args: argparse.Namespace) -> None:
    if not args.human:
        raise UsageError("--mode human-agreement needs --human FILE", field="--human")
    result = human_agreement(*read_human_pairs(args.human))
    if args.out:
        write_json_atomic(Path(args.out) / HUMAN_AGREEMENT_NAME, result)
    print(json.dumps(result, indent=2))


MODES = [
    Mode("self-rejection", "the model chooses between its own low-scored answers and ground truth (5.3)", run_self_rejection,
         _add_arguments),
    Mode("memorisation", "name-cloze memorisation test and its correlation with benchmark scores (section 3)", run_memorisation,
         None),
    Mode("human-agreement", "map score gaps to human preference probabilities (section 8, Appendix B)", run_human_agreement, None),
]
