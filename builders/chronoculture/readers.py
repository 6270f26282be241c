"""Reading survey files (.sav, .dta, .csv): metadata first, then only the needed columns.

SPSS and Stata files are read with pyreadstat: `metadataonly=True` gives the variable
names, labels and value labels without reading respondents; the data are then read with
`usecols` so that a WVS time-series file with over a thousand variables costs only the
columns the registry needs. SPSS user-missing codes are kept as their numeric codes
(`user_missing=True`): the registry decides which codes are invalid. Stata extended
missing values (.a-.z) and empty CSV cells become NaN and count as missing answers.

CSV files carry no value labels, so the code-label check is skipped for them (the build
summary says so). A CSV export may hold answers as their labels ("Very important") rather
than codes: `read_columns` maps such text through the label -> code tables the caller
gives (the registry's option labels and the usual non-answer labels) and stops with an
error naming the variable and the labels it cannot map. Identifier columns (country,
wave, year) must hold finite whole numbers; anything else (`inf`, a 40 MB digit string)
stops the build naming the file, row and column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from histbench.core.errors import SourceError
from histbench.core.extras import require

FORMATS = ("sav", "dta", "csv")


@dataclass
class FileMeta:
    path: Path
    format: str
    columns: list[str]
    variable_labels: dict[str, str] = field(default_factory=dict)
    value_labels: dict[str, dict] = field(default_factory=dict)  # column -> {code: label}
    n_rows: int | None = None
    string_columns: frozenset = frozenset()  # .sav/.dta: variables stored as text

    @property
    def has_value_labels(self) -> bool:
        return self.format in ("sav", "dta")

    def column(self, name: str) -> str | None:
        """The file's own spelling of a variable: exact, else case-insensitive (v3 / V3)."""
        if name in self.columns:
            return name
        lower = self.__dict__.setdefault("_lower", {c.lower(): c for c in self.columns})
        return lower.get(str(name).lower())

    def has(self, name: str | None) -> bool:
        return name is not None and self.column(name) is not None

    def labels(self, name: str) -> dict:
        actual = self.column(name)
        return self.value_labels.get(actual, {}) if actual else {}

    def require(self, columns: list[str], what: str) -> None:
        missing = [c for c in columns if self.column(c) is None]
        if missing:
            raise SourceError(
                f"missing required variable(s) {', '.join(missing)} ({what}); the file has {len(self.columns)} variables",
                file=self.path, field=missing[0],
            )


def file_format(path: Path) -> str:
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in FORMATS:
        raise SourceError(f"unsupported survey file type '.{ext}' (expected .sav, .dta or .csv)", file=path)
    return ext


def _pyreadstat_reader(fmt: str):
    import pyreadstat

    return pyreadstat.read_sav if fmt == "sav" else pyreadstat.read_dta


def read_meta(path: Path) -> FileMeta:
    """Variable names, variable labels and value labels, without reading respondents."""
    path = Path(path)
    fmt = file_format(path)
    if fmt == "csv":
        import pandas as pd

        try:
            header = pd.read_csv(path, nrows=0)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise SourceError(f"not a readable CSV file: {exc}", file=path) from exc
        return FileMeta(path, fmt, [str(c) for c in header.columns])
    pyreadstat = require("pyreadstat", "reading SPSS (.sav) and Stata (.dta) files")

    try:
        _, meta = _pyreadstat_reader(fmt)(str(path), metadataonly=True)
    except (pyreadstat.ReadstatError, OSError, UnicodeDecodeError) as exc:
        kind = "SPSS .sav" if fmt == "sav" else "Stata .dta"
        raise SourceError(f"not a readable {kind} file ({exc})", file=path) from exc
    value_labels = {}
    for column, labels in (meta.variable_value_labels or {}).items():
        value_labels[column] = {_code_key(k): str(v) for k, v in labels.items()}
    types = getattr(meta, "readstat_variable_types", None) or {}
    return FileMeta(
        path, fmt, list(meta.column_names), dict(meta.column_names_to_labels or {}), value_labels,
        n_rows=meta.number_rows, string_columns=frozenset(c for c, t in types.items() if t == "string"),
    )


def _code_key(code):
    """Value-label keys as floats when numeric (codes are compared as floats everywhere)."""
    try:
        return float(code)
    except (TypeError, ValueError):
        return str(code)


MAX_ID_CODE = 1e9  # country, wave and year codes beyond this are not codes


def _normal(text) -> str:
    return " ".join(str(text).casefold().replace("’", "'").split())


NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(inf|infinity|nan)$"


