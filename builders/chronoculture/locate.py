"""Finding a study's variables in an ISSP file from its variable and value labels.

The registry pins a variable only where a public document shows it in the real file
(sources/chronoculture/issp_evidence.yaml quotes them). Elsewhere a question carries a
`label` pattern, checked against the real labels that file quotes, and a study may say
`country: auto`, `weight: auto` or `year: auto`; this module finds those variables in the
user's file, and every choice it makes is reported (console, summary, `--discover`):

- **question variables**: the variables whose label matches the question's pattern
  (case-insensitive regular expression; country-specific variables such as `DE_V5` are
  skipped), kept only if their value labels are the question's options: each option
  matched to its own code by text (rapidfuzz token-sort ratio >= 90 on lower-cased,
  punctuation-free labels, so "Agree strongly" matches "Strongly agree"), or the file's K
  answer codes each labelled with its option written shorter ("Def should" for
  "Definitely should be", `abbreviates`); the codes must run in the registry's order or in
  reverse (a reversed scale is read reversed). A numeric scale's two end labels must say
  which end is which (1 "Top" .. 10 "Bottom" is read reversed). Nothing is taken by
  position alone. Exactly one variable must qualify, and one variable holds one question
  (`locate_questions`); otherwise `NotLocated` says which question, which candidates and
  why each was refused, and the question is left out for that file.
- **invalid codes** of a located variable: negative codes and codes whose label says, in its
  first clause, that there is no answer (can't choose, don't know, no answer, not
  applicable, not available such as ZA5400's "NAV (PT)" or "Not available (BG, CL, ...)",
  refused), however long the label; an answer such as "I don't know whether there is a
  God ..." is not one.
- **country**: `C_ALPHAN` (alpha-2 codes with sample suffixes such as DE-W, GB-NIR),
  else the first numeric variable named country / C_SAMPLE / V4 / V3 (or labelled
  "country") whose value labels name countries of the country table for at least 80% of
  its labelled codes. The labels are read as codes ("DE-W-Germany-West", "AU-Australia",
  "aus", "d", "IL_A"), then as names ("Australia", "West Germany"), then as a name and a
  code around a spaced dash ("Northern Ireland - NIRL", ZA2450); combined codes (West and East
  Germany -> DEU; Israel Jews and Arabs -> ISR) and split ones (Great Britain vs Northern
  Ireland) follow the country table's aliases.
- **weight**: a variable named WEIGHT, else the only variable labelled as a weight;
  none: every respondent weighs 1 (said on the console).
- **year** of a cumulation: a variable whose values are all years, or all study
  numbers, of the module's studies in the registry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from histbench.core.errors import SourceError
from histbench.core.extras import require

from .countries import Country, CountryTable
from .readers import FileMeta

NON_ANSWER = re.compile(
    r"don.?t know|can.?t choose|cannot choose|can.?t say|no answer|not applicable|\bnap\b|refus|missing|not asked|"
    r"\bdk\b|\bna\b|\bnav\b|inapplicable|no response|not available|no opinion|undecided",
    re.IGNORECASE,
)
COUNTRY_SPECIFIC = re.compile(r"^[A-Za-z]{2}_")  # DE_V5, ES_DEGR: one country's own variable
LABEL_MATCH = 90.0
COUNTRY_SHARE = 0.8
COUNTRY_NAMES = ("c_alphan", "country", "c_sample", "v4", "v3", "v5")
WEIGHT_LABEL = re.compile(r"weighting|weight(ing)? factor|weight variable|design weight|^\s*weight\s*$", re.I)


def _unidecode(text: str) -> str:
    # imported on first use: building the other benchmarks needs none of this module's libraries
    return require("unidecode", "matching survey variables by their labels").unidecode(text)


def normal(text) -> str:
    """Lower-case ASCII words: accents, punctuation and a leading code ("1.", "01 -") removed."""
    text = _unidecode(str(text)).casefold().replace("&", " and ")
    text = re.sub(r"^\s*-?\d+\s*[.):=-]?\s+", "", text)
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text).split())


# A label says "no answer" when one of its clauses is a non-answer: "Not available (BG, CL, ...)",
# "NAP, other countries", "Can't choose/ Don't know", "8 NA", "Does not apply/NA"; not "I don't know
# whether there is a God ..." nor "Don't know whether ..." (an answer that goes on with what is not known).
NON_ANSWER_FIRST = re.compile(
    r"^(?:don.?t know|do not know|can.?t choose|cannot choose|can.?t say|no answer|not applicable|nap|refused|"
    r"refusal|missing|not asked|dk|na|nav|inapplicable|no response|not available|no opinion|undecided|"
    r"unknown)\b(?!\s+(?:whether|if|what|which|how|where|who|that)\b)",
    re.IGNORECASE,
)


def is_non_answer(code: float, label: str) -> bool:
    """Negative codes, and labels with a clause that says the respondent gave no answer (by what it
    says, however long the label: "Not available (BG, CL, ...)" is a missing-value label)."""
    return code < 0 or _says_no_answer(str(label))


@lru_cache(maxsize=8192)
def _says_no_answer(label: str) -> bool:
    # once per distinct label: a build asks about the same few scales' labels in every file
    text = (label if label.isascii() else _unidecode(label)).strip()
    text = re.sub(r"^\s*-?\d+\s*[.):=-]?\s+", "", text)  # a leading code: "8 Can't choose", "-9. NA"
    clauses = (c.strip(" '\"*-.") for c in re.split(r"[,;:/()\[\]{}]", text))
    return any(NON_ANSWER_FIRST.match(c) for c in clauses if c)


def _numeric_codes(labels: dict) -> dict[float, str]:
    return {float(c): str(v) for c, v in labels.items() if isinstance(c, int | float) and not isinstance(c, bool)}


def answer_codes(labels: dict) -> dict[float, str]:
    """The labelled codes that are answers (not negative, not a non-answer label)."""
    return {c: v for c, v in _numeric_codes(labels).items() if not is_non_answer(c, v)}


@dataclass(frozen=True)
class Located:
    variable: str
    codes: tuple[tuple[float, ...], ...]
    invalid: tuple[float, ...]
    how: str  # "label", "label, abbreviated value labels", "label, numeric scale" (", reversed")
    label: str = ""  # the variable's label in the file


class NotLocated(SourceError):
    """The locator's refusal: no variable of the file is taken for a question, and the one line
    says which question, which variables its label pattern found and why each was refused."""

    def __init__(self, question_id: str, message: str, *, file=None, candidates: dict | None = None) -> None:
        self.question_id = question_id
        self.candidates = dict(candidates or {})  # variable -> why it was refused
        super().__init__(f"question {question_id}: {message}", file=file)


# Abbreviations the GESIS value labels use that are not the first letters of the word
# (a first-letters abbreviation, "Def should" for "Definitely should be", needs no entry).
ABBREVIATIONS = {"govt": "government", "gvt": "government", "gov": "government", "shld": "should",
                 "v": "very", "nt": "not", "agr": "agree", "disagr": "disagree",
                 "str": "strongly", "imp": "important", "impt": "important", "neith": "neither"}
FILLER = frozenset({"a", "an", "the"})


def _word_fits(short: str, word: str) -> bool:
    return short == word or ABBREVIATIONS.get(short) == word or (len(short) >= 2 and word.startswith(short))


def abbreviates(text: str, target: str) -> bool:
    """True when the (normalised) value label `text` is `target` written shorter: each of its words,
    in order, is a word of the target or the start of one ("Prob not" for "Probably should not be",
    "Not imp at all" for "Not important at all"), and no word of the target that says no/not is left out."""
    words, target_words = text.split(), target.split()
    if not words:
        return False
    i = 0
    for word in words:
        while i < len(target_words) and not _word_fits(word, target_words[i]):
            i += 1
        if i == len(target_words):
            return False
        i += 1
    negations = {"not", "no", "never", "dis"}
    said = {w for w in target_words if w in negations or w.startswith("dis")}
    kept = {t for w in words for t in target_words if _word_fits(w, t)}
    return said <= kept


def _agrees(text: str, targets: list[str], fuzz) -> bool:
    return any(fuzz.token_sort_ratio(t, text) >= LABEL_MATCH or abbreviates(text, t) for t in targets)


def _says(text: str, phrases: list[str]) -> bool:
    """A scale's end label says `phrase` ("Top", "10 Top", "Highest, top" for top; "Not at all
    concerned" for not at all concerned): every word of the phrase but an article is there."""
    words = set(text.split())
    for phrase in phrases:
        needed = [w for w in phrase.split() if w not in FILLER]
        if needed and all(any(_word_fits(w, t) or _word_fits(t, w) for w in words) for t in needed):
            return True
    return False


