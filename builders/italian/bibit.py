"""Biblioteca Italiana books (TEI P4, `TEI.2`, no file extension) -> texts, poems, snippets (2.4, 3.3, 3.5).

Reading: every file in the folder (recursively) that starts with "<" (after a byte order
mark; UTF-8 or UTF-16) and has a `TEI.2` or `TEI` root is a book; files that are not XML
(README, JSON dumps, zip archives) are counted and skipped; an empty file, a file that is
not well-formed XML or a TEI book without a header is an error naming it
(`--skip-bad-files` skips and counts it instead). NUL bytes are removed before parsing
(`tei.parse_xml`) and each removal is named in the summary. From the header: title,
author (titleStmt, else sourceDesc; "" for an anonymous work), language(s) (langUsage), genre (the
`keywords scheme="CGB"` term, e.g. "Poesia", "Narrativa"), the `creation/date`.

Text units (what snippets are cut from):

- verse: each poem (the innermost `div*` holding `<l>` lines) keeps its lines; lines split
  between speakers (`part="I"`, `"M"`, `"F"`) are joined into one; a new `lg` starts a
  stanza (shown as an empty line);
- prose: `<p>` text is split into sentences (after . ! ? … followed by a space and an
  upper-case letter or a quote);
- left out: `head`, `speaker`, `stage`, `note`, `argument`, `castList`, `trailer`,
  front and back matter, and anything marked in a language other than Italian
  (`lang`/`xml:lang` not "ita"/"it"), e.g. Latin stanzas.

Snippets (3.3: "split at natural sentence endings"): the text is cut into sentences, and
sentences are accumulated in order; a snippet is emitted as soon as it holds at least
`min_chars` characters; a sentence that would take it past `max_chars` starts a new snippet
(the short text collected so far is dropped and counted); a sentence longer than
`max_chars` on its own is skipped and counted. Verse: the sentences of one poem, its lines
joined with newlines (an empty line between stanzas); a sentence ends at . ! ? or …
(closing quotes allowed) at the end of a line, or inside a line when a capital letter
follows, and at the end of the poem (a poem's last sentence may lack end punctuation,
as in stanzas of libretti; such snippets are counted); snippets never cross poems.
Prose: sentences are joined with spaces and never cross books.

Editorial marks are not text: a verse line without a letter (a lacuna printed as a row of
dots, asterisks) is left out and cuts the poem there (counted), and a snippet's minimum
length counts real text only (`real_length`: without spaced dots, asterisks or bracketed
ellipses). A verse snippet is whole lines (`whole_lines`: a sentence that ends inside a
line runs on to the next sentence ending at a line's end).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from histbench.core.errors import SourceError

from .tei import (
    BadFiles,
    children,
    find_all,
    find_first,
    inherited_lang,
    local,
    looks_like_xml,
    normalise_space,
    parse_xml,
    plain_text,
)

ITALIAN = ("ita", "it", "it-x-800")
_UNIT_SKIP = {"head", "speaker", "stage", "note", "argument", "castList", "trailer", "front", "back", "fw",
              "figure", "figDesc", "del", "sic", "bibl", "docAuthor", "docTitle", "titlePage", "byline", "epigraph"}
_LETTER = re.compile(r"[^\W\d_]")
# editorial marks inside a line: runs of spaced dots or asterisks, an ellipsis in brackets
_MARKS = re.compile(r"(?:\.\s*){3,}|\*(?:\s*\*)*|[\[(]\s*(?:\.\s*|…\s*)+[\])]")


def real_length(text: str) -> int:
    """Characters of real text: the snippet without lacuna dots, asterisks and bracketed
    ellipses (editorial marks), its spacing collapsed."""
    return len(" ".join(_MARKS.sub(" ", text).split()))


_SENTENCE = re.compile(r"(?<=[.!?…])[»”’\"')\]]*\s+(?=[«“\"'(\[]?[A-ZÀ-ÖØ-Þ])")
_DIV = re.compile(r"^div\d?$")


@dataclass
class Poem:
    """A poem (a div holding verse) with its lines in order; `stanza_starts` are the
    indices of the lines that open a new stanza (the first line excluded)."""

    index: int
    title: str
    lines: list[str]
    stanza_starts: list[int] = field(default_factory=list)

    def text(self) -> str:
        """The poem as shown in snippets: lines joined by newlines, an empty line between stanzas."""
        parts = []
        starts = set(self.stanza_starts)
        for n, line in enumerate(self.lines):
            if n:
                parts.append("\n\n" if n in starts else "\n")
            parts.append(line)
        return "".join(parts)


@dataclass
class Book:
    id: str
    file: str
    title: str
    author: str
    author_alt: str | None
    languages: list[str]
    genre: str | None
    creation: str | None
    kind: str                       # "verse" or "prose" (what most of its text is)
    units: list[str]                # lines (verse) or sentences (prose); "" marks a stanza break
    poems: list[Poem] = field(default_factory=list)
    stats: Counter = field(default_factory=Counter)


def _is_italian(element) -> bool:
    lang = inherited_lang(element)
    return lang is None or lang.lower() in ITALIAN or lang.lower().startswith("it")


def _line_text(line) -> str:
    return plain_text(line, skip=("note", "del", "fw", "figure", "sic", "stage", "speaker"))


def _verse_units(text_el, stats: Counter) -> tuple[list[str], list[Poem]]:
    units: list[str] = []
    poems: list[Poem] = []
    pending_part: str | None = None

    def flush_stanza() -> None:
        if units and units[-1] != "":
            units.append("")

    divs = [el for el in text_el.iter() if _DIV.match(local(el))]
    containers = [
        div for div in divs  # a poem is the innermost div holding verse (directly or in lg/sp)
        if not any(_DIV.match(local(c)) and find_first(c, "l") is not None for c in children(div))
    ] or [text_el]
    for div in containers:
        lines = [el for el in div.iter() if local(el) == "l"]
        if not lines:
            continue
        head = find_first(div, "head")
        title = plain_text(head) if head is not None else ""
        poem_lines: list[str] = []
        stanza_starts: list[int] = []
        flush_stanza()
        last_group = None
        for line in lines:
            if any(local(a) in _UNIT_SKIP for a in line.iterancestors()):
                continue
            if not _is_italian(line):
                stats["verse lines not in Italian (left out)"] += 1
                continue
            text = _line_text(line)
            if not text:
                continue
            if not _LETTER.search(text):
                # a lacuna (". . . . . .") or another editorial mark standing for a line: not text;
                # the poem is cut there, so no snippet joins the lines on either side of a gap
                stats["verse lines that are lacunae or editorial marks (no letter; left out, the poem cut there)"] += 1
                if poem_lines:
                    poems.append(Poem(len(poems), title, poem_lines, stanza_starts))
                    poem_lines, stanza_starts = [], []
                    flush_stanza()
                last_group, pending_part = None, None
                continue
            part = line.get("part")
            group = line.getparent()
            if part in ("M", "F") and pending_part is not None and poem_lines:
                # the rest of a verse split between speakers: same line
                last = max(i for i, u in enumerate(units) if u)
                units[last] = units[last] + " " + text
                poem_lines[-1] = poem_lines[-1] + " " + text
            else:
                if last_group is not None and group is not last_group and local(group) in ("lg", "sp"):
                    flush_stanza()
                    if poem_lines:
                        stanza_starts.append(len(poem_lines))
                units.append(text)
                poem_lines.append(text)
            last_group = group
            pending_part = part if part in ("I", "M") else None
        if poem_lines:
            poems.append(Poem(len(poems), title, poem_lines, stanza_starts))
    while units and units[-1] == "":
        units.pop()
    return units, poems


def _prose_units(text_el, stats: Counter) -> list[str]:
    units: list[str] = []
    for p in [el for el in text_el.iter() if local(el) == "p"]:
        if any(local(a) in _UNIT_SKIP or local(a) == "l" for a in p.iterancestors()):
            continue
        if not _is_italian(p):
            stats["prose paragraphs not in Italian (left out)"] += 1
            continue
        text = plain_text(p, skip=("note", "del", "fw", "figure", "sic"))
        if not text:
            continue
        units.extend(s.strip() for s in _SENTENCE.split(text) if s.strip())
    return units


def read_book(path: Path, notes: list[str] | None = None) -> Book | None:
    """A Biblioteca Italiana book, or None when the file is XML but not a TEI book."""
    root = parse_xml(path, notes).getroot()
    if local(root) not in ("TEI.2", "TEI"):
        return None
    stats: Counter = Counter()
    header = find_first(root, "teiHeader")
    if header is None:
        raise SourceError("a TEI book without a <teiHeader>", file=path)
    title_stmt = find_first(header, "titleStmt")
    title_el = find_first(title_stmt, "title") if title_stmt is not None else None
    author_el = find_first(title_stmt, "author") if title_stmt is not None else None
    source = find_first(header, "sourceDesc")
    source_author = find_first(source, "author") if source is not None else None
    author = plain_text(author_el) if author_el is not None else ""
    author_alt = plain_text(source_author) if source_author is not None else None
    if not author and author_alt:
        author, author_alt = author_alt, None
    # an anonymous work (e.g. the Liber Maiolichinus) names no author: it is read, and the
    # tasks that need an author's birth year count it and leave it out
    languages = []
    usage = find_first(header, "langUsage")
    if usage is not None:
        for lang in children(usage, "language"):
            ident = lang.get("id") or lang.get("ident") or ""
            if ident:
                languages.append(ident.lower())
    genre = None
    for keywords in find_all(header, "keywords"):
        if (keywords.get("scheme") or "").upper() == "CGB":
            term = find_first(keywords, "term")
            genre = plain_text(term) if term is not None else None
    creation_el = find_first(header, "creation")
    creation = plain_text(creation_el) if creation_el is not None else None
    text_el = find_first(root, "text")
    if text_el is None:
        raise SourceError("the book has no <text>", file=path)
    body = find_first(text_el, "body")
    if body is None:
        body = text_el
    n_lines = sum(1 for el in body.iter() if local(el) == "l")
    n_paragraph_chars = sum(len(plain_text(p)) for p in body.iter() if local(p) == "p")
    n_line_chars = sum(len(plain_text(line)) for line in body.iter() if local(line) == "l")
    poems: list[Poem] = []
    if n_lines and n_line_chars >= n_paragraph_chars:
        units, poems = _verse_units(body, stats)
        kind = "verse"
    else:
        units = _prose_units(body, stats)
        kind = "prose"
    idno = find_first(header, "idno")
    book_id = (plain_text(idno) if idno is not None else "") or path.name
    return Book(
        id=book_id, file=path.name, title=(plain_text(title_el) if title_el is not None else path.name),
        author=normalise_space(author), author_alt=author_alt, languages=languages, genre=genre,
        creation=creation, kind=kind, units=units, poems=poems, stats=stats,
    )


def read_books(folder: Path, bad: BadFiles | None = None, notes: list[str] | None = None) -> tuple[list[Book], Counter]:
    """Every TEI book under `folder`; damaged files go to `bad` (an error unless skipping)."""
    bad = bad or BadFiles()
    stats: Counter = Counter()
    books: list[Book] = []
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file() and not p.name.startswith(".")):
        try:
            if path.stat().st_size == 0:
                raise SourceError("the file is empty (expected a TEI book)", file=path)
            if not looks_like_xml(path):
                stats["files that are not XML (README, JSON, archives; not read)"] += 1
                continue
            book = read_book(path, notes)
        except SourceError as exc:
            bad.handle(exc, "bibit")
            stats["damaged files skipped (--skip-bad-files)"] += 1
            continue
        if book is None:
            stats["XML files that are not TEI books (not read)"] += 1
            continue
        books.append(book)
        stats.update(book.stats)
    stats["books read"] = len(books)
    return books, stats


@dataclass
class Snippet:
    id: str
    book: str
    author: str
    text: str


_VERSE_END = re.compile(r"[.!?…][»”’\"')\]]*")


def verse_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of a poem's text (see the module doc)."""
    spans = []
    start = 0
    for match in _VERSE_END.finditer(text):
        end = match.end()
        closing = re.match(r"[ \t]*[-–—](?=[ \t]*(?:\n|$))", text[end:])   # a dash closing direct speech
        if closing:
            end += closing.end()
        rest = text[end:]
        gap = len(rest) - len(rest.lstrip())
        if end < len(text) and gap == 0:
            continue                                  # "..." inside a word, "?»" glued to text
        after = rest.lstrip(" \t")
        at_line_end = not after or after.startswith("\n")
        if not at_line_end and not re.match(r"[-–—«“\"'(\[]?\s*[A-ZÀ-ÖØ-Þ]", after):
            continue                                  # mid-line, a lower-case word follows
        if text[start:end].strip():
            spans.append((start, end))
        start = end + gap
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


