"""The question registry: which survey variables become benchmark questions, and how.

The shipped registry is `sources/chronoculture/registry.yaml`; `--registry FILE` replaces
it (a user's curated copy, or a draft written by `--discover` once curated). Format::

    format: chronoculture-registry/1
    wvs:
      variables: {wave: S002VS, country: S003, country_alpha: COUNTRY_ALPHA, year: S020, weight: S017}
      waves: [3, 4, 5, 6, 7]          # waves read; others are counted and dropped
      newer_wave: 7                   # the newer period of every WVS pair (paper 3.4)
      invalid_codes: [-1, -2, -3, -4, -5]
      not_asked_codes: [-4]           # a cell whose answers are all these (or empty) was not asked
      questions:
        - id: wvs_A008                # unique across the registry
          variable: A008              # column of the time-series file
          topic: Perceptions of life  # the survey's own topic label
          category: Family, health, and social attitudes   # one of the five of paper Table 4
          text: ...                   # question text used in the prompts
          options:                    # in scale order (a_1 < ... < a_K)
            - {code: 1, label: Very happy}
            - {codes: [2], label: Quite happy, value: 2}   # several codes may form one option
          # or, for numeric scales: scale: {from: 1, to: 10, low: "...", high: "..."}
          # optional: invalid_codes (added to the survey's), values are 1..K unless given
    issp:
      studies:                        # one entry per ISSP data file (module or cumulation)
        - id: ZA2900
          title: ISSP 1996 Role of Government III
          files: ["ZA2900*"]          # file-name patterns (case-insensitive) that identify it
          year: 1996                  # module year, or {variable: V2} / {variable: V2, map: {1: 1985}}
          country: {variable: v3, coding: map, map: {1: AUS, ...}}
          #   coding: iso_numeric | alpha2 | alpha3 | label_alpha2 | map  (map entries win for any coding)
          weight: v325                # null: every respondent weighs 1 (say so in `notes`)
      questions:
        - id: issp_rog_jobs
          module: Role of Government  # topic defaults to the module
          category: ...
          text: ...
          options: [...]
          invalid_codes: [0, 8, 9]    # per variable (can't choose, no answer, not applicable)
          sources:                    # study id -> variable (or {variable, codes, invalid_codes})
            ZA2900: v36
            ZA1950: {variable: v49}

`codes` in a source override replaces each option's codes (a list aligned with the
options). Every code of an option must be a value label of the variable in .sav/.dta
files (checked at build time). Codes that appear in the data but are neither an option
nor invalid are treated as invalid answers, counted and reported per question.

The shipped registry covers questions documented from the public questionnaires, with
paraphrased texts; users verify and extend it for their release (see docs/chronoculture.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from histbench.builders.core.errors import SourceError

REGISTRY_FORMAT = "chronoculture-registry/1"
TOPIC_CATEGORIES: tuple[str, ...] = (
    "Government, democracy, and institutions",
    "Religion and national identity",
    "Social inequality, work, and economic values",
    "Family, health, and social attitudes",
    "Environment, science, and technology",
)
COUNTRY_CODINGS = ("iso_numeric", "alpha2", "alpha3", "label_alpha2", "map")


@dataclass(frozen=True)
class Option:
    label: str
    codes: tuple[float, ...]
    value: float


@dataclass(frozen=True)
class SourceRef:
    """Where one ISSP study holds a question; codes/invalid override the question's."""

    study: str
    variable: str
    codes: tuple[tuple[float, ...], ...] | None = None
    invalid_codes: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Question:
    id: str
    survey: str  # "WVS" | "ISSP"
    topic: str
    category: str
    text: str
    options: tuple[Option, ...]
    invalid_codes: tuple[float, ...]
    variable: str | None = None  # WVS column
    sources: tuple[SourceRef, ...] = ()  # ISSP

    @property
    def labels(self) -> list[str]:
        return [o.label for o in self.options]

    @property
    def values(self) -> list[float]:
        return [o.value for o in self.options]

    def codes_for(self, source: SourceRef | None = None) -> list[tuple[float, ...]]:
        if source is not None and source.codes is not None:
            return list(source.codes)
        return [o.codes for o in self.options]

    def invalid_for(self, source: SourceRef | None = None) -> tuple[float, ...]:
        if source is not None and source.invalid_codes is not None:
            return source.invalid_codes
        return self.invalid_codes


