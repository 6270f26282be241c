"""Automatic token valence from a dated corpus (the paper's future work, section 6).

The paper annotates sigma by hand and suggests deriving it from corpora representative of
each period instead. `histbench valence auto-sigma` does that for every predicted word:

    f_early = (n_early + a) / (N_early + a * V)      f_modern = (n_modern + a) / (N_modern + a * V)
    score   = (f_modern - f_early) / (f_modern + f_early)          in (-1, 1)

(n: the word's occurrences, N: the corpus size in words, V: the joint vocabulary size,
a = 0.5 additive smoothing), i.e. the normalised difference of its relative frequencies:
-1 when only the early corpus uses the word, +1 when only the modern one does, 0 when
both use it equally often. The score is snapped to the nearest scale value. Words seen
fewer than `--min-count` times in both corpora together are skipped (too little evidence),
never guessed.

Such values are global, not contextual: "you" gets one value in every sentence, which is
exactly the semantic flattening the paper's manual, per-sentence annotation avoids. They
are therefore stored with method `automatic` and annotator `automatic:relative-frequency`,
the report says when they are used, and manual annotations take precedence unless the
report is asked for `--sigma-source automatic`.

Corpora: plain text files (.txt) or folders of them, or a CSV/TSV/JSONL table with a
`text` column; or one dated table (`year` and `text` columns) split at `--split-year`
(years before it are early).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from histbench.builders.valence.scale import Scale
from histbench.core.errors import SourceError, UsageError
from histbench.core.sheets import read_table

ANNOTATOR = "automatic:relative-frequency"
SMOOTHING = 0.5
WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")


def words(text: str, fold_case: bool = True) -> list[str]:
    found = WORD.findall(text)
    return [w.casefold() for w in found] if fold_case else found


def _texts(path: Path) -> Iterable[tuple[str, str]]:
    """(where, text) pieces of a corpus path (a .txt file, a folder of .txt files, or a table)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise SourceError("corpus file does not exist", file=path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.txt") if p.is_file())
        if not files:
            raise SourceError("the corpus folder holds no .txt files", file=path)
        for file in files:
            yield from _texts(file)
        return
    suffix = path.suffix.lower()
    if suffix == ".txt":
        try:
            yield str(path), path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError(f"not UTF-8 text ({exc.reason})", file=path) from exc
        return
    columns, rows = read_table(path)
    if "text" not in columns:
        raise SourceError(f"a corpus table needs a 'text' column (found: {', '.join(columns)})", file=path, row=1)
    for row in rows:
        yield f"{path}:{row.number}", row.get("text") or ""


def count_corpus(paths: Iterable[Path], fold_case: bool = True) -> Counter:
    counts: Counter = Counter()
    for path in paths:
        for _, text in _texts(path):
            counts.update(words(text, fold_case))
    return counts


def count_dated(path: Path, split_year: int, fold_case: bool = True) -> tuple[Counter, Counter, dict]:
    """Early (year < split_year) and modern counts from a table with `year` and `text` columns."""
    path = Path(path).expanduser()
    columns, rows = read_table(path)
    for needed in ("year", "text"):
        if needed not in columns:
            raise SourceError(f"a dated corpus needs a {needed!r} column (found: {', '.join(columns)})", file=path, row=1)
    early, modern = Counter(), Counter()
    undated = 0
    for row in rows:
        raw = row.get("year")
        if raw is None:
            undated += 1
            continue
        try:
            year = int(float(raw))
        except ValueError as exc:
            raise SourceError(f"field 'year': {raw!r} is not a year", file=path, row=row.number) from exc
        (early if year < split_year else modern).update(words(row.get("text") or "", fold_case))
    return early, modern, {"rows": len(rows), "rows_without_year": undated}


def frequency_score(word: str, early: Counter, modern: Counter, n_early: int, n_modern: int, vocabulary: int) -> float:
    f_e = (early[word] + SMOOTHING) / (n_early + SMOOTHING * vocabulary)
    f_m = (modern[word] + SMOOTHING) / (n_modern + SMOOTHING * vocabulary)
    return (f_m - f_e) / (f_m + f_e)


def automatic_sigmas(
    vocabulary: dict[str, dict[str, dict]],
    sentences: list[dict],
    early: Counter,
    modern: Counter,
    scale: Scale,
    *,
    min_count: int = 5,
    fold_case: bool = True,
) -> list[dict]:
    """One annotation row per sentence x predicted word (sigma or skip), method automatic."""
    n_early, n_modern = sum(early.values()), sum(modern.values())
    if n_early == 0 or n_modern == 0:
        raise UsageError("both the early and the modern corpus must hold words")
    joint = len(set(early) | set(modern))
    rows = []
    for sentence in sentences:
        for _key, entry in sorted(vocabulary.get(sentence["sentence_id"], {}).items()):
            token = entry["token"]
            lookup = token.casefold() if fold_case else token
            seen = early[lookup] + modern[lookup]
            parts = WORD.findall(token)
            if len(parts) != 1 or parts[0] != token:
                rows.append(_row(sentence, token, None, f"not a single word for the corpus counts ({seen} occurrences)", seen, early[lookup], modern[lookup], math.nan))
                continue
            if seen < min_count:
                rows.append(_row(sentence, token, None, f"too rare in the corpora: {seen} occurrences (< {min_count})", seen, early[lookup], modern[lookup], math.nan))
                continue
            score = frequency_score(lookup, early, modern, n_early, n_modern, joint)
            rows.append(_row(sentence, token, scale.snap(score), f"early {early[lookup]}, modern {modern[lookup]}, score {score:+.3f}",
                             seen, early[lookup], modern[lookup], score))
    return rows


def _row(sentence: dict, token: str, sigma: float | None, comment: str, seen: int, n_early: int, n_modern: int, score: float) -> dict:
    return {
        "sentence_id": sentence["sentence_id"],
        "sentence": sentence["text"],
        "filled": f"{sentence['left']}{token}{sentence['right']}",
        "token": token,
        "sigma": "" if sigma is None else f"{sigma:g}",
        "skip": "yes" if sigma is None else "",
        "annotator": ANNOTATOR,
        "method": "automatic",
        "comment": comment,
        "early_count": n_early,
        "modern_count": n_modern,
        "score": "" if math.isnan(score) else f"{score:.6f}",
    }
