"""Token-in-sentence valence annotations sigma(w, s): reading and checking them.

Sigma is contextual (paper, sections 3 and 4): it is given per (sentence, token), never per
token alone. "you" is neutral in most sentences but archaic in "fare you well, sir". An
annotation file therefore has one row per sentence x token:

    sentence_id, token, sigma, skip, annotator, comment        (CSV, TSV or JSONL)

- `sigma` must be a value of the build's scale; or the row is explicitly skipped with
  `skip` = yes/y/true/1/x (or `sigma` = "skip"), e.g. for punctuation or a token that is
  not a word in that slot. Skipped tokens are not scored (see eval/valence/metrics.py).
- `annotator` names who annotated (a column, or `--annotator` for the whole file).
- `method` (optional column): `manual` (default) or `automatic` (sigma derived from a
  corpus, see eval/valence/autosigma.py); automatic annotations stay labelled as such.
- `sentence`, `filled`, `group` (the display columns that `export-vocabulary` writes) are
  read back only to check that the sentence_id still points at the same sentence.

Every problem names the file and row; all problems are collected and the first 20 listed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from histbench.core.errors import SourceError
from histbench.core.sheets import read_table

from .masks import MaskError, mask_regex, split_mask
from .scale import Scale, ScaleError

SKIP_WORDS = frozenset({"skip", "skipped", "yes", "y", "true", "1", "x"})
NO_WORDS = frozenset({"", "no", "n", "false", "0"})
METHODS = ("manual", "automatic")
MAX_LISTED = 20
KNOWN_COLUMNS = frozenset({
    "sentence_id", "id", "token", "word", "sigma", "valence", "skip", "annotator", "comment", "note", "notes",
    "method", "sentence", "filled", "group",
})


@dataclass(frozen=True)
class Annotation:
    sentence_id: str
    token: str
    sigma: float | None
    skipped: bool
    annotator: str
    method: str
    comment: str | None

    def to_record(self) -> dict:
        return asdict(self)


def token_key(token: str, fold_case: bool = True) -> str:
    """How a token is matched between predictions and annotations (case-folded by default)."""
    text = token.strip()
    return text.casefold() if fold_case else text


def _same_sentence(a: str, b: str) -> bool:
    squash = lambda t: re.sub(r"\s+", " ", t).strip()  # noqa: E731
    return squash(a) == squash(b)


class ProblemList:
    """Collects row problems and raises one SourceError listing the first 20."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: list[tuple[int, str]] = []

    def add(self, row: int, message: str) -> None:
        self.items.append((row, message))

    def raise_if_any(self, total: int, what: str = "annotation") -> None:
        if not self.items:
            return
        rows = sorted({r for r, _ in self.items})
        first_row, first_message = self.items[0]
        details = [f"row {r}: {m}" for r, m in self.items[:MAX_LISTED]]
        if len(self.items) > MAX_LISTED:
            details.append(f"... and {len(self.items) - MAX_LISTED} more")
        raise SourceError(
            f"{first_message} ({len(rows)} of {total} {what} rows have problems; nothing was imported)",
            file=self.path, row=first_row, details=details if len(self.items) > 1 else None,
        )


