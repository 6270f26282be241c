"""What every Chronologic-EN evaluation mode shares: loading the built questions, the
wrong-context frame permutation (paper section 6.3) and the likelihood prompt template.

Light to import (no datasets/torch at module level).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template

from histbench.builders.chronologic.taxonomy import REASONING_TYPES
from histbench.core.errors import EvalError

PROMPT_FILE = "likelihood_prompt.yaml"
#: how results name a file shipped with histbench (its folder in the repository and the package)
SHIPPED_PREFIX = "sources/chronologic/"


def load_questions(built, limit: int | None = None) -> list[dict]:
    """The `questions` config (test split) of a built dataset, sorted by question_number."""
    if built.benchmark != "chronologic":
        raise EvalError(f"this is a {built.benchmark!r} build, not chronologic", file=built.path)
    rows = built.load("questions", "test").to_list()
    rows.sort(key=lambda r: r["question_number"])
    if limit is not None:
        if limit < 1:
            raise EvalError(f"--limit must be at least 1, got {limit}", field="--limit")
        rows = rows[:limit]
    return rows


# --------------------------------------------------------------------------- wrong contexts


@dataclass(frozen=True)
class FramePermutation:
    """question_number -> the question_number whose metadata frame it receives.

    `kept_own` lists questions whose group has a single question (no other frame
    to take: they keep their own, and are reported); `same_text` lists questions whose
    donor's frame text happens to equal their own (e.g. two questions from one volume).
    """

    donor: dict[int, int]
    kept_own: tuple[int, ...]
    same_text: tuple[int, ...]
    seed: int
    groups: str = "reasoning_type"

    def to_json(self) -> dict:
        return {
            "seed": self.seed,
            "groups": self.groups,
            "donor": {str(k): v for k, v in sorted(self.donor.items())},
            "kept_own": list(self.kept_own),
            "same_text": list(self.same_text),
        }


def derangement(n: int, rng) -> list[int]:
    """A uniformly random permutation of range(n) with no fixed point (n >= 2), by
    rejection sampling numpy permutations (about e draws on average)."""
    if n < 2:
        raise ValueError("a derangement needs at least two items")
    while True:
        perm = rng.permutation(n)
        if not (perm == range(n)).any():
            return [int(i) for i in perm]


# Groups within which frames are permuted. "authors": the groups of the authors'
# experiment plan (chronologic/ExperimentPlan.md of their repository: frames permuted within
# frame types, character modelling separately), i.e. world-context questions, character
# modelling, the other book-context questions, passage-context questions.
# "reasoning_type": within each of the eight reasoning types of Table 1.
FRAME_GROUPS = ("authors", "reasoning_type")
_AUTHOR_GROUP_ORDER = ("world_context", "character_modeling", "book_context", "passage_context")


def frame_group(question: dict, groups: str = "reasoning_type") -> str:
    """The permutation group of one question under `groups` (see FRAME_GROUPS)."""
    if groups == "reasoning_type":
        return question["reasoning_type"]
    if groups == "authors":
        if question["reasoning_type"] == "character_modeling":
            return "character_modeling"
        return question.get("frame_type") or "unknown frame type"
    raise EvalError(f"unknown frame groups {groups!r} (one of {', '.join(FRAME_GROUPS)})", field="--frame-groups")


def frame_permutation(questions: Sequence[dict], seed: int = 0, groups: str = "reasoning_type") -> FramePermutation:
    """Give every question the metadata frame of another question of its group (paper
    section 6.3), by a seeded derangement within each group (`groups`: FRAME_GROUPS).

    Deterministic: questions are taken in question_number order within each group, groups
    in a fixed order (Table 1 order for reasoning types), with one numpy Generator seeded by
    `seed`.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    by_group: dict[str, list[dict]] = {}
    for question in sorted(questions, key=lambda q: q["question_number"]):
        by_group.setdefault(frame_group(question, groups), []).append(question)
    order = REASONING_TYPES if groups == "reasoning_type" else _AUTHOR_GROUP_ORDER
    donor: dict[int, int] = {}
    kept: list[int] = []
    for group in [g for g in order if g in by_group] + sorted(set(by_group) - set(order)):
        members = by_group[group]
        if len(members) == 1:
            number = members[0]["question_number"]
            donor[number] = number
            kept.append(number)
            continue
        perm = derangement(len(members), rng)
        for member, index in zip(members, perm, strict=True):
            donor[member["question_number"]] = members[index]["question_number"]
    frames = {q["question_number"]: q["metadata_frame"] for q in questions}
    same = [n for n, d in donor.items() if d != n and frames[d] == frames[n]]
    return FramePermutation(donor, tuple(sorted(kept)), tuple(sorted(same)), seed, groups)


def apply_frames(questions: Sequence[dict], permutation: FramePermutation | None) -> list[dict]:
    """Copies of the questions with `metadata_frame` replaced by the donor's (and the
    original kept as `original_metadata_frame`, the donor's number as `frame_donor`)."""
    frames = {q["question_number"]: q["metadata_frame"] for q in questions}
    out = []
    for question in questions:
        number = question["question_number"]
        donor = number if permutation is None else permutation.donor[number]
        out.append({**question, "metadata_frame": frames[donor],
                    "original_metadata_frame": question["metadata_frame"], "frame_donor": donor})
    return out


# --------------------------------------------------------------------------- prompt template


