"""Reading a Chronologic-EN release file (JSONL, JSON, CSV or TSV) and checking it.

The release is one JSON object per question (the authors' JSONL). The same columns may
come as a JSON array, or as CSV/TSV with one question per row: list-valued fields
(answer_strings, answer_probabilities, answer_types, reject_reasons, added_answers) are
then JSON arrays in the cell (a Python-literal list, as pandas writes it, is accepted
too), integers are plain numbers, and an empty cell means the field is absent.

`read_release` returns `ReleaseQuestion`s: the known fields normalised and typed, the
unknown ones kept verbatim in `extra`. `check_invariants` lists every broken invariant,
each naming the question, its row and the field; `load_release` raises one SourceError
listing them all.
"""

from __future__ import annotations

import ast
import io
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from histbench.core.errors import SourceError
from histbench.core.readers import iter_jsonl_objects, read_text_utf8

from .taxonomy import FRAME_TYPES, GROUND_TRUTH_PROBABILITY, MAX_OPTIONS, MIN_OPTIONS, REASONING_TYPES

# name -> kind. Required fields stop the build when absent; the others become null.
REQUIRED_FIELDS: dict[str, str] = {
    "question_number": "int",
    "metadata_frame": "str",
    "main_question": "str",
    "reasoning_type": "str",
    "frame_type": "str",
    "answer_strings": "str_list",
    "answer_probabilities": "float_list",
    "answer_types": "str_list",
    "partial_credit": "int",
}
OPTIONAL_FIELDS: dict[str, str] = {
    "substantive_metadata_frame": "str",
    "question_category": "str",
    "question_process": "str",
    "answer_length": "str",
    "reject_reasons": "str_list",
    "source_title": "str",
    "source_author": "str",
    "source_date": "int",
    "source_genre": "str",
    "source_htid": "str",
    "author_nationality": "str",
    "author_birth": "int",
    "author_profession": "str",
    "manual_comment": "str",
    "added_answers": "added_answers",
    "period_words_in_main_question": "int",
}
KNOWN_FIELDS: dict[str, str] = {**REQUIRED_FIELDS, **OPTIONAL_FIELDS}
# In CSV/TSV an empty cell of these text fields is the empty string (the release always
# has them, sometimes empty); for the other optional fields it means "absent".
ALWAYS_PRESENT_TEXT = frozenset({
    "question_category", "question_process", "answer_length", "source_title", "source_author",
    "source_genre", "source_htid", "author_nationality", "author_profession",
})
ADDED_ANSWER_KEYS: dict[str, str] = {
    "candidate_model": "str",
    "approving_judges": "str_list",
    "n_context_approve": "int",
    "index": "int",
}
FORMATS = ("jsonl", "json", "csv", "tsv")


@dataclass
class ReleaseQuestion:
    """One question as read: `fields` holds every known field (None when absent)."""

    row: int  # 1-based position in the file (line for JSONL, data row for CSV/TSV)
    fields: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)
    absent: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        number = self.fields.get("question_number")
        return f"question {number}" if number is not None else f"the question in row {self.row}"

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]


@dataclass(frozen=True)
class Problem:
    """One broken rule: where, and what was expected."""

    row: int
    question: str
    field: str | None
    message: str

    def describe(self) -> str:
        where = f"row {self.row}, {self.question}"
        if self.field:
            where += f", field {self.field!r}"
        return f"{where}: {self.message}"


class _FieldError(Exception):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


# ---------------------------------------------------------------- raw records per format


def _raw_jsonl(path: Path) -> list[tuple[int, dict]]:
    return list(iter_jsonl_objects(path))


def _raw_json(path: Path) -> list[tuple[int, dict]]:
    try:
        value = json.loads(read_text_utf8(path))
    except json.JSONDecodeError as exc:
        raise SourceError(f"not valid JSON ({exc.msg} at line {exc.lineno})", file=path) from exc
    except RecursionError as exc:
        raise SourceError("JSON nested too deeply to be a question release", file=path) from exc
    if isinstance(value, dict) and isinstance(value.get("questions"), list):
        value = value["questions"]
    if not isinstance(value, list):
        raise SourceError("a .json release must be an array of question objects (or {\"questions\": [...]})", file=path)
    records = []
    for index, item in enumerate(value, start=1):
        if not isinstance(item, dict):
            raise SourceError(f"item {index} is a {type(item).__name__}, not a question object", file=path, row=index)
        records.append((index, item))
    return records


