"""Judge prompts, verdict parsing and the pairwise trials of substantive scoring (paper 5.2.2, A.2).

Two judge prompts (in `generation_prompts.yaml`):

- pass_fail (A.2.1): the question (its substantive frame when the release has one) and two
  unlabelled answers; the judge says which is better on factual accuracy in the specified
  context and relevance (following instructions), or that they tie.
- partial (A.2.2): the question (its full metadata frame), the rubric (the question's
  non-empty reject_reasons, listed without saying which option each came from) and, when
  neither answer in the pair is a ground truth, the question's first ground truth shown
  as a reference; a forced choice of the answer that better fits the historical context.

Every trial is a `Comparison` of two items (an option index, or CANDIDATE) in a stated
order, answered as {"better": "A" | "B" | "tie"}. `parse_verdict` reads that JSON wherever
it is in the reply (histbench.eval.parsing), also from a bare last line such as
"B" or "Verdict: tie", and fails (a stored, counted parse failure, never re-asked) on
anything else. A "tie" in a forced choice is recorded but not used as a comparison
(counted as an invalid trial), so every Bradley-Terry comparison is a real win/loss.

Answer order (A.2.1): the pass/fail trial of a candidate uses one order per ground truth,
drawn from a seeded hash of (seed, question, ground truth), so it never depends on run
order; reliability trials and all partial-credit trials are run in both orders.

Pass/fail scoring of a candidate: with one ground truth, the score is 1 if the judge
prefers the candidate or calls a tie, else 0. With two (or more) ground truths, each is
tested once; if the results agree the score is 1 or 0; if they split, the failed
comparison is asked once more with the order reversed, and the score is the share of the
three trials passed (1/3 or 2/3), as A.2.1 describes.

Judge reliability (A.2.1), on questions of the pass/fail path:
- alpha: each ground truth against each eligible distractor in both orders; a tie or a
  preference for the distractor is a failure. Eligible distractors are those with answer
  probability 0 whose family is not purely stylistic (written outside the period by a
  model or a modern/older source: anachronistic_model, anachronistic_source,
  anachronistic_year). anachronistic_manual options (e.g. knowledge the period could not
  have had) are substantive errors and are used.
- beta: the two ground truths against each other in both orders; any preference (not a
  tie) is an error; the raw rate is 2 beta, halved.
- A question whose alpha exceeds 0.25 moves to the partial-credit path. Pooled alpha is
  the share of failed trials over the questions that stay.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .generation import PromptSet, Question, clean_answer, render

CANDIDATE = -1
PASS_FAIL = "pass_fail"
PARTIAL = "partial"
ALPHA_THRESHOLD = 0.25
STYLISTIC_FAMILIES = frozenset({"anachronistic_model", "anachronistic_source", "anachronistic_year"})
DEFAULT_JUDGE_MAX_TOKENS = 64
TIE = "tie"

_VERDICT_KEYS = ("better", "winner", "verdict", "answer", "choice", "preferred", "preference", "result", "decision")
_TIE_WORDS = {"tie", "both", "equal", "draw", "same", "equally good", "both equal", "both answers"}
_LAST_LINE = re.compile(
    r"""^[\s"'*`_#>]*(?i:(?:the\s+)?(?:better(?:\s+answer)?|verdict|winner|answer|choice|decision)\s*(?:is\s*)?[:=\-]?\s*)?"""
    r"""[\s"'*`_]*(?i:answer\s+)?(?P<v>A|B|[Tt][Ii][Ee])[\s"'*`_.!)\]]*$"""
)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


# --------------------------------------------------------------------------- comparisons


