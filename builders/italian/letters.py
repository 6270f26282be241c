"""Letters with named entities: the Classense (Canneti-Fiacchi) and Bellini corpora (3.2).

Each TEI letter becomes one row: the letter text exactly as the model will see it
(see `tei.linearise`), the entities with character offsets into that text, and the
correspondence metadata (sender, recipient, date, place, language).

Rules (all counted in the summary):

- which elements are entities of which type comes from `sources/italian/ner_entities.yaml`;
  indirect references (`rs`, e.g. "Vostra Paternità") are never entities: they are kept
  apart in `excluded_references`;
- an entity split by the encoders into parts chained with `@next`/`@prev` (e.g. across a
  line break) becomes one entity from the first part's start to the last part's end;
- abbreviations show their expansion (`choice/abbr/expan`), line breaks are spaces or,
  with `break="no"`, nothing (so offsets are offsets in the text the model sees);
- an entity's span is trimmed of surrounding whitespace and of trailing punctuation that
  the encoders left inside the element ("Levis," -> "Levis");
- only the letter body is read (`text/body`; `div`s typed notes/bibliography, `back`,
  `front`, `note`, `fw` and `del` add no text).

Classense subset (3.2): from all letters, `select_subset` draws candidate subsets of the
requested size (seeded) and keeps the one whose entity-type counts are closest to the full
corpus distribution by the chi-square goodness-of-fit statistic; the statistic, its
degrees of freedom and p-value are reported.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from histbench.core.errors import SourceError
from histbench.core.extras import require

from .tei import (
    children,
    find_all,
    find_first,
    inherited_lang,
    lang_of,
    linearise,
    local,
    parse_xml,
    plain_text,
)

TRAILING_PUNCT = ",;:.!?"


@dataclass
class EntityRule:
    element: str
    attributes: dict
    label: str | None
    exclude: str | None

    def matches(self, element) -> bool:
        if local(element) != self.element:
            return False
        for name, wanted in self.attributes.items():
            value = element.get(name)
            allowed = wanted if isinstance(wanted, list) else [wanted]
            if value not in [str(a) for a in allowed]:
                return False
        return True


@dataclass
class EntityScheme:
    corpus: str
    labels: list[str]
    rules: list[EntityRule]

    @classmethod
    def from_config(cls, corpus: str, config: dict, where: Path) -> EntityScheme:
        if corpus not in config:
            raise SourceError(f"no entity rules for corpus {corpus!r}", file=where)
        body = config[corpus]
        rules = []
        for n, raw in enumerate(body.get("rules") or []):
            if "element" not in raw or ("label" in raw) == ("exclude" in raw):
                raise SourceError(f"rule {n} of {corpus} needs 'element' and exactly one of 'label'/'exclude'", file=where)
            if "label" in raw and raw["label"] not in body.get("labels", []):
                raise SourceError(f"rule {n} of {corpus}: label {raw['label']!r} is not in labels", file=where)
            rules.append(EntityRule(raw["element"], dict(raw.get("attributes") or {}), raw.get("label"), raw.get("exclude")))
        return cls(corpus, list(body.get("labels") or []), rules)

    def decide(self, element) -> EntityRule | None:
        for rule in self.rules:
            if rule.matches(element):
                return rule
        return None


@dataclass
class Letter:
    id: str
    file: str
    text: str
    entities: list[dict]
    excluded: list[dict]
    sender: str | None
    recipient: str | None
    date: str | None
    place: str | None
    language: str | None
    language_source: str
    title: str | None
    stats: Counter = field(default_factory=Counter)

    def type_counts(self, labels: list[str]) -> list[int]:
        counts = Counter(e["type"] for e in self.entities)
        return [counts.get(label, 0) for label in labels]


_SKIP_DIVS = {"notes", "ann_notes", "bibliography", "commentary", "apparatus"}


def _skip(element) -> bool:
    name = local(element)
    if name == "div" and (element.get("type") or "") in _SKIP_DIVS:
        return True
    return name in ("listBibl", "back", "front")


def _clean_span(text: str, start: int, end: int, stats: Counter) -> tuple[int, int]:
    original = (start, end)
    while start < end and text[start].isspace():
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in TRAILING_PUNCT):
        end -= 1
    if (start, end) != original:
        stats["entity spans trimmed of whitespace or trailing punctuation"] += 1
    return start, end


def _ref(attrs: dict) -> str | None:
    for name in ("ref", "key", "source", "corresp"):
        if attrs.get(name):
            return attrs[name]
    return None


def _first_of(root, *names: str):
    for name in names:
        found = find_first(root, name)
        if found is not None:
            return found
    return None


def _metadata(root) -> dict:
    meta = {"sender": None, "recipient": None, "date": None, "place": None}
    for action in find_all(root, "correspAction"):
        kind = action.get("type") or ""
        person = _first_of(action, "persName", "orgName", "name")
        name = plain_text(person) if person is not None else None
        if kind in ("sent", "sender", "sending"):
            meta["sender"] = name or None
            date = find_first(action, "date")
            if date is not None:
                meta["date"] = date.get("when") or date.get("when-iso") or date.get("from") or plain_text(date) or None
            place = _first_of(action, "placeName", "settlement")
            if place is not None:
                meta["place"] = plain_text(place) or None
        elif kind in ("received", "receiver", "receiving", "recipient"):
            meta["recipient"] = name or None
    for key, value in meta.items():
        if value is not None and value.strip().lower() in ("", "unknown", "sconosciuto", "sconosciuta"):
            meta[key] = None
    return meta


def _language(root, body) -> tuple[str | None, str]:
    node = body
    lang = inherited_lang(node) if node is not None else None
    if lang:
        return lang, "xml:lang of the letter text"
    usage = find_first(root, "langUsage")
    if usage is not None:
        for language in children(usage, "language"):
            ident = language.get("ident") or language.get("id") or lang_of(language)
            if ident:
                return ident, "teiHeader langUsage"
    return None, "none in the TEI"


def _chains(marks: list, stats: Counter) -> list[list]:
    """Group marks into entities: parts linked by @next/@prev form one chain, in order."""
    by_id = {m.attrs.get("id"): m for m in marks if m.attrs.get("id")}
    assigned: set[int] = set()
    chains = []
    for mark in marks:
        if mark.key in assigned:
            continue
        prev = (mark.attrs.get("prev") or "").lstrip("#")
        if prev and prev in by_id and by_id[prev].key not in assigned:
            continue  # reached from its head
        chain = [mark]
        assigned.add(mark.key)
        nxt = (mark.attrs.get("next") or "").lstrip("#")
        while nxt and nxt in by_id and by_id[nxt].key not in assigned:
            part = by_id[nxt]
            chain.append(part)
            assigned.add(part.key)
            nxt = (part.attrs.get("next") or "").lstrip("#")
        if (mark.attrs.get("next") or "").lstrip("#") and len(chain) == 1:
            stats["entity parts whose @next names no element"] += 1
        chains.append(chain)
    for mark in marks:  # parts whose @prev names a part never reached (broken chain)
        if mark.key not in assigned:
            assigned.add(mark.key)
            stats["entity parts with a broken @prev chain (kept alone)"] += 1
            chains.append([mark])
    return chains


TEI_NS = "http://www.tei-c.org/ns/1.0"


def parse_tei(path: Path, notes: list[str] | None = None):
    """The root of a TEI file (a TEI document, or a TEI fragment such as the entity lists
    <listPerson>, <listPlace>, <listBibl> shipped with an edition); SourceError for an
    empty or damaged file, or for XML that is not TEI (another namespace, an unknown root)."""
    root = parse_xml(path, notes).getroot()
    tag = root.tag if isinstance(root.tag, str) else ""
    namespace = tag[1:].split("}", 1)[0] if tag.startswith("{") else None
    if namespace == TEI_NS or local(root) in ("TEI.2", "TEI", "teiCorpus"):
        return root
    found = f"<{local(root)}>" + (f" in namespace {namespace}" if namespace else " in no namespace")
    raise SourceError(f"not a TEI document: the root element is {found}, expected <TEI> (TEI P5) or <TEI.2> (P4)", file=path)


def letter_kind(root) -> str:
    """"letter" (a TEI document with a <correspDesc> or a <text type="letter"|"lettera">),
    "document" (a TEI document without one) or "fragment" (an entity list or other TEI
    element that is not a document)."""
    if local(root) not in ("TEI", "TEI.2", "teiCorpus"):
        return "fragment"
    if find_first(root, "correspDesc") is not None:
        return "letter"
    if any((el.get("type") or "").lower() in ("letter", "lettera") for el in find_all(root, "text")):
        return "letter"
    return "document"


def read_letter(path: Path, scheme: EntityScheme, root=None) -> Letter:
    if root is None:
        root = parse_tei(path)
    text_el = find_first(root, "text")
    body = find_first(text_el, "body") if text_el is not None else None
    if body is None:
        raise SourceError("the letter has no <text><body> to read", file=path)
    stats: Counter = Counter()

    def marker(element):
        rule = scheme.decide(element)
        if rule is None:
            return None
        attrs = {k.rsplit("}", 1)[-1]: v for k, v in element.attrib.items()}
        attrs["__rule"] = rule
        return attrs

    text, marks = linearise(body, marker=marker, skip=_skip)
    entities, excluded = [], []
    for chain in _chains(marks, stats):
        head = chain[0]
        rule = head.attrs["__rule"]
        located = [p for p in chain if p.start is not None and p.end is not None]
        if not located:
            stats["marked elements with no text (empty, skipped)"] += 1
            continue
        if len(chain) > 1:
            stats["entities merged from parts chained with @next/@prev"] += 1
        start = min(p.start for p in located)
        end = max(p.end for p in located)
        start, end = _clean_span(text, start, end, stats)
        if start >= end:
            stats["marked elements with no text (empty, skipped)"] += 1
            continue
        record = {
            "text": text[start:end], "start": start, "end": end,
            "element": head.element, "ref": _ref(head.attrs), "parts": len(chain),
        }
        if rule.label is not None:
            record["type"] = rule.label
            entities.append(record)
        else:
            record["reason"] = rule.exclude
            excluded.append(record)
            stats[f"excluded <{head.element}>: {rule.exclude}"] += 1
    entities.sort(key=lambda e: (e["start"], e["end"]))
    excluded.sort(key=lambda e: (e["start"], e["end"]))
    for entity in entities:
        stats[f"entities {entity['type']}"] += 1
    meta = _metadata(root)
    language, language_source = _language(root, body)
    title_el = find_first(root, "title")
    letter_id = root.get("{http://www.w3.org/XML/1998/namespace}id") or (text_el.get("{http://www.w3.org/XML/1998/namespace}id") if text_el is not None else None)
    return Letter(
        id=path.stem, file=path.name, text=text, entities=entities, excluded=excluded,
        sender=meta["sender"], recipient=meta["recipient"], date=meta["date"], place=meta["place"],
        language=language, language_source=language_source,
        title=(plain_text(title_el) or None) if title_el is not None else (letter_id or None), stats=stats,
    )


def letter_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """XML files under a folder (recursively), and the other files (counted, not read:
    README, licences, the edition's letter template `letter-base.txt`, schemas)."""
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file() and not p.name.startswith("."))
    xml = [p for p in files if p.suffix.lower() == ".xml"]
    other = [p for p in files if p.suffix.lower() != ".xml"]
    return xml, other