def _csv_text_to_codes(meta: FileMeta, column: str, values, labels: dict | None):
    """Numbers stay numbers; text is mapped through `labels` ({label: code}, compared without
    case and extra spaces); text that no table maps stops the build naming the variable."""
    import numpy as np
    import pandas as pd

    text = pd.Series(values, dtype="string").str.strip()
    numbers = pd.to_numeric(text, errors="coerce")
    # digit strings too long for the parser (a 40 MB number) are numbers too: float() makes them inf
    overflow = numbers.isna() & text.str.fullmatch(NUMBER, case=False).fillna(False)
    if overflow.any():
        numbers = numbers.astype("float64")
        numbers[overflow] = [float(v) for v in text[overflow]]
    is_text = numbers.isna() & text.notna() & (text != "")
    if not is_text.any():
        return numbers.to_numpy(np.float64), None
    table = {_normal(k): float(v) for k, v in (labels or {}).items()}
    distinct = pd.unique(text[is_text])
    mapped = {value: table.get(_normal(value)) for value in distinct}
    unknown = [value for value, code in mapped.items() if code is None]
    if unknown:
        shown = ", ".join(repr(u if len(u) <= 40 else u[:40] + "...") for u in unknown[:6])
        shown += " ..." if len(unknown) > 6 else ""
        first = int(np.flatnonzero(is_text.to_numpy() & text.isin(unknown).fillna(False).to_numpy())[0])
        expected = list(labels or {})
        known = ", ".join(repr(k) for k in expected[:24]) + (" ..." if len(expected) > 24 else "") or "none"
        seen = ", ".join(repr(v if len(v) <= 40 else v[:40] + "...") for v in list(distinct)[:12])
        seen += " ..." if len(distinct) > 12 else ""
        raise SourceError(
            f"the CSV holds answers as text that the registry cannot map to codes ({shown}); labels expected "
            f"(the registry's options, then non-answers): {known}; labels found: {seen}. "
            "Export the file with numeric codes, or give these labels in the registry (an option's aliases)",
            file=meta.path, row=first + 2, field=column,
        )
    out = numbers.to_numpy(np.float64).copy()
    codes = text[is_text].map(mapped).astype(np.float64).to_numpy()
    out[is_text.to_numpy()] = codes
    return out, int(is_text.sum())


def _check_id_column(meta: FileMeta, column: str, values) -> None:
    """Country, wave and year codes: finite whole numbers (or missing)."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    present = ~np.isnan(values)
    finite = np.isfinite(values)
    whole = np.zeros(values.shape, dtype=bool)
    whole[finite] = np.mod(values[finite], 1) == 0
    bad = present & (~finite | (np.abs(np.where(finite, values, 0)) > MAX_ID_CODE) | ~whole)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        value = float(values[row])
        shown = repr(value)[:40] if np.isfinite(value) else str(value)
        line = row + 2 if meta.format == "csv" else row + 1
        raise SourceError(
            f"expected a whole-number code here, got {shown} ({int(bad.sum())} such value(s) in the column)",
            file=meta.path, row=line, field=column,
        )


def read_columns(meta: FileMeta, columns: list[str], text_columns: tuple[str, ...] = (),
                 csv_labels: dict[str, dict] | None = None, id_columns: tuple[str, ...] = (),
                 labelled_columns: dict | None = None) -> dict:
    """`{column: numpy array}` for exactly `columns` (the registry's spellings, in that order):
    float64 codes, except `text_columns` (stripped strings, "" when missing).

    `csv_labels` ({column: {label: code}}) maps answers a CSV export holds as text;
    `id_columns` must hold finite whole numbers; `labelled_columns`, if given, receives
    {column: number of text answers mapped} for the CSV columns that held labels.

    The columns are taken out of the frame pyreadstat (or pandas, for a CSV) reads one by
    one, as views where their type allows: selecting and renaming them as a frame would copy
    every column once more. (pyreadstat's `output_format="dict"` is no help: it gives Python
    lists, which cost more to turn into arrays than the frame does.)
    """
    import numpy as np
    import pandas as pd

    columns = list(dict.fromkeys(columns))
    meta.require(columns, "needed by the registry")
    wanted = {meta.column(c): c for c in columns}  # file spelling -> registry spelling
    requested, columns = columns, list(wanted)
    text_columns = tuple(meta.column(c) or c for c in text_columns)
    id_columns = {meta.column(c) or c for c in id_columns} - set(text_columns)
    csv_labels = {meta.column(k) or k: v for k, v in (csv_labels or {}).items()}
    path = meta.path
    if meta.format == "csv":
        try:
            frame = pd.read_csv(path, usecols=columns, dtype={c: str for c in text_columns}, low_memory=False)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise SourceError(f"could not read the CSV columns: {exc}", file=path) from exc
    else:
        import pyreadstat

        try:
            frame, _ = _pyreadstat_reader(meta.format)(
                str(path), usecols=columns, user_missing=True, apply_value_formats=False,
            )
        except (pyreadstat.ReadstatError, OSError, UnicodeDecodeError) as exc:
            raise SourceError(f"could not read the data ({exc})", file=path) from exc
    out = {}
    for column in columns:
        if column in text_columns:
            out[wanted[column]] = frame[column].astype("string").fillna("").str.strip().to_numpy(object)
            continue
        values = frame[column].to_numpy()
        if values.dtype.kind not in "fiub":
            if meta.format == "csv":
                values, mapped = _csv_text_to_codes(meta, column, values, csv_labels.get(column))
                if mapped and labelled_columns is not None:
                    labelled_columns[wanted[column]] = mapped
            else:
                series = pd.Series(values)
                numbers = pd.to_numeric(series, errors="coerce")
                text = series[numbers.isna() & (series.astype("string").str.strip().fillna("") != "")]
                if column in id_columns and len(text):   # a year or wave of words is no missing value
                    shown = ", ".join(repr(str(v)) for v in text.drop_duplicates()[:3])
                    raise SourceError(f"{len(text):,} respondents hold text where a number is expected ({shown})",
                                      file=path, field=wanted[column])
                values = numbers.to_numpy()
        values = np.asarray(values, dtype=np.float64)
        if column in id_columns:
            _check_id_column(meta, column, values)
        out[wanted[column]] = values
    return {column: out[column] for column in requested}
