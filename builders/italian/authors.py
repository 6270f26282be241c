"""The authors table: name -> birth year, aliases, and the other tasks an author appears in.

`sources/italian/authors.csv` ships with the project (columns: name, birth_year, aliases
separated by ";", other_tasks separated by ";", note, source: the public reference the
birth year was checked against; every author of the Biblioteca Italiana books histbench's
tests read has one). Only name and birth_year are required in a user's table. A user's table given with
`--authors` is read on top of it: its rows add authors or replace the shipped row of the
same name. Names are matched after folding accents, case and punctuation; "Surname,
Name" (the Biblioteca Italiana sourceDesc form) also matches "Name Surname".
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from unidecode import unidecode

from histbench.core.errors import SourceError

REQUIRED = ("name", "birth_year")


def fold(name: str) -> str:
    text = unidecode(name or "").lower()
    text = re.sub(r"[^a-z0-9]+", " ", text)
    return " ".join(text.split())


def variants(name: str) -> list[str]:
    """Folded keys for a name, including the inverted 'Surname, Name' form."""
    keys = [fold(name)]
    if "," in name:
        surname, _, given = name.partition(",")
        keys.append(fold(f"{given} {surname}"))
    return [k for k in dict.fromkeys(keys) if k]


@dataclass
class Author:
    name: str
    birth_year: int
    aliases: tuple[str, ...]
    other_tasks: tuple[str, ...]
    note: str
    table: str
    source: str = ""


class AuthorTable:
    def __init__(self) -> None:
        self.by_name: dict[str, Author] = {}
        self._keys: dict[str, str] = {}

    def load(self, path: Path, label: str) -> int:
        try:
            with Path(path).open(encoding="utf-8-sig", newline="") as handle:
                reader = csv.DictReader(handle)
                missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
                if missing:
                    raise SourceError(f"the authors table needs the columns {', '.join(REQUIRED)} (missing: {', '.join(missing)})", file=path)
                count = 0
                for row_number, row in enumerate(reader, start=2):
                    name = (row.get("name") or "").strip()
                    if not name:
                        raise SourceError("empty author name", file=path, row=row_number, field="name")
                    raw_year = (row.get("birth_year") or "").strip()
                    try:
                        year = int(raw_year)
                    except ValueError as exc:
                        raise SourceError(f"birth_year must be a whole year, got {raw_year!r}", file=path, row=row_number, field="birth_year") from exc
                    aliases = tuple(a.strip() for a in (row.get("aliases") or "").split(";") if a.strip())
                    tasks = tuple(t.strip() for t in (row.get("other_tasks") or "").split(";") if t.strip())
                    self.add(Author(name, year, aliases, tasks, (row.get("note") or "").strip(), label,
                                    (row.get("source") or "").strip()))
                    count += 1
        except OSError as exc:
            raise SourceError(f"cannot read the authors table: {exc}", file=path) from exc
        return count

    def add(self, author: Author) -> None:
        old = self.by_name.get(author.name)
        if old is not None:
            for key in [k for k, v in self._keys.items() if v == old.name]:
                del self._keys[key]
        self.by_name[author.name] = author
        for name in (author.name, *author.aliases):
            for key in variants(name):
                self._keys[key] = author.name

    def find(self, *names: str | None) -> Author | None:
        for name in names:
            if not name:
                continue
            for key in variants(name):
                if key in self._keys:
                    return self.by_name[self._keys[key]]
        return None

    def with_source(self) -> int:
        return sum(1 for a in self.by_name.values() if a.source)

    def excluded_names(self) -> set[str]:
        """Authors who appear in another task of the benchmark."""
        return {a.name for a in self.by_name.values() if a.other_tasks}