def detect_language(text: str) -> str | None:
    """langdetect (seeded, deterministic) for letters whose TEI gives no language."""
    require("langdetect", "detecting the language of letters whose TEI gives none")
    from langdetect import DetectorFactory, detect
    from langdetect.lang_detect_exception import LangDetectException

    DetectorFactory.seed = 0
    try:
        return detect(text)
    except LangDetectException:
        return None


def chi_square(observed: np.ndarray, proportions: np.ndarray) -> tuple[float, int, float]:
    """Goodness-of-fit of observed counts against the full-corpus proportions (scipy)."""
    from scipy.stats import chisquare

    observed = np.asarray(observed, dtype=float)
    keep = proportions > 0
    expected = proportions[keep] * observed[keep].sum()
    result = chisquare(observed[keep], expected)
    return float(result.statistic), int(keep.sum() - 1), float(result.pvalue)


def select_subset(counts: np.ndarray, size: int, seed: int, draws: int = 5000) -> tuple[list[int], dict]:
    """Indices of `size` letters whose entity-type distribution best matches the corpus.

    counts: (n_letters, n_types). Draws `draws` seeded random subsets and keeps the one with
    the smallest chi-square statistic against the full corpus proportions (ties: first drawn).
    """
    n = counts.shape[0]
    totals = counts.sum(axis=0).astype(float)
    proportions = totals / totals.sum() if totals.sum() else totals
    if size >= n:
        stat, dof, p = chi_square(counts.sum(axis=0), proportions)
        return list(range(n)), {"method": "all letters (subset size >= corpus size)", "draws": 0,
                                "chi2": stat, "dof": dof, "p_value": p}
    rng = np.random.default_rng(seed)
    keys = rng.random((draws, n))
    subsets = np.argsort(keys, axis=1)[:, :size]
    sums = counts[subsets].sum(axis=1).astype(float)                   # (draws, types)
    keep = proportions > 0
    expected = sums[:, keep].sum(axis=1, keepdims=True) * proportions[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        stats = np.where(expected > 0, (sums[:, keep] - expected) ** 2 / expected, 0.0).sum(axis=1)
    best = int(np.argmin(stats))
    chosen = sorted(int(i) for i in subsets[best])
    stat, dof, p = chi_square(counts[chosen].sum(axis=0), proportions)
    return chosen, {"method": f"best of {draws} seeded random subsets by chi-square statistic", "draws": draws,
                    "chi2": stat, "dof": dof, "p_value": p}