def _parse_list_cell(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ValueError("expected a JSON array (e.g. [\"a\", \"b\"])") from exc


def _raw_table(path: Path, sep: str) -> list[tuple[int, dict]]:
    import pandas as pd

    text = read_text_utf8(path)
    _check_row_widths(path, text, sep)
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, index_col=False)
    except pd.errors.EmptyDataError as exc:
        raise SourceError("the file is empty (expected a header row with question_number)", file=path) from exc
    except (pd.errors.ParserError, ValueError) as exc:
        raise SourceError(f"cannot read as {'TSV' if sep == chr(9) else 'CSV'}: {exc}", file=path) from exc
    if "question_number" not in frame.columns:
        raise SourceError(
            "no 'question_number' column; the header has: "
            + ", ".join(repr(str(c)[:40]) for c in frame.columns[:12]), file=path
        )
    records = []
    for index, row in enumerate(frame.to_dict(orient="records"), start=1):
        record: dict[str, Any] = {}
        for name, cell in row.items():
            kind = KNOWN_FIELDS.get(name)
            if cell == "":
                if kind == "str" and name in ALWAYS_PRESENT_TEXT:
                    record[name] = ""
                continue  # absent
            if kind in ("str_list", "float_list", "added_answers"):
                try:
                    record[name] = _parse_list_cell(cell)
                except ValueError as exc:
                    raise SourceError(str(exc), file=path, row=index, field=name) from exc
            elif kind == "int":
                record[name] = _int_from_text(cell)
            else:
                record[name] = cell
        records.append((index, record))
    return records


def _check_row_widths(path: Path, text: str, sep: str) -> None:
    """A row with more cells than the header is an error naming it (pandas would turn the
    extra leading cells into an index and shift every column: a misleading error later)."""
    import csv

    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    row = 0
    try:
        width = None
        for row, cells in enumerate(reader):   # row 0 is the header; data rows count from 1
            if width is None:
                width = len(cells)
            elif len(cells) > width and any(c.strip() for c in cells[width:]):
                kind = "TSV" if sep == "\t" else "CSV"
                raise SourceError(f"{len(cells)} cells but the header has {width} columns (a {kind} cell holding "
                                  f"the separator must be quoted)", file=path, row=row)
    except csv.Error as exc:
        raise SourceError(f"not a valid table ({exc})", file=path, row=max(row, 1)) from exc


