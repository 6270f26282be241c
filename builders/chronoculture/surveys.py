"""Survey files -> respondents grouped by country and period, and the question columns.

WVS time series (one file): wave `S002VS` (only the registry's waves, 3-7, are kept),
country `S003` (ISO numeric; `COUNTRY_ALPHA` when S003 is absent), survey year `S020`,
weight `S017`. A group is a country x wave; its year is the most frequent S020 among its
respondents (ties: the earliest), so a fieldwork period spanning two calendar years
stays one sample (the summary lists such country-waves).

ISSP (one or more files): each file is identified by a registry study (its GESIS study
number starts the file name) that names its country, weight and year variables, or says
`auto` and lets locate.py find them. A group is a country x year: the module year for a
module file, the year variable for a cumulative file. Questions pinned to a variable of
the study are read from it; the other questions of the study's module are looked for by
their label pattern (locate.py), and what was found or not is reported.

Respondents outside every group are counted per reason (wave outside 3-7, country code
not in the country table, no year); respondents with a missing, zero or negative weight
are kept in their group but cannot contribute to a distribution (counted per file). A
file in which no kept respondent has a usable weight stops the build, naming the file
and the weight variable.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from histbench.core.errors import SourceError

from .countries import Country, CountryTable
from .gold import GroupIndex, weight_status
from .locate import (
    answer_codes,
    is_non_answer,
    locate_country,
    locate_questions,
    locate_weight,
    locate_year,
    normal,
)
from .readers import FileMeta, read_columns
from .registry import CountrySpec, Question, Registry, SourceRef, Study

# Labels a CSV export writes for the WVS's negative codes (time-series value labels).
WVS_MISSING_LABELS = {
    "Don't know": -1, "Dont know": -1, "DK": -1, "No answer": -2, "NA": -2, "Not applicable": -3,
    "Not asked": -4, "Not asked in survey": -4, "Not asked in this country": -4, "Missing": -5,
    "Missing; Unknown": -5, "Missing: Other": -5, "Unknown": -5,
}


@dataclass
class FileReport:
    """What one input file contributed and lost (goes into the build summary)."""

    file: str
    survey: str
    study: str | None = None
    respondents: int = 0
    excluded: dict[str, dict] = field(default_factory=dict)  # reason -> {code or detail: respondents}
    weights: dict[str, int] = field(default_factory=dict)  # missing / zero / negative
    multi_year_groups: list[str] = field(default_factory=list)
    value_label_check: bool = True
    missing_questions: list[str] = field(default_factory=list)
    located: dict[str, str] = field(default_factory=dict)  # question id -> "variable (how)"
    located_labels: dict[str, str] = field(default_factory=dict)  # question id -> the found variable's label
    pinned: dict[str, str] = field(default_factory=dict)  # question id -> variable pinned in the registry
    not_located: dict[str, str] = field(default_factory=dict)  # question id -> reason
    csv_text_answers: dict[str, int] = field(default_factory=dict)  # variable -> answers mapped from labels
    variables: dict[str, str] = field(default_factory=dict)  # role -> variable (and how it was found)
    reunification: dict | None = None  # GESIS's West/East German factors applied to the weights
    german_samples_without_factors: list[str] = field(default_factory=list)  # pooled, no documented factors

    def to_json(self) -> dict:
        return {
            "file": self.file, "survey": self.survey, "study": self.study, "respondents": self.respondents,
            "excluded_respondents": self.excluded, "unusable_weights": self.weights,
            "groups_spanning_several_years": self.multi_year_groups,
            "value_labels_checked": self.value_label_check, "registry_variables_missing": self.missing_questions,
            "variables": self.variables, "questions_located_by_label": self.located,
            "questions_not_found": self.not_located, "csv_answers_mapped_from_labels": self.csv_text_answers,
            "variable_labels_of_questions_located": self.located_labels, "questions_pinned": self.pinned,
            "reunification_factors": self.reunification,
            "german_samples_pooled_without_factors": self.german_samples_without_factors,
        }


@dataclass
class SurveyFile:
    meta: FileMeta
    report: FileReport
    index: GroupIndex
    columns: dict  # variable -> answers (np.ndarray)
    questions: list[tuple[Question, SourceRef | None]]
    label_scales: dict = field(default_factory=dict)  # question id -> labelled answers outside its options


def _label(meta: FileMeta, column: str, code) -> str:
    label = meta.labels(column).get(float(code)) if _is_number(code) else None
    shown = _shown(code)
    return f"{shown} ({label})" if label else shown


def _printable(text: str, limit: int = 60) -> str:
    """A file's own text for a console line: one line, no control characters, at most `limit` characters."""
    import re

    shown = re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", "?", " ".join(str(text).split()))
    return shown if len(shown) <= limit else shown[:limit] + "..."


