"""The annotation loop: export the predicted vocabulary in context, import sigma back.

`export-vocabulary` writes one row per sentence x predicted whole word (the union over
every model of the run), with the sentence and the sentence filled with the word, so the
annotator judges the word in its context (sigma is contextual, paper section 4). The file
shows neither the models nor their probabilities nor the sentence's group and rho: the
paper marked the vocabulary independently of the models that proposed it, and a blind
sheet keeps it so. Word pieces and special tokens are never exported (never scored);
their count is printed.

A sheet is human work: `export-vocabulary` never overwrites a file that holds anything an
annotator wrote (a sigma, skip, annotator or comment cell), nor a file that is not a
blank sheet; it refuses, naming the file and how many rows are filled. `--prefill NAME`
writes a sheet with the values NAME gave so far (sigma, skip, comment), for review:
importing it again replaces NAME's values. A cell cleared in review does not delete the
stored value (give another value or skip).

`import-annotations` checks a filled file (see histbench.builders.valence.annotations for
the columns) against the run: every row names a known sentence and a word some model
predicted there (`--allow-extra` keeps others), values lie on the scale, and, after
the import, every predicted word of every sentence is annotated or explicitly skipped
(`--partial` stores an incomplete set and lists what is missing: a row of the sheet with
neither sigma nor skip is "not yet annotated" and left for later, and `export-vocabulary
--only-missing` then lists exactly those pairs). Importing a file again
replaces that annotator's earlier values for the same sentence x token. Disagreements
between annotators are not errors: they are listed on screen and in RUN/conflicts.csv,
with agreement figures; the report resolves them (mean by default, see metrics.py).
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from histbench.builders.valence.annotations import Annotation, ProblemList, read_annotations
from histbench.core import sheets
from histbench.core.atomic import atomic_path
from histbench.core.errors import SourceError, UsageError
from histbench.core.hashing import sha256_path
from histbench.core.sheets import read_table as read_user_table
from histbench.core.sheets import sheet_text

from .metrics import key_of
from .runfolder import RunFolder

EXPORT_COLUMNS = ("sentence_id", "sentence", "filled", "token", "sigma", "skip", "annotator", "comment")
MAX_LISTED = 20


def predicted_vocabulary(run: RunFolder) -> tuple[dict[str, dict[str, dict]], Counter]:
    """sentence_id -> token key -> {"token": spelling shown, "models": set}; and counts of
    predictions that are not whole words (by kind)."""
    fold = run.fold_case
    vocabulary: dict[str, dict[str, dict]] = {}
    spellings: dict[tuple[str, str], Counter] = {}
    excluded: Counter = Counter()
    for row in run.predictions():
        if row["kind"] != "word":
            excluded[row["kind"]] += 1
            continue
        key = key_of(row["word"], fold)
        entry = vocabulary.setdefault(row["sentence_id"], {}).setdefault(key, {"token": row["word"], "models": set()})
        entry["models"].add(row["model"])
        spellings.setdefault((row["sentence_id"], key), Counter())[row["word"]] += 1
    for (sentence_id, key), counts in spellings.items():
        # the most frequent spelling; on a tie the lower-case one, then alphabetical
        best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0] != kv[0].lower(), kv[0]))[0][0]
        vocabulary[sentence_id][key]["token"] = best
    return vocabulary, excluded


def annotated_keys(run: RunFolder, method: str | None = "manual") -> set[tuple[str, str]]:
    fold = run.fold_case
    return {
        (a["sentence_id"], key_of(a["token"], fold)) for a in run.annotations()
        if method is None or a["method"] == method
    }


FILLED_COLUMNS = ("sigma", "valence", "skip", "annotator", "comment", "note", "notes")


SHEET_KEYS = ({"sentence_id", "id"}, {"token", "word"})


def filled_rows(path: Path) -> int | None:
    """How many rows of an existing sheet hold something a person wrote (a sigma, skip,
    annotator or comment cell); None when the file is not a sheet at all (unreadable, or
    without the sheet's sentence_id and token columns)."""
    return sheets.filled_rows(path, SHEET_KEYS, FILLED_COLUMNS)


def check_sheet_writable(out: Path) -> None:
    """Refuse to replace a file that holds annotations, or that is not a blank sheet."""
    sheets.check_sheet_writable(
        out, SHEET_KEYS, FILLED_COLUMNS, kind="annotation", held="annotations",
        advice="import it (`histbench valence import-annotations RUN SHEET --partial`), then export the rest with "
               "--only-missing to a new --out file")


def free_sheet_name(folder: Path, stem: str = "to_annotate", suffix: str = ".csv") -> Path:
    """The first of to_annotate.csv, to_annotate-2.csv, ... that does not exist in `folder`."""
    folder = Path(folder)
    candidate, number = folder / f"{stem}{suffix}", 1
    while candidate.exists():
        number += 1
        candidate = folder / f"{stem}-{number}{suffix}"
    return candidate


def _stored_values(run: RunFolder, annotator: str | None) -> tuple[str, dict[tuple[str, str], dict]]:
    """The annotator whose manual values pre-fill a sheet, and (sentence, token key) -> row."""
    manual = [a for a in run.annotations() if a["method"] == "manual"]
    names = sorted({a["annotator"] for a in manual})
    if not names:
        raise UsageError("this run holds no manual annotations to pre-fill a sheet with", file=run.path, field="--prefill")
    if annotator is None:
        if len(names) > 1:
            raise UsageError(f"several annotators in this run ({', '.join(names)}): name one with --prefill NAME",
                             file=run.path, field="--prefill")
        annotator = names[0]
    elif annotator not in names:
        raise UsageError(f"no manual annotations by {annotator!r} in this run (annotators: {', '.join(names)})",
                         file=run.path, field="--prefill")
    fold = run.fold_case
    return annotator, {(a["sentence_id"], key_of(a["token"], fold)): a for a in manual if a["annotator"] == annotator}


def export_vocabulary(run: RunFolder, out: Path, *, only_missing: bool = False, prefill: str | bool | None = None) -> dict:
    """Write the annotation sheet (never over a sheet holding annotations); returns counts.

    prefill: True (the run's only manual annotator) or an annotator's name: the rows carry
    that annotator's stored values, for review and revision.
    """
    out = Path(out)
    suffix = out.suffix.lower().lstrip(".")
    if suffix not in ("csv", "tsv", "jsonl"):
        raise UsageError(f"--out must end in .csv, .tsv or .jsonl, got {out.name!r}", field="--out")
    if only_missing and prefill:
        raise UsageError("--only-missing lists pairs nobody annotated, --prefill shows annotated ones: give one of them",
                         field="--prefill")
    if not run.predictions_path.is_file():
        raise UsageError("this run holds no predictions yet: run `histbench eval valence` first", file=run.path)
    check_sheet_writable(out)
    vocabulary, excluded = predicted_vocabulary(run)
    done = annotated_keys(run) if only_missing else set()
    annotator, stored = _stored_values(run, None if prefill is True else prefill) if prefill else (None, {})
    rows = []
    for sentence in run.sentences():
        entries = vocabulary.get(sentence["sentence_id"], {})
        for key in sorted(entries, key=lambda k: (k.casefold(), k)):
            if (sentence["sentence_id"], key) in done:
                continue
            token = entries[key]["token"]
            value = stored.get((sentence["sentence_id"], key))
            rows.append({
                "sentence_id": sentence["sentence_id"],
                "sentence": sentence["text"],
                "filled": f"{sentence['left']}{token}{sentence['right']}",
                "token": token,
                "sigma": "" if not value or value["skipped"] else f"{value['sigma']:g}",
                "skip": "yes" if value and value["skipped"] else "",
                "annotator": annotator if value else "",
                "comment": (value.get("comment") or "") if value else "",
            })
    if suffix == "jsonl":
        import json

        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    else:

        text = sheet_text(EXPORT_COLUMNS, rows, delimiter="\t" if suffix == "tsv" else ",")
    with atomic_path(out) as tmp:
        tmp.write_bytes(text.encode("utf-8"))
    return {
        "rows": len(rows),
        "sentences": len({r["sentence_id"] for r in rows}),
        "already_annotated_left_out": len(done) if only_missing else 0,
        "prefilled": sum(1 for r in rows if r["annotator"]) if prefill else 0,
        "prefilled_by": annotator,
        "not_whole_words_left_out": dict(excluded),
        "path": str(out),
    }


# ----------------------------------------------------------------------------- import


def _token_rows(path: Path) -> dict[tuple[str, str, str], int]:
    """(annotator-or-empty, sentence_id, token) -> the row number, for naming rows in coverage errors."""
    _, rows = read_user_table(path)
    return {
        ((r.get("annotator") or "").strip(), (r.get("sentence_id", "id") or "").strip(), (r.get("token", "word") or "").strip()): r.number
        for r in rows
    }


def import_annotations(
    run: RunFolder,
    paths: list[Path],
    *,
    annotator: str | None = None,
    partial: bool = False,
    allow_extra: bool = False,
    method: str = "manual",
) -> dict:
    """Validate annotation files against the run and merge them into RUN/annotations.parquet."""
    scale = run.scale()
    fold = run.fold_case
    sentences = {s["sentence_id"]: s["text"] for s in run.sentences()}
    vocabulary, _ = predicted_vocabulary(run)
    if not vocabulary:
        raise UsageError("this run holds no predictions yet: run `histbench eval valence` first", file=run.path)
    incoming: list[tuple[Path, Annotation]] = []
    file_stats = []
    for path in paths:
        path = Path(path).expanduser()
        if not path.is_file():
            raise SourceError("annotation file does not exist", file=path)
        annotations, stats = read_annotations(
            path, scale=scale, sentences=sentences, default_annotator=annotator, fold_case=fold, default_method=method,
            allow_blank=partial,
        )
        if not allow_extra:
            numbers = _token_rows(path)
            problems = ProblemList(path)
            for a in annotations:
                if key_of(a.token, fold) not in vocabulary.get(a.sentence_id, {}):
                    row = numbers.get((a.annotator, a.sentence_id, a.token)) or numbers.get(("", a.sentence_id, a.token), 0)
                    problems.add(
                        row, f"field 'token': {a.token!r} was not predicted for sentence {a.sentence_id!r} by any model "
                        "of this run (a typo? --allow-extra keeps such rows)",
                    )
            problems.raise_if_any(stats["rows"])
        incoming += [(path, a) for a in annotations]
        file_stats.append({"file": str(path), "sha256": sha256_path(path), **stats})

    # merge: an incoming (annotator, sentence, token) replaces the stored one
    def triple(row) -> tuple[str, str, str]:
        return (row["annotator"], row["sentence_id"], key_of(row["token"], fold))

    new_rows: dict[tuple[str, str, str], dict] = {}
    origin: dict[tuple[str, str, str], Path] = {}
    for path, a in incoming:
        record = a.to_record()
        key = triple(record)
        if key in new_rows and (new_rows[key]["sigma"], new_rows[key]["skipped"]) != (record["sigma"], record["skipped"]):
            raise SourceError(
                f"annotator {a.annotator!r} gives token {a.token!r} in sentence {a.sentence_id!r} another value "
                f"than in {origin[key].name}; nothing was imported", file=path,
            )
        new_rows[key] = record
        origin[key] = path
    kept = [r for r in run.annotations() if triple(r) not in new_rows]
    replaced = len(run.annotations()) - len(kept)
    merged = kept + list(new_rows.values())

    covered = {(r["sentence_id"], key_of(r["token"], fold)) for r in merged if r["method"] == method}
    missing = [
        (sentence_id, entry["token"])
        for sentence_id in sentences
        for key, entry in sorted(vocabulary.get(sentence_id, {}).items())
        if (sentence_id, key) not in covered
    ]
    if missing and not partial:
        listed = [f"sentence {sid!r}: token {tok!r}" for sid, tok in missing[:MAX_LISTED]]
        if len(missing) > MAX_LISTED:
            listed.append(f"... and {len(missing) - MAX_LISTED} more")
        raise SourceError(
            f"{len(missing)} predicted words are neither annotated nor skipped (give sigma or skip for each, "
            "export the missing ones with `export-vocabulary --only-missing`, or store an incomplete set with "
            "--partial); nothing was imported",
            file=paths[0] if len(paths) == 1 else None, details=listed,
        )
    order = {sid: i for i, sid in enumerate(sentences)}
    merged.sort(key=lambda r: (order.get(r["sentence_id"], len(order)), key_of(r["token"], True), r["token"], r["annotator"], r["method"]))
    run.write_annotations(merged)
    conflicts, agreement = annotator_conflicts(merged, fold, method=method)
    write_conflicts(run.path / "conflicts.csv", conflicts, sentences)
    run.manifest.setdefault("annotation_imports", []).append({
        "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "method": method,
        "files": file_stats,
        "rows_added": len(new_rows),
        "rows_replaced": replaced,
        "missing_after_import": len(missing),
    })
    run.save()
    return {
        "files": file_stats,
        "added": len(new_rows),
        "replaced": replaced,
        "total": len(merged),
        "missing": missing,
        "conflicts": conflicts,
        "agreement": agreement,
    }


def annotator_conflicts(rows: list[dict], fold_case: bool, method: str | None = "manual") -> tuple[list[dict], dict]:
    """Pairs (sentence, token) where annotators gave different values, and agreement figures
    over the pairs that two or more annotators annotated."""
    by_pair: dict[tuple[str, str], dict[str, float | None]] = {}
    for r in rows:
        if method is not None and r["method"] != method:
            continue
        by_pair.setdefault((r["sentence_id"], key_of(r["token"], fold_case)), {}).setdefault(
            r["annotator"], None if r["skipped"] else r["sigma"]
        )
    multi = {pair: values for pair, values in by_pair.items() if len(values) > 1}
    conflicts = []
    for (sentence_id, token), values in multi.items():
        if len(set(values.values())) > 1:
            numbers = [v for v in values.values() if v is not None]
            conflicts.append({
                "sentence_id": sentence_id,
                "token": token,
                "values": {a: ("skip" if v is None else v) for a, v in sorted(values.items())},
                "range": (max(numbers) - min(numbers)) if len(numbers) > 1 else None,
            })
    agreement = {
        "pairs_with_several_annotators": len(multi),
        "pairs_in_conflict": len(conflicts),
        "exact_agreement": (1 - len(conflicts) / len(multi)) if multi else None,
        "annotators": sorted({a for values in by_pair.values() for a in values}),
    }
    return conflicts, agreement


def write_conflicts(path: Path, conflicts: list[dict], sentences: dict[str, str]) -> None:
    if not conflicts:
        Path(path).unlink(missing_ok=True)
        return
    rows = [[c["sentence_id"], sentences.get(c["sentence_id"], ""), c["token"], annotator,
             value if value == "skip" else f"{value:g}"] for c in conflicts for annotator, value in c["values"].items()]
    Path(path).write_text(sheet_text(["sentence_id", "sentence", "token", "annotator", "value"], rows),
                          encoding="utf-8", newline="")
