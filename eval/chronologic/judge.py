"""Judge prompts, verdicts and the pairwise trials of substantive scoring (paper 5.2.2, A.2).

Everything here follows the authors' code (GitHub Historical-AI-Lab/GPT-1914, folder
chronologic/modelasjudge/); the prompt strings themselves are in
sources/chronologic/generation_prompts.yaml.

Two judge prompts:

- pass_fail (A.2.1; judge_prompts_nocontext.py): one user message with the question's
  substantive frame (its metadata frame when the release has none), the main question and
  two unlabelled answers; the judge names the accurate and relevant one, or "C" when both
  are. Knowledge and abstention questions add the clause that "insufficient information"
  is a valid response. Verdict: {"question fit": "A" | "B" | "C"}.
- partial (A.2.2; bt/prompts.py, rubric mode "rationales"): a system message and a user
  message with the same frame, the question, a rubric (every ground truth not in the pair
  shown as an acceptable example, then one line per distractor with its reject reason,
  PARTLY ACCEPTABLE or UNACCEPTABLE; phrases of a reason that occur in either compared
  answer are masked), and the two answers; a forced choice on fit to the context.
  Verdict: {"context fit": "A" | "B"}.

An unparsable reply is asked once more with the prompt's retry sentence appended; a
pass/fail trial still unparsed counts as a fail (judge_prompts_nocontext
score_one_comparison), a partial-credit pair still unparsed is dropped together with its
other-order partner (bt/collect.py). The authors resend the partial retry up to three
times; the text is identical each time, so histbench sends it once (a deterministic
judge cannot answer it differently).

Trials (`Comparison`: two items, an option index or CANDIDATE, in the order shown):

- pass/fail candidate: one comparison per ground truth in a seeded order; with an even
  number of ground truths one of them (seeded) is asked in both orders, so a question with
  two ground truths always runs three trials (judge_scoring_nocontext
  _build_comparison_plan). The question scores the share of trials passed (a tie or a
  preference for the candidate passes): 0, 1/3, 2/3 or 1.
- partial-credit candidate and leave-one-out: the item against one seeded reference
  ground truth and every distractor, in both orders; the other ground truths are withdrawn
  from the pool and from the rubric (bt/design.py build_candidate_design,
  select_reference_gt with the authors' master seed 20260728).
- anchors: every pair of options, both orders.
- reliability (A.2.1): each ground truth against every distractor whose family has a
  penalty class (sources/chronologic/distractor_penalties.yaml), both orders; the judge
  errs when it prefers the distractor, or calls a tie with a distractor of class
  "question" or "both" (a tie with a "context" distractor is correct); an unparsed
  reply is an error. beta: ground truths against each other, both orders; anything but a
  tie is an error, and the rate is halved.

Automatic verdicts (substantive/verdicts.py): an answer identical to a ground truth after
lower-casing, dropping ASCII punctuation and trimming passes with no judge call; one
identical to a probability-0 distractor fails (on the pass/fail path only when the
distractor's class is "question" or "both"; on the partial-credit path any).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from histbench.core.errors import EvalError

from .generation import PromptSet, Question, clean_answer, fill

CANDIDATE = -1
PASS_FAIL = "pass_fail"
PARTIAL = "partial"
ALPHA_THRESHOLD = 0.25
REFERENCE_SEED = 20260728  # the authors' master seed of bt_context_scoring.py
PENALTIES_NAME = "distractor_penalties.yaml"
PENALTY_CLASSES = ("question", "both", "context")
AUTOFAIL_PASS_FAIL = frozenset({"question", "both"})
TIE = "tie"
EFFORT_LEVELS = ("none", "low", "medium", "high")

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


# --------------------------------------------------------------------------- penalty classes


@lru_cache(maxsize=4)
def load_penalties(path: str | None = None) -> dict[str, str]:
    """{distractor family: penalty class} (sources/chronologic/distractor_penalties.yaml)."""
    import yaml

    from histbench.core.resources import Resources

    file = path or str(Resources.default().source_dir("chronologic") / PENALTIES_NAME)
    try:
        data = yaml.safe_load(open(file, encoding="utf-8").read()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise EvalError(f"cannot read the penalty classes: {exc}", file=file) from exc
    families = data.get("families") or {}
    bad = {k: v for k, v in families.items() if v not in PENALTY_CLASSES}
    if bad:
        raise EvalError(f"unknown penalty class(es) {bad} (expected {', '.join(PENALTY_CLASSES)})", file=file, field="families")
    return dict(families)


def _family(answer_type: str) -> str:
    from histbench.builders.chronologic.taxonomy import parse_answer_type

    return parse_answer_type(answer_type).family


def penalty_class(question: Question, option: int, penalties: Mapping[str, str] | None = None) -> str | None:
    """The option's penalty class, or None when its family has none (ground truths too)."""
    if question.types[option] == "ground_truth":
        return None
    penalties = load_penalties() if penalties is None else penalties
    family = question.families[option] if question.families else _family(question.types[option])
    return penalties.get(family)