def read_annotations(
    path: Path,
    *,
    scale: Scale,
    sentences: Mapping[str, str],
    default_annotator: str | None = None,
    fold_case: bool = True,
    default_method: str = "manual",
    allow_blank: bool = False,
) -> tuple[list[Annotation], dict]:
    """Parse and check an annotation file against the sentences (id -> text with [MASK]).

    Returns (annotations, stats). Raises SourceError naming every bad row (first 20).
    Exact duplicate rows (same annotator, sentence, token and value) are kept once and
    counted; the same annotator giving two different values is an error naming both rows.
    allow_blank: a row with neither sigma nor skip (whatever its annotator or comment
    cells hold) is "not yet annotated": counted in stats["blank"] and left out, instead
    of being an error (the `--partial` import of a half-filled sheet).
    """
    path = Path(path)
    columns, rows = read_table(path)
    for needed, aliases in (("sentence_id", ("sentence_id", "id")), ("token", ("token", "word"))):
        if not any(a in columns for a in aliases):
            raise SourceError(f"missing column {needed!r} (columns found: {', '.join(columns)})", file=path, row=1)
    if not any(c in columns for c in ("sigma", "valence", "skip")):
        raise SourceError("missing column 'sigma' (and no 'skip' column)", file=path, row=1)
    if "annotator" not in columns and not default_annotator:
        raise SourceError("no 'annotator' column: add one or name the annotator (--annotator NAME)", file=path, row=1)
    if not rows:
        raise SourceError("the file holds no annotation rows", file=path)
    problems = ProblemList(path)
    regex = mask_regex()
    seen: dict[tuple[str, str, str], tuple[int, Annotation]] = {}
    kept: list[Annotation] = []
    duplicates = 0
    blank = 0
    for row in rows:
        sentence_id = row.get("sentence_id", "id")
        token = row.get("token", "word")
        if sentence_id is None:
            problems.add(row.number, "field 'sentence_id': empty")
            continue
        sentence_id = sentence_id.strip()
        if sentence_id not in sentences:
            problems.add(row.number, f"field 'sentence_id': unknown sentence {sentence_id!r}")
            continue
        if token is None:
            problems.add(row.number, "field 'token': empty")
            continue
        token = token.strip()
        shown = row.get("sentence")
        if shown is not None:
            try:
                shown_text = split_mask(shown, regex).text
            except MaskError:
                shown_text = shown
            if not _same_sentence(shown_text, sentences[sentence_id]):
                problems.add(
                    row.number,
                    f"field 'sentence': the text differs from sentence {sentence_id!r} in the dataset "
                    f"({sentences[sentence_id]!r}); is the sentence_id right?",
                )
                continue
        raw_sigma = row.get("sigma", "valence")
        raw_skip = (row.get("skip") or "").strip().lower()
        if raw_sigma is None and raw_skip in NO_WORDS:
            if allow_blank:
                blank += 1
                continue
            problems.add(
                row.number,
                f"field 'sigma': token {token!r} in sentence {sentence_id!r} is not annotated "
                f"(give a value on the scale {scale.describe()} or mark it skip; --partial imports the "
                "annotated rows and leaves this one for later)",
            )
            continue
        annotator = (row.get("annotator") or default_annotator or "").strip()
        if not annotator:
            problems.add(row.number, "field 'annotator': empty (fill it or pass --annotator NAME)")
            continue
        method = (row.get("method") or default_method).strip().lower()
        if method not in METHODS:
            problems.add(row.number, f"field 'method': {method!r} is not one of {', '.join(METHODS)}")
            continue
        if raw_skip not in SKIP_WORDS and raw_skip not in NO_WORDS:
            problems.add(row.number, f"field 'skip': {raw_skip!r} is neither yes/true/1/x nor empty/no")
            continue
        skipped = raw_skip in SKIP_WORDS or (raw_sigma is not None and raw_sigma.strip().lower() in ("skip", "skipped"))
        sigma: float | None = None
        if skipped:
            if raw_sigma is not None and raw_sigma.strip().lower() not in ("skip", "skipped"):
                problems.add(row.number, f"token {token!r}: both a sigma ({raw_sigma!r}) and skip are given; keep one")
                continue
        else:
            try:
                sigma = scale.check(raw_sigma, "sigma")
            except ScaleError as exc:
                problems.add(row.number, f"field 'sigma': {exc}")
                continue
        annotation = Annotation(sentence_id, token, sigma, skipped, annotator, method, row.get("comment", "note", "notes"))
        key = (annotator, sentence_id, token_key(token, fold_case))
        if key in seen:
            first_row, first = seen[key]
            if (first.sigma, first.skipped) == (sigma, skipped):
                duplicates += 1
                continue
            problems.add(
                row.number,
                f"annotator {annotator!r} gives token {token!r} in sentence {sentence_id!r} two values: "
                f"{_value_text(first)} (row {first_row}) and {_value_text(annotation)}",
            )
            continue
        seen[key] = (row.number, annotation)
        kept.append(annotation)
    problems.raise_if_any(len(rows))
    stats = {
        "rows": len(rows),
        "annotations": len(kept),
        "blank": blank,
        "skipped": sum(a.skipped for a in kept),
        "exact_duplicates_dropped": duplicates,
        "annotators": sorted({a.annotator for a in kept}),
        "ignored_columns": sorted(set(columns) - KNOWN_COLUMNS),
    }
    return kept, stats


def _value_text(annotation: Annotation) -> str:
    return "skip" if annotation.skipped else f"{annotation.sigma:g}"