def _is_number(value) -> bool:
    try:
        float(value)
        return True
    except (TypeError, ValueError):
        return False


def _shown(code) -> str:
    if _is_number(code):
        value = float(code)
        return str(int(value)) if np.isfinite(value) and value.is_integer() else str(value)
    return str(code)


def check_value_labels(meta: FileMeta, question: Question, source: SourceRef | None, variable: str) -> None:
    """Every registry code of the question must be a value label of the variable (numeric scales,
    `scale: {from, to}`: their two ends; files often label only those)."""
    if not meta.has_value_labels:
        return
    labels = meta.labels(variable)
    if not labels:
        raise SourceError(
            f"variable has no value labels, so the registry codes of question {question.id} cannot be checked "
            "(is this the variable the registry means?)", file=meta.path, field=variable,
        )
    pairs = list(zip(question.options, question.codes_for(source), strict=True))
    if question.is_scale:
        pairs = [pairs[0], pairs[-1]]
    for option, codes in pairs:
        absent = [c for c in codes if c not in labels]
        if absent:
            known = ", ".join(f"{_shown(k)}={v!r}" for k, v in sorted(labels.items(), key=lambda kv: str(kv[0]))[:12])
            raise SourceError(
                f"registry code {_shown(absent[0])} (option {option.label!r} of question {question.id}) "
                f"is not among the variable's value labels ({known})", file=meta.path, field=variable,
            )


def labelled_extras(meta: FileMeta, question: Question, source: SourceRef | None, variable: str) -> tuple | None:
    """The labelled answer codes of a variable that are neither options nor invalid, as normalised
    labels (paper 3.2: a file whose scale carries more answers than another's is a different scale).
    None when the file has no value labels (CSV)."""
    if not meta.has_value_labels:
        return None
    option_codes = {c for group in question.codes_for(source) for c in group}
    invalid = set(question.invalid_for(source))
    extras = sorted(normal(label) for code, label in answer_codes(meta.labels(variable)).items()
                    if code not in option_codes and code not in invalid)
    return tuple(extras)


def _map_codes(values: np.ndarray, lookup) -> tuple[np.ndarray, dict]:
    """Map each distinct value once; returns (alpha3 per respondent or '', {value: n unmapped}).

    The array is factorised as it is (a pandas Series of text would first be copied into
    Arrow strings)."""
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(values), use_na_sentinel=True)
    found = [lookup(u) for u in uniques.tolist()]
    mapped = np.array([c.alpha3 if c is not None else "" for c in found] + [""], dtype=object)
    alpha = mapped[codes]  # code -1 (missing) -> the last entry, ""
    unmapped = Counter()
    bad = alpha == ""
    if bad.any():
        for value, count in pd.Series(np.asarray(values)[bad]).value_counts(dropna=False).items():
            unmapped[value] += int(count)
    return alpha, dict(unmapped)