@dataclass(frozen=True)
class Comparison:
    """One judge trial: `first` is shown as Answer A, `second` as Answer B."""

    question: int
    prompt: str  # PASS_FAIL or PARTIAL
    first: int  # option index, or CANDIDATE
    second: int
    purpose: str  # candidate, tiebreak, alpha, beta, anchor

    def reversed(self, purpose: str | None = None) -> Comparison:
        return Comparison(self.question, self.prompt, self.second, self.first, purpose or self.purpose)

    def letter_of(self, item: int) -> str:
        if item == self.first:
            return "A"
        if item == self.second:
            return "B"
        raise ValueError(f"item {item} is not in this comparison")

    def winner(self, verdict: str) -> int | None:
        """The item the verdict prefers (None for a tie)."""
        return {"A": self.first, "B": self.second}.get(verdict)


def seeded_flip(seed: int, *parts) -> bool:
    """A reproducible coin flip from a seed and any identifying parts."""
    text = "|".join(str(p) for p in (seed, *parts))
    return hashlib.sha256(text.encode("utf-8")).digest()[0] & 1 == 1


def eligible_distractors(question: Question, stylistic_families: Iterable[str] = STYLISTIC_FAMILIES) -> list[int]:
    """Distractors used for alpha: probability 0 and not purely stylistic."""
    stylistic = set(stylistic_families)
    families = question.families or tuple(_family(t) for t in question.types)
    return [i for i, p in enumerate(question.probabilities) if p == 0.0 and families[i] not in stylistic]


def _family(answer_type: str) -> str:
    from histbench.builders.chronologic.taxonomy import parse_answer_type

    return parse_answer_type(answer_type).family


def candidate_pass_fail_trials(question: Question, seed: int) -> list[Comparison]:
    """The first-stage trials of a candidate on the pass/fail path (one order per ground truth)."""
    out = []
    for g in question.ground_truths:
        trial = Comparison(question.number, PASS_FAIL, CANDIDATE, g, "candidate")
        out.append(trial.reversed() if seeded_flip(seed, "pass_fail", question.number, g) else trial)
    return out


def tiebreak_trial(failed: Comparison) -> Comparison:
    return failed.reversed("tiebreak")


def reliability_trials(question: Question, stylistic_families: Iterable[str] = STYLISTIC_FAMILIES) -> list[Comparison]:
    out = []
    for g in question.ground_truths:
        for d in eligible_distractors(question, stylistic_families):
            out += [Comparison(question.number, PASS_FAIL, g, d, "alpha"), Comparison(question.number, PASS_FAIL, d, g, "alpha")]
    gts = question.ground_truths
    for g in gts:
        for h in gts:
            if g != h:
                out.append(Comparison(question.number, PASS_FAIL, g, h, "beta"))
    return out


def anchor_trials(question: Question) -> list[Comparison]:
    """Every pair of options in both orders (A.2.2)."""
    n = len(question.options)
    return [Comparison(question.number, PARTIAL, i, j, "anchor") for i in range(n) for j in range(n) if i != j]


def candidate_partial_trials(question: Question) -> list[Comparison]:
    """The candidate against every anchor, in both orders."""
    out = []
    for k in range(len(question.options)):
        out += [Comparison(question.number, PARTIAL, CANDIDATE, k, "candidate"),
                Comparison(question.number, PARTIAL, k, CANDIDATE, "candidate")]
    return out


# --------------------------------------------------------------------------- requests


def _item_text(question: Question, item: int, candidate: str | None) -> str:
    if item == CANDIDATE:
        if candidate is None:
            raise ValueError("a candidate comparison needs the candidate's answer")
        return candidate
    return question.options[item]


def judge_text(question: Question, comparison: Comparison, prompts: PromptSet, candidate: str | None = None) -> tuple[str | None, str]:
    """(system, user) text of one trial."""
    section = prompts.section(comparison.prompt)
    values = {
        "question": question.question,
        "answer_a": _item_text(question, comparison.first, candidate),
        "answer_b": _item_text(question, comparison.second, candidate),
    }
    if comparison.prompt == PASS_FAIL:
        values["frame"] = question.judge_frame
        user = render(section["user"], values, "pass_fail")
    else:
        values["frame"] = question.frame
        rubric = question.rubric
        values["rubric"] = render(section["rubric"], {"reasons": "\n".join(f"- {r}" for r in rubric)}, "rubric") if rubric else ""
        gts = question.ground_truths
        needs_guide = comparison.first not in gts and comparison.second not in gts
        values["guide"] = render(section["guide"], {"guide_answer": question.options[gts[0]]}, "guide") if needs_guide else ""
        user = render(section["user"], values, "partial")
    system = section.get("system")
    return (system.strip() if system else None), user.strip()