# --------------------------------------------------------------------------- comparisons


@dataclass(frozen=True)
class Comparison:
    """One judge trial: `first` is shown as Answer A. `withdrawn`: ground truths kept out of
    a partial-credit rubric (candidate and leave-one-out designs)."""

    question: int
    prompt: str  # PASS_FAIL or PARTIAL
    first: int  # option index, or CANDIDATE
    second: int
    purpose: str  # candidate, alpha, beta, anchor, loo:<option>
    withdrawn: tuple[int, ...] = ()

    def reversed(self) -> Comparison:
        return Comparison(self.question, self.prompt, self.second, self.first, self.purpose, self.withdrawn)

    def winner(self, verdict: str) -> int | None:
        """The item the verdict prefers (None for a tie)."""
        return {"A": self.first, "B": self.second}.get(verdict)

    def pair(self) -> tuple[int, int]:
        return tuple(sorted((self.first, self.second)))


def derive_seed(master_seed: int, *parts) -> int:
    """A 63-bit seed from a master seed and parts (sha256; the same in every process)."""
    payload = f"{master_seed}|" + "|".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(payload.encode("utf-8")).digest()[:8], "big") >> 1


def seeded_flip(seed: int, *parts) -> bool:
    """A reproducible coin flip from a seed and any identifying parts."""
    return derive_seed(seed, *parts) & 1 == 1


def reference_ground_truth(question: Question, among: Sequence[int] | None = None, seed: int = REFERENCE_SEED) -> int:
    """The one ground truth a candidate (or held-out option) is compared with: a seeded
    choice among the question's ground truths named gt0, gt1, ... (the authors'
    select_reference_gt: random.Random(derive_seed(seed, question, "refgt")).choice over the
    sorted names)."""
    ids = question.item_ids
    options = list(among) if among is not None else question.ground_truths
    names = sorted({ids[i] for i in options})
    if not names:
        raise EvalError(f"question {question.number} has no ground truth to compare with")
    choice = random.Random(derive_seed(seed, str(question.number), "refgt")).choice(names)
    return ids.index(choice)


def candidate_pass_fail_trials(question: Question, seed: int) -> list[Comparison]:
    """The pass/fail trials of a candidate: each ground truth once in a seeded order; with an
    even number of ground truths, one (seeded) in both orders."""
    gts = question.ground_truths
    doubled = gts[derive_seed(seed, "pass_fail", question.number, "doubled") % len(gts)] if len(gts) % 2 == 0 else None
    out = []
    for g in gts:
        trial = Comparison(question.number, PASS_FAIL, CANDIDATE, g, "candidate")
        if g == doubled:
            out += [trial.reversed(), trial]  # ground truth as A, then as B
        else:
            out.append(trial.reversed() if seeded_flip(seed, "pass_fail", question.number, g) else trial)
    return out


def reliability_trials(question: Question, penalties: Mapping[str, str] | None = None) -> list[Comparison]:
    out = []
    classed = [d for d in question.distractors if penalty_class(question, d, penalties) is not None]
    for d in classed:
        for g in question.ground_truths:
            out += [Comparison(question.number, PASS_FAIL, g, d, "alpha"), Comparison(question.number, PASS_FAIL, d, g, "alpha")]
    gts = question.ground_truths
    for i, g in enumerate(gts):
        for h in gts[i + 1:]:
            out += [Comparison(question.number, PASS_FAIL, g, h, "beta"), Comparison(question.number, PASS_FAIL, h, g, "beta")]
    return out


