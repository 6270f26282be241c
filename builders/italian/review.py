"""The reviewers' step of the WSD pipeline (3.1: native speakers check every question), as
a sheet loop in the manner of the valence annotation loop:

    histbench review italian build/italian-1.0.0 --out review.csv     # write the sheet
    (a reviewer fills the decision, replacement, reviewer and comment cells)
    histbench build italian ... --reviews review.csv                   # rebuild with the decisions
    histbench review italian build/italian-1.0.0 --out review-2.csv    # again: decisions pre-filled

The sheet (CSV, or TSV / JSON Lines by the file's suffix) has one row per candidate of
every WSD question: the gold row first (with the context and every commentator's note),
then each distractor. Columns: `item_key` (the phrase's identity across rebuilds:
chapter:first-last word), `item_id`, `target_phrase`, `context`, `explanations`, `role`
(gold / distractor), `candidate`, `source`, and the reviewer's cells `decision`,
`replacement`, `reviewer`, `comment`. Decisions:

| role | decision | effect on the next build |
| --- | --- | --- |
| gold | keep | the question is reviewed; its answer stays |
| gold | correct | the answer becomes `replacement` |
| gold | drop-item | the question is left out (the next phrase in the seeded order takes its place) |
| distractor | keep (or blank, once the gold row is decided) | the distractor stays when it is offered again |
| distractor | drop | never offered again for this phrase; the next usable one takes its place |
| distractor | replace | `replacement` is offered instead, before any other source |

A question counts as reviewed when its gold row holds a decision; a filled distractor row
needs one (a reviewer judges the answer too). Under a decided gold row a blank distractor
row counts as kept, except a distractor the sheet marks "(offered since the review)" in its
`source` (it replaced a dropped one after the review): it stays unreviewed until its
decision says keep. Any decision needs a `reviewer` name. Every
decision is recorded on the row (`review`) and counted in the build summary and card;
decisions about phrases that this build does not make (another seed, other sources) are
counted and listed, never silently dropped. Exporting from a reviewed build writes the
decisions back into the new sheet (dropped questions and distractors included), so
export, fill, rebuild, export again loses nothing. A sheet that holds anything a person
wrote, or a file that is not a review sheet, is never overwritten.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from histbench.core import sheets
from histbench.core.atomic import atomic_path
from histbench.core.errors import SourceError, UsageError

COLUMNS = ("item_key", "item_id", "target_phrase", "context", "explanations", "role", "candidate", "source",
           "decision", "replacement", "reviewer", "comment")
FILLED = ("decision", "replacement", "reviewer", "comment")
GOLD_DECISIONS = ("keep", "correct", "drop-item")
DISTRACTOR_DECISIONS = ("keep", "drop", "replace")
SUFFIXES = ("csv", "tsv", "jsonl")
MAX_LISTED = 20
NEW_MARK = "(offered since the review)"
KEY_FORM = re.compile(r"[^:\s]+:\d+-\d+")
NOT_REVIEWED = {"status": "not reviewed", "reviewer": None, "gold": None, "original_answer": None,
                "distractors_kept": [], "distractors_dropped": [], "distractors_replaced": [], "distractors_new": [],
                "comment": None, "sheet": None}


def item_key(chapter: str, start: int, end: int) -> str:
    return f"{chapter}:{start}-{end}"


@dataclass
class ItemReview:
    """One question's decisions, read from a sheet."""

    key: str
    reviewer: str
    gold: str                                   # keep / correct / drop-item
    corrected: str | None = None
    comment: str | None = None
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    replaced: list[tuple[str, str]] = field(default_factory=list)
    target: str = ""
    answer: str = ""                            # the gold candidate the reviewer saw
    row: int = 0                                # the sheet row of the gold decision (named in errors)
    kept_sources: dict[str, str] = field(default_factory=dict)   # kept distractor -> its source on the sheet

    def pinned(self) -> list[tuple[str, str]]:
        """The distractors the reviewer saw and kept, with the source the sheet gave them:
        offered again first, whatever the sources offer in a rebuild."""
        return [(k, self.kept_sources.get(k.casefold()) or f"kept by the reviewer ({self.reviewer})") for k in self.kept]

    def excluded(self) -> set[str]:
        return {t.casefold() for t in self.dropped} | {o.casefold() for o, _ in self.replaced}

    def record(self, original_answer: str | None, sheet: str) -> dict:
        """The row's `review` (distractors_kept and distractors_new are completed by
        `finish_record` once the distractors are chosen)."""
        return {"status": "reviewed", "reviewer": self.reviewer, "gold": None if self.gold == "drop-item" else self.gold,
                "original_answer": original_answer, "distractors_kept": list(self.kept),
                "distractors_dropped": list(self.dropped),
                "distractors_replaced": [{"original": o, "replacement": r} for o, r in self.replaced],
                "distractors_new": [], "comment": self.comment, "sheet": sheet}


