"""Reading and checking an MHER registry folder (format: sources/mher/README.md).

A registry is a folder holding one file per table, each either CSV (UTF-8, header row) or
JSON (an array of objects):

    persons      person_id, preferred_name, prominence, status, curator_notes
    mentions     mention_id, person_id, surface, language, script, transcription, source_id
    sources      source_id, citation, locator, tradition, derived_from
    evidence     evidence_id, mention_id, source_id, text, kind, locator, language
    unresolved   question_id, mention_a, mention_b, note
    aliases      person_id, alias                                   (optional table)

Every problem is a SourceError naming the file, the row (CSV: the line number as a
spreadsheet shows it, header = 1; JSON: the 1-based position in the array) and the field.
Nothing is dropped here: rules that exclude material are applied (and counted) later.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from histbench.core.errors import SourceError

PROMINENCE = ("head", "mid", "long-tail")
STATUSES = ("confirmed", "unresolved")
EVIDENCE_KINDS = ("chronology", "office", "lineage", "kinship", "place", "event")
DERIVED_SEPARATOR = ";"


@dataclass(frozen=True)
class TableSpec:
    name: str
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    optional_table: bool = False

    @property
    def columns(self) -> tuple[str, ...]:
        return self.required + self.optional


TABLES: dict[str, TableSpec] = {
    spec.name: spec
    for spec in (
        TableSpec("persons", ("person_id", "preferred_name", "status"), ("prominence", "curator_notes")),
        TableSpec(
            "mentions", ("mention_id", "person_id", "surface", "language", "script", "source_id"), ("transcription",)
        ),
        TableSpec("sources", ("source_id", "citation", "tradition"), ("locator", "derived_from")),
        TableSpec(
            "evidence", ("mention_id", "source_id", "text", "kind"), ("evidence_id", "locator", "language")
        ),
        TableSpec("unresolved", ("question_id", "mention_a", "mention_b", "note")),
        TableSpec("aliases", ("person_id", "alias"), optional_table=True),
    )
}

IGNORED_SUFFIXES = {".md", ".txt", ".yaml", ".yml"}


@dataclass(frozen=True)
class Person:
    person_id: str
    preferred_name: str
    status: str
    prominence: str | None
    curator_notes: str | None


@dataclass(frozen=True)
class Mention:
    mention_id: str
    person_id: str
    surface: str
    language: str
    script: str
    transcription: str | None
    source_id: str


@dataclass(frozen=True)
class Source:
    source_id: str
    citation: str
    tradition: str
    locator: str | None
    derived_from: tuple[str, ...]


@dataclass(frozen=True)
class Evidence:
    evidence_id: str
    mention_id: str
    source_id: str
    text: str
    kind: str
    locator: str | None
    language: str
    where: str  # "file, row N" for messages


@dataclass(frozen=True)
class UnresolvedQuestion:
    question_id: str
    mention_a: str
    mention_b: str
    note: str


@dataclass
class Registry:
    folder: Path
    persons: dict[str, Person]
    mentions: dict[str, Mention]
    sources: dict[str, Source]
    evidence: list[Evidence]
    unresolved: list[UnresolvedQuestion]
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)

    def mentions_of(self, person_id: str) -> list[Mention]:
        return [m for m in self.mentions.values() if m.person_id == person_id]

    def registered_names(self, person_id: str) -> set[str]:
        """Every name registered for a person: preferred name, aliases, mention surfaces."""
        names = {self.persons[person_id].preferred_name}
        names.update(self.aliases.get(person_id, ()))
        names.update(m.surface for m in self.mentions_of(person_id))
        return {n for n in names if n}

    def source_ancestry(self, source_id: str) -> set[str]:
        """The source and every source it derives from, transitively."""
        seen: set[str] = set()
        stack = [source_id]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            stack.extend(self.sources[current].derived_from)
        return seen


def _clean(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool | int | float):
        value = str(value)
    if not isinstance(value, str):
        raise TypeError(type(value).__name__)
    value = value.strip()
    return value or None


def _find_table_file(folder: Path, spec: TableSpec) -> Path | None:
    candidates = [folder / f"{spec.name}.csv", folder / f"{spec.name}.json"]
    present = [p for p in candidates if p.is_file()]
    if len(present) > 1:
        raise SourceError(
            f"table {spec.name!r} is given twice ({present[0].name} and {present[1].name}); keep one", file=folder
        )
    return present[0] if present else None


def _read_rows(path: Path, spec: TableSpec) -> list[tuple[str, dict[str, str | None]]]:
    """(row label, record) pairs with cleaned string values; unknown columns are an error."""
    rows: list[tuple[str, dict[str, str | None]]] = []
    if path.suffix == ".csv":
        try:
            with path.open(encoding="utf-8-sig", newline="") as handle:
                reader = csv.DictReader(handle)
                header = reader.fieldnames or []
                _check_columns(path, spec, header)
                for record in reader:
                    row = str(reader.line_num)
                    if None in record:
                        raise SourceError(
                            f"more values than the {len(header)} header columns", file=path, row=row
                        )
                    rows.append((row, {k: _clean(v) for k, v in record.items()}))
        except UnicodeDecodeError as exc:
            raise SourceError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=path) from exc
        except csv.Error as exc:
            raise SourceError(f"not a readable CSV file: {exc}", file=path) from exc
        return rows
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise SourceError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=path) from exc
    except json.JSONDecodeError as exc:
        raise SourceError(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", file=path) from exc
    if not isinstance(data, list):
        raise SourceError("a JSON table must be an array of objects", file=path)
    seen_columns: set[str] = set()
    for index, record in enumerate(data, start=1):
        if not isinstance(record, dict):
            raise SourceError(f"expected an object, got {type(record).__name__}", file=path, row=index)
        seen_columns.update(record)
        cleaned = {}
        for key, value in record.items():
            try:
                cleaned[key] = _clean(value)
            except TypeError as exc:
                raise SourceError(f"expected a string, got {exc}", file=path, row=index, field=key) from exc
        rows.append((str(index), cleaned))
    _check_columns(path, spec, sorted(seen_columns), json_mode=True)
    return rows


def _check_columns(path: Path, spec: TableSpec, header: Iterable[str], json_mode: bool = False) -> None:
    header = list(header)
    unknown = [c for c in header if c not in spec.columns]
    if unknown:
        raise SourceError(
            f"unknown column(s) {', '.join(map(repr, unknown))} in table {spec.name!r} "
            f"(expected: {', '.join(spec.columns)})", file=path,
        )
    if not json_mode:
        missing = [c for c in spec.required if c not in header]
        if missing:
            raise SourceError(f"missing column(s) {', '.join(map(repr, missing))} in table {spec.name!r}", file=path)


def _need(record: dict, key: str, path: Path, row: str) -> str:
    value = record.get(key)
    if value is None:
        raise SourceError("required value is empty or missing", file=path, row=row, field=key)
    return value


def _choice(value: str, allowed: tuple[str, ...], path: Path, row: str, key: str) -> str:
    lowered = value.lower()
    if lowered not in allowed:
        raise SourceError(f"{value!r} is not one of {', '.join(allowed)}", file=path, row=row, field=key)
    return lowered


def _unique(seen: dict, key: str, value: str, path: Path, row: str) -> None:
    if value in seen:
        raise SourceError(f"duplicate {key} {value!r}", file=path, row=row, field=key)


def _check_derivation_cycles(sources: dict[str, Source], rows: dict[str, str], path: Path) -> None:
    """`derived_from` must be acyclic: a source cannot (transitively) derive from itself.
    The error names the cycle and the row of its first source in file order."""
    from graphlib import CycleError, TopologicalSorter

    try:
        TopologicalSorter({sid: s.derived_from for sid, s in sources.items()}).prepare()
    except CycleError as exc:
        cycle = list(exc.args[1])  # [a, b, ..., a]
        members = cycle[:-1]
        first = min(members, key=lambda sid: int(rows.get(sid, "0")))
        start = members.index(first)
        ordered = members[start:] + members[:start] + [first]
        # graphlib lists a cycle against the edge direction (parent before child); name it as written
        ordered = ordered[::-1]
        raise SourceError(
            f"derived_from forms a cycle: {' -> '.join(ordered)} (a source cannot derive, even indirectly, "
            "from itself)", file=path, row=rows.get(first), field="derived_from",
        ) from exc


def read_registry(folder: Path) -> Registry:
    """Read and cross-check every table of the registry folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SourceError("the MHER registry must be a folder of table files", file=folder)
    known_files = {f"{name}.{ext}" for name in TABLES for ext in ("csv", "json")}
    for path in sorted(folder.iterdir()):
        if path.is_file() and not path.name.startswith(".") and path.name not in known_files:
            if path.suffix.lower() in IGNORED_SUFFIXES:
                continue
            raise SourceError(
                f"unexpected file in the registry folder (tables are {', '.join(TABLES)} as .csv or .json)",
                file=path,
            )
    paths: dict[str, Path] = {}
    for spec in TABLES.values():
        path = _find_table_file(folder, spec)
        if path is None:
            if spec.optional_table:
                continue
            raise SourceError(f"missing table {spec.name!r} ({spec.name}.csv or {spec.name}.json)", file=folder)
        paths[spec.name] = path
    rows = {name: _read_rows(path, TABLES[name]) for name, path in paths.items()}

    persons: dict[str, Person] = {}
    path = paths["persons"]
    for row, rec in rows["persons"]:
        pid = _need(rec, "person_id", path, row)
        _unique(persons, "person_id", pid, path, row)
        status = _choice(_need(rec, "status", path, row), STATUSES, path, row, "status")
        prominence = rec.get("prominence")
        if prominence is not None:
            prominence = _choice(prominence, PROMINENCE, path, row, "prominence")
        elif status == "confirmed":
            raise SourceError(
                f"a confirmed person needs a prominence stratum ({', '.join(PROMINENCE)})",
                file=path, row=row, field="prominence",
            )
        persons[pid] = Person(pid, _need(rec, "preferred_name", path, row), status, prominence, rec.get("curator_notes"))

    sources: dict[str, Source] = {}
    path = paths["sources"]
    pending_derivations: list[tuple[str, str, str]] = []
    for row, rec in rows["sources"]:
        sid = _need(rec, "source_id", path, row)
        _unique(sources, "source_id", sid, path, row)
        derived = tuple(
            d.strip() for d in (rec.get("derived_from") or "").split(DERIVED_SEPARATOR) if d.strip()
        )
        for parent in derived:
            pending_derivations.append((parent, row, sid))
        sources[sid] = Source(
            sid, _need(rec, "citation", path, row), _need(rec, "tradition", path, row), rec.get("locator"), derived
        )
    source_rows: dict[str, str] = {}
    for parent, row, sid in pending_derivations:
        source_rows[sid] = row
        if parent not in sources:
            raise SourceError(
                f"source {sid!r} derives from unknown source {parent!r}", file=path, row=row, field="derived_from"
            )
        if parent == sid:
            raise SourceError(f"source {sid!r} cannot derive from itself", file=path, row=row, field="derived_from")
    _check_derivation_cycles(sources, source_rows, path)

    mentions: dict[str, Mention] = {}
    path = paths["mentions"]
    for row, rec in rows["mentions"]:
        mid = _need(rec, "mention_id", path, row)
        _unique(mentions, "mention_id", mid, path, row)
        pid = _need(rec, "person_id", path, row)
        if pid not in persons:
            raise SourceError(f"unknown person_id {pid!r} (not in persons)", file=path, row=row, field="person_id")
        sid = _need(rec, "source_id", path, row)
        if sid not in sources:
            raise SourceError(f"unknown source_id {sid!r} (not in sources)", file=path, row=row, field="source_id")
        mentions[mid] = Mention(
            mid, pid, _need(rec, "surface", path, row), _need(rec, "language", path, row),
            _need(rec, "script", path, row), rec.get("transcription"), sid,
        )

    evidence: list[Evidence] = []
    seen_evidence: dict[str, str] = {}
    path = paths["evidence"]
    for row, rec in rows["evidence"]:
        mid = _need(rec, "mention_id", path, row)
        if mid not in mentions:
            raise SourceError(f"unknown mention_id {mid!r} (not in mentions)", file=path, row=row, field="mention_id")
        sid = _need(rec, "source_id", path, row)
        if sid not in sources:
            raise SourceError(f"unknown source_id {sid!r} (not in sources)", file=path, row=row, field="source_id")
        eid = rec.get("evidence_id") or f"{path.name}:{row}"
        _unique(seen_evidence, "evidence_id", eid, path, row)
        seen_evidence[eid] = row
        kind = _choice(_need(rec, "kind", path, row), EVIDENCE_KINDS, path, row, "kind")
        evidence.append(Evidence(
            eid, mid, sid, _need(rec, "text", path, row), kind, rec.get("locator"),
            (rec.get("language") or "en").lower(), f"{path.name}, row {row}",
        ))

    unresolved: list[UnresolvedQuestion] = []
    seen_questions: dict[str, str] = {}
    path = paths["unresolved"]
    for row, rec in rows["unresolved"]:
        qid = _need(rec, "question_id", path, row)
        _unique(seen_questions, "question_id", qid, path, row)
        seen_questions[qid] = row
        pair = []
        for key in ("mention_a", "mention_b"):
            mid = _need(rec, key, path, row)
            if mid not in mentions:
                raise SourceError(f"unknown mention {mid!r} (not in mentions)", file=path, row=row, field=key)
            pair.append(mid)
        if pair[0] == pair[1]:
            raise SourceError("an unresolved question needs two different mentions", file=path, row=row, field="mention_b")
        unresolved.append(UnresolvedQuestion(qid, pair[0], pair[1], _need(rec, "note", path, row)))

    aliases: dict[str, list[str]] = {}
    if "aliases" in paths:
        path = paths["aliases"]
        for row, rec in rows["aliases"]:
            pid = _need(rec, "person_id", path, row)
            if pid not in persons:
                raise SourceError(f"unknown person_id {pid!r} (not in persons)", file=path, row=row, field="person_id")
            aliases.setdefault(pid, []).append(_need(rec, "alias", path, row))

    return Registry(
        folder=folder, persons=persons, mentions=mentions, sources=sources, evidence=evidence,
        unresolved=unresolved, aliases={k: tuple(v) for k, v in aliases.items()},
        files={name: p.name for name, p in paths.items()},
    )
