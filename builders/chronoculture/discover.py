"""`--discover`: attach the user's files to the registry, and list what else they hold.

    histbench build chronoculture --wvs WVS_TimeSeries.sav --discover my_registry.yaml
    histbench build chronoculture --issp ZA4700_v1-0-0.dta ZA6900_v2-0-0.sav --discover my_registry.yaml

Reads the registry the build would use (the shipped one, or `--registry FILE`) and the
given files' metadata, and writes a copy of that registry to OUT_YAML:

- **sources attached.** WVS: each registry question whose time-series variable is in
  the file is listed as present (the variable is the source). ISSP: each file is matched
  to its registry study by its GESIS study number; every question of the study's module
  that the file holds (found by its label pattern and value labels, locate.py) is pinned
  as `sources: {STUDY: VARIABLE}`, with the file's codes and invalid codes where they
  differ from the question's. A study that said `country: auto` / `weight: auto` gets the
  variables found, and for a country variable read from value labels a drafted `map`
  (code -> alpha-3) in which combined codes (West and East Germany -> DEU, Israel's Jewish
  and Arab samples -> ISR) are listed in the study's `notes`. A file that matches no
  study gets a drafted study under `issp.candidate_studies` (its module and year are for
  the user to give).
- **candidates.** Variables that no registry question uses and that pass the paper's 3.2
  criteria a file can show go under `wvs.candidates` / `issp.candidates` with
  `draft: true`: value labels with 2-11 consecutive answer codes (an ordered scale),
  every used code labelled, asked in at least two waves (WVS, and ISSP cumulations with a
  year variable), the same scale in every wave it was asked (scales.py's rule on observed
  codes), asked in more than one country, and not a demographic, identifier or weight
  variable (WVS S*, X*, Y*; ISSP background variables), not a behaviour frequency ("how
  often", "attend", "in the last 12 months") and not a country-specific variable (DE_V5).
  Scale order, the question text and the topic category cannot be read from a file: move
  a candidate into `questions`, check it and remove `draft` (the builder refuses a
  question still marked draft; it ignores `candidates`).

Every rejected variable is counted per reason in the header of the written file.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import yaml

from histbench.core.errors import SourceError, UsageError
from histbench.core.progress import log, progress

from .countries import CountryTable
from .locate import (
    COUNTRY_SPECIFIC,
    answer_codes,
    is_non_answer,
    locate_country,
    locate_questions,
    locate_weight,
)
from .readers import FileMeta, read_columns, read_meta
from .registry import REGISTRY_FORMAT, TOPIC_CATEGORIES, load_registry
from .scales import SCALE_SHARE

WVS_SKIP_PREFIXES = ("S", "X", "Y")
WVS_TOPICS = {
    "A": "Perceptions of life", "B": "Environment", "C": "Work", "D": "Family", "E": "Politics and Society",
    "F": "Religion and Morale", "G": "National Identity", "H": "Security", "I": "Science and Technology",
}
WVS_NAME = re.compile(r"^[A-Za-z]\d{3}")  # time-series names: A008, E069_01, F114A, G007_18_B
BEHAVIOUR = re.compile(
    r"how often|frequen|attend|times (a|per)|per (week|month|year)|in the (last|past) (\d+|twelve|12) months|"
    r"during the (last|past)|\bever\b.*\b(done|been|had)\b|hours",
    re.IGNORECASE,
)
DEMOGRAPHIC = re.compile(
    r"\b(sex|gender|age|birth|born|educ|degree|school|income|earnings|marital|household|partner'?s|spouse|"
    r"occupation|isco|employment status|work status|main status|religious (denomination|affiliation)|party|vote|"
    r"region|size of (community|town|place)|urban|rural|ethnic|citizen(ship)?|language|respondent id|"
    r"interview|mode|weight|study number|doi|version|case|sample)\b",
    re.IGNORECASE,
)
MAX_OPTIONS = 11
CHUNK = 100


def _plain(code: float):
    return int(code) if float(code).is_integer() else float(code)


def _screen(meta: FileMeta, skip) -> tuple[list[str], Counter]:
    """Variables that may be questions: value labels with 2-11 consecutive answer codes."""
    reasons = Counter()
    candidates = []
    for column in meta.columns:
        why = skip(column)
        if why:
            reasons[why] += 1
            continue
        labels = meta.value_labels.get(column)
        if not labels:
            reasons["no_value_labels"] += 1
            continue
        answers = sorted(answer_codes(labels))
        if not 2 <= len(answers) <= MAX_OPTIONS:
            reasons["not_2_to_11_answer_codes"] += 1
            continue
        if not all(float(c).is_integer() for c in answers) or np.any(np.diff(answers) != 1):
            reasons["answer_codes_not_consecutive"] += 1
            continue
        label = meta.variable_labels.get(column) or ""
        if BEHAVIOUR.search(label):
            reasons["behaviour_frequency"] += 1
            continue
        candidates.append(column)
    return candidates, reasons


def _entry(meta: FileMeta, column: str, qid: str, periods: list[int], period_name: str) -> dict:
    labels = meta.value_labels[column]
    answers = answer_codes(labels)
    invalid = sorted(c for c, v in labels.items() if isinstance(c, float) and is_non_answer(c, v))
    entry = {
        "id": qid,
        "draft": True,
        "text": meta.variable_labels.get(column) or column,
        "category": None,
        "options": [{"code": _plain(c), "label": str(answers[c])} for c in sorted(answers)],
        "invalid_codes": [_plain(c) for c in invalid],
    }
    if periods:
        entry[f"{period_name}_asked"] = periods
    return entry


def _scale_changes(values: np.ndarray, period: np.ndarray, answers: list[float]) -> str | None:
    """scales.py's rule within one variable: an answer code with >= 1% in one period and none in another."""
    valid = np.isfinite(values) & (values >= 0)
    shares = {}
    for p in np.unique(period[valid]):
        mine = values[valid & (period == p)]
        codes, counts = np.unique(mine, return_counts=True)
        shares[int(p)] = dict(zip(codes.tolist(), (counts / counts.sum()).tolist(), strict=True))
    for p, here in shares.items():
        for q, there in shares.items():
            for code, share in there.items():
                if share >= SCALE_SHARE and code not in here:
                    return f"code {_plain(code)} holds {100 * share:.1f}% in {q} and none in {p}"
    return None