def finish_record(record: dict, distractors: list[str]) -> dict:
    """Split the offered distractors of a reviewed question into those the reviewer saw and
    kept, and those offered since (replacing dropped ones: not reviewed yet)."""
    if record.get("status") != "reviewed":
        return record
    kept = {k.casefold() for k in record["distractors_kept"]}
    replacements = {r["replacement"].casefold() for r in record["distractors_replaced"]}
    offered = [d for d in distractors if d.casefold() not in replacements]
    new = [d for d in offered if d.casefold() not in kept]
    return {**record, "distractors_kept": [d for d in offered if d.casefold() in kept], "distractors_new": new}


@dataclass
class Reviews:
    path: Path
    items: dict[str, ItemReview]
    stats: dict

    def get(self, key: str) -> ItemReview | None:
        return self.items.get(key)


def read_reviews(path: Path) -> Reviews:
    """Check a filled sheet (module doc); every problem names the file and row, the first
    20 are listed, and nothing is applied when any row is wrong."""
    path = Path(path)
    if not path.is_file():
        raise SourceError("no such review sheet", file=path, field="--reviews")
    columns, rows = sheets.read_table(path)
    missing = [c for c in ("item_key", "role", "candidate", "decision") if c not in columns]
    if missing:
        raise SourceError(f"not a WSD review sheet: missing column(s) {', '.join(missing)} "
                          f"(write one with `histbench review italian BUILD --out SHEET`)", file=path, row=1)
    problems: list[tuple[int, str]] = []
    by_item: dict[str, list] = {}
    candidates_of: dict[str, dict[str, int]] = {}      # item -> every candidate on the sheet (casefolded) -> row
    blank_candidates: dict[str, list[tuple[str, str]]] = {}
    blank = 0
    for row in rows:
        key = (row.get("item_key") or "").strip()
        if not key:
            problems.append((row.number, "field 'item_key': empty"))
            continue
        if not KEY_FORM.fullmatch(key):
            problems.append((row.number, f"field 'item_key': {key!r} is not an item key (chapter:first-last word, "
                                         "as the exported sheet writes it)"))
            continue
        if (row.get("role") or "").strip() in ("gold", "distractor") and (row.get("candidate") or "").strip():
            if (row.get("decision") or "").strip().lower() != "drop-item":
                candidates_of.setdefault(key, {}).setdefault(row.get("candidate").strip().casefold(), row.number)
        if not any(row.get(c) for c in FILLED):
            blank += 1
            by_item.setdefault(key, [])
            if ((row.get("role") or "").strip() == "distractor" and row.get("candidate")
                    and NEW_MARK not in (row.get("source") or "")):
                blank_candidates.setdefault(key, []).append((row.get("candidate").strip(), row.get("source") or ""))
            continue
        by_item.setdefault(key, []).append(row)
    items: dict[str, ItemReview] = {}
    for key, filled in by_item.items():
        if not filled:
            continue
        gold_rows = [r for r in filled if (r.get("role") or "").strip() == "gold"]
        others = [r for r in filled if (r.get("role") or "").strip() != "gold"]
        for r in filled:
            if (r.get("role") or "").strip() not in ("gold", "distractor"):
                problems.append((r.number, f"field 'role': {r.get('role')!r} is neither gold nor distractor"))
        decided = [r for r in gold_rows if r.get("decision")]
        if len(decided) > 1:
            problems.append((decided[1].number, f"item {key}: two gold rows hold decisions (rows {decided[0].number} and "
                                                f"{decided[1].number}); keep one"))
            continue
        if not decided:
            first = (gold_rows or others)[0]
            problems.append((first.number, f"item {key}: decide on its gold row too (keep, correct or drop-item): a "
                                           "reviewed question has a judged answer"))
            continue
        gold_row = decided[0]
        decision = gold_row.get("decision").strip().lower()
        reviewer = (gold_row.get("reviewer") or "").strip()
        if decision not in GOLD_DECISIONS:
            problems.append((gold_row.number, f"field 'decision': {decision!r} on a gold row; expected one of "
                                              f"{', '.join(GOLD_DECISIONS)}"))
            continue
        if not reviewer:
            problems.append((gold_row.number, f"field 'reviewer': empty (who decided on item {key}?)"))
            continue
        review = ItemReview(key, reviewer, decision, comment=gold_row.get("comment"),
                            target=gold_row.get("target_phrase") or "", answer=gold_row.get("candidate") or "",
                            row=gold_row.number)
        answer = (gold_row.get("candidate") or "").strip()
        if decision == "correct":
            review.corrected = (gold_row.get("replacement") or "").strip()
            if not review.corrected:
                problems.append((gold_row.number, "field 'replacement': 'correct' needs the corrected answer"))
                continue
        seen: dict[str, int] = {}
        if review.corrected:
            answer = review.corrected
            clash = candidates_of.get(key, {}).get(answer.casefold())
            if clash is not None and clash != gold_row.number:
                problems.append((gold_row.number, f"item {key}: the corrected answer {answer!r} is the candidate of row "
                                                  f"{clash}; a question would have two right answers"))
                continue
        replacements: dict[str, int] = {}
        for r in others:
            candidate = (r.get("candidate") or "").strip()
            choice = (r.get("decision") or "keep").strip().lower()
            if not candidate:
                problems.append((r.number, "field 'candidate': empty"))
                continue
            if choice not in DISTRACTOR_DECISIONS:
                problems.append((r.number, f"field 'decision': {choice!r} on a distractor row; expected one of "
                                           f"{', '.join(DISTRACTOR_DECISIONS)}"))
                continue
            if candidate.casefold() in seen:
                problems.append((r.number, f"item {key}: the distractor {candidate!r} is decided twice (rows "
                                           f"{seen[candidate.casefold()]} and {r.number})"))
                continue
            seen[candidate.casefold()] = r.number
            if choice == "keep":
                review.kept.append(candidate)
                review.kept_sources[candidate.casefold()] = _sheet_source(r.get("source"))
            elif choice == "drop":
                review.dropped.append(candidate)
            else:
                replacement = (r.get("replacement") or "").strip()
                if not replacement:
                    problems.append((r.number, "field 'replacement': 'replace' needs the reviewer's distractor"))
                    continue
                folded = replacement.casefold()
                if folded == answer.casefold():
                    problems.append((r.number, f"field 'replacement': {replacement!r} is the question's answer; a "
                                               "distractor must be wrong"))
                    continue
                other = candidates_of.get(key, {}).get(folded, replacements.get(folded))
                if other is not None:
                    problems.append((r.number, f"field 'replacement': {replacement!r} is already a candidate of item "
                                               f"{key} (row {other}); the question would lose a distractor"))
                    continue
                replacements[folded] = r.number
                review.replaced.append((candidate, replacement))
        for candidate, source in blank_candidates.get(key, []):
            if candidate.casefold() not in seen:          # blank under a decided gold row: kept
                seen[candidate.casefold()] = 0
                review.kept.append(candidate)
                review.kept_sources[candidate.casefold()] = _sheet_source(source)
        items[key] = review
    if problems:
        details = [f"row {n}: {m}" for n, m in problems[:MAX_LISTED]]
        if len(problems) > MAX_LISTED:
            details.append(f"... and {len(problems) - MAX_LISTED} more")
        raise SourceError(f"{problems[0][1]} ({len(problems)} problem(s); no decision of this sheet was applied)",
                          file=path, row=problems[0][0], details=details if len(problems) > 1 else None)
    decisions = Counter(r.gold for r in items.values())
    stats = {
        "sheet": path.name, "rows": len(rows), "blank_rows": blank, "items_reviewed": len(items),
        "gold_kept": decisions["keep"], "gold_corrected": decisions["correct"], "items_dropped": decisions["drop-item"],
        "distractors_dropped": sum(len(r.dropped) for r in items.values()),
        "distractors_replaced": sum(len(r.replaced) for r in items.values()),
        "reviewers": sorted({r.reviewer for r in items.values()}),
    }
    return Reviews(path, items, stats)


