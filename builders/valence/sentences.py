"""Reading a temporal valence test set: masked sentences with a group and a valence rho.

Input (CSV, TSV or JSONL), one row per sentence:

    sentence_id   optional; when the column is absent ids s001, s002, ... are given in file order
    sentence      the text with exactly one mask ([MASK], <mask>, ... see masks.py); `text` also works
    group         EME / neutral / ME, or the user's own groups (--groups fixes the allowed ones)
    rho           the sentence's temporal valence, a value of the scale
    notes         optional free text

Every problem names the file, the row and the field; all are collected (first 20 listed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from histbench.core.errors import SourceError
from histbench.core.sheets import read_table

from .annotations import ProblemList
from .masks import MaskError, split_mask
from .scale import Scale, ScaleError

DEFAULT_GROUPS: tuple[str, ...] = ("EME", "neutral", "ME")
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
KNOWN_COLUMNS = frozenset({"sentence_id", "id", "sentence", "text", "group", "rho", "notes", "note"})


@dataclass(frozen=True)
class GroupSet:
    """The allowed groups (None: any label) and the order they are reported in."""

    allowed: tuple[str, ...] | None

    @classmethod
    def parse(cls, text: str | None) -> GroupSet:
        if not text:
            return cls(None)
        names = tuple(p.strip() for p in text.split(",") if p.strip())
        if len(set(n.casefold() for n in names)) != len(names):
            raise SourceError(f"--groups lists a group twice: {text!r}")
        return cls(names)

    def canonical(self, label: str) -> str | None:
        """The group's spelling as declared (or the default spelling), None when not allowed."""
        choices = self.allowed or DEFAULT_GROUPS
        for name in choices:
            if name.casefold() == label.strip().casefold():
                return name
        return None if self.allowed else label.strip()

    def order(self, seen: list[str]) -> list[str]:
        base = list(self.allowed or [g for g in DEFAULT_GROUPS if g in seen])
        return base + [g for g in seen if g not in base]


def read_sentences(path: Path, *, scale: Scale, groups: GroupSet, mask_pattern=None) -> tuple[list[dict], dict]:
    """Records for the `sentences` config and build statistics."""
    from .masks import mask_regex

    path = Path(path)
    try:
        regex = mask_regex(mask_pattern)
    except MaskError as exc:
        raise SourceError(str(exc)) from exc
    columns, rows = read_table(path)
    text_column = "sentence" if "sentence" in columns else ("text" if "text" in columns else None)
    missing = [name for name, present in (("sentence", text_column), ("group", "group" in columns), ("rho", "rho" in columns)) if not present]
    if missing:
        raise SourceError(
            f"missing column(s) {', '.join(missing)} (columns found: {', '.join(columns)}); "
            "expected sentence_id (optional), sentence, group, rho, notes (optional)",
            file=path, row=1,
        )
    if not rows:
        raise SourceError("the file holds no sentences", file=path)
    has_ids = "sentence_id" in columns or "id" in columns
    width = max(3, len(str(len(rows))))
    problems = ProblemList(path)
    records: list[dict] = []
    ids: dict[str, int] = {}
    texts: dict[str, list[str]] = {}
    for index, row in enumerate(rows, start=1):
        sentence_id = row.get("sentence_id", "id") if has_ids else f"s{index:0{width}d}"
        if sentence_id is None:
            problems.add(row.number, "field 'sentence_id': empty (give every row an id, or drop the column)")
            continue
        sentence_id = sentence_id.strip()
        if not ID_PATTERN.match(sentence_id):
            problems.add(row.number, f"field 'sentence_id': {sentence_id!r} (use letters, digits, _ . : -)")
            continue
        if sentence_id in ids:
            problems.add(row.number, f"field 'sentence_id': {sentence_id!r} is already used in row {ids[sentence_id]}")
            continue
        ids[sentence_id] = row.number
        raw = row.get(text_column)
        if raw is None:
            problems.add(row.number, f"field {text_column!r}: empty")
            continue
        try:
            masked = split_mask(raw.strip(), regex)
        except MaskError as exc:
            problems.add(row.number, f"field {text_column!r}: {exc}")
            continue
        if not (masked.left + masked.right).strip():
            problems.add(row.number, f"field {text_column!r}: the sentence is only a mask")
            continue
        label = row.get("group")
        if label is None:
            problems.add(row.number, "field 'group': empty")
            continue
        group = groups.canonical(label)
        if group is None:
            problems.add(row.number, f"field 'group': {label!r} is not one of {', '.join(groups.allowed or ())}")
            continue
        raw_rho = row.get("rho")
        if raw_rho is None:
            problems.add(row.number, f"field 'rho': empty (a value of the scale {scale.describe()})")
            continue
        try:
            rho = scale.check(raw_rho, "rho")
        except ScaleError as exc:
            problems.add(row.number, f"field 'rho': {exc}")
            continue
        texts.setdefault(masked.text, []).append(sentence_id)
        records.append({
            "sentence_id": sentence_id,
            "text": masked.text,
            "left": masked.left,
            "right": masked.right,
            "group": group,
            "rho": rho,
            "notes": row.get("notes", "note"),
            "source_row": row.number,
            "mask_spelling": masked.spelling,
        })
    problems.raise_if_any(len(rows), "sentence")
    seen_groups: list[str] = []
    for record in records:
        if record["group"] not in seen_groups:
            seen_groups.append(record["group"])
    order = groups.order(seen_groups)
    stats = {
        "rows": len(rows),
        "sentences": len(records),
        "ids_generated": not has_ids,
        "groups": order,
        "group_counts": {g: sum(r["group"] == g for r in records) for g in order},
        "rho_counts": {
            g: {f"{v:g}": sum(r["group"] == g and r["rho"] == v for r in records) for v in scale.values} for g in order
        },
        "mask_spellings": sorted({r["mask_spelling"] for r in records}),
        "duplicate_texts": {text: ids_ for text, ids_ in texts.items() if len(ids_) > 1},
        "ignored_columns": sorted(set(columns) - KNOWN_COLUMNS),
        "empty_groups": [g for g in order if not any(r["group"] == g for r in records)],
    }
    return records, stats