@dataclass(frozen=True)
class CountrySpec:
    variable: str
    coding: str
    map: dict = field(default_factory=dict)


@dataclass(frozen=True)
class YearSpec:
    fixed: int | None = None
    variable: str | None = None
    map: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Study:
    id: str
    title: str
    files: tuple[str, ...]
    year: YearSpec
    country: CountrySpec
    weight: str | None
    notes: str = ""

    def matches(self, path: Path) -> bool:
        from fnmatch import fnmatch

        name = path.name.lower()
        return any(fnmatch(name, pattern.lower()) for pattern in self.files)


@dataclass(frozen=True)
class WvsSettings:
    variables: dict[str, str]
    waves: tuple[int, ...]
    newer_wave: int
    invalid_codes: tuple[float, ...]
    not_asked_codes: tuple[float, ...]


@dataclass(frozen=True)
class Registry:
    path: Path
    wvs: WvsSettings | None
    wvs_questions: tuple[Question, ...]
    studies: tuple[Study, ...]
    issp_questions: tuple[Question, ...]

    @property
    def questions(self) -> tuple[Question, ...]:
        return self.wvs_questions + self.issp_questions

    def study_for(self, path: Path) -> Study:
        found = [s for s in self.studies if s.matches(path)]
        if not found:
            known = ", ".join(f"{s.id} ({'/'.join(s.files)})" for s in self.studies) or "none"
            raise SourceError(
                "no ISSP study of the registry matches this file name; add a study entry with its "
                f"country, weight and year variables to the registry (draft one with --discover). Known: {known}",
                file=path,
            )
        if len(found) > 1:
            raise SourceError(
                f"several registry studies match this file name: {', '.join(s.id for s in found)}", file=path
            )
        return found[0]

    def questions_of(self, study: Study) -> list[tuple[Question, SourceRef]]:
        out = []
        for question in self.issp_questions:
            for source in question.sources:
                if source.study == study.id:
                    out.append((question, source))
        return out


class _Where:
    """Builds errors that name the registry file and the entry being read."""

    def __init__(self, path: Path):
        self.path = path

    def error(self, entry: str, message: str, field_name: str | None = None) -> SourceError:
        return SourceError(f"registry entry {entry}: {message}", file=self.path, field=field_name)


def _codes(raw, where: _Where, entry: str, field_name: str) -> tuple[float, ...]:
    values = raw if isinstance(raw, list | tuple) else [raw]
    out = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise where.error(entry, f"codes must be numbers, got {value!r}", field_name)
        out.append(float(value))
    return tuple(out)


def _options(spec: dict, where: _Where, entry: str) -> tuple[Option, ...]:
    if "scale" in spec:
        scale = spec["scale"] or {}
        try:
            low, high = int(scale["from"]), int(scale["to"])
        except (KeyError, TypeError, ValueError) as exc:
            raise where.error(entry, "scale needs integer 'from' and 'to'", "scale") from exc
        if high <= low:
            raise where.error(entry, "scale 'to' must be larger than 'from'", "scale")
        options = []
        for code in range(low, high + 1):
            label = str(code)
            if code == low and scale.get("low"):
                label = f"{code} ({scale['low']})"
            elif code == high and scale.get("high"):
                label = f"{code} ({scale['high']})"
            options.append(Option(label, (float(code),), float(code - low + 1)))
        return tuple(options)
    raw = spec.get("options")
    if not isinstance(raw, list) or len(raw) < 2:
        raise where.error(entry, "needs 'options' (a list of at least two) or 'scale'", "options")
    options = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or "label" not in item:
            raise where.error(entry, f"option {index + 1} needs a 'label'", "options")
        if ("code" in item) == ("codes" in item):
            raise where.error(entry, f"option {item['label']!r} needs exactly one of 'code' or 'codes'", "options")
        codes = _codes(item.get("code", item.get("codes")), where, entry, "options")
        value = item.get("value", index + 1)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise where.error(entry, f"option {item['label']!r}: value must be a number", "options")
        options.append(Option(str(item["label"]), codes, float(value)))
    return tuple(options)