def _sheet_source(source: str | None) -> str:
    return (source or "").replace(NEW_MARK, "").strip()


def check_keys(reviews: Reviews, known: set[str]) -> None:
    """Every decided item key must name a phrase of this build's sources (a mistyped key
    would otherwise be applied to nothing, silently): one error naming the sheet rows."""
    unknown = sorted((r.row, k) for k, r in reviews.items.items() if k not in known)
    if not unknown:
        return
    details = [f"row {n}: item_key {k!r} names no phrase of this build's sources" for n, k in unknown[:MAX_LISTED]]
    if len(unknown) > MAX_LISTED:
        details.append(f"... and {len(unknown) - MAX_LISTED} more")
    raise SourceError(f"item_key {unknown[0][1]!r} names no phrase explained by two commentators in this build's sources "
                      f"(mistyped, or a sheet of other sources; {len(unknown)} such item(s); no decision of this sheet "
                      "was applied)", file=reviews.path, row=unknown[0][0], details=details if len(unknown) > 1 else None)


# ----------------------------------------------------------------------------- export


SHEET_KEYS = ({"item_key"}, {"candidate"})


def filled_rows(path: Path) -> int | None:
    """How many rows of an existing file hold a reviewer's cell; None when it is not a
    review sheet (unreadable, or without the sheet's item_key and candidate columns)."""
    return sheets.filled_rows(path, SHEET_KEYS, FILLED)