def judge_request(question: Question, comparison: Comparison, prompts: PromptSet, candidate: str | None = None,
                  max_new_tokens: int = DEFAULT_JUDGE_MAX_TOKENS, temperature: float = 0.0, extra: Mapping | None = None):
    from histbench.eval.backends import GenerateRequest

    system, user = judge_text(question, comparison, prompts, candidate)
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return GenerateRequest(messages=messages, max_new_tokens=max_new_tokens, temperature=temperature, extra=extra)


# --------------------------------------------------------------------------- parsing


def _normalise_verdict(value) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return {1: "A", 2: "B"}.get(int(value)) if float(value) in (1.0, 2.0) else None
    text = str(value).strip()
    text = re.sub(r"^(?:answer|response|option)\s+", "", text, flags=re.IGNORECASE).strip(" \t\"'*.`()[]")
    low = text.lower()
    if text in ("A", "B") or low in ("a", "b"):
        return low.upper()
    if low in ("1", "first"):
        return "A"
    if low in ("2", "second"):
        return "B"
    if low in _TIE_WORDS:
        return TIE
    return None


def parse_verdict(text: str | None) -> dict:
    """{"verdict": "A" | "B" | "tie", "route": how it was found}; ValueError otherwise."""
    from histbench.eval.parsing import extract_json_object

    cleaned = _THINK.sub("", text or "").strip()
    if not cleaned:
        raise ValueError("empty judge answer")
    extracted = extract_json_object(cleaned)
    if extracted.ok:
        lowered = {str(k).strip().lower(): v for k, v in extracted.value.items()}
        for key in _VERDICT_KEYS:
            if key in lowered:
                verdict = _normalise_verdict(lowered[key])
                if verdict is None:
                    raise ValueError(f"the judge's {key!r} is {lowered[key]!r}, not A, B or tie")
                return {"verdict": verdict, "route": extracted.route}
        raise ValueError(f"the judge's JSON has none of the keys {', '.join(_VERDICT_KEYS)}")
    lines = [line for line in cleaned.splitlines() if line.strip()]
    match = _LAST_LINE.match(lines[-1]) if lines else None
    if match:
        verdict = match["v"]
        return {"verdict": TIE if verdict.lower() == TIE else verdict, "route": "text"}
    raise ValueError(f"no verdict found in the judge's answer ({extracted.error})")


def parse_judge_result(result) -> dict:
    """Parse function for RunStore.run on judge requests."""
    return parse_verdict(getattr(result, "text", None))


def verdict_of(record) -> str | None:
    """The parsed verdict of a run-store record, or None (failed request or parse failure)."""
    if record is None or record.parse_error is not None or not isinstance(record.parsed, dict):
        return None
    return record.parsed.get("verdict")


# --------------------------------------------------------------------------- scoring


def candidate_passes(comparison: Comparison, verdict: str | None) -> bool | None:
    """A tie or a preference for the candidate passes; None when the verdict is missing."""
    if verdict is None:
        return None
    return verdict == TIE or comparison.winner(verdict) == CANDIDATE


def pass_fail_score(first: Sequence[bool | None], tiebreak: bool | None = None) -> float:
    """Score from the first-stage results (one per ground truth) and the tie-break.

    One ground truth: 1.0 or 0.0. Several: 1.0 if all pass, 0.0 if all fail, else the share
    of passes over the first stage plus the tie-break trial (1/3 or 2/3 with two ground
    truths). NaN when a needed verdict is missing.
    """
    if not first or any(r is None for r in first):
        return float("nan")
    if len(first) == 1 or all(first) or not any(first):
        return 1.0 if all(first) else 0.0
    if tiebreak is None:
        return float("nan")
    return (sum(first) + int(tiebreak)) / (len(first) + 1)