def anchor_trials(question: Question) -> list[Comparison]:
    """Every pair of options in both orders (A.2.2; bt/design.py build_anchor_design)."""
    n = len(question.options)
    out = []
    for i in range(n):
        for j in range(i + 1, n):
            out += [Comparison(question.number, PARTIAL, i, j, "anchor"), Comparison(question.number, PARTIAL, j, i, "anchor")]
    return out


def pool_trials(question: Question, item: int, reference: int, purpose: str, excluded: Iterable[int] = ()) -> list[Comparison]:
    """`item` against the reference ground truth and every distractor (minus `excluded`), in
    both orders; the other ground truths are withdrawn."""
    excluded = set(excluded) | {item}
    pool = [i for i in range(len(question.options))
            if i not in excluded and (i == reference or question.types[i] != "ground_truth")]
    withdrawn = tuple(g for g in question.ground_truths if g != reference and g not in excluded)
    out = []
    for opponent in pool:
        out += [Comparison(question.number, PARTIAL, item, opponent, purpose, withdrawn),
                Comparison(question.number, PARTIAL, opponent, item, purpose, withdrawn)]
    return out


def candidate_partial_trials(question: Question, seed: int = REFERENCE_SEED) -> list[Comparison]:
    return pool_trials(question, CANDIDATE, reference_ground_truth(question, seed=seed), "candidate")


def loo_trials(question: Question, held_out: int, seed: int = REFERENCE_SEED) -> list[Comparison]:
    """The trials of option `held_out` scored like a candidate against the other options
    (bt_context_scoring.py cmd_loo): a held-out ground truth faces a seeded one of the
    remaining ground truths."""
    gts = question.ground_truths
    among = [g for g in gts if g != held_out] if held_out in gts else gts
    reference = reference_ground_truth(question, among, seed)
    return pool_trials(question, held_out, reference, f"loo:{held_out}")


# --------------------------------------------------------------------------- prompts


def _item_text(question: Question, item: int, candidate: str | None) -> str:
    if item == CANDIDATE:
        if candidate is None:
            raise ValueError("a candidate comparison needs the candidate's answer")
        return candidate
    return question.options[item]


_WORD = re.compile(r"[A-Za-z0-9]+")
_QUOTED = re.compile(r"[\"“”']([^\"“”']{1,400})[\"“”']")  # bt/prompts.py _QUOTED_RE


def protected_grams(protected: Sequence[str], max_span: int) -> dict[int, set]:
    """{n: every run of n words} of the protected answers (lower-cased)."""
    grams: dict[int, set] = {}
    for text in protected:
        tokens = [m.group(0).lower() for m in _WORD.finditer(text or "")]
        for n in range(1, min(max_span, len(tokens)) + 1):
            grams.setdefault(n, set()).update(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))
    return grams


def mask_overlap(reason: str, protected: Sequence[str], section: Mapping, grams: dict[int, set] | None = None) -> str:
    """Mask the runs of a reject reason that occur word for word in a protected answer (the
    authors' mask_self_overlap): the longest such run starting at each word is masked when
    it has at least `mask_min_tokens` words (`mask_min_quoted_tokens` inside quotation
    marks) of which `mask_min_content_tokens` are not stopwords; masks separated only by
    punctuation or spaces merge into one."""
    if not reason or not protected:
        return reason
    words = [(m.group(0).lower(), m.start(), m.end()) for m in _WORD.finditer(reason)]
    if not words:
        return reason
    max_span = int(section["mask_max_span"])
    grams = protected_grams(protected, max_span) if grams is None else grams
    if not grams:
        return reason
    quoted = [(m.start(1), m.end(1)) for m in _QUOTED.finditer(reason)]
    stop = set(section["mask_stopwords"].split())
    longest = max(grams)
    spans: list[list[int]] = []
    i = 0
    while i < len(words):
        best = next((n for n in range(min(max_span, len(words) - i, longest), 0, -1)
                     if n in grams and tuple(w for w, _, _ in words[i:i + n]) in grams[n]), 0)
        if best:
            run = words[i:i + best]
            start, end = run[0][1], run[-1][2]
            inside = any(a <= start and end <= b for a, b in quoted)
            threshold = int(section["mask_min_quoted_tokens"] if inside else section["mask_min_tokens"])
            content = sum(1 for w, _, _ in run if w not in stop)
            if best >= threshold and content >= int(section["mask_min_content_tokens"]):
                if spans and not _WORD.search(reason[spans[-1][1]:start]):
                    spans[-1][1] = end
                else:
                    spans.append([start, end])
                i += best
                continue
        i += 1
    if not spans:
        return reason
    out, previous = [], 0
    for start, end in spans:
        out += [reason[previous:start], section["mask"]]
        previous = end
    return "".join(out + [reason[previous:]])