def _order(codes: list[float]) -> tuple[int, ...]:
    return tuple(sorted(range(len(codes)), key=lambda i: codes[i]))


def _scale_ends(question, labels: dict, low: float, high: float) -> tuple[tuple[tuple[float, ...], ...], str] | str:
    """The scale's codes read forwards or backwards from what its two end labels say."""
    at_low, at_high = normal(labels.get(low, "")), normal(labels.get(high, ""))
    low_words = [normal(t) for t in question.options[0].aliases]
    high_words = [normal(t) for t in question.options[-1].aliases]
    codes = tuple(o.codes for o in question.options)
    if not low_words or not high_words:
        return "the registry gives no end words for the scale, so its direction cannot be checked"
    low_says = (_says(at_low, low_words), _says(at_low, high_words))
    high_says = (_says(at_high, low_words), _says(at_high, high_words))
    if low_says == (True, False) and high_says == (False, True):
        return codes, "label, numeric scale"
    if low_says == (False, True) and high_says == (True, False):
        return tuple(reversed(codes)), "label, numeric scale, reversed"
    return (f"end labels {_shown(low)}={labels.get(low, '')!r}, {_shown(high)}={labels.get(high, '')!r} do not say "
            f"which end is {question.options[0].aliases[0]!r} and which {question.options[-1].aliases[0]!r}")


