"""Reading the user's passage corpora (training corpora and the conformal reference corpus).

Formats: parquet (preferred), CSV/TSV or JSONL, one passage per row. Columns:

- date predictor training corpus: `text`, `date` (publication year, integer), and the
  grouping columns `author` and `volume` (e.g. a HathiTrust id); an optional `split`
  column (train/validation/test) overrides the grouped split.
- authenticity training corpus: `text`, `label` (1 = authentic period text, 0 = written
  by a language model), `author`, `volume` (for a model-written passage: the author and
  volume of the authentic passage it imitates, so imitations never cross the split
  either), optional `generator` (the model that wrote it; see --holdout-generator) and
  optional `split`.
- reference corpus (conformal scoring): `text` and `date`; other columns are ignored.

Rows with an empty text, a missing or non-integer date, or a date outside the date
predictor's bins (1680-2039) are excluded and counted, never silently dropped.

Grouped split: passages that share an author or a volume are joined into one group
(connected components), and whole groups go to train, validation or test
(sklearn.model_selection.GroupShuffleSplit, seeded), so no author and no volume crosses a
split.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from histbench.core.errors import SourceError

SPLITS = ("train", "validation", "test")


@dataclass
class Corpus:
    path: Path
    frame: object  # pandas.DataFrame
    excluded: Counter = field(default_factory=Counter)

    def summary(self) -> dict:
        return {"file": str(self.path), "rows": int(len(self.frame)), "excluded": dict(self.excluded)}


def read_table(path: str | Path):
    import pandas as pd

    path = Path(path).expanduser()
    if not path.is_file():
        raise SourceError("no such file", file=path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            return pd.read_parquet(path)
        if suffix in (".csv", ".tsv"):
            return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", keep_default_na=False, na_values=[""])
        if suffix in (".jsonl", ".json"):
            return pd.read_json(path, lines=suffix == ".jsonl")
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad source
        raise SourceError(f"cannot read the corpus: {exc}", file=path) from exc
    raise SourceError(f"unknown corpus format {suffix!r} (expected .parquet, .csv, .tsv or .jsonl)", file=path)


def _require(frame, path, columns):
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise SourceError(f"the corpus lacks column(s) {', '.join(missing)} (has: {', '.join(map(str, frame.columns))})", file=path)


def _clean_dates(frame, path, excluded: Counter, bins_only: bool = True):
    import pandas as pd

    from .dating import BIN_END, BIN_START

    dates = pd.to_numeric(frame["date"], errors="coerce")
    bad = dates.isna() | (dates != dates.round())
    excluded["missing or non-integer date"] += int(bad.sum())
    frame = frame[~bad].copy()
    frame["date"] = dates[~bad].astype(int)
    if bins_only:
        outside = (frame["date"] < BIN_START) | (frame["date"] >= BIN_END)
        excluded[f"date outside {BIN_START}-{BIN_END - 1}"] += int(outside.sum())
        frame = frame[~outside]
    return frame


def _clean_text(frame, excluded: Counter):
    text = frame["text"].astype("string").fillna("").str.strip()
    empty = text == ""
    excluded["empty text"] += int(empty.sum())
    frame = frame[~empty].copy()
    frame["text"] = text[~empty].astype(str)
    return frame


def _check_split_column(frame, path):
    if "split" in frame.columns:
        bad = sorted(set(frame["split"].astype(str)) - set(SPLITS))
        if bad:
            raise SourceError(f"column 'split' holds {bad[:5]} (expected train, validation or test)", file=path, field="split")


def read_dated_corpus(path: str | Path) -> Corpus:
    frame = read_table(path)
    _require(frame, path, ("text", "date", "author", "volume"))
    _check_split_column(frame, path)
    excluded: Counter = Counter()
    frame = _clean_dates(_clean_text(frame, excluded), path, excluded)
    return Corpus(Path(path), frame.reset_index(drop=True), excluded)


def read_authenticity_corpus(path: str | Path) -> Corpus:
    import pandas as pd

    frame = read_table(path)
    _require(frame, path, ("text", "label", "author", "volume"))
    _check_split_column(frame, path)
    labels = pd.to_numeric(frame["label"], errors="coerce")
    bad = ~labels.isin([0, 1])
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise SourceError(f"label must be 1 (authentic) or 0 (model-written), got {frame['label'].iloc[row]!r}",
                          file=path, row=row, field="label")
    frame = frame.assign(label=labels.astype(int))
    excluded: Counter = Counter()
    frame = _clean_text(frame, excluded)
    return Corpus(Path(path), frame.reset_index(drop=True), excluded)


def read_reference_corpus(path: str | Path) -> Corpus:
    frame = read_table(path)
    _require(frame, path, ("text", "date"))
    excluded: Counter = Counter()
    frame = _clean_dates(_clean_text(frame, excluded), path, excluded)
    return Corpus(Path(path), frame.reset_index(drop=True), excluded)


def connected_groups(authors, volumes) -> np.ndarray:
    """Group id per passage: passages sharing an author or a volume share a group."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    authors = ["" if a is None or (isinstance(a, float) and np.isnan(a)) else str(a) for a in authors]
    volumes = ["" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in volumes]
    n = len(authors)
    keys: dict[tuple[str, str], int] = {}
    rows, cols = [], []
    for i, (a, v) in enumerate(zip(authors, volumes, strict=True)):
        for key in (("a", a), ("v", v)):
            if key[1] == "":
                continue  # an unknown author or volume links nothing
            node = keys.setdefault(key, len(keys))
            rows.append(i)
            cols.append(n + node)
    size = n + len(keys)
    graph = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(size, size))
    _, labels = connected_components(graph, directed=False)
    return labels[:n]


def grouped_split(frame, validation: float = 0.1, test: float = 0.1, seed: int = 0) -> np.ndarray:
    """'train' / 'validation' / 'test' per row (the `split` column when present)."""
    from sklearn.model_selection import GroupShuffleSplit

    if "split" in frame.columns:
        return frame["split"].astype(str).to_numpy()
    groups = connected_groups(frame["author"].tolist(), frame["volume"].tolist())
    out = np.full(len(frame), "train", dtype=object)
    if len(np.unique(groups)) < 3:
        raise SourceError(f"the corpus has {len(np.unique(groups))} author/volume group(s); a grouped train/validation/test "
                          "split needs at least 3 (or give a 'split' column)")
    index = np.arange(len(frame))
    rest, test_idx = next(GroupShuffleSplit(n_splits=1, test_size=test, random_state=seed).split(index, groups=groups))
    out[test_idx] = "test"
    share = validation / (1.0 - test)
    train_idx, val_idx = next(GroupShuffleSplit(n_splits=1, test_size=share, random_state=seed + 1).split(rest, groups=groups[rest]))
    out[rest[val_idx]] = "validation"
    return out
