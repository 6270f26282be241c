"""LeggoManzoni: the Quarantana text and the commentators' notes on it (2.1, 3.1).

Which files are read
--------------------
`--leggomanzoni` is the LeggoManzoni repository as cloned, or any folder laid out the same
way (`discover`):

- chapters: `quarantana/cap*.xml` (one `<w xml:id>` per word, `<milestone unit="comma">`
  between numbered passages);
- commentaries: the per-chapter files `<commentator>/cap*.xml` under `commenti/xml/` (the
  repository: `commenti/xml/in_lavorazione/Petrocchi/cap1.xml`, the files the web
  application reads), else under `commenti/`, else anywhere outside `quarantana/` and
  `translations/`; the commentator is the folder's name. Two folders of the same name are
  an error (their notes would be counted twice).
- everything else is not read and the summary says so, with file counts: the 26
  `translations/` (they align a translation with the text, they do not comment on it),
  the single-file compilations `commenti/xml/*/<commentator>.xml` (the same notes as the
  per-chapter folders), `intro.xml` files, `commenti/txt|pdf`, the web application.

A note is `<note target="...#ID" targetEnd="...#ID">` whose first `<ref>` repeats the
annotated words; the explanation is the rest of the note (nested editorial notes and
figures left out, a leading colon removed).

Which notes explain the words they point at (`NoteRules`, sources/italian/wsd_rules.yaml)
-------------------------------------------------------------------------------------------
A note is left out, and counted under its rule, when

- its @type is not a word note (`comm`): editorial notes;
- it has no <ref>, or its <ref> does not repeat the words it points at (the ref's first
  word against the first targeted word, or its last word against the last one, fuzzy
  ratio >= `ref_match_ratio`): this removes the notes that commentators anchor at a
  chapter's first word to talk about the whole chapter, and notes pointing at the wrong
  words;
- its ref or text opens like a note on a heading, a decorated initial or an illustration
  ("Intestazione", "Capolettera", "Figura 4") or credits an illustrator
  ("F[rancesco] Gonin"): such notes point at a chapter's first word or at a figure.

Words are rendered as a reader sees them: separated by spaces, except that a word made of
closing punctuation (",", ".", "»") sticks to the word before and an opening one ("«",
"(") to the word after.

Which notes explain the same phrase (the overlap rule)
------------------------------------------------------
A note covers the words from its target to its targetEnd. Notes longer than
`max_phrase_words` words are commentary on passages, not glosses, and are left out.
Two notes explain the same phrase when one's word span lies inside the other's and both
start, or both end, on the same word ("somigliare" and "somigliare a una"; "ponte" and
"il ponte"; but not "di" inside "Quel ramo del lago di Como"). Spans are taken in order of how many
commentators chose exactly that span (most first), then shorter first, then by position;
each span collects every still unassigned note nested with it, and becomes a phrase when
those notes come from at least two different commentators. The phrase is that span's
words. Notes that only cross each other without nesting are not merged. A note is used
in at most one phrase.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from unidecode import unidecode

from histbench.core.errors import SourceError

from .tei import XML_ID, BadFiles, find_all, find_first, local, normalise_space, parse_xml, plain_text

_CLOSING = re.compile(r"^[,.;:!?»)\]”’…]+$")
_OPENING = re.compile(r"^[«(\[“‘]+$")
_SENT_END = re.compile(r"[.!?…][»”’)\]]*$")
_EDGE_PUNCT = ",;:.!?«»()[]“”\"'’‘…—-"


@dataclass
class Word:
    id: str
    text: str
    chapter: str
    index: int          # position in the chapter
    comma: int          # index of the comma (numbered passage) it belongs to


@dataclass
class Chapter:
    name: str           # file stem, e.g. "cap1"
    words: list[Word]
    file: str


@dataclass
class Note:
    commentator: str
    commentator_title: str
    note_id: str
    file: str
    chapter: str
    start: int
    end: int
    lemma: str
    explanation: str

    @property
    def span(self) -> tuple[str, int, int]:
        return (self.chapter, self.start, self.end)


@dataclass
class Phrase:
    """A span explained by at least two commentators."""

    chapter: str
    start: int
    end: int
    notes: list[Note]
    exact_count: int                      # commentators whose note has exactly this span

    @property
    def commentators(self) -> list[str]:
        return sorted({n.commentator for n in self.notes})


@dataclass
class ReadResult:
    chapters: dict[str, Chapter]
    notes: list[Note]
    stats: Counter = field(default_factory=Counter)
    commentators: list[str] = field(default_factory=list)
    layout: Layout | None = None
    excluded_examples: dict[str, list[str]] = field(default_factory=dict)   # rule -> first note ids


def render(words: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """Join words as a reader sees them; also each word's (start, end) in the result."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    glue_next = False
    for n, word in enumerate(words):
        word = normalise_space(word)
        if n and not glue_next and not _CLOSING.match(word):
            out.append(" ")
            length += 1
        spans.append((length, length + len(word)))
        out.append(word)
        length += len(word)
        glue_next = bool(_OPENING.match(word))
    return "".join(out), spans