def match_options(question, labels: dict) -> tuple[tuple[tuple[float, ...], ...], str] | str:
    """(codes per option, how) from a variable's value labels, or the reason they do not fit.

    The options must be the value labels' answers: every option matched by text (or written
    shorter, `abbreviates`) to its own code, the codes in the registry's order or in reverse
    order (a reversed scale is read reversed); a numeric scale's two end labels must say
    which end is which."""
    answers = answer_codes(labels)
    if question.is_scale:
        low, high = question.options[0].codes[0], question.options[-1].codes[0]
        outside = sorted(c for c in answers if not low <= c <= high)
        if outside:
            return f"labelled answer codes {_codes_text(outside)} fall outside the scale {_shown(low)}-{_shown(high)}"
        if not answers or min(answers) != low or max(answers) != high:  # a 1-4 item is not a 1-10 scale
            return (f"labelled answer codes {_codes_text(sorted(answers))} do not reach both ends of the scale "
                    f"{_shown(low)}-{_shown(high)}")
        return _scale_ends(question, answers, low, high)
    if not answers:
        return "the variable has no labelled answer codes"
    normal_answers = {c: normal(v) for c, v in answers.items()}
    fuzz = require("rapidfuzz", "matching survey answers to the registry's options").fuzz
    registry_codes = [o.codes[0] for o in question.options]
    wanted = ", ".join(repr(o.label) for o in question.options)
    found = ", ".join(f"{_shown(c)}={v!r}" for c, v in sorted(answers.items()))
    codes: list[float] = []
    for option in question.options:
        targets = [normal(t) for t in (option.label, *option.aliases)]
        scored = sorted(((max(fuzz.token_sort_ratio(t, text) for t in targets), c) for c, text in normal_answers.items()),
                        reverse=True)
        if scored and scored[0][0] >= LABEL_MATCH and (len(scored) == 1 or scored[1][0] < scored[0][0]):
            codes.append(scored[0][1])
        else:
            codes = []
            break
    another_order = False
    if codes and len(set(codes)) == len(codes):  # extra labelled answer codes show up in the 3.2 scale check
        if _order(codes) == _order(registry_codes):
            return tuple((c,) for c in codes), "label"
        if _order(codes) == tuple(reversed(_order(registry_codes))):
            return tuple((c,) for c in codes), "label, reversed"
        another_order = True
    # labels written shorter ("Def should", "Not imp at all"): the file's K answer codes, read in
    # the registry's order or reversed, each agreeing with its option (no code is taken by position alone)
    ordered = sorted(answers)
    if len(ordered) == len(question.options):
        rank = _order(registry_codes)
        fits = []
        for reverse in (False, True):
            seq = list(reversed(ordered)) if reverse else ordered
            assign = [0.0] * len(seq)
            for position, option_index in enumerate(rank):
                assign[option_index] = seq[position]
            if all(_agrees(normal_answers[c], [normal(t) for t in (o.label, *o.aliases)], fuzz)
                   for c, o in zip(assign, question.options, strict=True)):
                fits.append((tuple((c,) for c in assign), reverse))
        if len(fits) == 1:
            codes_found, reverse = fits[0]
            return codes_found, "label, abbreviated value labels" + (", reversed" if reverse else "")
    if another_order:
        return (f"value labels ({found}) carry the options in another order than the registry's ({wanted}), "
                "neither the same nor reversed")
    return f"value labels ({found}) do not carry the options ({wanted})"


