"""LeggoManzoni: the Quarantana text and the commentators' notes on it (2.1, 3.1).

Reading
-------
The folder may be the LeggoManzoni repository or any folder holding the same files:
chapters are `cap*.xml` files inside a folder named `quarantana` (one `<w xml:id>` per
word, `<milestone unit="comma">` between numbered passages); commentaries are `cap*.xml`
files anywhere else, the commentator being the name of the folder that holds them
(`commenti/.../Petrocchi/cap1.xml`). A note is `<note target="...#ID" targetEnd="...#ID">`
whose first `<ref>` repeats the annotated words; the explanation is the rest of the note
(nested editorial notes and figures left out, a leading colon removed).

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

from histbench.builders.core.errors import SourceError

from .tei import XML_ID, find_all, find_first, local, normalise_space, parse_xml, plain_text

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


def read_chapter(path: Path) -> Chapter:
    root = parse_xml(path).getroot()
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


def discover(folder: Path) -> tuple[list[Path], list[Path]]:
    files = sorted(p for p in Path(folder).rglob("cap*.xml") if p.is_file())
    chapters = [p for p in files if p.parent.name.lower() == "quarantana"]
    commentaries = [p for p in files if p.parent.name.lower() != "quarantana"]
    return chapters, commentaries


def read_leggomanzoni(folder: Path) -> ReadResult:
    chapter_files, commentary_files = discover(folder)
    if not chapter_files:
        raise SourceError("no Quarantana chapters (quarantana/cap*.xml) in this folder", file=folder)
    if not commentary_files:
        raise SourceError("no commentaries (<commentator>/cap*.xml) in this folder", file=folder)
    chapters = {c.name: c for c in (read_chapter(p) for p in chapter_files)}
    index: dict[str, tuple[str, int]] = {}
    for chapter in chapters.values():
        for word in chapter.words:
            index[word.id] = (chapter.name, word.index)
    stats: Counter = Counter()
    notes: list[Note] = []
    commentators: set[str] = set()
    for path in commentary_files:
        root = parse_xml(path).getroot()
        commentator = path.parent.name
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
            _, start_id = _fragment(note.get("target"))
            end_chapter, end_id = _fragment(note.get("targetEnd"))
            if start_id is None or start_id not in index:
                stats["notes whose @target names no Quarantana word of the given chapters"] += 1
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
            notes.append(Note(
                commentator=commentator, commentator_title=title, note_id=note.get(XML_ID) or f"{path.name}#{n}",
                file=str(path.relative_to(folder)), chapter=chapter, start=start, end=end, lemma=lemma,
                explanation=explanation,
            ))
    stats["notes usable (resolved span, non-empty explanation)"] = len(notes)
    return ReadResult(chapters, notes, stats, sorted(commentators))


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


def _natural(name: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


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