def discover_wvs(path: Path, registry, wave_var: str = "S002VS", country_var: str = "S003") -> tuple[dict, list, Counter]:
    """({question id: variable} present, candidate entries, rejection reasons)."""
    meta = read_meta(path)
    settings = registry.wvs
    waves = settings.waves if settings else (3, 4, 5, 6, 7)
    not_asked = set(settings.not_asked_codes) if settings else {-4.0}
    meta.require([wave_var], "WVS wave")
    present = {q.id: meta.column(q.variable) for q in registry.wvs_questions if meta.has(q.variable)}
    used = {v for v in present.values()}

    def skip(column):
        if column in used:
            return "already_in_the_registry"
        if not WVS_NAME.match(column) or column.upper().startswith(WVS_SKIP_PREFIXES):
            return "identifier_or_demographic"
        return None

    candidates, reasons = _screen(meta, skip)
    ids = [wave_var] + ([meta.column(country_var)] if meta.has(country_var) else [])
    frame = read_columns(meta, ids)
    wave = frame[wave_var]
    country = frame[ids[1]] if len(ids) > 1 else np.zeros(len(wave))
    in_waves = np.isin(wave, waves)
    entries = []
    for start in progress(range(0, len(candidates), CHUNK), desc="discover WVS", unit="chunk"):
        chunk = candidates[start:start + CHUNK]
        data = read_columns(meta, chunk)
        for column in chunk:
            values = data[column][in_waves]
            answers = sorted(answer_codes(meta.value_labels[column]))
            valid_used = np.unique(values[np.isfinite(values) & (values >= 0)])
            labelled = set(meta.value_labels[column])
            if any(float(u) not in labelled for u in valid_used):
                reasons["unlabelled_codes_used"] += 1
                continue
            answered = np.isin(values, answers) & ~np.isin(values, list(not_asked))
            asked = sorted(int(w) for w in np.unique(wave[in_waves][answered]))
            if len(asked) < 2:
                reasons["asked_in_fewer_than_2_waves"] += 1
                continue
            if len(np.unique(country[in_waves][answered])) < 2:
                reasons["asked_in_one_country_only"] += 1
                continue
            if _scale_changes(values[answered], wave[in_waves][answered], answers):
                reasons["scale_differs_between_waves"] += 1
                continue
            entry = _entry(meta, column, f"wvs_{column}", asked, "waves")
            entries.append({"id": entry.pop("id"), "variable": column,
                            "topic": WVS_TOPICS.get(column[:1].upper(), "(topic)"), **entry})
    return present, entries, reasons