def _candidate(meta: FileMeta, column: str) -> str:
    label = meta.variable_labels.get(column) or ""
    return f"{column} {label!r}" if label else column


def locate_question(meta: FileMeta, question, exclude=frozenset()) -> Located:
    """The one variable of the file that holds `question`; raises NotLocated naming the question,
    the variables its label pattern found and why each was refused (variables in `exclude`, e.g.
    pinned for other questions, are not considered)."""
    pattern = question.label_pattern
    hits = [c for c in meta.columns if c not in exclude and not COUNTRY_SPECIFIC.match(c)
            and pattern.search(meta.variable_labels.get(c) or "")]
    if not hits:
        raise NotLocated(question.id, f"no variable label matches /{question.label}/", file=meta.path)
    fitting, reasons = [], {}
    for column in hits:
        labels = meta.value_labels.get(column, {})
        if not labels and meta.format != "csv":
            reasons[column] = "no value labels"
            continue
        result = match_options(question, labels)
        if isinstance(result, str):
            reasons[column] = result
            continue
        codes, how = result
        option_codes = {c for group in codes for c in group}
        invalid = tuple(sorted(c for c, v in _numeric_codes(labels).items()
                               if c not in option_codes and is_non_answer(c, v)))
        fitting.append(Located(column, codes, invalid, how, meta.variable_labels.get(column) or ""))
    if len(fitting) == 1:
        return fitting[0]
    if not fitting:
        shown = "; ".join(f"{_candidate(meta, c)}: {why}" for c, why in reasons.items())
        raise NotLocated(question.id, f"refused every variable whose label matches /{question.label}/: {shown}",
                         file=meta.path, candidates=reasons)
    several = {f.variable: "fits as well as " + ", ".join(o.variable for o in fitting if o is not f)
               for f in fitting}
    refused = "".join(f"; {_candidate(meta, c)} refused: {why}" for c, why in reasons.items())
    raise NotLocated(question.id, f"several variables fit ({', '.join(_candidate(meta, f.variable) for f in fitting)}): "
                     f"pin the right one in the registry's sources{refused}", file=meta.path,
                     candidates={**several, **reasons})


