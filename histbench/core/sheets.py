"""The sheets a person fills by hand (valence annotations, Italian WSD reviews, lists of
names and values): reading them as CSV, TSV or JSON Lines, and never overwriting one that
holds what a person wrote; and the one way every CSV/TSV meant for a person is written
(`sheet_text`).

A CSV cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is read by a
spreadsheet as a formula (OWASP, "CSV Injection"), and the text in these sheets comes from
outside: a model's rationale, a dictionary gloss, a run label. `sheet_text` writes such a
cell with a leading apostrophe (`neutralise`), which spreadsheets show as text; a cell that
is a plain number ("-0.5") is left alone, since it is no formula. A cell that itself starts
with an apostrophe followed by one of those characters or another apostrophe gets one more,
so that `read_table` (`restore`) gives back exactly the text that was written.

Rows are numbered the way the user sees them: in a CSV/TSV file the header is row 1
and the first data row is row 2 (as in a spreadsheet); in a JSONL file a row is its
line number. Every value comes back as text (or None when empty) so that the caller
decides how to parse it and can name the row and column when it cannot.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from histbench.core.errors import HistbenchError, SourceError, UsageError
from histbench.core.readers import iter_jsonl_objects, read_text_utf8

FORMATS = ("csv", "tsv", "jsonl")
#: the first characters that make a spreadsheet read a cell as a formula (OWASP)
FORMULA_TRIGGERS = frozenset("=+-@\t\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def neutralise(value) -> str:
    """A cell's text as written to a sheet: None is empty, a value is its text, and a text a
    spreadsheet would run as a formula gets a leading apostrophe (see the module docstring)."""
    text = "" if value is None else str(value)
    if not text:
        return text
    if text[0] in FORMULA_TRIGGERS and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    if text[0] == "'" and len(text) > 1 and (text[1] in FORMULA_TRIGGERS or text[1] == "'"):
        return "'" + text
    return text


def restore(cell: str) -> str:
    """The text `neutralise` was given, from the cell it wrote (other cells are unchanged)."""
    if len(cell) > 1 and cell[0] == "'" and (cell[1] in FORMULA_TRIGGERS or cell[1] == "'"):
        return cell[1:]
    return cell


def sheet_text(columns: Sequence[str], rows: Iterable[Mapping | Sequence], *, delimiter: str = ",",
               lineterminator: str = "\r\n") -> str:
    """A CSV (or, with delimiter "\\t", TSV) sheet: the header, then one line per row (a
    mapping, read by column name, or a sequence in column order), every cell `neutralise`d."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator=lineterminator)
    writer.writerow([neutralise(c) for c in columns])
    for row in rows:
        values = [row.get(c) for c in columns] if isinstance(row, Mapping) else list(row)
        writer.writerow([neutralise(v) for v in values])
    return buffer.getvalue()


@dataclass(frozen=True)
class Row:
    number: int
    values: dict[str, str | None]

    def get(self, *names: str) -> str | None:
        """The first of `names` present with a non-empty value."""
        for name in names:
            value = self.values.get(name)
            if value is not None and str(value).strip() != "":
                return str(value)
        return None


def _clean_header(name: str) -> str:
    return name.strip().lstrip("\ufeff").strip().lower().replace(" ", "_")


def read_table(path: Path) -> tuple[list[str], list[Row]]:
    """(column names, rows) of a CSV/TSV/JSONL file. Column names are lower-cased."""
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise SourceError(f"unknown table format .{suffix}; accepted: .csv, .tsv, .jsonl", file=path)
    text = read_text_utf8(path)
    if suffix == "jsonl":
        return _read_jsonl(path, text)
    return _read_delimited(path, text, "\t" if suffix == "tsv" else ",")


def _read_delimited(path: Path, text: str, delimiter: str) -> tuple[list[str], list[Row]]:
    """Rows of a CSV/TSV file; strict quoting: a quote left open (a cell cut short, or a
    stray quote in a hand edit) is an error naming the row where it starts, not a cell that
    swallows the rest of the file. Cells come back `restore`d (as `sheet_text` was given them)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        return _delimited_rows(path, ([restore(cell) for cell in cells] for cells in reader), delimiter)
    except csv.Error as exc:
        raise SourceError(f"not a valid {'TSV' if delimiter == chr(9) else 'CSV'} file ({exc})", file=path,
                          row=reader.line_num or 1) from exc


def _delimited_rows(path: Path, reader, delimiter: str) -> tuple[list[str], list[Row]]:
    try:
        header = next(reader)
    except StopIteration as exc:
        raise SourceError("the file is empty (expected a header row)", file=path) from exc
    columns = [_clean_header(h) for h in header]
    if any(not c for c in columns):
        raise SourceError("the header row has an empty column name", file=path, row=1)
    duplicates = sorted({c for c in columns if columns.count(c) > 1})
    if duplicates:
        raise SourceError(f"duplicate column name(s) in the header: {', '.join(duplicates)}", file=path, row=1)
    rows = []
    for number, cells in enumerate(reader, start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) > len(columns) and any(c.strip() for c in cells[len(columns):]):
            raise SourceError(
                f"{len(cells)} cells but the header has {len(columns)} columns (quote values that contain '{delimiter}')",
                file=path, row=number,
            )
        values = {c: (cells[i] if i < len(cells) and cells[i].strip() != "" else None) for i, c in enumerate(columns)}
        rows.append(Row(number, values))
    return columns, rows


def _read_jsonl(path: Path, text: str) -> tuple[list[str], list[Row]]:
    columns: list[str] = []
    rows = []
    for number, record in iter_jsonl_objects(path, text=text):
        values = {}
        for key, value in record.items():
            name = _clean_header(str(key))
            if name not in columns:
                columns.append(name)
            if value is None or (isinstance(value, str) and not value.strip()):
                values[name] = None
            elif isinstance(value, dict | list):
                raise SourceError(f"field {key!r} holds a JSON {type(value).__name__}; expected a plain value", file=path, row=number)
            elif isinstance(value, bool):
                values[name] = "true" if value else "false"
            else:
                values[name] = str(value)
        rows.append(Row(number, values))
    return columns, rows


def filled_rows(path: Path, keys: Sequence[set[str]], filled: Sequence[str]) -> int | None:
    """How many rows of an existing sheet hold something a person wrote (a non-empty cell of
    one of the `filled` columns); None when the file is not such a sheet at all (unreadable,
    or without a column of each set in `keys`: the columns that name a sheet's rows)."""
    try:
        columns, rows = read_table(path)
    except (HistbenchError, OSError):
        return None
    if not all(alternatives & set(columns) for alternatives in keys):
        return None
    return sum(1 for r in rows if r.get(*filled) is not None)


def check_sheet_writable(out: Path, keys: Sequence[set[str]], filled: Sequence[str], *, kind: str, held: str,
                         advice: str) -> None:
    """Refuse to replace a file that holds what a person wrote, or that is not a blank sheet
    of this kind: a missing file or a blank sheet may be written. kind: the sheet's name
    ("annotation"); held: what its filled rows hold ("annotations"); advice: what to do
    instead."""
    out = Path(out)
    if not out.exists():
        return
    if not out.is_file():
        raise UsageError("--out names a folder, not a sheet file", file=out, field="--out")
    count = filled_rows(out, keys, filled)
    if count is None:
        raise UsageError(f"the file exists and is not a blank {kind} sheet; it is never overwritten: choose another --out",
                         file=out, field="--out")
    if count:
        raise UsageError(f"the sheet exists and {count} of its rows hold {held}; a sheet is never overwritten: {advice}",
                         file=out, field="--out")