def partial_rubric(question: Question, comparison: Comparison, candidate: str | None, prompts: PromptSet) -> str:
    """The rubric block of a partial-credit prompt (bt/prompts.py _build_rationales_block)."""
    section = prompts.section(PARTIAL)
    compared = {comparison.first, comparison.second}
    blocks = [fill(section["acceptable_example"], {"text": question.options[g]})
              for g in question.ground_truths if g not in compared and g not in comparison.withdrawn]
    protected = [_item_text(question, item, candidate) for item in (comparison.first, comparison.second)]
    grams = protected_grams(protected, int(section["mask_max_span"]))
    lines = []
    for d in question.distractors:
        reason = (question.reject_reasons or ())[d] if question.reject_reasons else ""
        if not reason:
            continue
        partly = 0.0 < question.probabilities[d] < 1.0
        label = section["label_partly_acceptable"] if partly else section["label_unacceptable"]
        lines.append(fill(section["rationale_line"], {"label": label, "reason": mask_overlap(reason, protected, section, grams)}))
    if lines:
        blocks.append(section["rationales_header"] + "\n".join(lines))
    return section["block_separator"].join(blocks)


def judge_messages(question: Question, comparison: Comparison, prompts: PromptSet, candidate: str | None = None,
                   retry: bool = False) -> list[dict]:
    """The chat messages of one trial (a retry appends the prompt's retry sentence)."""
    section = prompts.section(comparison.prompt)
    values = {"frame": question.judge_frame, "context": question.judge_frame, "question": question.question,
              "answer_a": _item_text(question, comparison.first, candidate),
              "answer_b": _item_text(question, comparison.second, candidate)}
    if comparison.prompt == PASS_FAIL:
        values["abstention_clause"] = (section["abstention_clause"]
                                       if question.reasoning_type in section["abstention_types"] else "")
        user = fill(section["user"], values, "pass_fail")
        system = None
    else:
        values["rubric_header"] = section["rubric_header"]
        values["rubric"] = partial_rubric(question, comparison, candidate, prompts)
        user = fill(section["user"], values, "partial")
        system = section["system"]
    if retry:
        user += section["retry_suffix"]
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]


def judge_max_tokens(prompts: PromptSet, prompt: str, effort: str) -> int:
    table = prompts.section(prompt)["max_tokens"]
    if effort not in table:
        raise EvalError(f"unknown judge effort {effort!r} (one of {', '.join(table)})", field="--judge-effort")
    return int(table[effort])


def judge_request(question: Question, comparison: Comparison, prompts: PromptSet, candidate: str | None = None,
                  max_new_tokens: int = 4096, temperature: float = 0.0, retry: bool = False, extra: Mapping | None = None):
    from histbench.core.backends import GenerateRequest

    return GenerateRequest(messages=judge_messages(question, comparison, prompts, candidate, retry),
                           max_new_tokens=max_new_tokens, temperature=temperature, extra=extra)


# --------------------------------------------------------------------------- verdicts