def _int_from_text(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return text  # reported by the type check
        return int(number) if number.is_integer() else number


def read_raw(path: Path) -> list[tuple[int, dict]]:
    """(row, raw object) for every question in the file, whatever its format."""
    suffix = path.suffix.lower().lstrip(".")
    if suffix == "jsonl":
        return _raw_jsonl(path)
    if suffix == "json":
        return _raw_json(path)
    if suffix in ("csv", "tsv"):
        return _raw_table(path, "\t" if suffix == "tsv" else ",")
    raise SourceError(f"unknown release format .{suffix} (accepted: {', '.join('.' + f for f in FORMATS)})", file=path)


# ---------------------------------------------------------------- typing


def _as_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _FieldError(name, f"expected an integer, got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise _FieldError(name, f"expected an integer, got {value!r}")
        value = int(value)
    return value


def _as_str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _FieldError(name, f"expected text, got {value!r}")
    return value


def _as_str_list(name: str, value: Any) -> list[str]:
    if not isinstance(value, list):
        raise _FieldError(name, f"expected a list of strings, got {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise _FieldError(f"{name}[{index}]", f"expected text, got {item!r}")
    return list(value)


def _as_float_list(name: str, value: Any) -> list[float]:
    if not isinstance(value, list):
        raise _FieldError(name, f"expected a list of numbers, got {type(value).__name__}")
    out = []
    for index, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item):
            raise _FieldError(f"{name}[{index}]", f"expected a finite number, got {item!r}")
        out.append(float(item))
    return out


def _as_added_answers(name: str, value: Any) -> tuple[list[dict], bool]:
    """The typed list, and whether some entry had keys beyond the known four."""
    if not isinstance(value, list):
        raise _FieldError(name, f"expected a list of objects, got {type(value).__name__}")
    out, has_unknown = [], False
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise _FieldError(f"{name}[{index}]", f"expected an object, got {item!r}")
        typed = {}
        for key, kind in ADDED_ANSWER_KEYS.items():
            raw = item.get(key)
            typed[key] = None if raw is None else _TYPERS[kind](f"{name}[{index}].{key}", raw)
        has_unknown |= bool(set(item) - set(ADDED_ANSWER_KEYS))
        out.append(typed)
    return out, has_unknown


_TYPERS = {"int": _as_int, "str": _as_str, "str_list": _as_str_list, "float_list": _as_float_list}


def normalise(row: int, raw: dict) -> tuple[ReleaseQuestion | None, list[Problem]]:
    """Type every known field; unknown fields go to `extra` verbatim."""
    fields: dict[str, Any] = {}
    problems: list[Problem] = []
    label = f"question {raw['question_number']}" if "question_number" in raw else f"the question in row {row}"
    extra = {key: value for key, value in raw.items() if key not in KNOWN_FIELDS}
    absent = []
    for name, kind in KNOWN_FIELDS.items():
        value = raw.get(name)
        if value is None:
            if name in REQUIRED_FIELDS:
                problems.append(Problem(row, label, name, "required field is missing"))
            if name not in raw:
                absent.append(name)
            fields[name] = None
            continue
        try:
            if kind == "added_answers":
                fields[name], has_unknown = _as_added_answers(name, value)
                if has_unknown:
                    extra["added_answers"] = value  # keep the full original entries
            else:
                fields[name] = _TYPERS[kind](name, value)
        except _FieldError as exc:
            problems.append(Problem(row, label, exc.name, exc.message))
            fields[name] = None
    if problems:
        return None, problems
    return ReleaseQuestion(row, fields, extra, tuple(absent)), []


# ---------------------------------------------------------------- invariants


def check_question(question: ReleaseQuestion) -> list[Problem]:
    """The release's per-question invariants (paper sections 4 and 4.3)."""
    problems: list[Problem] = []

    def bad(field_name: str | None, message: str) -> None:
        problems.append(Problem(question.row, question.label, field_name, message))

    strings, probs, types = question["answer_strings"], question["answer_probabilities"], question["answer_types"]
    reasons = question["reject_reasons"]
    lengths = {"answer_strings": len(strings), "answer_probabilities": len(probs), "answer_types": len(types)}
    if reasons is not None:
        lengths["reject_reasons"] = len(reasons)
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{k} has {v}" for k, v in lengths.items())
        bad("answer_strings", f"parallel answer arrays differ in length ({shown})")
    n = len(strings)
    if not MIN_OPTIONS <= n <= MAX_OPTIONS:
        bad("answer_strings", f"expected {MIN_OPTIONS} to {MAX_OPTIONS} answer options, got {n}")
    if not probs or probs[0] != GROUND_TRUTH_PROBABILITY:
        got = probs[0] if probs else "nothing"
        bad("answer_probabilities", f"answer_probabilities[0] must be 1.0 (the first answer is a ground truth), got {got}")
    for index, value in enumerate(probs):
        if not 0.0 <= value <= 1.0:
            bad("answer_probabilities", f"answer_probabilities[{index}] = {value} is outside [0, 1]")
    partial = question["partial_credit"]
    if partial not in (0, 1):
        bad("partial_credit", f"expected 0 (pass/fail) or 1 (partial credit), got {partial}")
    elif partial == 1 and reasons is None:
        bad("reject_reasons", "partial_credit is 1 but reject_reasons is absent (a partial-credit question needs its rubric)")
    elif partial == 0 and reasons is not None:
        bad("reject_reasons", "reject_reasons is present but partial_credit is 0 (only partial-credit questions carry a rubric)")
    if reasons is not None and reasons and reasons[0] != "":
        bad("reject_reasons", f"reject_reasons[0] must be \"\" (the first answer is a ground truth), got {reasons[0]!r}")
    if question["reasoning_type"] not in REASONING_TYPES:
        bad("reasoning_type", f"{question['reasoning_type']!r} is not one of {', '.join(REASONING_TYPES)}")
    if question["frame_type"] not in FRAME_TYPES:
        bad("frame_type", f"{question['frame_type']!r} is not one of {', '.join(FRAME_TYPES)}")
    for index, item in enumerate(question["added_answers"] or []):
        if item["index"] is not None and not 0 <= item["index"] < n:
            bad("added_answers", f"added_answers[{index}].index = {item['index']} points outside the {n} answer options")
    return problems


def check_unique_numbers(questions: list[ReleaseQuestion]) -> list[Problem]:
    rows_of: dict[int, list[int]] = {}
    for question in questions:
        rows_of.setdefault(question["question_number"], []).append(question.row)
    problems = []
    for number, rows in rows_of.items():
        if len(rows) > 1:
            for row in rows[1:]:
                problems.append(Problem(
                    row, f"question {number}", "question_number",
                    f"question_number {number} is not unique (rows {', '.join(map(str, rows))})",
                ))
    return problems


MAX_LISTED = 20


def load_release(path: Path) -> list[ReleaseQuestion]:
    """Read, type and check a release file; raise one SourceError listing every problem."""
    raw = read_raw(path)
    if not raw:
        raise SourceError("the release holds no questions", file=path)
    questions: list[ReleaseQuestion] = []
    problems: list[Problem] = []
    for row, record in raw:
        question, found = normalise(row, record)
        problems += found
        if question is not None:
            problems += check_question(question)
            questions.append(question)
    problems += check_unique_numbers(questions)
    if problems:
        problems.sort(key=lambda p: p.row)
        first = problems[0]
        rules = Counter(p.field for p in problems)
        listed = [p.describe() for p in problems[:MAX_LISTED]]
        if len(problems) > MAX_LISTED:
            listed.append(f"... and {len(problems) - MAX_LISTED} more")
        raise SourceError(
            f"{first.question}: {first.message}"
            + (f" ({len(problems)} problems in {len(rules)} field(s); all listed below; nothing was written)"
               if len(problems) > 1 else " (nothing was written)"),
            file=path, row=first.row, field=first.field, details=listed if len(problems) > 1 else None,
        )
    return questions