def _group_index(alpha: np.ndarray, period: np.ndarray, keep: np.ndarray, weight: np.ndarray,
                 countries: CountryTable, key_of) -> tuple[GroupIndex, np.ndarray]:
    """Groups of (alpha3, period) over kept rows, in sorted order; returns the index and group ids."""
    import pandas as pd

    country_codes, country_names = pd.factorize(alpha[keep], sort=True)
    period_codes, period_values = pd.factorize(np.asarray(period)[keep], sort=True)
    combined = country_codes.astype(np.int64) * len(period_values) + period_codes
    used, dense = np.unique(combined, return_inverse=True)  # sorted by (country, period)
    group = np.full(len(alpha), -1, dtype=np.int64)
    group[keep] = dense
    weight_ok, _ = weight_status(weight)
    names, periods = country_names.tolist(), period_values.tolist()
    keys = [key_of(countries.by_alpha3[names[c // len(periods)]], periods[c % len(periods)]) for c in used.tolist()]
    return GroupIndex(group, keys, np.asarray(weight, dtype=np.float64), weight_ok), group


def _present_questions(meta: FileMeta, entries, report: FileReport) -> list:
    """The (question, source) entries whose variable is in the file, with their value labels
    checked; the variables of the others go to `report.missing_questions`."""
    present = []
    for question, source in entries:
        variable = question.variable if source is None else source.variable
        if not meta.has(variable):
            report.missing_questions.append(variable)
            continue
        check_value_labels(meta, question, source, variable)
        present.append((question, source))
    return present


def _require_usable_weights(meta: FileMeta, index: GroupIndex, variable: str | None, report: FileReport) -> None:
    """A file whose kept respondents all lack a usable weight can give no gold distribution."""
    kept = index.group >= 0
    if variable is None or not kept.any() or index.weight_ok[kept].any():
        return
    counts = report.weights
    raise SourceError(
        f"no respondent has a usable weight: all {int(kept.sum()):,} respondents of the kept country-periods have a "
        f"missing ({counts.get('missing', 0):,}), zero ({counts.get('zero', 0):,}) or negative "
        f"({counts.get('negative', 0):,}) weight, so no gold distribution can be computed (paper A.2 weights every "
        "answer); check the weight variable or the export", file=meta.path, field=variable,
    )


def _csv_labels(question: Question, source: SourceRef | None, missing: dict) -> dict:
    """{label: code} for a CSV export that holds answers as labels: the registry's options
    (and their aliases), then the survey's non-answer labels (an option's label wins)."""
    table = {}
    for option, codes in zip(question.options, question.codes_for(source), strict=True):
        for text in (option.label, *option.aliases):
            table[text] = codes[0]
    return {**table, **{k: v for k, v in missing.items() if k not in table}}


# A CSV export's non-answer labels -> the ISSP codes for them (up to 2009, then from 2010 on)
ISSP_MISSING_LABELS = {
    "Can't choose": (8, -8), "Cant choose": (8, -8), "Can't choose, don't know": (8, -8), "Don't know": (8, -8),
    "NA": (9, -9), "No answer": (9, -9), "NAP": (0, -4), "Not applicable": (0, -4), "Refused": (9, -7),
}


def _issp_missing_labels(question: Question, source: SourceRef) -> dict:
    """Non-answer labels mapped to the question's invalid code for them (its lowest otherwise)."""
    invalid = set(question.invalid_for(source))
    if not invalid:
        return {}
    out = {}
    for label, codes in ISSP_MISSING_LABELS.items():
        known = [c for c in codes if float(c) in invalid]
        out[label] = known[0] if known else min(invalid)
    return out


def load_wvs(meta: FileMeta, registry: Registry, countries: CountryTable, allow_missing_questions: bool) -> SurveyFile:
    settings = registry.wvs
    if settings is None or not registry.wvs_questions:
        raise SourceError("the registry has no WVS questions, but a WVS file was given", file=registry.path)
    v = settings.variables
    report = FileReport(meta.path.name, "WVS", value_label_check=meta.has_value_labels)
    country_col = v.get("country") if meta.has(v.get("country")) else None
    alpha_col = v.get("country_alpha") if meta.has(v.get("country_alpha")) else None
    if country_col is None and alpha_col is None:
        meta.require([v.get("country") or "S003"], f"country: {v.get('country')} (ISO numeric) or {v.get('country_alpha')}")
    meta.require([v["wave"], v["year"], v["weight"]], "WVS wave, survey year and weight")

    questions = _present_questions(meta, [(question, None) for question in registry.wvs_questions], report)
    if report.missing_questions and not allow_missing_questions:
        raise SourceError(
            f"{len(report.missing_questions)} registry variable(s) are not in this file: "
            f"{', '.join(report.missing_questions[:15])}{' ...' if len(report.missing_questions) > 15 else ''}; "
            "use a registry that matches your release (--registry) or --allow-missing-questions to skip them",
            file=meta.path, field=report.missing_questions[0],
        )

    text = (alpha_col,) if country_col is None else ()
    needed = [v["wave"], v["year"], v["weight"], country_col or alpha_col] + [q.variable for q, _ in questions]
    csv_labels = {q.variable: _csv_labels(q, None, WVS_MISSING_LABELS) for q, _ in questions}
    if country_col is not None:
        csv_labels[country_col] = countries.numeric_by_text()
    frame = read_columns(meta, needed, text_columns=tuple(c for c in text if c), csv_labels=csv_labels,
                         id_columns=(v["wave"], v["year"], country_col) if country_col else (v["wave"], v["year"]),
                         labelled_columns=report.csv_text_answers)
    report.respondents = len(frame[v["wave"]])
    report.variables = {"wave": v["wave"], "year": v["year"], "weight": v["weight"],
                        "country": country_col or f"{alpha_col} (alpha-3)"}

    wave = frame[v["wave"]]
    in_waves = np.isin(wave, settings.waves)
    outside = Counter(_shown(w) if np.isfinite(w) else "missing" for w in wave[~in_waves])
    if outside:
        report.excluded["wave_outside_range"] = dict(sorted(outside.items()))

    if country_col is not None:
        alpha, unmapped = _map_codes(frame[country_col], countries.from_numeric)
    else:
        alpha, unmapped = _map_codes(frame[alpha_col], lambda c: countries.from_text(c, "alpha3"))
    unknown_in_waves = Counter()
    if unmapped:
        # count only respondents of the kept waves (the others are already counted)
        bad = (alpha == "") & in_waves
        codes = frame[country_col or alpha_col][bad]
        for code, n in Counter(_shown(c) if _is_number(c) else str(c) for c in codes).items():
            name = _label(meta, country_col, code) if country_col and _is_number(code) else code
            unknown_in_waves[name] += n
    if unknown_in_waves:
        report.excluded["country_not_in_table"] = dict(sorted(unknown_in_waves.items()))

    year = frame[v["year"]]
    keep = in_waves & (alpha != "")
    index, group = _group_index(alpha, wave, keep, frame[v["weight"]], countries,
                                lambda c, w: (c, None, int(w)))
    # year per country-wave: most frequent S020 (ties: the earliest); groups without any year are dropped
    import pandas as pd

    has_year = (group >= 0) & np.isfinite(year)
    tally = pd.DataFrame({"g": group[has_year], "y": year[has_year]}).value_counts().reset_index(name="n")
    tally = tally.sort_values(["g", "n", "y"], ascending=[True, False, True], kind="mergesort")
    chosen = tally.drop_duplicates("g").set_index("g")["y"].to_dict()
    spans = tally.groupby("g")["y"].agg(lambda s: sorted(int(x) for x in s)).to_dict()
    keys = []
    drop_groups = []
    for g, (country, _, w) in enumerate(index.keys):
        if g not in chosen:
            drop_groups.append(g)
            keys.append((country, None, w))
            continue
        keys.append((country, int(chosen[g]), w))
        if len(spans[g]) > 1:
            report.multi_year_groups.append(
                f"{country.alpha3} wave {w}: years {', '.join(map(str, spans[g]))} -> {int(chosen[g])}"
            )
    if drop_groups:
        dropped = np.isin(group, drop_groups)
        report.excluded["missing_year"] = {"respondents": int(dropped.sum())}
        index.group[dropped] = -1
    index.keys = keys
    _, report.weights = weight_status(index.weight[index.group >= 0])
    _require_usable_weights(meta, index, v["weight"], report)
    columns = {q.variable: frame[q.variable] for q, _ in questions}
    return SurveyFile(meta, report, index, columns, questions)


def _country_lookup(spec: CountrySpec, meta: FileMeta, countries: CountryTable):
    labels = meta.labels(spec.variable)

    def lookup(code) -> Country | None:
        if code is None or (isinstance(code, float) and np.isnan(code)):
            return None
        key = float(code) if _is_number(code) else str(code).strip().upper()
        if key in spec.map:
            return countries.by_alpha3.get(spec.map[key])
        if spec.coding == "map":
            return None
        if spec.coding == "iso_numeric":
            return countries.from_numeric(code)
        if spec.coding in ("alpha2", "alpha3"):
            return countries.from_text(str(code), spec.coding)
        label = labels.get(float(code)) if _is_number(code) else None  # label_alpha2 / label
        if not label:
            return None
        from .locate import country_from_label

        return country_from_label(label, countries)

    return lookup


def _study_variables(meta: FileMeta, study: Study, registry: Registry, countries: CountryTable,
                     report: FileReport) -> tuple[CountrySpec, str | None, object]:
    """(country spec, weight variable, year spec) of a study in this file, found where the
    registry says `auto`."""
    spec = study.country
    if spec.auto:
        found = locate_country(meta, countries, study.id)
        spec = CountrySpec(found.variable, found.coding, found.map)
        how = "alpha-2 sample codes" if found.coding == "alpha2" else "value labels"
        pooled = "; ".join(f"{', '.join(labels)} -> {a}" for a, labels in sorted(found.combined.items()))
        report.variables["country"] = f"{found.variable} (found by name/label; codes read from {how}" + (
            f"; pooled: {pooled}" if pooled else "") + ")"
    else:
        report.variables["country"] = spec.variable
    weight = study.weight
    if study.weight_auto:
        weight = locate_weight(meta)
        report.variables["weight"] = f"{weight} (found by name/label)" if weight else "none found: every respondent weighs 1"
    else:
        report.variables["weight"] = weight or "none (registry): every respondent weighs 1"
    return spec, weight, study.year


def _located_sources(meta: FileMeta, study: Study, entries, report: FileReport) -> list:
    """Pinned entries as given; questions to locate are looked for by label (found -> a SourceRef).

    Two questions pinned to one variable stop the build (one variable holds one question). A
    variable pinned for another question, or found for two questions, is nobody's find: the
    questions concerned are refused (locate.locate_questions), with the candidates and why.
    """
    pinned: dict[str, str] = {}
    for question, source in entries:
        if source is None:
            continue
        column = meta.column(source.variable) or source.variable
        if column in pinned:
            raise SourceError(
                f"registry study {study.id} pins variable {source.variable} for two questions ({pinned[column]} and "
                f"{question.id}); one variable holds one question: correct the registry's sources",
                file=meta.path, field=source.variable,
            )
        pinned[column] = question.id
        report.pinned[question.id] = source.variable
    located, refused = locate_questions(meta, [q for q, s in entries if s is None], exclude=set(pinned))
    out = []
    for question, source in entries:
        if source is not None:
            out.append((question, source))
            continue
        if question.id in refused:
            report.not_located[question.id] = refused[question.id].message
            continue
        found = located[question.id]
        invalid = tuple(sorted(set(found.invalid) | (set(question.invalid_codes) - {c for g in found.codes for c in g})))
        out.append((question, SourceRef(study.id, found.variable, found.codes, invalid, found.how)))
        report.located[question.id] = f"{found.variable} ({found.how})"
        report.located_labels[question.id] = found.label
    return out


def _reunified(weights: np.ndarray, samples: np.ndarray, spec, report: FileReport) -> np.ndarray:
    """The weights times GESIS's reunification factor of each respondent's sample (West and East
    Germany pooled as one country); respondents of other samples keep their weight."""
    import pandas as pd

    keys = pd.Series(samples)
    if keys.dtype.kind in "fiub":
        factor = keys.astype(np.float64).map(spec.factors)
    else:
        factor = keys.astype("string").str.strip().str.upper().map(spec.factors)
    factor = factor.astype(np.float64).fillna(1.0).to_numpy()
    report.variables["weight"] += (f" x GESIS reunification factors by {spec.variable} ("
                                   + ", ".join(f"{_shown(k)}: {v}" for k, v in spec.factors.items())
                                   + f"; {spec.document})")
    applied = {_shown(k): int((keys.astype(np.float64) == k).sum()) if isinstance(k, float)
               else int((keys.astype("string").str.strip().str.upper() == k).sum()) for k in spec.factors}
    report.reunification = {"variable": spec.variable, "factors": {_shown(k): v for k, v in spec.factors.items()},
                            "respondents": applied, "document": spec.document}
    return np.asarray(weights, dtype=np.float64) * factor


def load_issp(meta: FileMeta, registry: Registry, countries: CountryTable, allow_missing_questions: bool) -> SurveyFile:
    study = registry.study_for(meta.path)
    report = FileReport(meta.path.name, "ISSP", study=study.id, value_label_check=meta.has_value_labels)
    entries = registry.questions_of(study)
    if not entries:
        raise SourceError(f"registry study {study.id} has no questions (add '{study.id}: VARIABLE' to their sources, "
                          "or give the study the module of questions that carry a label pattern)", file=meta.path)
    country, weight, year_spec = _study_variables(meta, study, registry, countries, report)
    required = [country.variable] + ([weight] if weight else [])
    if year_spec.variable:
        required.append(year_spec.variable)
    if study.reunification is not None and study.reunification.variable not in required:
        required.append(study.reunification.variable)
    meta.require(required, f"country/weight/year variables of registry study {study.id}")
    entries = _located_sources(meta, study, entries, report)
    questions = _present_questions(meta, entries, report)
    if report.missing_questions and not allow_missing_questions:
        raise SourceError(
            f"registry variable(s) of study {study.id} are not in this file: {', '.join(report.missing_questions)}; "
            "fix the registry or use --allow-missing-questions to skip them",
            file=meta.path, field=report.missing_questions[0],
        )
    year_map = dict(year_spec.map)
    year_variable = year_spec.variable
    if year_spec.auto:
        module_years = {float(s.id[2:]) if s.id[2:].isdigit() else -1.0: s.year.fixed for s in registry.studies
                        if s.module == study.module and s.year.fixed is not None}
        module_years = {k: v for k, v in module_years.items() if k >= 0}
        year_variable, year_map = locate_year(
            meta, lambda c: read_columns(meta, [c])[c], module_years, study.id)
        report.variables["year"] = f"{year_variable} (found: its values are the module's "
        report.variables["year"] += "study numbers)" if year_map else "years)"
        required.append(year_variable)
    elif year_variable:
        report.variables["year"] = year_variable
    else:
        report.variables["year"] = f"{year_spec.fixed} (module year)"
    text = (country.variable,) if country.coding in ("alpha2", "alpha3") else ()
    csv_labels = {s.variable: _csv_labels(q, s, _issp_missing_labels(q, s)) for q, s in questions}
    frame = read_columns(meta, required + [s.variable for _, s in questions], text_columns=text,
                         csv_labels=csv_labels, id_columns=tuple(c for c in (year_variable,) if c) + (
                             () if text else (country.variable,)), labelled_columns=report.csv_text_answers)
    report.respondents = n = len(frame[country.variable])

    lookup, german = _country_lookup(country, meta, countries), []

    def looked_up(code):  # each distinct code once (_map_codes): note the samples read as Germany
        found = lookup(code)
        if found is not None and found.alpha3 == "DEU":
            german.append(_printable(_label(meta, country.variable, code) if _is_number(code) else str(code)))
        return found

    alpha, _ = _map_codes(frame[country.variable], looked_up)
    if len(german) > 1 and study.reunification is None:
        report.german_samples_without_factors = sorted(german)
    bad = alpha == ""
    if bad.any():
        codes = Counter(frame[country.variable][bad])
        report.excluded["country_not_in_table"] = {
            (_label(meta, country.variable, c) if _is_number(c) else str(c) or "empty"): int(k)
            for c, k in sorted(codes.items(), key=lambda kv: str(kv[0]))
        }
    if year_spec.fixed is not None:
        year = np.full(n, float(year_spec.fixed))
    else:
        raw = frame[year_variable]
        year = np.array([year_map.get(float(y), y) for y in raw], dtype=float) if year_map else raw
    no_year = ~np.isfinite(year) & ~bad
    if no_year.any():
        report.excluded["missing_year"] = {"respondents": int(no_year.sum())}
    weights = frame[weight] if weight else np.ones(n)
    if study.reunification is not None:
        weights = _reunified(weights, frame[study.reunification.variable], study.reunification, report)
    keep = ~bad & np.isfinite(year)
    index, _ = _group_index(alpha, np.where(np.isfinite(year), year, -1).astype(np.int64), keep, weights, countries,
                            lambda c, y: (c, int(y), None))
    _, report.weights = weight_status(index.weight[index.group >= 0])
    _require_usable_weights(meta, index, weight, report)
    columns = {s.variable: frame[s.variable] for _, s in questions}
    extras = {q.id: labelled_extras(meta, q, s, s.variable) for q, s in questions}
    return SurveyFile(meta, report, index, columns, questions, label_scales=extras)


__all__ = ["FileReport", "SurveyFile", "check_value_labels", "is_non_answer", "load_issp", "load_wvs"]