def _chapter_key(path: Path) -> str:
    return path.stem


def read_chapter(path: Path, repairs: list[str] | None = None) -> Chapter:
    root = parse_xml(path, repairs).getroot()
    words: list[Word] = []
    comma = 0
    seen_milestone = False
    for el in root.iter():
        name = local(el)
        if name == "milestone" and (el.get("unit") or "") == "comma":
            if seen_milestone or words:
                comma += 1
            seen_milestone = True
        elif name == "w":
            word_id = el.get(XML_ID) or el.get("id")
            text = plain_text(el)
            if not word_id or not text:
                continue
            words.append(Word(word_id, text, _chapter_key(path), len(words), comma))
    if not words:
        raise SourceError("no <w xml:id=...> words in this Quarantana chapter", file=path)
    return Chapter(_chapter_key(path), words, path.name)


def _fragment(pointer: str | None) -> tuple[str | None, str | None]:
    """'quarantana/cap1.xml#c1_10055' -> ('cap1', 'c1_10055')."""
    if not pointer:
        return None, None
    pointer = pointer.strip().split()[0]
    path, _, frag = pointer.partition("#")
    stem = Path(path).stem if path else None
    return stem, (frag or None)


def _explanation(note) -> tuple[str, str]:
    """(lemma from the first <ref>, explanation text without the lemma)."""
    ref = find_first(note, "ref")
    lemma = plain_text(ref) if ref is not None else ""
    parts: list[str] = []
    skip = {"note", "figure", "figDesc", "graphic", "del"}

    def walk(el, top: bool) -> None:
        if not top and (local(el) in skip or el is ref):
            return
        if isinstance(el.tag, str) and el.text:
            parts.append(el.text)
        for child in el:
            walk(child, False)
            if child.tail:
                parts.append(child.tail)

    walk(note, True)
    text = normalise_space("".join(parts))
    text = re.sub(r"^[\s:;,.\-–—]+", "", text).strip()
    return lemma, text


@dataclass
class Layout:
    """What `discover` found in a LeggoManzoni folder."""

    chapters: list[Path]
    commentaries: dict[str, list[Path]]           # commentator -> its cap*.xml files
    commentary_root: str                          # where commentaries were looked for
    not_read: dict[str, int]                      # what was not read -> number of files