# ------------------------------------------------------------------------------ country
def country_from_label(label: str, countries: CountryTable) -> Country | None:
    """A country-table row for a value label such as 'DE-W-Germany-West', 'aus', 'West Germany'."""
    raw = _unidecode(str(label)).strip()
    if not raw:
        return None
    text = re.sub(r"^\s*\d+\s*[.):=]?\s+", "", raw).strip().upper().replace("_", "-")
    aliases = countries.aliases
    # a code first: an alias or sample code ("DE-W", "GB-NIR", "D-W", "aus"), then alpha-2/3
    head = re.split(r"\s+|\s*[-:]\s+|\.\s", text, maxsplit=1)[0]
    for candidate in (text, head):
        if candidate in aliases:
            return countries.by_alpha3[aliases[candidate]]
    for alias in sorted(aliases, key=len, reverse=True):
        if len(alias) >= 2 and not alias.isdigit() and re.match(re.escape(alias) + r"(?:[-\s]|$)", text):
            return countries.by_alpha3[aliases[alias]]
    if re.fullmatch(r"[A-Z]{3}", head) and head in countries.by_alpha3:
        return countries.by_alpha3[head]
    match = re.match(r"([A-Z]{2})(?:-[A-Z0-9]{1,4})?(?:[-\s]|$)", text)
    if match and match.group(1) in countries.by_alpha2:
        return countries.by_alpha2[match.group(1)]
    # then a name, possibly after a code or with one in brackets: "36. Australia", "Australia (AUS)"
    name = re.sub(r"\([^)]*\)", " ", text)
    name = re.sub(r"^[A-Z]{2}(?:-[A-Z0-9]{1,4})?-", "", name)
    name = " ".join(re.sub(r"[^A-Z ]+", " ", name).split())
    by_name = countries.by_name
    if name in by_name:
        return by_name[name]
    if name in aliases:
        return countries.by_alpha3[aliases[name]]
    # a name and a code on either side of a spaced dash: "Northern Ireland - NIRL", "Germany-East - D-E"
    parts = [p for p in re.split(r"\s+-\s*|\s*-\s+", text) if p]
    if len(parts) > 1:
        for part in parts:
            found = country_from_label(part, countries)
            if found is not None:
                return found
    return None


@dataclass(frozen=True)
class LocatedCountry:
    variable: str
    coding: str  # "alpha2" or "map"
    map: dict  # code -> alpha3 (coding "map")
    combined: dict  # alpha3 -> [labels] for codes pooled into one country
    unmapped: dict  # code -> label of labelled codes that name no country of the table


def country_map_from_labels(labels: dict, countries: CountryTable) -> tuple[dict, dict, dict]:
    """({code: alpha3}, {alpha3: [labels pooled]}, {code: label not in the table})."""
    mapping, unmapped = {}, {}
    for code, label in labels.items():
        if not isinstance(code, float):
            continue
        country = country_from_label(label, countries)
        if country is None:
            if not NON_ANSWER.search(str(label)):
                unmapped[code] = str(label)
            continue
        mapping[code] = country.alpha3
    pooled: dict[str, list[str]] = {}
    for code, alpha3 in mapping.items():
        pooled.setdefault(alpha3, []).append(str(labels[code]))
    combined = {a: sorted(v) for a, v in pooled.items() if len(v) > 1}
    return mapping, combined, unmapped