@dataclass(frozen=True)
class AbstentionReminder:
    """The reminder line of the likelihood prompt and which questions get it: every
    question of `reasoning_types`, and any other whose answer options contain one of
    `answer_contains` once lower-cased."""

    text: str
    reasoning_types: tuple[str, ...]
    answer_contains: tuple[str, ...]

    def applies(self, question: dict) -> bool:
        if question.get("reasoning_type") in self.reasoning_types:
            return True
        return any(
            needle in answer.lower()
            for answer in question.get("answer_strings") or ()
            if isinstance(answer, str)
            for needle in self.answer_contains
        )


REMINDER_LINE = "$abstention_reminder"


@dataclass(frozen=True)
class PromptTemplate:
    """The likelihood prompt (sources/chronologic/likelihood_prompt.yaml, the authors' own):
    `lines` joined with "\n" into the context ($metadata_frame, $main_question; the line
    "$abstention_reminder" only for the questions the reminder applies to), `continuation`
    with $answer. `text` is the file's exact text, whose sha256 goes into every result."""

    lines: tuple[str, ...]
    continuation: str
    reminder: AbstentionReminder | None
    text: str
    path: str

    @classmethod
    def load(cls, path: str | Path | None = None) -> PromptTemplate:
        import yaml

        from histbench.core.resources import Resources

        path = Path(path) if path else Resources.default().source_dir("chronologic") / PROMPT_FILE
        if not path.is_file():
            raise EvalError("prompt template not found", file=path)
        text = path.read_text(encoding="utf-8")
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise EvalError(f"not valid YAML ({exc})", file=path) from exc
        if not isinstance(data, dict):
            raise EvalError("the template is a mapping with 'lines' and 'continuation'", file=path)
        lines = data.get("lines")
        if not isinstance(lines, list) or not lines or not all(isinstance(line, str) for line in lines):
            raise EvalError("'lines' must be a non-empty list of texts", file=path, field="lines")
        continuation = data.get("continuation")
        if not isinstance(continuation, str) or not continuation:
            raise EvalError("the template needs a non-empty text 'continuation'", file=path, field="continuation")
        context_names = {n for line in lines for n in Template(line).get_identifiers()}
        missing = [n for n in ("metadata_frame", "main_question") if n not in context_names]
        if missing:
            raise EvalError(f"'lines' must use ${', $'.join(missing)}", file=path, field="lines")
        unknown = sorted(context_names - {"metadata_frame", "main_question", "abstention_reminder"})
        if unknown:
            raise EvalError(f"'lines' use unknown placeholders ${', $'.join(unknown)}", file=path, field="lines")
        if "answer" not in Template(continuation).get_identifiers():
            raise EvalError("'continuation' must use $answer", file=path, field="continuation")
        reminder = None
        if "abstention_reminder" in context_names:
            if any(line != REMINDER_LINE and "abstention_reminder" in Template(line).get_identifiers() for line in lines):
                raise EvalError(f"{REMINDER_LINE} must be a line of its own", file=path, field="lines")
            spec = data.get("abstention_reminder")
            if not isinstance(spec, dict) or not isinstance(spec.get("text"), str) or not spec["text"]:
                raise EvalError("a template with the line $abstention_reminder needs abstention_reminder.text",
                                file=path, field="abstention_reminder")
            lists = {}
            for key in ("reasoning_types", "answer_contains"):
                value = spec.get(key) or []
                if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                    raise EvalError(f"abstention_reminder.{key} must be a list of texts", file=path,
                                    field=f"abstention_reminder.{key}")
                lists[key] = tuple(value)
            reminder = AbstentionReminder(spec["text"], lists["reasoning_types"], lists["answer_contains"])
        return cls(tuple(lines), continuation, reminder, text, str(path))

    @property
    def sha256(self) -> str:
        from histbench.eval.signature import hash_text

        return hash_text(self.text)

    def recorded_path(self, run_dir: Path) -> str:
        """The template's path as a run's results.json records it, for files a user shares:
        the shipped template by its name in histbench (`sources/chronologic/...`), any other
        relative to the run folder (never the checkout's or the home folder's absolute path;
        the text and sha256 are recorded beside it)."""
        import os

        from histbench.core.resources import Resources

        path = Path(self.path).resolve()
        if path == (Resources.default().source_dir("chronologic") / PROMPT_FILE).resolve():
            return f"{SHIPPED_PREFIX}{PROMPT_FILE}"
        return Path(os.path.relpath(path, Path(run_dir).resolve())).as_posix()

    @classmethod
    def from_recorded(cls, recorded: str | None, run_dir: Path) -> PromptTemplate:
        """The template a results.json names (see `recorded_path`; an absolute path of an
        older run is read as it is)."""
        if not recorded or recorded == f"{SHIPPED_PREFIX}{PROMPT_FILE}":
            return cls.load(None)
        path = Path(recorded)
        return cls.load(path if path.is_absolute() else Path(run_dir) / path)

    def gets_reminder(self, question: dict) -> bool:
        return self.reminder is not None and self.reminder.applies(question)

    def render_context(self, question: dict) -> str:
        reminder = self.gets_reminder(question)
        parts = []
        for line in self.lines:
            if line == REMINDER_LINE:
                if reminder:
                    parts.append(self.reminder.text)
                continue
            parts.append(Template(line).substitute(
                metadata_frame=question["metadata_frame"], main_question=question["main_question"]))
        return "\n".join(parts)

    def render_continuation(self, answer: str) -> str:
        return Template(self.continuation).substitute(answer=answer)