def needs_tiebreak(first: Sequence[bool | None]) -> bool:
    return len(first) > 1 and all(r is not None for r in first) and any(first) and not all(first)


@dataclass
class QuestionReliability:
    question: int
    alpha_trials: int = 0
    alpha_failures: int = 0
    beta_trials: int = 0
    beta_errors: int = 0
    unparsed: int = 0

    @property
    def alpha(self) -> float | None:
        return self.alpha_failures / self.alpha_trials if self.alpha_trials else None

    @property
    def moves_to_partial(self) -> bool:
        return self.alpha is not None and self.alpha > ALPHA_THRESHOLD

    def to_json(self) -> dict:
        return {"question_number": self.question, "alpha_trials": self.alpha_trials, "alpha_failures": self.alpha_failures,
                "alpha": self.alpha, "beta_trials": self.beta_trials, "beta_errors": self.beta_errors,
                "unparsed": self.unparsed, "moves_to_partial": self.moves_to_partial}


def tally_reliability(question: Question, trials: Sequence[Comparison], verdicts: Sequence[str | None]) -> QuestionReliability:
    """Count alpha failures and beta errors of one question's reliability trials."""
    out = QuestionReliability(question.number)
    gts = set(question.ground_truths)
    for trial, verdict in zip(trials, verdicts, strict=True):
        if verdict is None:
            out.unparsed += 1
            continue
        if trial.purpose == "alpha":
            gt = trial.first if trial.first in gts else trial.second
            out.alpha_trials += 1
            out.alpha_failures += trial.winner(verdict) != gt  # a tie or the distractor
        elif trial.purpose == "beta":
            out.beta_trials += 1
            out.beta_errors += verdict != TIE
    return out


def pooled_reliability(items: Sequence[QuestionReliability]) -> dict:
    """Pooled alpha (over questions that stay on the pass/fail path, and over all), beta."""
    kept = [r for r in items if not r.moves_to_partial]
    trials_kept = sum(r.alpha_trials for r in kept)
    trials_all = sum(r.alpha_trials for r in items)
    beta_trials = sum(r.beta_trials for r in kept)
    raw = sum(r.beta_errors for r in kept) / beta_trials if beta_trials else None
    return {
        "questions": len(items),
        "moved_to_partial": sorted(r.question for r in items if r.moves_to_partial),
        "questions_without_alpha_trials": sorted(r.question for r in items if r.alpha_trials == 0),
        "alpha_pooled": sum(r.alpha_failures for r in kept) / trials_kept if trials_kept else None,
        "alpha_trials": trials_kept,
        "alpha_pooled_all": sum(r.alpha_failures for r in items) / trials_all if trials_all else None,
        "alpha_trials_all": trials_all,
        "beta_raw": raw,
        "beta": raw / 2 if raw is not None else None,
        "beta_trials": beta_trials,
        "beta_questions": sum(1 for r in kept if r.beta_trials),
        "unparsed_trials": sum(r.unparsed for r in items),
    }


__all__ = [
    "ALPHA_THRESHOLD", "CANDIDATE", "PARTIAL", "PASS_FAIL", "STYLISTIC_FAMILIES", "TIE", "Comparison",
    "QuestionReliability", "anchor_trials", "candidate_partial_trials", "candidate_pass_fail_trials", "candidate_passes",
    "clean_answer", "eligible_distractors", "judge_request", "judge_text", "needs_tiebreak", "parse_judge_result",
    "parse_verdict", "pass_fail_score", "pooled_reliability", "reliability_trials", "seeded_flip", "tally_reliability",
    "tiebreak_trial", "verdict_of",
]