def _natural(name: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def _is_chapter_file(path: Path) -> bool:
    return re.fullmatch(r"cap\d+\.xml", path.name, flags=re.IGNORECASE) is not None


def discover(folder: Path) -> Layout:
    """The chapters and per-chapter commentary files of a LeggoManzoni folder (module doc)."""
    root = Path(folder)
    files = sorted((p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")),
                   key=lambda p: _natural(p.as_posix()))
    quarantana = root / "quarantana"
    if not quarantana.is_dir():
        found = sorted(p for p in root.rglob("quarantana") if p.is_dir())
        quarantana = found[0] if found else quarantana
    chapters = sorted((p for p in quarantana.glob("*.xml") if _is_chapter_file(p)), key=lambda p: _natural(p.name))
    if (root / "commenti" / "xml").is_dir():
        base = root / "commenti" / "xml"
    elif (root / "commenti").is_dir():
        base = root / "commenti"
    else:
        base = root
    commentaries: dict[str, list[Path]] = {}
    folders: dict[str, Path] = {}
    not_read: Counter = Counter()
    used = set(chapters)
    names = _folder_names(base)
    for path in files:
        if path in used:
            continue
        rel = path.relative_to(root)
        inside_base = base == root or base in path.parents
        excluded_top = rel.parts[0].lower() in ("quarantana", "translations") or quarantana in path.parents
        if inside_base and not excluded_top and _is_chapter_file(path) and path.parent != base:
            name = path.parent.name
            if name in folders and folders[name] != path.parent:
                raise SourceError(f"two commentary folders are named {name!r}: {folders[name].relative_to(root)} and "
                                  f"{path.parent.relative_to(root)} (their notes would be counted twice); keep one",
                                  file=root)
            folders[name] = path.parent
            commentaries.setdefault(name, []).append(path)
            continue
        not_read[_not_read_kind(root, base, quarantana, path, rel, names)] += 1
    return Layout(chapters, commentaries, base.relative_to(root).as_posix() if base != root else ".", dict(not_read))


def _folder_names(base: Path) -> set[str]:
    return {p.parent.name for p in base.rglob("cap*.xml")} if base.is_dir() else set()


def _not_read_kind(root: Path, base: Path, quarantana: Path, path: Path, rel: Path, commentators: set[str]) -> str:
    top = rel.parts[0]
    if quarantana in path.parents:
        return f"{quarantana.relative_to(root).as_posix()}/ files other than cap*.xml (intro, header, html)"
    if top.lower() == "translations":
        return "translations/ (aligned translations, not commentaries)"
    if base in path.parents or base == path.parent:
        if path.suffix.lower() == ".xml" and path.parent.name != path.stem and path.stem in commentators:
            return "single-file commentaries <commentator>.xml (the same notes as the per-chapter folders)"
        if path.name.lower() == "intro.xml":
            return "commentaries' intro.xml (notes on the Introduction, which has no cap file)"
        where = path.relative_to(base).parts
        return f"{base.relative_to(root).as_posix() if base != root else '.'}/{where[0] + '/' if len(where) > 1 else ''} other files"
    return f"{top}/ (not a commentary)" if len(rel.parts) > 1 else "files at the top of the folder"


@dataclass
class NoteRules:
    """The note filter of the module doc, read from sources/italian/wsd_rules.yaml."""

    word_note_types: tuple[str, ...]
    ref_match_ratio: float
    openers: tuple[str, ...]
    illustrators: tuple[str, ...]

    @classmethod
    def from_config(cls, config: dict) -> NoteRules:
        notes = config.get("notes") or {}
        return cls(tuple(notes.get("word_note_types") or ("comm",)), float(notes.get("ref_match_ratio", 75)),
                   tuple(notes.get("heading_or_illustration_openers") or ()), tuple(notes.get("illustrators") or ()))

    def exclusion(self, note_type: str | None, lemma: str, explanation: str, words: list[str]) -> str | None:
        """None when the note explains `words`; else the name of the rule that leaves it out."""
        if note_type is not None and note_type not in self.word_note_types:
            return f"notes of type {note_type!r} (not word notes; left out)"
        for text in (lemma, explanation):
            head = text.lstrip(" [(«\"'").split(" ", 1)[0].rstrip(".:,;")
            if any(head.lower() == o.rstrip(".").lower() for o in self.openers):
                return "notes on a chapter heading, initial or illustration (left out)"
            opening = text[:80]
            if any(re.search(rf"\b{re.escape(name)}\b", opening.replace("[", "").replace("]", "")) for name in self.illustrators):
                return "notes on a chapter heading, initial or illustration (left out)"
        ref = _tokens(re.sub(r"^\s*[\d.]+\s+", "", lemma))
        if not ref:
            return "notes without a <ref> repeating their words (left out)"
        span = _tokens(" ".join(words))
        if not span or not (_close(ref[0], span[0], self.ref_match_ratio) or _close(ref[-1], span[-1], self.ref_match_ratio)):
            return "notes whose <ref> does not repeat the words they point at (left out)"
        return None


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", unidecode(text).lower())


def _close(a: str, b: str, ratio: float) -> bool:
    from rapidfuzz import fuzz

    return a == b or fuzz.ratio(a, b) >= ratio


def read_leggomanzoni(folder: Path, rules: NoteRules | None = None, bad: BadFiles | None = None,
                      repairs: list[str] | None = None) -> ReadResult:
    folder = Path(folder)
    rules = rules or NoteRules(("comm",), 75.0, (), ())
    bad = bad or BadFiles()
    layout = discover(folder)
    if not layout.chapters:
        raise SourceError("no Quarantana chapters (quarantana/cap*.xml) in this folder", file=folder)
    if not layout.commentaries:
        raise SourceError("no commentaries (commenti/xml/.../<commentator>/cap*.xml) in this folder", file=folder)
    stats: Counter = Counter()
    chapters: dict[str, Chapter] = {}
    for path in layout.chapters:
        try:
            chapter = read_chapter(path, repairs)
        except SourceError as exc:
            bad.handle(exc, "leggomanzoni")
            stats["damaged files skipped (--skip-bad-files)"] += 1
            continue
        chapters[chapter.name] = chapter
    index: dict[str, tuple[str, int]] = {}
    for chapter in chapters.values():
        for word in chapter.words:
            index[word.id] = (chapter.name, word.index)
    notes: list[Note] = []
    commentators: set[str] = set()
    examples: dict[str, list[str]] = {}
    for commentator in sorted(layout.commentaries, key=str.lower):
        for path in layout.commentaries[commentator]:
            try:
                root = parse_xml(path, repairs).getroot()
            except SourceError as exc:
                bad.handle(exc, "leggomanzoni")
                stats["damaged files skipped (--skip-bad-files)"] += 1
                continue
            commentators.add(commentator)
            title_el = find_first(root, "title")
            title = plain_text(title_el) if title_el is not None else commentator
            for n, note in enumerate(find_all(root, "note")):
                parent = note.getparent()
                if parent is not None and local(parent) == "note":
                    continue  # editorial note inside a note
                if note.get("target") is None and note.get("targetEnd") is None:
                    stats["notes without @target (not about words)"] += 1
                    continue
                stats["notes read"] += 1
                note_id = note.get(XML_ID) or f"{path.name}#{n}"
                _, start_id = _fragment(note.get("target"))
                _, end_id = _fragment(note.get("targetEnd"))
                if start_id is None or start_id not in index:
                    stats["notes whose @target names no Quarantana word of the given chapters (figures, other files)"] += 1
                    continue
                chapter, start = index[start_id]
                end = start
                if end_id is not None:
                    if end_id not in index or index[end_id][0] != chapter:
                        stats["notes whose @targetEnd names no word of the same chapter"] += 1
                        continue
                    end = index[end_id][1]
                if end < start:
                    stats["notes whose @targetEnd precedes @target"] += 1
                    continue
                lemma, explanation = _explanation(note)
                if not explanation:
                    stats["notes with an empty explanation"] += 1
                    continue
                words = [w.text for w in chapters[chapter].words[start:end + 1]]
                rule = rules.exclusion(note.get("type"), lemma, explanation, words)
                if rule is not None:
                    stats[rule] += 1
                    examples.setdefault(rule, [])
                    if len(examples[rule]) < 5:
                        examples[rule].append(note_id)
                    continue
                notes.append(Note(
                    commentator=commentator, commentator_title=title, note_id=note_id,
                    file=str(path.relative_to(folder)), chapter=chapter, start=start, end=end, lemma=lemma,
                    explanation=explanation,
                ))
    stats["notes usable (about their words, resolved span, non-empty explanation)"] = len(notes)
    return ReadResult(chapters, notes, stats, sorted(commentators, key=str.lower), layout, examples)


def same_phrase(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """One span lies inside the other and both start, or both end, on the same word."""
    nested = (a[0] <= b[0] and b[1] <= a[1]) or (b[0] <= a[0] and a[1] <= b[1])
    return nested and (a[0] == b[0] or a[1] == b[1])


def group_phrases(notes: list[Note], max_phrase_words: int, stats: Counter) -> list[Phrase]:
    """The overlap rule of the module docstring."""
    usable = []
    for note in notes:
        if note.end - note.start + 1 > max_phrase_words:
            stats[f"notes spanning more than {max_phrase_words} words (passage comments, left out)"] += 1
        else:
            usable.append(note)
    by_chapter: dict[str, list[Note]] = defaultdict(list)
    for note in usable:
        by_chapter[note.chapter].append(note)
    phrases: list[Phrase] = []
    for chapter in sorted(by_chapter, key=_natural):
        chapter_notes = by_chapter[chapter]
        exact: dict[tuple[int, int], set[str]] = defaultdict(set)
        for note in chapter_notes:
            exact[(note.start, note.end)].add(note.commentator)
        order = sorted(exact, key=lambda s: (-len(exact[s]), s[1] - s[0], s[0], s[1]))
        assigned: set[int] = set()
        for span in order:
            members = [n for i, n in enumerate(chapter_notes) if i not in assigned and same_phrase((n.start, n.end), span)]
            if len({m.commentator for m in members}) < 2:
                continue
            ids = {i for i, n in enumerate(chapter_notes) if i not in assigned and same_phrase((n.start, n.end), span)}
            assigned |= ids
            phrases.append(Phrase(chapter, span[0], span[1], members, len(exact[span])))
        left = len(chapter_notes) - len(assigned)
        if left:
            stats["notes on phrases explained by one commentator only (left out)"] += left
    phrases.sort(key=lambda p: (_natural(p.chapter), p.start, p.end))
    stats["phrases explained by at least two commentators"] = len(phrases)
    return phrases


def phrase_text(chapter: Chapter, start: int, end: int) -> str:
    text, _ = render([w.text for w in chapter.words[start:end + 1]])
    return text.strip(_EDGE_PUNCT + " ")


def context_for(chapter: Chapter, start: int, end: int, unit: str) -> tuple[str, int, int]:
    """The context of a phrase and the phrase's (start, end) characters in it.

    unit "comma": the numbered passage(s) holding the phrase; "sentence": the sentence(s)
    holding it (sentence ends: a word ending in . ! ? or … possibly followed by closing
    quotes), never crossing the passage boundary.
    """
    words = chapter.words
    first_comma, last_comma = words[start].comma, words[end].comma
    lo = start
    while lo > 0 and words[lo - 1].comma == first_comma:
        lo -= 1
    hi = end
    while hi + 1 < len(words) and words[hi + 1].comma == last_comma:
        hi += 1
    if unit == "sentence":
        s = start
        while s > lo and not _SENT_END.search(words[s - 1].text):
            s -= 1
        e = end
        while e < hi and not _SENT_END.search(words[e].text):
            e += 1
        lo, hi = s, e
    text, spans = render([w.text for w in words[lo:hi + 1]])
    a = spans[start - lo][0]
    b = spans[end - lo][1]
    phrase = text[a:b]
    lead = len(phrase) - len(phrase.lstrip(_EDGE_PUNCT + " "))
    trail = len(phrase) - len(phrase.rstrip(_EDGE_PUNCT + " "))
    return text, a + lead, b - trail