def _issp_skip(meta: FileMeta, taken: set):
    def skip(column):
        if column in taken:
            return "already_in_the_registry_or_a_study_variable"
        if COUNTRY_SPECIFIC.match(column):
            return "country_specific"
        label = meta.variable_labels.get(column) or ""
        if column.isupper() and not re.match(r"^V\d+", column) or DEMOGRAPHIC.search(label):
            return "background_or_design_variable"
        return None

    return skip


def discover_issp(path: Path, registry, countries: CountryTable) -> tuple[dict, Counter]:
    """What one ISSP file adds to the registry: {"study": id or None, "study_entry": drafted study or
    None, "study_update": {...}, "sources": {question id: source}, "not_found": {...}, "candidates": [...]}."""
    meta = read_meta(path)
    out: dict = {"file": path.name, "sources": {}, "not_found": {}, "candidates": [], "study_update": {}}
    try:
        study = registry.study_for(path)
    except SourceError:
        study = None
    taken: set = set()
    if study is not None:
        out["study"] = study.id
        entries = registry.questions_of(study)
        for _, source in entries:
            if source is not None:
                taken.add(meta.column(source.variable) or source.variable)
        # one variable for one question: a variable pinned or found for two questions is nobody's
        located, refused = locate_questions(meta, [q for q, s in entries if s is None], exclude=set(taken))
        for question, source in entries:
            if source is not None:
                continue
            if question.id in refused:
                out["not_found"][question.id] = refused[question.id].message
                continue
            found = located[question.id]
            taken.add(found.variable)
            ref: dict = {"variable": found.variable}
            if list(found.codes) != question.codes_for(None):
                ref["codes"] = [[_plain(c) for c in group] if len(group) > 1 else _plain(group[0])
                                for group in found.codes]
            if set(found.invalid) != set(question.invalid_codes):
                ref["invalid_codes"] = [_plain(c) for c in found.invalid]
            out["sources"][question.id] = ref if len(ref) > 1 else found.variable
        study_id = study.id
    else:
        match = re.match(r"za\d{3,5}", path.name, re.IGNORECASE)
        study_id = match.group(0).upper() if match else path.stem
        out["study"] = None
    # country and weight: found in the file where the registry does not say (or for a new study)
    needs_country = study is None or study.country.auto
    if needs_country:
        try:
            found = locate_country(meta, countries, study_id)
        except SourceError as exc:
            out["study_update"]["country"] = None
            out["study_update"]["notes"] = f"DRAFT: {exc.message}"
        else:
            taken.add(found.variable)
            if found.coding == "map":
                country = {"variable": found.variable, "coding": "map",
                           "map": {_plain(k): v for k, v in sorted(found.map.items())}}
            else:
                country = {"variable": found.variable, "coding": "alpha2"}
            notes = [f"country variable {found.variable} found by --discover"]
            if found.combined:
                notes.append("combined codes: " + "; ".join(f"{' + '.join(v)} -> {a}"
                                                            for a, v in sorted(found.combined.items())))
            if found.unmapped:
                notes.append("codes naming no country of the table (left out): "
                             + ", ".join(f"{_plain(k)} {v!r}" for k, v in sorted(found.unmapped.items())))
            out["study_update"]["country"] = country
            out["study_update"]["notes"] = "; ".join(notes)
    elif study is not None and study.country.variable:
        taken.add(meta.column(study.country.variable) or study.country.variable)
    if study is None or study.weight_auto:
        weight = locate_weight(meta)
        out["study_update"]["weight"] = weight
        if weight:
            taken.add(weight)
    elif study.weight:
        taken.add(meta.column(study.weight) or study.weight)
    if study is None:
        out["study_entry"] = {
            "id": study_id, "title": meta.path.stem, "module": None, "year": None,
            **{k: v for k, v in out.pop("study_update").items()},
            "codebook": "DRAFT: name the codebook that confirms the variables",
        }
        out["study_entry"]["notes"] = ("DRAFT: give the module (one of the registry's ISSP modules) and the module "
                                       "year; " + out["study_entry"].get("notes", ""))

    candidates, reasons = _screen(meta, _issp_skip(meta, taken))
    frame = read_columns(meta, candidates) if candidates else None
    for column in candidates:
        values = frame[column]
        used = np.unique(values[np.isfinite(values)])
        if any(float(u) not in meta.value_labels[column] for u in used):
            reasons["unlabelled_codes_used"] += 1
            continue
        entry = _entry(meta, column, f"issp_{study_id.lower()}_{column.lower()}", [], "years")
        module = study.module if study is not None and study.module else "(module name)"
        out["candidates"].append({"id": entry.pop("id"), "module": module, **entry, "sources": {study_id: column}})
    return out, reasons


