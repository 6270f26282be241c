"""Biblioteca Italiana books (TEI P4, `TEI.2`, no file extension) -> texts, poems, snippets (2.4, 3.3, 3.5).

Reading: every file in the folder (recursively) that parses as XML with a `TEI.2` or `TEI`
root is a book; other files (README, JSON dumps) are counted and skipped. From the
header: title, author (titleStmt, else sourceDesc), language(s) (langUsage), genre (the
`keywords scheme="CGB"` term, e.g. "Poesia", "Narrativa"), the `creation/date`.

Text units (what snippets are cut from):

- verse: each `<l>` is a line; lines split between speakers (`part="I"`, `"M"`, `"F"`) are
  joined into one; a new `lg` or a new poem (`div*`) starts a stanza, shown as an empty
  line between verses;
- prose: `<p>` text is split into sentences (after . ! ? … followed by a space and an
  upper-case letter or a quote);
- left out: `head`, `speaker`, `stage`, `note`, `argument`, `castList`, `trailer`,
  front and back matter, and anything marked in a language other than Italian
  (`lang`/`xml:lang` not "ita"/"it"), e.g. Latin stanzas.

Snippets (3.3): units are accumulated in order and a snippet is emitted as soon as it
holds at least `min_chars` characters; a unit that would take it past `max_chars` starts a
new snippet (the short one collected so far is dropped and counted); a unit longer than
`max_chars` on its own is skipped and counted. Snippets never cross books.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from histbench.builders.core.errors import SourceError

from .tei import children, find_all, find_first, inherited_lang, local, normalise_space, parse_xml, plain_text

ITALIAN = ("ita", "it", "it-x-800")
_UNIT_SKIP = {"head", "speaker", "stage", "note", "argument", "castList", "trailer", "front", "back", "fw",
              "figure", "figDesc", "del", "sic", "bibl", "docAuthor", "docTitle", "titlePage", "byline", "epigraph"}
_SENTENCE = re.compile(r"(?<=[.!?…])[»”’\"')\]]*\s+(?=[«“\"'(\[]?[A-ZÀ-ÖØ-Þ])")
_DIV = re.compile(r"^div\d?$")


@dataclass
class Poem:
    """A poem (a div holding verse) with its lines in order."""

    index: int
    title: str
    lines: list[str]


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
    return plain_text(line, skip=("note", "del", "fw", "figure", "sic"))


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
                units.append(text)
                poem_lines.append(text)
            last_group = group
            pending_part = part if part in ("I", "M") else None
        if poem_lines:
            poems.append(Poem(len(poems), title, poem_lines))
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


def read_book(path: Path) -> Book | None:
    """A Biblioteca Italiana book, or None when the file is XML but not a TEI book."""
    root = parse_xml(path).getroot()
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
    if not author:
        raise SourceError("the book's header names no author (titleStmt/author or sourceDesc author)", file=path)
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


def read_books(folder: Path) -> tuple[list[Book], Counter]:
    stats: Counter = Counter()
    books: list[Book] = []
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file() and not p.name.startswith(".")):
        head = path.read_bytes()[:4096].lstrip()
        if not head.startswith(b"<"):
            stats["files that are not XML (skipped)"] += 1
            continue
        book = read_book(path)
        if book is None:
            stats["XML files that are not TEI books (skipped)"] += 1
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


def cut_snippets(book: Book, min_chars: int, max_chars: int, stats: Counter) -> list[Snippet]:
    """Snippets of `min_chars`..`max_chars` characters cut at line or sentence ends."""
    joiner = "\n" if book.kind == "verse" else " "
    snippets: list[Snippet] = []
    buf: list[str] = []

    def length(parts: list[str]) -> int:
        return len(_join(parts, joiner))

    def emit() -> None:
        text = _join(buf, joiner)
        snippets.append(Snippet(f"{book.id}-{len(snippets):04d}", book.id, book.author, text))

    for unit in book.units:
        if unit == "":
            if buf:
                buf.append("")
            continue
        if len(unit) > max_chars:
            stats[f"{'lines' if book.kind == 'verse' else 'sentences'} longer than {max_chars} characters (skipped)"] += 1
            if buf and length(buf) >= min_chars:
                emit()
            elif buf:
                stats["text shorter than the minimum before a cut (dropped)"] += 1
            buf = []
            continue
        if buf and length(buf + [unit]) > max_chars:
            if length(buf) >= min_chars:
                emit()
            else:
                stats["text shorter than the minimum before a cut (dropped)"] += 1
            buf = []
        buf.append(unit)
        if length(buf) >= min_chars:
            emit()
            buf = []
    if buf:
        stats["text left at the end of a book, shorter than the minimum (dropped)"] += 1
    return snippets


def _join(parts: list[str], joiner: str) -> str:
    """Lines joined with newlines, a stanza break as an empty line; no leading/trailing breaks."""
    while parts and parts[0] == "":
        parts = parts[1:]
    while parts and parts[-1] == "":
        parts = parts[:-1]
    out: list[str] = []
    for part in parts:
        if part == "":
            if out and out[-1] != "":
                out.append("")
            continue
        out.append(part)
    if joiner == "\n":
        return "\n".join(out)
    return joiner.join(p for p in out if p)
