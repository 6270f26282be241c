"""Reading survey files (.sav, .dta, .csv): metadata first, then only the needed columns.

SPSS and Stata files are read with pyreadstat: `metadataonly=True` gives the variable
names, labels and value labels without reading respondents; the data are then read with
`usecols` so that a WVS time-series file with over a thousand variables costs only the
columns the registry needs. SPSS user-missing codes are kept as their numeric codes
(`user_missing=True`): the registry decides which codes are invalid. Stata extended
missing values (.a-.z) and empty CSV cells become NaN and count as missing answers.
CSV files carry no value labels, so the code-label check is skipped for them (the build
summary says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from histbench.builders.core.errors import SourceError
from histbench.builders.core.extras import require

FORMATS = ("sav", "dta", "csv")


@dataclass
class FileMeta:
    path: Path
    format: str
    columns: list[str]
    variable_labels: dict[str, str] = field(default_factory=dict)
    value_labels: dict[str, dict] = field(default_factory=dict)  # column -> {code: label}
    n_rows: int | None = None

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
    return FileMeta(
        path, fmt, list(meta.column_names), dict(meta.column_names_to_labels or {}), value_labels,
        n_rows=meta.number_rows,
    )


def _code_key(code):
    """Value-label keys as floats when numeric (codes are compared as floats everywhere)."""
    try:
        return float(code)
    except (TypeError, ValueError):
        return str(code)


def read_columns(meta: FileMeta, columns: list[str], text_columns: tuple[str, ...] = ()):
    """A DataFrame holding only `columns`; numeric except `text_columns` (kept as strings)."""
    import numpy as np
    import pandas as pd

    columns = list(dict.fromkeys(columns))
    meta.require(columns, "needed by the registry")
    wanted = {meta.column(c): c for c in columns}  # file spelling -> registry spelling
    requested, columns = columns, list(wanted)
    text_columns = tuple(meta.column(c) or c for c in text_columns)
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
    for column in columns:
        if column in text_columns:
            frame[column] = frame[column].astype("string").fillna("").str.strip()
        elif frame[column].dtype.kind not in "fiub":
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
        if column not in text_columns:
            frame[column] = frame[column].astype(np.float64)
    return frame.rename(columns=wanted)[requested]