def parse_pass_fail(text: str | None) -> str:
    """"A", "B" or TIE from a pass/fail reply (judge_prompts_nocontext parse_judge_response:
    the first {...} object, key "question fit" or "question_fit", value A, B or C)."""
    cleaned = re.sub(r"```(?:json)?", "", _THINK.sub("", text or "")).strip()
    match = re.search(r"\{[^{}]*\}", cleaned)
    if not match:
        raise ValueError("no JSON object in the judge's reply")
    try:
        obj = json.loads(match.group())
    except ValueError as exc:
        raise ValueError(f"the judge's JSON does not parse: {exc}") from exc
    value = obj.get("question fit") or obj.get("question_fit") if isinstance(obj, dict) else None
    letter = str(value).strip().upper() if value else ""
    if letter not in ("A", "B", "C"):
        raise ValueError(f"the judge's 'question fit' is {value!r}, not A, B or C")
    return TIE if letter == "C" else letter


_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)


def parse_partial(text: str | None) -> str:
    """"A" or "B" from a partial-credit reply (bt/prompts.py parse_bt_response: a bare
    letter, or the first object with a "context fit" key, fences allowed; ties fail)."""
    cleaned = _THINK.sub("", text or "").strip()
    if not cleaned:
        raise ValueError("empty judge answer")
    fenced = _FENCE.search(cleaned)
    if fenced:
        cleaned = fenced.group(1).strip()
    if cleaned.upper() in ("A", "B"):
        return cleaned.upper()
    for match in re.findall(r"\{[^{}]*\}", cleaned):
        try:
            obj = json.loads(match)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        for key, value in obj.items():
            if str(key).strip().lower().replace("_", " ") == "context fit":
                if isinstance(value, str) and value.strip().upper() in ("A", "B"):
                    return value.strip().upper()
                raise ValueError(f"the judge's 'context fit' is {value!r}, not A or B")
    raise ValueError("no 'context fit' verdict in the judge's reply")


PARSERS = {PASS_FAIL: parse_pass_fail, PARTIAL: parse_partial}


def result_parser(prompt: str):
    parse = PARSERS[prompt]

    def parse_result(result) -> dict:
        return {"verdict": parse(getattr(result, "text", None))}

    return parse_result


def verdict_of(record) -> str | None:
    """The parsed verdict of a run-store record, or None (failed request or parse failure)."""
    if record is None or record.parse_error is not None or not isinstance(record.parsed, dict):
        return None
    return record.parsed.get("verdict")


def ask(store, trials: Sequence[tuple[Question, Comparison, str | None]], prompts: PromptSet, *, max_new_tokens: int,
        desc: str) -> list[dict]:
    """Ask every trial; ask the ones without a verdict once more with the retry sentence.
    Returns, per trial, {"verdict": "A"|"B"|"tie"|None, "retried": bool}."""
    if not trials:
        return []
    prompt = trials[0][1].prompt
    parse = result_parser(prompt)
    records = store.run([judge_request(q, c, prompts, cand, max_new_tokens) for q, c, cand in trials], parse=parse, desc=desc)
    verdicts = [verdict_of(r) for r in records]
    again = [k for k, v in enumerate(verdicts) if v is None]
    if again:
        retried = store.run([judge_request(trials[k][0], trials[k][1], prompts, trials[k][2], max_new_tokens, retry=True)
                             for k in again], parse=parse, desc=f"{desc} (retries)")
        for k, record in zip(again, retried, strict=True):
            verdicts[k] = verdict_of(record)
    retried_set = set(again)
    return [{"verdict": v, "retried": k in retried_set} for k, v in enumerate(verdicts)]


# --------------------------------------------------------------------------- automatic verdicts

_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_for_identity(text: str | None) -> str:
    """Lower-cased, ASCII punctuation removed, trimmed (substantive/verdicts.py)."""
    return (text or "").lower().translate(_PUNCTUATION).strip()


def auto_verdict(question: Question, answer: str, path: str, penalties: Mapping[str, str] | None = None) -> str | None:
    """"pass", "fail" or None (judge it): identity with a ground truth passes; identity with a
    probability-0 distractor fails (pass/fail path: only of class question or both)."""
    norm = normalize_for_identity(answer)
    if not norm:
        return None
    if any(normalize_for_identity(question.options[g]) == norm for g in question.ground_truths):
        return "pass"
    for d in question.distractors:
        if question.probabilities[d] != 0.0 or normalize_for_identity(question.options[d]) != norm:
            continue
        if path == PARTIAL or penalty_class(question, d, penalties) in AUTOFAIL_PASS_FAIL:
            return "fail"
    return None


