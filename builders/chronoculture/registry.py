"""The question registry: which survey variables become benchmark questions, and how.

The shipped registry is `sources/chronoculture/registry.yaml`; `--registry FILE` replaces
it (a user's curated copy, or one that `--discover` wrote with sources attached). Format::

    format: chronoculture-registry/1
    wvs:
      variables: {wave: S002VS, country: S003, country_alpha: COUNTRY_ALPHA, year: S020, weight: S017}
      waves: [3, 4, 5, 6, 7]          # waves read; others are counted and dropped
      newer_wave: 7                   # the newer period of every WVS pair (paper 3.4)
      invalid_codes: [-1, -2, -3, -4, -5]
      not_asked_codes: [-4]           # a cell whose answers are all these (or empty) was not asked
      codebook: ...                   # the document the variables were read from
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
          #   (the end words are also the labels a labelled CSV export writes for 1 and 10;
          #   low_aliases / high_aliases: other wordings of them)
          # optional: invalid_codes (added to the survey's), values are 1..K unless given
    issp:
      studies:                        # one entry per ISSP data file (module or cumulation)
        - id: ZA2900
          title: ISSP 1996 Role of Government III
          module: Role of Government  # the questions of this module are looked for in the file
          year: 1996                  # module year; cumulations: {variable: V2[, map: {1: 1985}]} or auto
          country: {variable: v3, coding: map, map: {1: AUS, ...}}   # or: auto (found in the file)
          #   coding: iso_numeric | alpha2 | alpha3 | label_alpha2 | label | map  (map entries win)
          weight: v325                # null: every respondent weighs 1; auto: found in the file
          codebook: ...               # document, and what it confirms
          # reunification: {variable: v3, factors: {2: 1.19455, 3: 0.59238}, document: ...}
          #   GESIS's factors for pooling the West and East German samples into one Germany:
          #   each respondent's weight times the factor of its sample code (others x 1)
          # files: ["ZA2900*"]        # optional; default: names starting with the id, then a non-digit
      questions:
        - id: issp_rog_jobs
          module: Role of Government  # topic defaults to the module
          category: ...
          text: ...
          options: [...]
          invalid_codes: [0, 8, 9]    # per variable (can't choose, no answer, not applicable)
          label: "job.*everyone"      # optional: finds the variable by its label in the module's files
          sources:                    # pinned: study id -> variable (or {variable, codes, invalid_codes})
            ZA2900: v36
            ZA1950: {variable: v49}
          absent: [ZA1490]            # optional: studies whose file lacks the item (or asks it on another
                                      # scale), as a public document of the whole file shows; never looked for there
          evidence: "..."             # optional: why the question qualifies (paper 3.2) and what document shows it

`codes` in a source override replaces each option's codes (a list aligned with the
options). Every code of an option must be a value label of the variable in .sav/.dta
files (checked at build time). Codes that appear in the data but are neither an option
nor invalid are treated as invalid answers, counted and reported per question.

A question with a `label` pattern and no pinned source for a study of its module is
looked for in that study's file: the variable whose label matches the pattern (case-
insensitive regular expression) and whose value labels carry the question's options
(locate.py). The build reports every variable it found that way, and `--discover`
writes them into a copy of the registry as pinned sources.

`candidates:` lists under `wvs` and `issp` hold `--discover` drafts; the builder ignores
them (it says how many). A draft moved into `questions` with `draft: true` still set is
refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from histbench.core.errors import SourceError
from histbench.core.readers import read_text_utf8

REGISTRY_FORMAT = "chronoculture-registry/1"
TOPIC_CATEGORIES: tuple[str, ...] = (
    "Government, democracy, and institutions",
    "Religion and national identity",
    "Social inequality, work, and economic values",
    "Family, health, and social attitudes",
    "Environment, science, and technology",
)
COUNTRY_CODINGS = ("iso_numeric", "alpha2", "alpha3", "label_alpha2", "label", "map")
AUTO = "auto"


@dataclass(frozen=True)
class Option:
    label: str
    codes: tuple[float, ...]
    value: float
    aliases: tuple[str, ...] = ()  # other wordings of the label (CSV exports, value labels of other files)


@dataclass(frozen=True)
class SourceRef:
    """Where one ISSP study holds a question; codes/invalid override the question's.

    `located` says how the variable was found: None for a source pinned in the registry,
    else a short description ("label", "label, abbreviated value labels, reversed") of a variable found
    in the file by the question's label pattern.
    """

    study: str
    variable: str
    codes: tuple[tuple[float, ...], ...] | None = None
    invalid_codes: tuple[float, ...] | None = None
    located: str | None = None


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
    sources: tuple[SourceRef, ...] = ()  # ISSP, pinned
    label: str | None = None  # ISSP: pattern on variable labels that locates the variable
    is_scale: bool = False  # options written as `scale: {from, to}`
    absent: tuple[str, ...] = ()  # ISSP studies whose file a public document shows without the item
    evidence: str = ""  # why the question qualifies (paper 3.2) and the document that shows it

    @property
    def labels(self) -> list[str]:
        return [o.label for o in self.options]

    @property
    def values(self) -> list[float]:
        return [o.value for o in self.options]

    @property
    def label_pattern(self) -> re.Pattern | None:
        return re.compile(self.label, re.IGNORECASE) if self.label else None

    def codes_for(self, source: SourceRef | None = None) -> list[tuple[float, ...]]:
        if source is not None and source.codes is not None:
            return list(source.codes)
        return [o.codes for o in self.options]

    def invalid_for(self, source: SourceRef | None = None) -> tuple[float, ...]:
        if source is not None and source.invalid_codes is not None:
            return source.invalid_codes
        return self.invalid_codes

    def source_for(self, study: str) -> SourceRef | None:
        return next((s for s in self.sources if s.study == study), None)


@dataclass(frozen=True)
class CountrySpec:
    """`variable` None with coding "auto": the country variable is found in the file."""

    variable: str | None
    coding: str
    map: dict = field(default_factory=dict)

    @property
    def auto(self) -> bool:
        return self.coding == AUTO


@dataclass(frozen=True)
class YearSpec:
    fixed: int | None = None
    variable: str | None = None
    map: dict = field(default_factory=dict)
    auto: bool = False  # cumulation: the year (or study-number) variable is found in the file


@dataclass(frozen=True)
class Reunification:
    """GESIS's weighting factors for analysing West and East Germany as one country: the weight
    of a respondent whose `variable` holds one of the codes is multiplied by its factor."""

    variable: str
    factors: dict  # sample code (float, or upper-case text) -> factor
    document: str


@dataclass(frozen=True)
class Study:
    id: str
    title: str
    files: tuple[str, ...]
    year: YearSpec
    country: CountrySpec
    weight: str | None
    notes: str = ""
    module: str | None = None
    codebook: str = ""
    weight_auto: bool = False
    reunification: Reunification | None = None

    def matches(self, path: Path) -> bool:
        from fnmatch import fnmatch

        name = path.name.lower()
        if self.files:
            return any(fnmatch(name, pattern.lower()) for pattern in self.files)
        # GESIS names: ZA4700.dta, ZA4700_v1-0-0.dta, ZA7600_v3-0-0.sav (never ZA47001...)
        return re.match(re.escape(self.id.lower()) + r"(?!\d)", name) is not None


@dataclass(frozen=True)
class WvsSettings:
    variables: dict[str, str]
    waves: tuple[int, ...]
    newer_wave: int
    invalid_codes: tuple[float, ...]
    not_asked_codes: tuple[float, ...]
    codebook: str = ""


@dataclass(frozen=True)
class Registry:
    path: Path
    wvs: WvsSettings | None
    wvs_questions: tuple[Question, ...]
    studies: tuple[Study, ...]
    issp_questions: tuple[Question, ...]
    candidates: int = 0  # --discover drafts kept under `candidates:` (ignored by the build)

    @property
    def questions(self) -> tuple[Question, ...]:
        return self.wvs_questions + self.issp_questions

    def study_for(self, path: Path) -> Study:
        found = [s for s in self.studies if s.matches(path)]
        if not found:
            known = ", ".join(s.id for s in self.studies) or "none"
            raise SourceError(
                "no ISSP study of the registry matches this file name (GESIS names start with the study number, "
                "e.g. ZA4700_v1-0-0.dta); add a study entry with its country, weight and year variables to the "
                f"registry (draft one with --discover). Known: {known}",
                file=path,
            )
        if len(found) > 1:
            raise SourceError(
                f"several registry studies match this file name: {', '.join(s.id for s in found)}", file=path
            )
        return found[0]

    def questions_of(self, study: Study) -> list[tuple[Question, SourceRef | None]]:
        """(question, pinned source) for every question the study's file may hold: pinned sources
        first; then (question, None) for the questions of the study's module that have a label
        pattern and no pinned source for this study (to be located in the file)."""
        out = []
        for question in self.issp_questions:
            pinned = question.source_for(study.id)
            if pinned is not None:
                out.append((question, pinned))
            elif (question.label and study.module and question.topic == study.module
                  and study.id not in question.absent):
                out.append((question, None))
        return out


class _Where:
    """Builds errors that name the registry file and the entry being read."""

    def __init__(self, path: Path):
        self.path = path

    def error(self, entry: str, message: str, field_name: str | None = None) -> SourceError:
        return SourceError(f"registry entry {entry}: {message}", file=self.path, field=field_name)


def _mapping(value, where: _Where, entry: str, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise where.error(entry, f"{what} must be a mapping (key: value lines), got {type(value).__name__} {value!r:.60}")
    return value


def _list(value, where: _Where, entry: str, what: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error(entry, f"{what} must be a list (lines starting with '-'), got {type(value).__name__} {value!r:.60}")
    return value


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
            label, aliases = str(code), ()
            for end, at in (("low", low), ("high", high)):
                if code == at and scale.get(end):
                    # the end's words alone are how a labelled export writes that point
                    # ("Completely dissatisfied" for 1); `low_aliases` / `high_aliases` add other wordings
                    label = f"{code} ({scale[end]})"
                    more = scale.get(f"{end}_aliases") or []
                    if isinstance(more, str):
                        more = [more]
                    if not isinstance(more, list):
                        raise where.error(entry, f"scale {end}_aliases must be a list of labels", "scale")
                    aliases = (str(scale[end]), *(str(a) for a in more))
            options.append(Option(label, (float(code),), float(code - low + 1), aliases))
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
        aliases = item.get("aliases") or []
        if isinstance(aliases, str):
            aliases = [aliases]
        if not isinstance(aliases, list):
            raise where.error(entry, f"option {item['label']!r}: aliases must be a list of labels", "options")
        options.append(Option(str(item["label"]), codes, float(value), tuple(str(a) for a in aliases)))
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


def _question(spec, index: int, survey: str, where: _Where, base_invalid: tuple[float, ...]) -> Question:
    section = "wvs" if survey == "WVS" else "issp"
    if not isinstance(spec, dict):
        raise where.error(f"{section}.questions[{index + 1}]",
                          f"each question must be a mapping (id, text, options, ...), got {type(spec).__name__} "
                          f"{spec!r:.60}")
    qid = str(spec.get("id", "")).strip()
    if not qid:
        raise where.error(f"{section}.questions[{index + 1}]", "every question needs an 'id'", "id")
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
    label = spec.get("label")
    if label is not None:
        if survey == "WVS":
            raise where.error(qid, "'label' (find the variable by its label) is for ISSP questions; "
                                   "WVS questions name their time-series 'variable'", "label")
        try:
            re.compile(str(label), re.IGNORECASE)
        except re.error as exc:
            raise where.error(qid, f"'label' is not a valid regular expression ({exc})", "label") from exc
        label = str(label)
    if survey == "WVS":
        variable = spec.get("variable")
        if not variable:
            raise where.error(qid, "a WVS question needs its time-series 'variable'", "variable")
        variable = str(variable)
    else:
        for study, ref in _mapping(spec.get("sources"), where, qid, "'sources'").items():
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
    absent = tuple(str(a) for a in _list(spec.get("absent"), where, qid, "'absent'"))
    if absent and survey == "WVS":
        raise where.error(qid, "'absent' names ISSP studies; a WVS question is absent where its cells say so", "absent")
    both = sorted(set(absent) & {s.study for s in sources})
    if both:
        raise where.error(qid, f"studies {both} are both a source and absent", "absent")
    question = Question(
        id=qid, survey=survey, topic=str(topic), category=str(spec.get("category") or ""),
        text=str(spec.get("text") or ""), options=options, invalid_codes=invalid,
        variable=variable, sources=tuple(sources), label=label, is_scale="scale" in spec,
        absent=absent, evidence=str(spec.get("evidence") or ""),
    )
    _check_question(question, where)
    return question


def _study(spec, index: int, where: _Where) -> Study:
    if not isinstance(spec, dict):
        raise where.error(f"issp.studies[{index + 1}]", f"each study must be a mapping (id, year, country, weight), "
                                                         f"got {type(spec).__name__} {spec!r:.60}")
    sid = str(spec.get("id", "")).strip()
    if not sid:
        raise where.error(f"issp.studies[{index + 1}]", "every ISSP study needs an 'id'", "id")
    files = spec.get("files") or []
    if isinstance(files, str):
        files = [files]
    year_raw = spec.get("year")
    if isinstance(year_raw, int) and not isinstance(year_raw, bool):
        year = YearSpec(fixed=year_raw)
    elif year_raw == AUTO:
        year = YearSpec(auto=True)
    elif isinstance(year_raw, dict) and year_raw.get("variable"):
        try:
            mapping = {float(k): int(v) for k, v in _mapping(year_raw.get("map"), where, sid, "year map").items()}
        except (TypeError, ValueError) as exc:
            raise where.error(sid, "year map entries must be code: year numbers", "year") from exc
        year = YearSpec(variable=str(year_raw["variable"]), map=mapping)
    else:
        raise where.error(sid, "needs 'year': the module year, {variable: NAME[, map: {code: year}]} or auto", "year")
    country_raw = spec.get("country")
    if country_raw == AUTO:
        country = CountrySpec(None, AUTO)
    else:
        if isinstance(country_raw, str):
            country_raw = {"variable": country_raw, "coding": "iso_numeric"}
        if not isinstance(country_raw, dict) or not country_raw.get("variable"):
            raise where.error(sid, "needs 'country': {variable: NAME, coding: ...} or auto", "country")
        coding = str(country_raw.get("coding", "iso_numeric"))
        if coding not in COUNTRY_CODINGS:
            raise where.error(sid, f"country coding must be one of {list(COUNTRY_CODINGS)}, not {coding!r}", "country")
        mapping = {}
        for key, value in _mapping(country_raw.get("map"), where, sid, "country map").items():
            mapping[float(key) if isinstance(key, int | float) and not isinstance(key, bool) else str(key).upper()] = str(value)
        if coding == "map" and not mapping:
            raise where.error(sid, "country coding 'map' needs a 'map' of code -> alpha-3", "country")
        country = CountrySpec(str(country_raw["variable"]), coding, mapping)
    weight = spec.get("weight")
    weight_auto = weight == AUTO
    reunification = None
    if spec.get("reunification") is not None:
        raw = _mapping(spec.get("reunification"), where, sid, "'reunification'")
        factors = {}
        for key, value in _mapping(raw.get("factors"), where, sid, "reunification factors").items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise where.error(sid, f"reunification factor for {key!r} must be a positive number", "reunification")
            factors[float(key) if isinstance(key, int | float) and not isinstance(key, bool) else str(key).upper()] = \
                float(value)
        if not raw.get("variable") or len(factors) < 2 or not str(raw.get("document") or "").strip():
            raise where.error(sid, "reunification needs a variable, the factors of the West and East samples "
                                   "({code: factor}) and the document that gives them", "reunification")
        if weight is None or weight_auto:
            raise where.error(sid, "reunification factors multiply the study's weight: name its weight variable",
                              "reunification")
        reunification = Reunification(str(raw["variable"]), factors, str(raw["document"]))
    return Study(
        id=sid, title=str(spec.get("title", sid)), files=tuple(str(f) for f in files), year=year,
        country=country, weight=None if weight is None or weight_auto else str(weight),
        notes=str(spec.get("notes", "")), module=str(spec["module"]) if spec.get("module") else None,
        codebook=str(spec.get("codebook", "")), weight_auto=weight_auto, reunification=reunification,
    )


def load_registry(path: Path) -> Registry:
    """Read and check a registry file; errors name the file and the entry."""
    path = Path(path)
    where = _Where(path)
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: the same data, faster
        data = yaml.load(read_text_utf8(path), Loader=loader) or {}
    except yaml.YAMLError as exc:
        raise SourceError(f"the question registry is not valid YAML: {exc}", file=path) from exc
    if not isinstance(data, dict):
        raise SourceError(f"the question registry must be a mapping with 'format', 'wvs' and 'issp', "
                          f"got {type(data).__name__}", file=path)
    if data.get("format") != REGISTRY_FORMAT:
        raise SourceError(f"expected 'format: {REGISTRY_FORMAT}' at the top of the registry", file=path, field="format")

    wvs_settings, wvs_questions = None, []
    candidates = 0
    wvs = _mapping(data.get("wvs"), where, "wvs", "'wvs'")
    if wvs:
        variables = {"wave": "S002VS", "country": "S003", "country_alpha": "COUNTRY_ALPHA", "year": "S020", "weight": "S017"}
        variables.update({k: (None if v is None else str(v))
                          for k, v in _mapping(wvs.get("variables"), where, "wvs", "'variables'").items()})
        try:
            waves = tuple(int(w) for w in _list(wvs.get("waves", [3, 4, 5, 6, 7]), where, "wvs", "'waves'"))
            newer_wave = int(wvs.get("newer_wave", 7))
        except (TypeError, ValueError) as exc:
            raise where.error("wvs", "waves and newer_wave must be wave numbers", "waves") from exc
        wvs_settings = WvsSettings(
            variables=variables,
            waves=waves,
            newer_wave=newer_wave,
            invalid_codes=_codes(wvs.get("invalid_codes", [-1, -2, -3, -4, -5]), where, "wvs", "invalid_codes"),
            not_asked_codes=_codes(wvs.get("not_asked_codes", [-4]), where, "wvs", "not_asked_codes"),
            codebook=str(wvs.get("codebook", "")),
        )
        if wvs_settings.newer_wave not in wvs_settings.waves:
            raise where.error("wvs", "newer_wave must be one of the waves read", "newer_wave")
        for index, spec in enumerate(_list(wvs.get("questions"), where, "wvs", "'questions'")):
            wvs_questions.append(_question(spec, index, "WVS", where, wvs_settings.invalid_codes))
        candidates += len(_list(wvs.get("candidates"), where, "wvs", "'candidates'"))

    studies, issp_questions = [], []
    issp = _mapping(data.get("issp"), where, "issp", "'issp'")
    if issp:
        for index, spec in enumerate(_list(issp.get("studies"), where, "issp", "'studies'")):
            studies.append(_study(spec, index, where))
        study_ids = [s.id for s in studies]
        if len(set(study_ids)) != len(study_ids):
            raise where.error("issp.studies", "study ids must be unique", "id")
        for index, spec in enumerate(_list(issp.get("questions"), where, "issp", "'questions'")):
            question = _question(spec, index, "ISSP", where, ())
            unknown = sorted(({s.study for s in question.sources} | set(question.absent)) - set(study_ids))
            if unknown:
                raise where.error(question.id, f"sources name unknown studies {unknown}", "sources")
            issp_questions.append(question)
        candidates += len(_list(issp.get("candidates"), where, "issp", "'candidates'"))

    ids = [q.id for q in wvs_questions + issp_questions]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise where.error(", ".join(duplicates), "question ids must be unique", "id")
    if wvs_settings:
        columns = [q.variable for q in wvs_questions]
        repeated = sorted({c for c in columns if columns.count(c) > 1})
        if repeated:
            raise where.error(", ".join(repeated), "a WVS variable is registered twice", "variable")
    pins: dict[tuple[str, str], str] = {}
    for question in issp_questions:  # one variable of a study holds one question (a --discover copy included)
        for source in question.sources:
            key = (source.study, source.variable.lower())
            if key in pins:
                raise where.error(f"{pins[key]}, {question.id}", f"both pin variable {source.variable} of study "
                                  f"{source.study}; one variable holds one question", "sources")
            pins[key] = question.id
    return Registry(path, wvs_settings, tuple(wvs_questions), tuple(studies), tuple(issp_questions), candidates)