def _check_question(q: Question, where: _Where) -> None:
    labels = q.labels
    if len(set(labels)) != len(labels):
        raise where.error(q.id, "option labels must be unique", "options")
    all_codes = [c for o in q.options for c in o.codes]
    if len(set(all_codes)) != len(all_codes):
        raise where.error(q.id, "a code belongs to more than one option", "options")
    overlap = set(all_codes) & set(q.invalid_codes)
    if overlap:
        raise where.error(q.id, f"codes {sorted(overlap)} are both an option and invalid", "invalid_codes")
    values = q.values
    if any(b <= a for a, b in zip(values, values[1:], strict=False)):
        raise where.error(q.id, f"option values must be strictly increasing, got {values}", "options")
    if q.category not in TOPIC_CATEGORIES:
        raise where.error(
            q.id, f"category {q.category!r} is not one of the five topic categories: {list(TOPIC_CATEGORIES)}",
            "category",
        )
    if not q.text.strip():
        raise where.error(q.id, "needs a question 'text' for the prompts", "text")


def _question(spec: dict, survey: str, where: _Where, base_invalid: tuple[float, ...]) -> Question:
    qid = str(spec.get("id", "")).strip()
    if not qid:
        raise where.error(f"#{spec!r:.40}", "every question needs an 'id'", "id")
    if spec.get("draft"):
        raise where.error(qid, "is still a --discover draft: check it, fill text/category/options and remove 'draft'", "draft")
    options = _options(spec, where, qid)
    invalid = base_invalid + _codes(spec.get("invalid_codes", []), where, qid, "invalid_codes")
    invalid = tuple(sorted(set(invalid)))
    topic = spec.get("topic") or spec.get("module")
    if not topic:
        raise where.error(qid, "needs a 'topic' (ISSP: or 'module')", "topic")
    sources: list[SourceRef] = []
    variable = None
    if survey == "WVS":
        variable = spec.get("variable")
        if not variable:
            raise where.error(qid, "a WVS question needs its time-series 'variable'", "variable")
        variable = str(variable)
    else:
        for study, ref in (spec.get("sources") or {}).items():
            if isinstance(ref, str):
                sources.append(SourceRef(str(study), ref))
                continue
            if not isinstance(ref, dict) or not ref.get("variable"):
                raise where.error(qid, f"source {study}: give a variable name or {{variable: ...}}", "sources")
            codes = None
            if "codes" in ref:
                raw = ref["codes"]
                if not isinstance(raw, list) or len(raw) != len(options):
                    raise where.error(qid, f"source {study}: 'codes' needs one entry per option ({len(options)})", "sources")
                codes = tuple(_codes(c, where, qid, "sources") for c in raw)
            invalid_override = None
            if "invalid_codes" in ref:
                invalid_override = tuple(sorted(set(_codes(ref["invalid_codes"], where, qid, "sources"))))
            sources.append(SourceRef(str(study), str(ref["variable"]), codes, invalid_override))
    question = Question(
        id=qid, survey=survey, topic=str(topic), category=str(spec.get("category") or ""),
        text=str(spec.get("text") or ""), options=options, invalid_codes=invalid,
        variable=variable, sources=tuple(sources),
    )
    _check_question(question, where)
    return question