def check_sheet_writable(out: Path) -> None:
    out = Path(out)
    suffix = out.suffix.lower().lstrip(".")
    if suffix not in SUFFIXES:
        raise UsageError(f"--out must end in .csv, .tsv or .jsonl, got {out.name!r}", field="--out")
    sheets.check_sheet_writable(out, SHEET_KEYS, FILLED, kind="review", held="a reviewer's decisions",
          advice="rebuild with `--reviews` on it, then export to a new --out file")


def _explanations(row: dict) -> str:
    return "\n".join(f"{e['commentator']}: {e['text']}" for e in row["explanations"])


def sheet_rows(rows: list[dict], dropped_items: list[dict], only_unreviewed: bool = False) -> list[dict]:
    """The sheet's rows for a build's WSD rows and the questions its reviewers dropped."""
    out: list[dict] = []
    for row in rows:
        review = row.get("review") or NOT_REVIEWED
        reviewed = review.get("status") == "reviewed"
        if only_unreviewed and reviewed:
            continue
        common = {"item_key": row["item_key"], "item_id": row["id"], "target_phrase": row["target_phrase"]}
        gold = row["candidates"][row["gold_index"]]
        corrected = review.get("gold") == "correct"
        out.append({**common, "context": row["context"], "explanations": _explanations(row), "role": "gold",
                    "candidate": review["original_answer"] if corrected else gold, "source": row["synthesis_method"],
                    "decision": (review.get("gold") or "") if reviewed else "", "replacement": gold if corrected else "",
                    "reviewer": review.get("reviewer") or "", "comment": review.get("comment") or ""})
        replaced = {r["replacement"]: r["original"] for r in review.get("distractors_replaced") or []}
        for index, (candidate, source) in enumerate(zip(row["candidates"], row["candidate_sources"], strict=True)):
            if index == row["gold_index"]:
                continue
            if candidate in replaced:
                out.append({**common, "context": "", "explanations": "", "role": "distractor",
                            "candidate": replaced[candidate], "source": "replaced by the reviewer", "decision": "replace",
                            "replacement": candidate, "reviewer": review.get("reviewer") or "", "comment": ""})
                continue
            seen = reviewed and candidate.casefold() in {k.casefold() for k in review.get("distractors_kept") or []}
            out.append({**common, "context": "", "explanations": "", "role": "distractor", "candidate": candidate,
                        "source": source if seen or not reviewed else f"{source} {NEW_MARK}",
                        "decision": "keep" if seen else "", "replacement": "",
                        "reviewer": (review.get("reviewer") or "") if seen else "", "comment": ""})
        for candidate in review.get("distractors_dropped") or []:
            out.append({**common, "context": "", "explanations": "", "role": "distractor", "candidate": candidate,
                        "source": "dropped by the reviewer (no longer offered)", "decision": "drop", "replacement": "",
                        "reviewer": review.get("reviewer") or "", "comment": ""})
    if not only_unreviewed:
        for item in dropped_items:
            out.append({"item_key": item["item_key"], "item_id": "", "target_phrase": item.get("target_phrase") or "",
                        "context": "", "explanations": "", "role": "gold", "candidate": item.get("answer") or "",
                        "source": "dropped by the reviewer (not in this build)", "decision": "drop-item",
                        "replacement": "", "reviewer": item.get("reviewer") or "", "comment": item.get("comment") or ""})
    return out