# --------------------------------------------------------------------------- scoring


def candidate_passes(comparison: Comparison, verdict: str | None) -> bool:
    """A tie or a preference for the candidate passes; an unparsed verdict fails."""
    return verdict is not None and (verdict == TIE or comparison.winner(verdict) == CANDIDATE)


def pass_fail_score(passes: Sequence[bool]) -> float:
    """The share of a question's trials passed (A.2.1: 0, 1/3, 2/3 or 1 with two ground truths)."""
    if not passes:
        raise ValueError("a pass/fail question needs at least one trial")
    return sum(bool(p) for p in passes) / len(passes)


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
    def over_threshold(self) -> bool:
        return self.alpha is not None and self.alpha > ALPHA_THRESHOLD

    def to_json(self) -> dict:
        return {"question_number": self.question, "alpha_trials": self.alpha_trials, "alpha_failures": self.alpha_failures,
                "alpha": self.alpha, "beta_trials": self.beta_trials, "beta_errors": self.beta_errors,
                "unparsed": self.unparsed, "alpha_over_0.25": self.over_threshold}


def tally_reliability(question: Question, trials: Sequence[Comparison], verdicts: Sequence[str | None],
                      penalties: Mapping[str, str] | None = None) -> QuestionReliability:
    """Count alpha failures and beta errors of one question's reliability trials (an
    unparsed reply counts as a failure, as in judge_alpha_reliability_nocontext.py)."""
    out = QuestionReliability(question.number)
    gts = set(question.ground_truths)
    for trial, verdict in zip(trials, verdicts, strict=True):
        if verdict is None:
            out.unparsed += 1
        if trial.purpose == "alpha":
            gt = trial.first if trial.first in gts else trial.second
            other = trial.second if gt == trial.first else trial.first
            tie_ok = penalty_class(question, other, penalties) == "context"
            correct = verdict is not None and (trial.winner(verdict) == gt or (verdict == TIE and tie_ok))
            out.alpha_trials += 1
            out.alpha_failures += not correct
        elif trial.purpose == "beta":
            out.beta_trials += 1
            out.beta_errors += verdict != TIE
    return out


def pooled_reliability(items: Sequence[QuestionReliability]) -> dict:
    """Pooled alpha and beta over the pass/fail questions (A.2.1). Questions with alpha above
    0.25 are listed; routing follows the release's partial_credit field, which already
    moved them."""
    trials = sum(r.alpha_trials for r in items)
    beta_trials = sum(r.beta_trials for r in items)
    raw = sum(r.beta_errors for r in items) / beta_trials if beta_trials else None
    return {
        "questions": len(items),
        "alpha_over_threshold": sorted(r.question for r in items if r.over_threshold),
        "questions_without_alpha_trials": sorted(r.question for r in items if r.alpha_trials == 0),
        "alpha_pooled": sum(r.alpha_failures for r in items) / trials if trials else None,
        "alpha_trials": trials,
        "beta_raw": raw,
        "beta": raw / 2 if raw is not None else None,
        "beta_trials": beta_trials,
        "beta_questions": sum(1 for r in items if r.beta_trials),
        "unparsed_trials": sum(r.unparsed for r in items),
    }


__all__ = [
    "ALPHA_THRESHOLD", "CANDIDATE", "PARTIAL", "PASS_FAIL", "REFERENCE_SEED", "TIE", "Comparison", "QuestionReliability",
    "anchor_trials", "ask", "auto_verdict", "candidate_partial_trials", "candidate_pass_fail_trials", "candidate_passes",
    "clean_answer", "derive_seed", "judge_messages", "judge_request", "load_penalties", "loo_trials", "mask_overlap",
    "normalize_for_identity", "parse_partial", "parse_pass_fail", "pass_fail_score", "penalty_class", "pooled_reliability",
    "reference_ground_truth", "reliability_trials", "seeded_flip", "tally_reliability", "verdict_of",
]