def _study(spec: dict, where: _Where) -> Study:
    sid = str(spec.get("id", "")).strip()
    if not sid:
        raise where.error("(study)", "every ISSP study needs an 'id'", "id")
    files = spec.get("files") or [f"{sid}*"]
    if isinstance(files, str):
        files = [files]
    year_raw = spec.get("year")
    if isinstance(year_raw, int) and not isinstance(year_raw, bool):
        year = YearSpec(fixed=year_raw)
    elif isinstance(year_raw, dict) and year_raw.get("variable"):
        year = YearSpec(variable=str(year_raw["variable"]), map={float(k): int(v) for k, v in (year_raw.get("map") or {}).items()})
    else:
        raise where.error(sid, "needs 'year': the module year, or {variable: NAME[, map: {code: year}]}", "year")
    country_raw = spec.get("country")
    if isinstance(country_raw, str):
        country_raw = {"variable": country_raw, "coding": "iso_numeric"}
    if not isinstance(country_raw, dict) or not country_raw.get("variable"):
        raise where.error(sid, "needs 'country': {variable: NAME, coding: ...}", "country")
    coding = str(country_raw.get("coding", "iso_numeric"))
    if coding not in COUNTRY_CODINGS:
        raise where.error(sid, f"country coding must be one of {list(COUNTRY_CODINGS)}, not {coding!r}", "country")
    mapping = {}
    for key, value in (country_raw.get("map") or {}).items():
        mapping[float(key) if isinstance(key, int | float) and not isinstance(key, bool) else str(key)] = str(value)
    if coding == "map" and not mapping:
        raise where.error(sid, "country coding 'map' needs a 'map' of code -> alpha-3", "country")
    weight = spec.get("weight")
    return Study(
        id=sid, title=str(spec.get("title", sid)), files=tuple(str(f) for f in files), year=year,
        country=CountrySpec(str(country_raw["variable"]), coding, mapping),
        weight=None if weight is None else str(weight), notes=str(spec.get("notes", "")),
    )


def load_registry(path: Path) -> Registry:
    """Read and check a registry file; errors name the file and the entry."""
    path = Path(path)
    where = _Where(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise SourceError(f"cannot read the question registry: {exc}", file=path) from exc
    except yaml.YAMLError as exc:
        raise SourceError(f"the question registry is not valid YAML: {exc}", file=path) from exc
    if data.get("format") != REGISTRY_FORMAT:
        raise SourceError(f"expected 'format: {REGISTRY_FORMAT}' at the top of the registry", file=path, field="format")

    wvs_settings, wvs_questions = None, []
    wvs = data.get("wvs")
    if wvs:
        variables = {"wave": "S002VS", "country": "S003", "country_alpha": "COUNTRY_ALPHA", "year": "S020", "weight": "S017"}
        variables.update({k: (None if v is None else str(v)) for k, v in (wvs.get("variables") or {}).items()})
        wvs_settings = WvsSettings(
            variables=variables,
            waves=tuple(int(w) for w in wvs.get("waves", [3, 4, 5, 6, 7])),
            newer_wave=int(wvs.get("newer_wave", 7)),
            invalid_codes=_codes(wvs.get("invalid_codes", [-1, -2, -3, -4, -5]), where, "wvs", "invalid_codes"),
            not_asked_codes=_codes(wvs.get("not_asked_codes", [-4]), where, "wvs", "not_asked_codes"),
        )
        if wvs_settings.newer_wave not in wvs_settings.waves:
            raise where.error("wvs", "newer_wave must be one of the waves read", "newer_wave")
        for spec in wvs.get("questions") or []:
            wvs_questions.append(_question(spec, "WVS", where, wvs_settings.invalid_codes))

    studies, issp_questions = [], []
    issp = data.get("issp")
    if issp:
        for spec in issp.get("studies") or []:
            studies.append(_study(spec, where))
        study_ids = [s.id for s in studies]
        if len(set(study_ids)) != len(study_ids):
            raise where.error("issp.studies", "study ids must be unique", "id")
        for spec in issp.get("questions") or []:
            question = _question(spec, "ISSP", where, ())
            unknown = sorted({s.study for s in question.sources} - set(study_ids))
            if unknown:
                raise where.error(question.id, f"sources name unknown studies {unknown}", "sources")
            issp_questions.append(question)

    ids = [q.id for q in wvs_questions + issp_questions]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise where.error(", ".join(duplicates), "question ids must be unique", "id")
    if wvs_settings:
        columns = [q.variable for q in wvs_questions]
        repeated = sorted({c for c in columns if columns.count(c) > 1})
        if repeated:
            raise where.error(", ".join(repeated), "a WVS variable is registered twice", "variable")
    return Registry(path, wvs_settings, tuple(wvs_questions), tuple(studies), tuple(issp_questions))