def whole_lines(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The sentence spans merged so that each ends at the end of a line (a snippet is whole
    lines: a sentence ending inside a line runs on to the end of the line's sentence)."""
    out: list[tuple[int, int]] = []
    start = None
    for a, b in spans:
        start = a if start is None else start
        rest = text[b:]
        if not rest.strip() or rest.lstrip(" \t").startswith("\n"):
            out.append((start, b))
            start = None
    if start is not None:
        out.append((start, spans[-1][1]))
    return out


def cut_snippets(book: Book, min_chars: int, max_chars: int, stats: Counter) -> list[Snippet]:
    """Snippets of `min_chars`..`max_chars` characters cut at sentence ends (module doc)."""
    snippets: list[Snippet] = []
    if book.kind == "verse":
        for poem in book.poems:
            text = poem.text()
            # consecutive sentences are sliced from the poem's text: line breaks stay as written
            spans = whole_lines(text, verse_sentences(text))
            for a, b in _accumulate(spans, lambda parts, t=text: t[parts[0][0]:parts[-1][1]], min_chars, max_chars,
                                    "poem", stats):
                snippets.append(Snippet(f"{book.id}-{len(snippets):04d}", book.id, book.author, text[a:b]))
                if not _VERSE_END.fullmatch(text[a:b][-1:]) and not re.search(r"[.!?…][»”’\"')\]]*$", text[a:b]):
                    stats["verse snippets ending where a poem ends without end punctuation (kept)"] += 1
    else:
        sentences = [(s, s) for s in book.units if s]
        for a, _ in _accumulate(sentences, lambda parts: " ".join(p[0] for p in parts), min_chars, max_chars,
                                "book", stats, prose=True):
            snippets.append(Snippet(f"{book.id}-{len(snippets):04d}", book.id, book.author, a))
    return snippets


def _accumulate(items: list, render, min_chars: int, max_chars: int, where: str, stats: Counter,
                prose: bool = False) -> list[tuple]:
    """Group consecutive items into snippets; returns (start, end) spans (verse) or
    (text, text) pairs (prose)."""
    out: list[tuple] = []
    buf: list = []
    for item in items:
        if len(render([item])) > max_chars:
            stats[f"sentences longer than {max_chars} characters (skipped)"] += 1
            if buf:
                stats["text shorter than the minimum before a cut (dropped)"] += 1
            buf = []
            continue
        if buf and len(render(buf + [item])) > max_chars:
            stats["text shorter than the minimum before a cut (dropped)"] += 1
            buf = []
        buf.append(item)
        if real_length(render(buf)) >= min_chars:
            out.append((render(buf), None) if prose else (buf[0][0], buf[-1][1]))
            buf = []
    if buf:
        stats[f"text left at the end of a {where}, shorter than the minimum (dropped)"] += 1
    return out