def locate_country(meta: FileMeta, countries: CountryTable, study_id: str) -> LocatedCountry:
    lower = {c.lower(): c for c in meta.columns}
    named = [lower[n] for n in COUNTRY_NAMES if n in lower]
    labelled = [c for c in meta.columns if re.search(r"\bcountry\b", meta.variable_labels.get(c) or "", re.I)
                and c not in named and not COUNTRY_SPECIFIC.match(c)]
    tried = []
    for column in named + labelled:
        if column.lower() == "c_alphan" or column in meta.string_columns:
            if column.lower() == "c_alphan":
                return LocatedCountry(column, "alpha2", {}, {}, {})
            tried.append(f"{column} (text)")
            continue
        labels = meta.value_labels.get(column, {})
        if not labels:
            tried.append(f"{column} (no value labels)")
            continue
        mapping, combined, unmapped = country_map_from_labels(labels, countries)
        if mapping and len(mapping) >= COUNTRY_SHARE * (len(mapping) + len(unmapped)):
            return LocatedCountry(column, "map", mapping, combined, unmapped)
        tried.append(f"{column} ({len(mapping)} of {len(mapping) + len(unmapped)} labels name countries)")
    raise SourceError(
        f"registry study {study_id} says country: auto, but no variable of this file reads as a country "
        f"variable (tried: {', '.join(tried) or 'none'}); give country: {{variable: NAME, coding: ...}} in the registry",
        file=meta.path,
    )


def locate_weight(meta: FileMeta) -> str | None:
    lower = {c.lower(): c for c in meta.columns}
    if "weight" in lower:
        return lower["weight"]
    labelled = [c for c in meta.columns if WEIGHT_LABEL.search(meta.variable_labels.get(c) or "")
                and not COUNTRY_SPECIFIC.match(c)]
    return labelled[0] if len(labelled) == 1 else None


def locate_year(meta: FileMeta, read_column, years: dict[float, int], study_id: str) -> tuple[str, dict]:
    """(variable, {code: year}) for a cumulation: the first variable whose values are all module
    years or all study numbers of the module (`years`: study number -> year)."""
    module_years = set(years.values())
    candidates = [c for c in meta.columns
                  if re.search(r"year|study|module|wave|za\b|survey", f"{c} {meta.variable_labels.get(c) or ''}", re.I)]
    for column in candidates:
        values = read_column(column)
        present = np.unique(values[np.isfinite(values)])
        if present.size == 0:
            continue
        if np.all(np.mod(present, 1) == 0) and set(present.astype(int).tolist()) <= module_years:
            return column, {}
        if set(present.tolist()) <= set(years):
            return column, {float(k): v for k, v in years.items()}
    raise SourceError(
        f"registry study {study_id} says year: auto, but no variable holds only the module's years "
        f"({', '.join(str(y) for y in sorted(module_years))}) or study numbers; give year: {{variable: NAME}}",
        file=meta.path,
    )


def _shown(code) -> str:
    code = float(code)
    return str(int(code)) if code.is_integer() else str(code)


def _codes_text(codes) -> str:
    return ", ".join(_shown(c) for c in codes)


def locate_questions(meta: FileMeta, questions, exclude=frozenset()) -> tuple[dict, dict]:
    """({question id: Located}, {question id: NotLocated}) for the questions of one file.

    A variable in `exclude` (pinned for a question) is nobody's find, and a variable found
    for two questions is refused for both: one variable never holds two questions."""
    found_by: dict[str, list] = {}
    refused: dict[str, NotLocated] = {}
    for question in questions:
        try:
            found = locate_question(meta, question, exclude=exclude)
        except NotLocated as exc:
            refused[question.id] = exc
            continue
        found_by.setdefault(found.variable, []).append((question, found))
    located = {}
    for variable, claims in found_by.items():
        if len(claims) > 1:
            names = ", ".join(q.id for q, _ in claims)
            for question, _ in claims:
                refused[question.id] = NotLocated(
                    question.id, f"{_candidate(meta, variable)} fits several questions ({names}): pin it in the "
                    "registry for the right one", file=meta.path, candidates={variable: f"also fits {names}"})
            continue
        question, found = claims[0]
        located[question.id] = found
    return located, refused