def _plain_data(value):
    """YAML-safe copies (tuples -> lists, numpy scalars -> numbers)."""
    if isinstance(value, dict):
        return {k: _plain_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_data(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def attach(registry_path: Path, wvs: Path | None, issp: list[Path], countries: CountryTable) -> tuple[dict, dict]:
    """(the registry's data with sources attached and candidates added, a report per file)."""
    registry = load_registry(registry_path)
    data = yaml.safe_load(registry_path.read_text(encoding="utf-8"))
    data.pop("scales", None)  # YAML anchors are expanded in the copy
    report: dict = {}
    if wvs:
        present, candidates, reasons = discover_wvs(Path(wvs), registry)
        section = data.setdefault("wvs", {"questions": []})
        section["candidates"] = candidates
        missing = [q.id for q in registry.wvs_questions if q.id not in present]
        report[Path(wvs).name] = {"registry_questions_present": len(present),
                                  "registry_questions_missing": len(missing), "candidates": len(candidates),
                                  "rejected": dict(sorted(reasons.items()))}
        if missing:
            report[Path(wvs).name]["missing"] = missing
    if issp:
        section = data.setdefault("issp", {"studies": [], "questions": []})
        section.setdefault("studies", [])
        questions = {q["id"]: q for q in section.get("questions") or []}
        studies = {s["id"]: s for s in section["studies"]}
        section["candidates"] = list(section.get("candidates") or [])
        new_studies = list(section.get("candidate_studies") or [])
        for path in issp:
            found, reasons = discover_issp(Path(path), registry, countries)
            study_id = found["study"]
            for qid, ref in found["sources"].items():
                questions[qid].setdefault("sources", {})[study_id] = ref
            if study_id is not None and found["study_update"]:
                studies[study_id].update({k: v for k, v in found["study_update"].items() if v is not None})
            if found.get("study_entry"):
                new_studies.append(found["study_entry"])
            section["candidates"] += found["candidates"]
            report[Path(path).name] = {
                "study": study_id or f"none (drafted {found['study_entry']['id']} under issp.candidate_studies)",
                "sources_attached": len(found["sources"]), "questions_not_found": len(found["not_found"]),
                "candidates": len(found["candidates"]), "rejected": dict(sorted(reasons.items())),
            }
            if found["not_found"]:
                report[Path(path).name]["not_found"] = found["not_found"]
        if new_studies:
            section["candidate_studies"] = new_studies
    data["format"] = REGISTRY_FORMAT
    return _plain_data(data), report


class _NoAliases(yaml.SafeDumper):
    """Writes a shared scale out in full each time (no &id001 / *id001 in the copy)."""

    def ignore_aliases(self, data):
        return True


HEADER_START = "# chronoculture question registry written by `histbench build chronoculture --discover`"
HEADER = HEADER_START + """
# from {registry} and the files below. Sources found in the files are attached to the
# registry's questions (pinned: check them against your codebook); new candidate
# questions are under `candidates:` with `draft: true` (the builder ignores them). A
# candidate passed the paper's 3.2 checks a file allows (ordered scale of 2-{max} labelled
# codes, asked in >= 2 waves on one scale, in more than one country, not demographic,
# behaviour frequency or country-specific); before moving one into `questions:`:
#   - put `options` in scale order (a_1 < ... < a_K), merge or drop codes, check `invalid_codes`;
#   - write `text` (the question as asked) and `category`, one of:
{categories}
#   - remove `draft: true`.
# A file that matched no study has a drafted study under `issp.candidate_studies` (give
# its module and year, then move it into `studies:`).
# Report per file:
{report}
"""


def run_discover(args) -> Path:
    wvs = getattr(args, "input_wvs", None)
    issp = getattr(args, "input_issp", None) or []
    if not wvs and not issp:
        raise UsageError("--discover needs at least one survey file (--wvs FILE and/or --issp FILE ...)")
    from histbench.core.resources import Resources

    sources = Resources.default().source_dir("chronoculture")
    registry_path = Path(args.registry).expanduser() if getattr(args, "registry", None) else sources / "registry.yaml"
    countries_path = Path(args.countries).expanduser() if getattr(args, "countries", None) else sources / "countries.csv"
    data, report = attach(registry_path, Path(wvs).expanduser() if wvs else None,
                          [Path(p).expanduser() for p in issp], CountryTable.load(countries_path))
    out = Path(args.discover).expanduser()
    if out.resolve() == registry_path.resolve():
        raise UsageError(f"--discover would overwrite the registry it reads ({registry_path}); give another file")
    if out.exists() and not out.read_text(encoding="utf-8", errors="replace").startswith(HEADER_START):
        raise UsageError(f"{out} exists and was not written by --discover; give a new file name (a registry "
                         "someone wrote is never overwritten)")
    out.parent.mkdir(parents=True, exist_ok=True)
    shown = yaml.safe_dump(report, sort_keys=False, allow_unicode=True, width=100)
    header = HEADER.format(
        registry=registry_path.name, max=MAX_OPTIONS,
        categories="\n".join(f"#       {c}" for c in TOPIC_CATEGORIES),
        report="\n".join(f"#   {line}" for line in shown.rstrip().splitlines()),
    )
    body = yaml.dump(data, Dumper=_NoAliases, sort_keys=False, allow_unicode=True, width=110)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(header + body, encoding="utf-8")
    tmp.replace(out)
    attached = sum(r.get("sources_attached", r.get("registry_questions_present", 0)) for r in report.values())
    candidates = sum(r["candidates"] for r in report.values())
    log(f"[chronoculture] {out}: {attached} source(s) attached to registry questions, {candidates} new candidate(s)")
    for name, r in report.items():
        log(f"[chronoculture]   {name}: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r.items()
                                                     if not isinstance(v, dict | list)))
    print(out)
    return out
