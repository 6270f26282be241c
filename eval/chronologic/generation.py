"""Chronologic-EN free generation: the questions, the prompts, and the candidate's answers.

`histbench eval chronologic --mode generate --model SPEC --dataset BUILD --out RUN_DIR`
asks the candidate model every question once: the question's metadata frame, its main
question, and a cue chosen by its `answer_length` (short_answer, phrase, sentence_plus),
as one user message (templates in `generation_prompts.yaml`, hashed into the results).
Every request and raw answer is kept in the run folder's run store (records.jsonl), so an
interrupted run resumes where it stopped and no question is ever asked twice;
`results.json` (mode "generate") then lists each question's cleaned answer for the
judges and names the run for `histbench report chronologic`. A generation run needs its
own folder (a folder holding another mode's results is refused).

`--permute-frames` (paper 6.3, "wrong contexts") gives each question the metadata frame
of another question of the same reasoning type (the shared seeded derangement of
data.py); the judges later see the question's true context.

Decoding defaults to greedy (temperature 0) with a per-length token budget from the
prompt file (64 / 128 / 700 new tokens), overridable with --max-new-tokens.
`--prompt-style plain` sends one plain prompt ending in "Answer:" instead of chat messages
(for base models without a chat template).

Cleaning an answer (the raw text is always kept): reasoning blocks
(<think>...</think>) are removed, surrounding whitespace is stripped, and one leading
"Answer:" label is dropped. An answer that is empty after cleaning, or a request the
backend refused, is recorded as empty: it is not sent to any judge and scores 0 on the
substantive channel (counted in the results).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from string import Template
from typing import Any

from histbench.builders.core.errors import EvalError
from histbench.builders.core.readers import read_json_object

PROMPTS_FILE = Path(__file__).with_name("generation_prompts.yaml")
RESULTS_NAME = "results.json"
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

    @property
    def ground_truths(self) -> list[int]:
        return [i for i, p in enumerate(self.probabilities) if p == 1.0]

    @property
    def distractors(self) -> list[int]:
        return [i for i, p in enumerate(self.probabilities) if p != 1.0]

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
    if 1.0 not in probabilities:
        raise EvalError("the question has no ground truth (no option with probability 1.0)",
                        file=where, row=index, field="answer_probabilities")
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
    )


def load_questions(built, limit: int | None = None) -> list[Question]:
    """Every question of a chronologic build, sorted by question_number (the first `limit`)."""
    from .data import load_questions as load_rows

    where = f"{built.path} ({QUESTIONS_CONFIG}/{SPLIT})"
    return [question_from_row(row, where, n) for n, row in enumerate(load_rows(built, limit))]


# --------------------------------------------------------------------------- prompts


@dataclass
class PromptSet:
    """The templates of generation_prompts.yaml and the hash of each section."""

    path: Path
    text: str
    data: dict = field(repr=False)

    @cached_property
    def hashes(self) -> dict[str, str]:
        from histbench.eval.signature import hash_text

        return {name: hash_text(section) for name, section in self.data.items()}

    def section(self, name: str) -> dict:
        try:
            return self.data[name]
        except KeyError as exc:
            raise EvalError(f"the prompt file has no section {name!r}", file=self.path) from exc


def load_prompts(path: str | os.PathLike | None = None) -> PromptSet:
    import yaml

    path = Path(path) if path is not None else PROMPTS_FILE
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
    except (OSError, yaml.YAMLError) as exc:
        raise EvalError(f"cannot read the prompt file: {exc}", file=path) from exc
    for section, keys in {"candidate": ("user", "cues"), "pass_fail": ("user",), "partial": ("user", "rubric", "guide")}.items():
        for key in keys:
            if not isinstance(data, dict) or key not in (data.get(section) or {}):
                raise EvalError(f"the prompt file lacks {section}.{key}", file=path, field=f"{section}.{key}")
    return PromptSet(path, text, data)


def render(template: str, values: Mapping[str, str], where: str = "prompt") -> str:
    try:
        return Template(template).substitute(values)
    except (KeyError, ValueError) as exc:
        raise EvalError(f"bad placeholder in the {where} template: {exc}") from exc


def candidate_text(question: Question, prompts: PromptSet) -> str:
    section = prompts.section("candidate")
    cue = (section.get("cues") or {}).get(question.answer_length or "", section.get("default_cue", ""))
    return render(section["user"], {"frame": question.frame, "question": question.question, "cue": cue}, "candidate").strip()


def candidate_budget(question: Question, prompts: PromptSet) -> int:
    budgets = prompts.section("candidate").get("max_new_tokens") or {}
    return int(budgets.get(question.answer_length or "default", budgets.get("default", 700)))


def candidate_request(question: Question, prompts: PromptSet, *, prompt_style: str = "chat", max_new_tokens: int | None = None,
                      temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None, system: str | None = None):
    from histbench.eval.backends import GenerateRequest

    text = candidate_text(question, prompts)
    budget = max_new_tokens or candidate_budget(question, prompts)
    if prompt_style == "plain":
        return GenerateRequest(prompt=text + "\n\nAnswer:", max_new_tokens=budget, temperature=temperature, top_p=top_p, seed=seed)
    if prompt_style != "chat":
        raise EvalError(f"unknown prompt style {prompt_style!r} (chat or plain)", field="--prompt-style")
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]
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


# --------------------------------------------------------------------------- the run


def write_json_atomic(path: Path, data: Any) -> None:
    from histbench.builders.core.atomic import write_text_atomic
    from histbench.builders.core.schema import to_native

    write_text_atomic(path, json.dumps(to_native(data), indent=2, ensure_ascii=False, allow_nan=True) + "\n")


def read_generation(run_dir: str | os.PathLike) -> dict:
    path = Path(run_dir) / RESULTS_NAME
    if not path.is_file():
        raise EvalError(f"no {RESULTS_NAME} here: run `histbench eval chronologic --mode generate --out {run_dir}` first",
                        file=run_dir)
    data = read_json_object(path, error=EvalError)
    if data.get("mode") != MODE:
        raise EvalError(f"this folder holds a {data.get('mode')!r} run, not a free-generation run (--mode generate)", file=path)
    return data


def generate(built, backend, run_dir: str | os.PathLike, *, prompts: PromptSet | None = None, prompt_style: str = "chat",
             max_new_tokens: int | None = None, temperature: float = 0.0, top_p: float = 1.0, seed: int = 0,
             sampling_seed: int | None = None, system: str | None = None, limit: int | None = None,
             permute_frames: bool = False, label: str | None = None) -> dict:
    """Ask the candidate every question (resuming what the run folder holds) and write
    results.json. Returns its content. label names the run in reports (default: the model
    spec)."""
    from histbench.eval.runstore import RunStore, summarize
    from histbench.eval.signature import make_signature

    from .data import frame_permutation

    run_dir = Path(run_dir)
    existing = run_dir / RESULTS_NAME
    if existing.is_file():
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
                                          "metadata_frame": q.frame} for q in questions], seed)
        frames = {q.number: q.frame for q in questions}
        asked = [replace(q, frame=frames[permutation.donor[q.number]]) for q in questions]
    options = {"mode": MODE, "prompt_style": prompt_style, "max_new_tokens": max_new_tokens, "temperature": temperature,
               "top_p": top_p, "sampling_seed": sampling_seed, "system": system, "limit": limit,
               "permute_frames": permute_frames, "seed": seed, "prompt_hash": prompts.hashes["candidate"]}
    requests = [candidate_request(q, prompts, prompt_style=prompt_style, max_new_tokens=max_new_tokens, temperature=temperature,
                                  top_p=top_p, seed=sampling_seed, system=system) for q in asked]
    store = RunStore.open(run_dir, backend=backend, dataset=built, options=options)
    records = store.run(requests, parse=None, desc="chronologic: candidate answers")
    answers = []
    for q, record in zip(questions, records, strict=True):
        raw = record.text if record.response is not None else None
        answer = clean_answer(raw)
        answers.append({
            "question_number": q.number,
            "key": record.key,
            "answer": answer,
            "raw": raw,
            "finish_reason": (record.response or {}).get("finish_reason"),
            "error": record.error,
            "empty": not answer,
            "frame_donor": permutation.donor[q.number] if permutation else q.number,
        })
    decoding = {"temperature": temperature, "top_p": top_p, "seed": sampling_seed,
                "max_new_tokens": max_new_tokens or "by answer_length", "prompt_style": prompt_style}
    extra = {"frames": f"permuted-seed{seed}"} if permute_frames else {}
    signature = make_signature(dataset=built.identity(), backend=backend.identity(), decoding=decoding,
                               prompt_template_hash=prompts.hashes["candidate"], mode=MODE, **extra)
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
        "prompt_hash": prompts.hashes["candidate"],
        "frame_permutation": permutation.to_json() if permutation else None,
        "counts": counts,
        "answers": answers,
    }
    write_json_atomic(run_dir / RESULTS_NAME, result)
    return result
