"""`--discover`: a draft question registry from a survey file's variables and value labels.

    histbench build chronoculture --wvs WVS_TimeSeries.sav --discover draft.yaml
    histbench build chronoculture --issp ZA2900.dta ZA1950.sav --discover draft.yaml

A variable is a candidate when it has value labels, its answer codes (after setting
aside invalid ones) form 2 to 11 consecutive integers, every such code that occurs in
the data is labelled, and (WVS, or ISSP cumulations with a year variable) it was asked
in at least two waves/years. Invalid codes are the negative ones and those whose label
reads like a non-answer (don't know, can't choose, no answer, not applicable, refused,
missing). Identifiers, weights, design and demographic variables (WVS S*, X*, Y*) are
skipped. Scale order cannot be read from a file: every candidate is written with
`draft: true`, the variable label as its text and no topic category, and the builder
refuses a registry that still contains drafts. The user keeps the real questions,
checks the option order (reverse `options` where needed, merge or drop codes), writes
the prompt text and category, and removes `draft`.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import yaml

from histbench.builders.core.errors import UsageError
from histbench.builders.core.progress import log, progress

from .readers import FileMeta, read_columns, read_meta
from .registry import REGISTRY_FORMAT, TOPIC_CATEGORIES

NON_ANSWER = re.compile(
    r"don.?t know|can.?t choose|cannot choose|no answer|not applicable|\bnap\b|refus|missing|not asked|"
    r"\bdk\b|\bna\b|inapplicable|no response|not available",
    re.IGNORECASE,
)
WVS_SKIP_PREFIXES = ("S", "X", "Y")
WVS_TOPICS = {
    "A": "Perceptions of life", "B": "Environment", "C": "Work", "D": "Family", "E": "Politics and Society",
    "F": "Religion and Morale", "G": "National Identity", "H": "Security", "I": "Science and Technology",
}
WVS_NAME = re.compile(r"^[A-Za-z]\d{3}")  # time-series names: A008, E069_01, F114A, G007_18_B
MAX_OPTIONS = 11
CHUNK = 100


def _split_codes(labels: dict) -> tuple[list[float], list[float]]:
    """(answer codes, invalid codes) of a value-label mapping."""
    answers, invalid = [], []
    for code, label in labels.items():
        if not isinstance(code, float):
            continue
        if code < 0 or NON_ANSWER.search(str(label)):
            invalid.append(code)
        else:
            answers.append(code)
    return sorted(answers), sorted(invalid)


def _plain(code: float):
    return int(code) if float(code).is_integer() else float(code)


def _screen(meta: FileMeta, skip) -> tuple[list[str], Counter]:
    reasons = Counter()
    candidates = []
    for column in meta.columns:
        if skip(column):
            reasons["identifier_or_demographic"] += 1
            continue
        labels = meta.value_labels.get(column)
        if not labels:
            reasons["no_value_labels"] += 1
            continue
        answers, _ = _split_codes(labels)
        if not 2 <= len(answers) <= MAX_OPTIONS:
            reasons["not_2_to_11_answer_codes"] += 1
            continue
        if not all(float(c).is_integer() for c in answers) or np.any(np.diff(answers) != 1):
            reasons["answer_codes_not_consecutive"] += 1
            continue
        candidates.append(column)
    return candidates, reasons


def _entry(meta: FileMeta, column: str, qid: str, periods: list[int], period_name: str) -> dict:
    answers, invalid = _split_codes(meta.value_labels[column])
    labels = meta.value_labels[column]
    return {
        "id": qid,
        "draft": True,
        "text": meta.variable_labels.get(column) or column,
        "category": None,
        "options": [{"code": _plain(c), "label": str(labels[c])} for c in answers],
        "invalid_codes": [_plain(c) for c in invalid],
        f"{period_name}_asked": periods,
    }


def discover_wvs(path: Path, wave_var: str = "S002VS", waves=(3, 4, 5, 6, 7)) -> tuple[list[dict], Counter]:
    meta = read_meta(path)
    meta.require([wave_var], "WVS wave")
    candidates, reasons = _screen(
        meta, lambda c: not WVS_NAME.match(c) or c.upper().startswith(WVS_SKIP_PREFIXES)
    )
    wave = read_columns(meta, [wave_var])[wave_var].to_numpy()
    in_waves = np.isin(wave, waves)
    entries = []
    for start in progress(range(0, len(candidates), CHUNK), desc="discover WVS", unit="chunk"):
        chunk = candidates[start:start + CHUNK]
        frame = read_columns(meta, chunk)
        for column in chunk:
            values = frame[column].to_numpy()[in_waves]
            answers, _ = _split_codes(meta.value_labels[column])
            used = np.unique(values[np.isfinite(values) & (values >= 0)])
            labelled = set(meta.value_labels[column])
            if any(float(u) not in labelled for u in used):
                reasons["unlabelled_codes_used"] += 1
                continue
            answered = np.isin(values, answers)
            asked = sorted(int(w) for w in np.unique(wave[in_waves][answered]))
            if len(asked) < 2:
                reasons["asked_in_fewer_than_2_waves"] += 1
                continue
            entry = _entry(meta, column, f"wvs_{column}", asked, "waves")
            entry = {"id": entry.pop("id"), "variable": column, "topic": WVS_TOPICS.get(column[:1].upper(), "(topic)"),
                     **entry}
            entries.append(entry)
    return entries, reasons


def _guess(meta: FileMeta, names: tuple[str, ...]) -> str | None:
    lower = {c.lower(): c for c in meta.columns}
    for name in names:
        if name.lower() in lower:
            return lower[name.lower()]
    return None


def discover_issp(path: Path) -> tuple[dict, list[dict], Counter]:
    meta = read_meta(path)
    match = re.search(r"za\d{3,5}", path.stem, re.IGNORECASE)
    study_id = match.group(0).upper() if match else path.stem
    country = _guess(meta, ("c_alphan", "country", "v3", "V4", "c_sample"))
    weight = _guess(meta, ("WEIGHT", "weight", "wght", "v325", "v114"))
    year = _guess(meta, ("year", "YEAR", "v2_year", "survey_year"))
    study = {
        "id": study_id, "title": meta.path.stem, "files": [f"{study_id}*"],
        "year": {"variable": year} if year else None,
        "country": {"variable": country, "coding": "alpha2" if country and country.lower() == "c_alphan" else "iso_numeric"},
        "weight": weight,
        "notes": "DRAFT: check the country coding and weight; give the module year (e.g. year: 2016) for a module file",
    }
    skip = {c for c in (country, weight, year) if c}
    candidates, reasons = _screen(meta, lambda c: c in skip)
    frame = read_columns(meta, candidates + ([year] if year else [])) if candidates else None
    entries = []
    for column in candidates:
        values = frame[column].to_numpy()
        used = np.unique(values[np.isfinite(values)])
        if any(float(u) not in meta.value_labels[column] for u in used):
            reasons["unlabelled_codes_used"] += 1
            continue
        answers, _ = _split_codes(meta.value_labels[column])
        periods: list[int] = []
        if year:
            answered = np.isin(values, answers)
            periods = sorted(int(y) for y in np.unique(frame[year].to_numpy()[answered]) if np.isfinite(y))
            if len(periods) < 2:
                reasons["asked_in_fewer_than_2_years"] += 1
                continue
        entry = _entry(meta, column, f"issp_{study_id.lower()}_{column.lower()}", periods, "years")
        entry = {"id": entry.pop("id"), "module": "(module name)", **entry, "sources": {study_id: column}}
        entries.append(entry)
    return study, entries, reasons


def discover_registry(wvs: Path | None, issp: list[Path]) -> tuple[dict, dict]:
    draft: dict = {"format": REGISTRY_FORMAT}
    report: dict = {}
    if wvs:
        questions, reasons = discover_wvs(Path(wvs))
        draft["wvs"] = {
            "variables": {"wave": "S002VS", "country": "S003", "country_alpha": "COUNTRY_ALPHA", "year": "S020",
                          "weight": "S017"},
            "waves": [3, 4, 5, 6, 7], "newer_wave": 7, "invalid_codes": [-1, -2, -3, -4, -5], "not_asked_codes": [-4],
            "questions": questions,
        }
        report[Path(wvs).name] = {"candidates": len(questions), "rejected": dict(reasons)}
    if issp:
        studies, questions = [], []
        for path in issp:
            study, entries, reasons = discover_issp(Path(path))
            studies.append(study)
            questions += entries
            report[Path(path).name] = {"candidates": len(entries), "rejected": dict(reasons)}
        draft["issp"] = {"studies": studies, "questions": questions}
    return draft, report


HEADER = """# DRAFT chronoculture question registry written by `histbench build chronoculture --discover`.
# Candidates: labelled variables with 2-{max} consecutive answer codes, every used code labelled,
# asked in >= 2 waves/years where the file tells. Before building with --registry THIS_FILE:
#   - keep only comparable attitude questions (drop behaviour frequencies and country-specific items);
#   - put `options` in scale order (a_1 < ... < a_K), merge or drop codes, check `invalid_codes`;
#   - write `text` (the question as asked) and `category`, one of:
{categories}
#   - ISSP: give each study its module `year` and check its country coding and weight;
#   - remove `draft: true` (the builder refuses drafts).
# Discovery report: {report}
"""


def run_discover(args) -> Path:
    wvs = getattr(args, "input_wvs", None)
    issp = getattr(args, "input_issp", None) or []
    if not wvs and not issp:
        raise UsageError("--discover needs at least one survey file (--wvs FILE and/or --issp FILE ...)")
    draft, report = discover_registry(Path(wvs).expanduser() if wvs else None, [Path(p).expanduser() for p in issp])
    out = Path(args.discover).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    header = HEADER.format(
        max=MAX_OPTIONS, categories="\n".join(f"#       {c}" for c in TOPIC_CATEGORIES),
        report=yaml.safe_dump(report, default_flow_style=True, width=10_000).strip(),
    )
    body = yaml.safe_dump(draft, sort_keys=False, allow_unicode=True, width=110)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(header + body, encoding="utf-8")
    tmp.replace(out)
    total = sum(r["candidates"] for r in report.values())
    log(f"[chronoculture] draft registry with {total} candidate question(s) written to {out}")
    print(out)
    return out