def write_sheet(rows: list[dict], out: Path) -> None:
    out = Path(out)
    suffix = out.suffix.lower().lstrip(".")
    if suffix == "jsonl":
        text = "".join(json.dumps({c: r.get(c, "") for c in COLUMNS}, ensure_ascii=False) + "\n" for r in rows)
    else:
        # glosses, contexts and candidates come from outside: formula triggers neutralised
        text = sheets.sheet_text(COLUMNS, rows, delimiter="\t" if suffix == "tsv" else ",")
    with atomic_path(out) as tmp:
        tmp.write_bytes(text.encode("utf-8"))


def export_sheet(build: Path, out: Path, only_unreviewed: bool = False) -> dict:
    """Write the review sheet of a build's WSD questions (never over a filled sheet)."""
    from histbench.core.dataset import BuiltDataset

    check_sheet_writable(out)
    built = BuiltDataset.open(build)
    if built.benchmark != "italian":
        raise UsageError(f"{build} is a {built.benchmark} build; `histbench review italian` reviews Historical Italian builds",
                         file=build)
    if "wsd" not in built.configs:
        raise UsageError("this build has no wsd config (it was built without --leggomanzoni)", file=build)
    rows = [dict(r) for r in built.load("wsd", "test")]
    review = ((built.manifest.get("summary") or {}).get("tasks", {}).get("wsd", {}).get("review") or {})
    dropped = review.get("dropped_items") or []
    written = sheet_rows(rows, dropped, only_unreviewed)
    write_sheet(written, out)
    reviewed = sum(1 for r in rows if (r.get("review") or {}).get("status") == "reviewed")
    return {"path": str(out), "rows": len(written), "questions": len(rows), "reviewed": reviewed,
            "unreviewed": len(rows) - reviewed, "dropped_questions": 0 if only_unreviewed else len(dropped)}
