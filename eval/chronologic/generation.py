"""Chronologic-EN free generation: the questions, the prompts, and the candidate's answers.

`histbench eval chronologic --mode generate --model SPEC --dataset BUILD --out RUN_DIR`
asks the candidate model every question once, as the paper's authors did
(free_generation.py of their repository; the strings are in
sources/chronologic/generation_prompts.yaml):

- a system message asking for an answer in the question's historical context; for
  knowledge, inference and abstention questions, and for any question offering an
  "insufficient information" option, it also counsels "insufficient information" when the
  context could not have answered;
- the length request in that system message, derived from the question's own answer
  options (`length_request`), and a token budget of twice its upper word count (at least
  16; `--reasoning` gives reasoning models 25000 for thinking and answer together);
- the user message `CONTEXT: frame / QUESTION: question / ANSWER: `.

`--prompt-style plain` sends system, a newline and user as one prompt (the authors' local
path, for models without a chat template). Every request and raw answer is kept in the
run folder's run store (records.jsonl), so an interrupted run resumes where it stopped and
no question is ever asked twice; `chronologic.json` (mode "generate") lists each question's
answer for the judges. A generation run needs its own folder.

`--permute-frames` (paper 6.3, "wrong contexts") gives each question the metadata frame
of another question of its group (by default the authors' groups: world-context
questions, character modelling, other book-context questions, passage-context questions;
data.frame_permutation); the judges later see the question's true context.

Decoding defaults to greedy (temperature 0); the authors left their providers' defaults.

Cleaning an answer (the raw text is always kept): reasoning blocks (<think>...</think>)
are removed, surrounding whitespace is stripped, one leading "Answer:" label is dropped
(histbench's additions, for local reasoning models), and trailing sentence punctuation is
dropped when none of the question's options ends with any (the authors'
normalize_answer). An answer that is empty after cleaning, or a request the backend
refused, is recorded as empty: it is not sent to any judge and scores 0 on the
substantive channel (counted in the results).
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from histbench.core.errors import EvalError

from .files import OWN_NAME, own_path, read_own

PROMPTS_NAME = "generation_prompts.yaml"
RESULTS_NAME = OWN_NAME   # chronologic.json (results.json is the run format's)
MODE = "generate"
QUESTIONS_CONFIG = "questions"
SPLIT = "test"

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_ANSWER_LABEL = re.compile(r"^\s*(?:\*\*)?answer(?:\*\*)?\s*:\s*(?:\*\*)?\s*", re.IGNORECASE)


# --------------------------------------------------------------------------- questions


@dataclass(frozen=True)
class Question:
    """What the free-generation path needs of one row of the `questions` config."""

    number: int
    frame: str
    question: str
    options: tuple[str, ...]
    probabilities: tuple[float, ...]
    types: tuple[str, ...]
    reasoning_type: str
    group: str
    partial_credit: int
    substantive_frame: str | None = None
    families: tuple[str, ...] = ()
    answer_length: str | None = None
    reject_reasons: tuple[str, ...] | None = None
    source_date: int | None = None
    category: str | None = None
    frame_type: str | None = None

    @property
    def ground_truths(self) -> list[int]:
        return [i for i, t in enumerate(self.types) if t == "ground_truth"]

    @property
    def distractors(self) -> list[int]:
        return [i for i, t in enumerate(self.types) if t != "ground_truth"]

    @property
    def item_ids(self) -> list[str]:
        """The authors' option names: gt0, gt1, ... for ground truths and d0, d1, ... for
        the other options, each in release order (bt/design.py items_from_question)."""
        out, n_gt, n_d = [], 0, 0
        for t in self.types:
            if t == "ground_truth":
                out.append(f"gt{n_gt}")
                n_gt += 1
            else:
                out.append(f"d{n_d}")
                n_d += 1
        return out

    @property
    def judge_frame(self) -> str:
        """The frame the pass/fail judge sees: the substantive frame when there is one."""
        return self.substantive_frame or self.frame

    @property
    def rubric(self) -> list[str]:
        return [r.strip() for r in (self.reject_reasons or ()) if r and r.strip()]


_REQUIRED = ("question_number", "metadata_frame", "main_question", "answer_strings", "answer_probabilities",
             "answer_types", "reasoning_type", "group", "partial_credit")


def question_from_row(row: Mapping, where: str = "questions", index: int | None = None) -> Question:
    for name in _REQUIRED:
        if row.get(name) is None:
            raise EvalError(f"question row has no {name!r}", file=where, row=index, field=name)
    options = tuple(str(s) for s in row["answer_strings"])
    probabilities = tuple(float(p) for p in row["answer_probabilities"])
    types = tuple(str(t) for t in row["answer_types"])
    if not (len(options) == len(probabilities) == len(types)) or len(options) < 2:
        raise EvalError("answer_strings, answer_probabilities and answer_types must be parallel lists of 2+ options",
                        file=where, row=index, field="answer_strings")
    if "ground_truth" not in types:
        raise EvalError("the question has no ground truth (no option of type ground_truth)",
                        file=where, row=index, field="answer_types")
    reasons = row.get("reject_reasons")
    if reasons is not None and len(reasons) != len(options):
        raise EvalError(f"reject_reasons has {len(reasons)} entries for {len(options)} options",
                        file=where, row=index, field="reject_reasons")
    families = row.get("answer_families")
    return Question(
        number=int(row["question_number"]),
        frame=str(row["metadata_frame"]),
        substantive_frame=row.get("substantive_metadata_frame") or None,
        question=str(row["main_question"]),
        options=options,
        probabilities=probabilities,
        types=types,
        families=tuple(families) if families is not None else (),
        reasoning_type=str(row["reasoning_type"]),
        group=str(row["group"]),
        partial_credit=int(row["partial_credit"]),
        answer_length=row.get("answer_length") or None,
        reject_reasons=tuple(str(r) for r in reasons) if reasons is not None else None,
        source_date=int(row["source_date"]) if row.get("source_date") is not None else None,
        category=row.get("question_category") or None,
        frame_type=row.get("frame_type") or None,
    )


def load_questions(built, limit: int | None = None) -> list[Question]:
    """Every question of a chronologic build, sorted by question_number (the first `limit`)."""
    from .data import load_questions as load_rows

    where = f"{built.path} ({QUESTIONS_CONFIG}/{SPLIT})"
    return [question_from_row(row, where, n) for n, row in enumerate(load_rows(built, limit))]


# --------------------------------------------------------------------------- prompts


@dataclass
class PromptSet:
    """The prompt strings of sources/chronologic/generation_prompts.yaml and the hash of
    each section (generation, pass_fail, partial)."""

    path: Path
    text: str
    data: dict = field(repr=False)

    @cached_property
    def hashes(self) -> dict[str, str]:
        from histbench.eval.signature import hash_text

        return {name: hash_text(json.dumps(section, sort_keys=True, ensure_ascii=False)) for name, section in self.data.items()}

    def section(self, name: str) -> dict:
        try:
            return self.data[name]
        except KeyError as exc:
            raise EvalError(f"the prompt file has no section {name!r}", file=self.path) from exc


_REQUIRED_PROMPTS = {
    "generation": ("system_insufficient_information", "system_default", "insufficient_information_types",
                   "insufficient_information_markers", "user", "plain_joiner", "length_spec", "token_budget"),
    "pass_fail": ("user", "abstention_clause", "abstention_types", "retry_suffix", "max_tokens"),
    "partial": ("system", "user", "rubric_header", "acceptable_example", "rationales_header", "rationale_line",
                "label_partly_acceptable", "label_unacceptable", "block_separator", "mask", "mask_min_tokens",
                "mask_min_quoted_tokens", "mask_min_content_tokens", "mask_max_span", "mask_stopwords",
                "retry_suffix", "max_retries", "max_tokens"),
    "self_rejection": ("system", "user", "plain_joiner"),
    "memorisation": ("user", "max_tokens"),
}


def default_prompts_path() -> Path:
    from histbench.core.resources import Resources

    return Resources.default().source_dir("chronologic") / PROMPTS_NAME


def load_prompts(path: str | os.PathLike | None = None) -> PromptSet:
    import yaml

    path = Path(path) if path is not None else default_prompts_path()
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
    except (OSError, yaml.YAMLError) as exc:
        raise EvalError(f"cannot read the prompt file: {exc}", file=path) from exc
    if not isinstance(data, dict):
        raise EvalError("the prompt file is not a mapping of sections", file=path)
    for section, keys in _REQUIRED_PROMPTS.items():
        for key in keys:
            if key not in (data.get(section) or {}):
                raise EvalError(f"the prompt file lacks {section}.{key}", file=path, field=f"{section}.{key}")
    return PromptSet(path, text, data)


_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def fill(template: str, values: Mapping[str, object], where: str = "prompt") -> str:
    """Substitute `{name}` placeholders in one pass (a brace that names no given value, such
    as the JSON in a judge prompt, is left alone; text inserted is never re-scanned)."""
    used = set(_PLACEHOLDER.findall(template)) & set(values)
    missing = {"frame", "question", "answer_a", "answer_b"} & set(_PLACEHOLDER.findall(template)) - set(values)
    if missing:
        raise EvalError(f"the {where} template needs {', '.join(sorted(missing))}")
    if not used:
        return template
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


# The length request (the authors' free_generation.make_length_spec, reimplemented): the
# question's own answer options decide the form (verse, short phrase, one sentence, several
# sentences, or in between) and the lower and upper quartiles of their word counts, rounded
# to the form's step, give the requested range; the token budget is twice the upper bound.
_FORM_STEPS = {"verse": (1, 1), "short_phrase": (1, 1), "single_sentence": (10, 10),
               "multi_sentence": (10, 10), "phrase_or_sentence": (3, 5)}
_TERMINAL = re.compile(r"[.!?]\s*$")


def _rounded(value: float, form: str, direction: str) -> int:
    minimum, step = _FORM_STEPS.get(form, (3, 5))
    if step <= 1:
        return int(max(minimum, round(value)))
    rounder = math.floor if direction == "floor" else math.ceil
    return int(max(minimum, rounder(value / step) * step))


def length_request(options: Sequence[str], category: str | None, prompts: PromptSet) -> tuple[int, str]:
    """(upper word count, the verbal length request) for a question's answer options."""
    spec = prompts.section("generation")["length_spec"]
    cleaned = [s.strip() for s in options if s and s.strip()]
    if not cleaned:
        return int(spec["no_options_upper"]), spec["no_options"]
    words = [len(s.split()) for s in cleaned]
    sentences = [max(1, len([p for p in re.split(r"[.!?]+", s) if p.strip()])) for s in cleaned]
    sentence_like = sum(1 for s, w in zip(cleaned, words, strict=True) if _TERMINAL.search(s) or w >= 8) / len(cleaned)
    newlines = sum(s.count("\n") for s in cleaned)
    median_words, median_sentences = statistics.median(words), statistics.median(sentences)
    if newlines > 0 and "poet" in (category or "").lower():
        form = "verse"
    elif median_words <= 6 and sentence_like < 0.5:
        form = "short_phrase"
    elif sentence_like >= 0.6:
        form = "single_sentence" if median_sentences <= 1.5 else "multi_sentence"
    else:
        form = "phrase_or_sentence"
    counts = sorted(words)
    if len(counts) >= 2:
        q1, q3 = statistics.median(counts[: len(counts) // 2]), statistics.median(counts[(len(counts) + 1) // 2:])
    else:
        q1 = q3 = counts[0]
    lower, upper = _rounded(q1, form, "floor"), _rounded(q3, form, "ceil")
    if lower == 10 and counts[0] < 10:
        lower = 5 if counts[0] >= 5 else counts[0]
    if lower >= upper:
        lower = max(1, upper - (10 if upper >= 20 else 5 if upper >= 5 else 1))
    unit = "sentence" if any(s[0].isupper() for s in cleaned) else "phrase"
    values = {"lower": lower, "upper": upper, "unit": unit}
    if form == "verse":
        return int(spec["verse_upper"]), spec["verse"]
    if form == "short_phrase":
        return upper, spec["few_words"] if upper <= 3 else fill(spec["short_phrase"], values)
    if form == "single_sentence":
        return upper, fill(spec["single_sentence"], values)
    if form == "multi_sentence":
        ranges = spec["sentence_ranges"]
        bounds = (1.5, 2.5, 4.0)
        sentence_range = next((r for b, r in zip(bounds, ranges, strict=False) if median_sentences <= b), ranges[-1])
        if unit == "phrase":
            sentence_range = sentence_range.replace("sentences", "phrases").replace("sentence", "phrase")
        return upper, fill(spec["multi_sentence"], {**values, "sentences": sentence_range})
    return upper, fill(spec["fallback"], values)


def system_template(question: Question, prompts: PromptSet) -> str:
    """The "insufficient information" system prompt for knowledge, inference and abstention
    questions and for any question offering such an option; the plain one otherwise."""
    section = prompts.section("generation")
    markers = [m.lower() for m in section["insufficient_information_markers"]]
    offers = any(any(m in option.lower() for m in markers) for option in question.options)
    if question.reasoning_type in section["insufficient_information_types"] or offers:
        return section["system_insufficient_information"]
    return section["system_default"]


def generation_prompt(question: Question, prompts: PromptSet) -> tuple[str, str, int, str]:
    """(system message, user message, token budget, length request) of one question."""
    section = prompts.section("generation")
    upper, spec = length_request(question.options, question.category, prompts)
    system = fill(system_template(question, prompts), {"length_spec": spec}, "system")
    user = fill(section["user"], {"frame": question.frame, "question": question.question}, "generation")
    budget = section["token_budget"]
    return system, user, max(int(budget["minimum"]), int(budget["multiplier"]) * upper), spec


def generation_request(question: Question, prompts: PromptSet, *, prompt_style: str = "chat", max_new_tokens: int | None = None,
                       temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None, reasoning: bool = False):
    """The candidate's request: a system and a user message (chat), or system + newline +
    user as one prompt (plain, for models without chat turns)."""
    from histbench.core.backends import GenerateRequest

    system, user, budget, _ = generation_prompt(question, prompts)
    if reasoning:
        budget = int(prompts.section("generation")["token_budget"]["reasoning"])
    budget = max_new_tokens or budget
    if prompt_style == "plain":
        prompt = system + prompts.section("generation")["plain_joiner"] + user
        return GenerateRequest(prompt=prompt, max_new_tokens=budget, temperature=temperature, top_p=top_p, seed=seed)
    if prompt_style != "chat":
        raise EvalError(f"unknown prompt style {prompt_style!r} (chat or plain)", field="--prompt-style")
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return GenerateRequest(messages=messages, max_new_tokens=budget, temperature=temperature, top_p=top_p, seed=seed)


def clean_answer(text: str | None) -> str:
    """The answer a judge sees (see module docstring)."""
    if not text:
        return ""
    cleaned = _THINK.sub("", text)
    if "</think>" in cleaned.lower():  # an unterminated opening tag was stripped upstream
        cleaned = cleaned[cleaned.lower().rindex("</think>") + len("</think>"):]
    cleaned = cleaned.strip()
    cleaned = _ANSWER_LABEL.sub("", cleaned, count=1).strip()
    return cleaned


def normalize_answer(answer: str, options: Sequence[str]) -> str:
    """Drop trailing sentence punctuation when none of the question's own options ends
    with any (the authors' free_generation.normalize_answer)."""
    cleaned = [s.strip() for s in options if s and s.strip()]
    if cleaned and not any(_TERMINAL.search(s) for s in cleaned):
        answer = re.sub(r"[.!?]+\s*$", "", answer).rstrip()
    return answer


# --------------------------------------------------------------------------- the run


def write_json_atomic(path: Path, data: Any) -> None:
    from histbench.core.atomic import write_text_atomic
    from histbench.core.schema import to_native

    write_text_atomic(path, json.dumps(to_native(data), indent=2, ensure_ascii=False, allow_nan=True) + "\n")


def read_generation(run_dir: str | os.PathLike) -> dict:
    """The free-generation results of a run folder (chronologic.json, or results.json of a
    folder written before the run format)."""
    path = own_path(run_dir)
    if path is None:
        raise EvalError(f"no {RESULTS_NAME} here: run `histbench eval chronologic --mode generate --out {run_dir}` first",
                        file=run_dir)
    data = read_own(run_dir)
    if data.get("mode") != MODE:
        raise EvalError(f"this folder holds a {data.get('mode')!r} run, not a free-generation run (--mode generate)", file=path)
    return data


def generate(built, backend, run_dir: str | os.PathLike, *, prompts: PromptSet | None = None, prompt_style: str = "chat",
             max_new_tokens: int | None = None, temperature: float = 0.0, top_p: float = 1.0, seed: int = 0,
             sampling_seed: int | None = None, reasoning: bool = False, limit: int | None = None,
             permute_frames: bool = False, frame_groups: str = "authors", label: str | None = None) -> dict:
    """Ask the candidate every question (resuming what the run folder holds) and write
    chronologic.json. Returns its content. label names the run in reports (default: the model
    spec)."""
    from histbench.core.runstore import RunStore, summarize
    from histbench.eval.signature import make_signature

    from .data import frame_permutation

    run_dir = Path(run_dir)
    existing = own_path(run_dir)
    if existing is not None:
        try:
            mode = json.loads(existing.read_text(encoding="utf-8")).get("mode")
        except ValueError:
            mode = None
        if mode != MODE:
            raise EvalError(f"this folder holds a {mode!r} run; give free generation its own --out folder", file=run_dir)
    prompts = prompts or load_prompts()
    questions = load_questions(built, limit)
    permutation = None
    asked = questions
    if permute_frames:
        permutation = frame_permutation([{"question_number": q.number, "reasoning_type": q.reasoning_type,
                                          "frame_type": q.frame_type, "metadata_frame": q.frame} for q in questions],
                                        seed, groups=frame_groups)
        frames = {q.number: q.frame for q in questions}
        asked = [replace(q, frame=frames[permutation.donor[q.number]]) for q in questions]
    options = {"mode": MODE, "prompt_style": prompt_style, "max_new_tokens": max_new_tokens, "temperature": temperature,
               "top_p": top_p, "sampling_seed": sampling_seed, "reasoning": reasoning, "limit": limit,
               "permute_frames": permute_frames, "frame_groups": frame_groups if permute_frames else None, "seed": seed,
               "prompt_hash": prompts.hashes["generation"]}
    requests = [generation_request(q, prompts, prompt_style=prompt_style, max_new_tokens=max_new_tokens, temperature=temperature,
                                   top_p=top_p, seed=sampling_seed, reasoning=reasoning) for q in asked]
    store = RunStore.open(run_dir, backend=backend, dataset=built, options=options)
    records = store.run(requests, parse=None, desc="chronologic: candidate answers")
    answers = []
    for q, record, request in zip(questions, records, requests, strict=True):
        raw = record.text if record.response is not None else None
        answer = normalize_answer(clean_answer(raw), q.options)
        answers.append({
            "question_number": q.number,
            "key": record.key,
            "answer": answer,
            "raw": raw,
            "max_new_tokens": request.max_new_tokens,
            "finish_reason": (record.response or {}).get("finish_reason"),
            "error": record.error,
            "empty": not answer,
            "frame_donor": permutation.donor[q.number] if permutation else q.number,
        })
    decoding = {"temperature": temperature, "top_p": top_p, "seed": sampling_seed,
                "max_new_tokens": max_new_tokens or ("reasoning" if reasoning else "2 x requested length"),
                "prompt_style": prompt_style}
    extra = {"frames": f"permuted-{frame_groups}-seed{seed}"} if permute_frames else {}
    signature = make_signature(dataset=built.identity(), backend=backend.identity(), decoding=decoding,
                               prompt_template_hash=prompts.hashes["generation"], mode=MODE, **extra)
    counts = summarize(records)
    counts.update({
        "questions": len(questions),
        "empty_answers": sum(a["empty"] for a in answers),
        "refused_requests": sum(a["error"] is not None for a in answers),
        "truncated_answers": sum(a["finish_reason"] == "length" for a in answers),
    })
    result = {
        "benchmark": "chronologic",
        "mode": MODE,
        "label": (label or backend.spec) + (" (wrong frames)" if permute_frames else ""),
        "signature": signature.to_dict(),
        "dataset": built.identity(),
        "model": backend.identity(),
        "options": options,
        "prompt_file": str(prompts.path.name),
        "prompt_hash": prompts.hashes["generation"],
        "frame_permutation": permutation.to_json() if permutation else None,
        "counts": counts,
        "answers": answers,
    }
    write_json_atomic(run_dir / RESULTS_NAME, result)
    return result
