"""Safe XML reading and TEI text linearisation with character offsets.

Every XML file of this benchmark (TEI P5 letters and commentaries, TEI P4 books of the
Biblioteca Italiana with a DOCTYPE pointing at a host that cannot be reached) is parsed
with lxml from bytes, never touching the network:

- `no_network=True`, `load_dtd=False`, `resolve_entities=False`;
- a resolver that answers every external load (DTD subsets, XIncludes) with an empty
  document, so nothing outside the file is ever read, whatever libxml2 decides to fetch;
- `collect_ids=False`: duplicate `xml:id`s (present in real commentaries) are a validity
  problem, not a well-formedness one, and must not stop a build.

Encodings: the bytes are given to libxml2 as they are, so UTF-8 (with or without a byte
order mark) and UTF-16 (with a byte order mark, or recognised from its first "<") are
read by the XML declaration's rules. NUL bytes, which XML forbids, are removed from files
that are not UTF-16 before parsing (one real Biblioteca Italiana book has a stray NUL in
its header); each removal is reported to the caller (`parse_xml(path, notes)`) so the
build summary names the file.

Entities: the five predefined ones and character references are always expanded. Entities
a file declares in its own DOCTYPE (internal entities) are expanded too (lxml's
`resolve_entities="internal"`), after histbench has measured, from the declarations, what
each expands to: an entity whose expansion would pass `MAX_ENTITY_EXPANSION` characters
(the "billion laughs" of entities nested in entities) or that refers to itself refuses the
file. An entity the file uses but does not declare (declared in an external DTD, which is
never read), or an external one, refuses the file too: its words would otherwise be
silently lost.

Nesting: an element nested deeper than `MAX_DEPTH` levels refuses the file (the text
walkers recurse), instead of a RecursionError that `--skip-bad-files` could not skip.

A file that is empty or not well-formed XML raises `SourceError` naming the file, the line
and the column. `BadFiles` lets a whole-corpus build skip such files (`--skip-bad-files`),
counted and named in the summary, instead of stopping.

`TextBuilder` turns a TEI element tree into the plain text a model sees, keeping track of
where marked-up spans (entities) start and end in that text. The rules (see
`linearise`): whitespace runs collapse to one space; block elements (p, ab, opener,
closer, salute, dateline, ...) are separated by a newline; `lb`/`pb`/`cb` are a space,
or nothing at all with `break="no"` (a word split across lines is joined);
`pc force="inter"` (an end-of-line hyphen) disappears and joins the word; `w` and blocks
split with `part="I"/"M"/"F"` are joined; `choice` shows one reading (expan over abbr,
corr over sic, orig over reg); `del`, `note`, `fw`, `figure` and `gap` add no text.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from histbench.core.errors import SourceError

XML_NS = "http://www.w3.org/XML/1998/namespace"
XML_LANG = f"{{{XML_NS}}}lang"
XML_ID = f"{{{XML_NS}}}id"

_WS = re.compile(r"\s+")


class _NoExternal(etree.Resolver):
    """Answer every external resource (DTD, entity, XInclude) with an empty document."""

    def resolve(self, system_url, public_id, context):  # noqa: D401 - lxml API
        return self.resolve_string("", context)


#: the deepest element nesting a file may have (real TEI nests a few dozen levels)
MAX_DEPTH = 500
#: the most characters one internal entity may expand to
MAX_ENTITY_EXPANSION = 1_000_000


def _parser(resolve_entities: bool | str = False) -> etree.XMLParser:
    parser = etree.XMLParser(
        no_network=True, load_dtd=False, resolve_entities=resolve_entities, collect_ids=False,
        remove_blank_text=False, huge_tree=True,
    )
    parser.resolvers.add(_NoExternal())
    return parser


_ENTITY_REF = re.compile(r"&([A-Za-z_:][-A-Za-z0-9._:]*);")
_PREDEFINED = {"lt", "gt", "amp", "apos", "quot"}


def _check_entities(tree: etree._ElementTree, path: Path) -> bool:
    """Whether the file declares internal entities that are used; refuses (SourceError) an
    expansion over MAX_ENTITY_EXPANSION characters, a self-reference, an external entity,
    and an entity used but not declared in the file."""
    dtd = tree.docinfo.internalDTD
    declared = {}
    external = set()
    for entity in (dtd.iterentities() if dtd is not None else ()):
        if entity.content is None or entity.system_url:
            external.add(entity.name)
        else:
            declared[entity.name] = entity.content
    sizes: dict[str, int] = {}

    def size(name: str, seen: tuple[str, ...]) -> int:
        if name in sizes:
            return sizes[name]
        if name in seen:
            raise SourceError(f"the entity &{name}; refers to itself (through {' -> '.join(seen)}); refused", file=path)
        content = declared[name]
        total = len(_ENTITY_REF.sub("", content))
        for ref in _ENTITY_REF.findall(content):
            if ref in _PREDEFINED:
                total += 1
            elif ref in declared:
                total += size(ref, (*seen, name))
            else:
                raise SourceError(f"the entity &{name}; refers to &{ref};, which the file does not declare; refused",
                                  file=path)
            if total > MAX_ENTITY_EXPANSION:
                raise SourceError(f"the entity &{name}; expands to more than {MAX_ENTITY_EXPANSION:,} characters "
                                  "(entities nested in entities); refused", file=path)
        sizes[name] = total
        return total

    for name in declared:
        size(name, ())
    used = False
    for node in tree.iter(etree.Entity):
        name = node.name
        if name in external:
            raise SourceError(f"the entity &{name}; is external (its text is in another file, which histbench does not "
                              "read); refused rather than losing its words", file=path, row=node.sourceline)
        if name not in declared:
            raise SourceError(f"the entity &{name}; is not declared in the file (an external DTD is never read); "
                              "refused rather than losing its words", file=path, row=node.sourceline)
        used = True
    return used


def _check_depth(tree: etree._ElementTree, path: Path) -> None:
    """Refuse an element nested deeper than MAX_DEPTH (walked without recursion)."""
    stack = [(tree.getroot(), 1)]
    while stack:
        element, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SourceError(f"elements nested more than {MAX_DEPTH} levels deep (<{local(element) or '?'}> at line "
                              f"{element.sourceline}); refused", file=path, row=element.sourceline)
        stack.extend((child, depth + 1) for child in element)


_BOMS_UTF16 = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def is_utf16(data: bytes) -> bool:
    """UTF-16 by its byte order mark or by an XML document's first character ("<" + NUL)."""
    return data.startswith(_BOMS_UTF16) or data[:2] in (b"<\x00", b"\x00<")


def leading_text(data: bytes, n: int = 4096) -> str:
    """The first characters of a file as text (UTF-8 or UTF-16, BOM removed), for sniffing."""
    head = data[: 2 * n]
    if is_utf16(head):
        encoding = "utf-16" if head.startswith(_BOMS_UTF16) else ("utf-16-le" if head[:1] == b"<" else "utf-16-be")
        return head.decode(encoding, errors="ignore").lstrip("\ufeff")
    return head.decode("utf-8", errors="ignore").lstrip("\ufeff")


def looks_like_xml(path: Path) -> bool:
    """Whether a file starts (after a byte order mark and white space) with "<"."""
    try:
        with Path(path).open("rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise SourceError(f"cannot read the file: {exc}", file=path) from exc
    return leading_text(head).lstrip().startswith("<")


def parse_xml(path: Path, notes: list[str] | None = None) -> etree._ElementTree:
    """Parse one XML file safely (see module doc); SourceError names file and line.

    `notes` (optional) receives one line per repair made before parsing (NUL bytes removed).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read the file: {exc}", file=path) from exc
    if not leading_text(data).strip():
        raise SourceError("the file is empty (expected an XML document)", file=path)
    if not is_utf16(data) and b"\x00" in data:
        count = data.count(b"\x00")
        data = data.replace(b"\x00", b"")
        if notes is not None:
            notes.append(f"{path.name}: {count} NUL byte{'s' if count > 1 else ''} removed before parsing")
    try:
        tree = etree.parse(io.BytesIO(data), _parser(), base_url=None)
        if _check_entities(tree, path):   # measured and declared in the file: expanded
            tree = etree.parse(io.BytesIO(data), _parser(resolve_entities="internal"), base_url=None)
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (exc.lineno, 0)
        message = exc.msg or str(exc)
        message = re.sub(r",? line \d+, column \d+.*$", "", message).strip()
        raise SourceError(f"line {line}, column {column}: not well-formed XML: {message}", file=path) from exc
    _check_depth(tree, path)
    return tree


def local(element) -> str:
    """The element's name without namespace ('' for comments and processing instructions)."""
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def lang_of(element) -> str | None:
    """xml:lang (TEI P5) or lang (TEI P4) of the element itself."""
    return element.get(XML_LANG) or element.get("lang")


def inherited_lang(element) -> str | None:
    node = element
    while node is not None:
        value = lang_of(node)
        if value:
            return value
        node = node.getparent()
    return None


def find_all(root, name: str) -> list:
    """Every descendant element whose local name is `name` (namespace-agnostic)."""
    return [el for el in root.iter() if local(el) == name]


def find_first(root, name: str):
    for el in root.iter():
        if local(el) == name:
            return el
    return None


def children(element, name: str | None = None) -> list:
    return [c for c in element if isinstance(c.tag, str) and (name is None or local(c) == name)]


def plain_text(element, skip: Iterable[str] = ("note", "del", "fw", "figure", "figDesc")) -> str:
    """All text of an element (tails included, skipped children's own text left out),
    whitespace collapsed."""
    skip = set(skip)
    parts: list[str] = []

    def walk(el) -> None:
        if local(el) in skip:
            return
        if isinstance(el.tag, str) and el.text:
            parts.append(el.text)
        for child in el:
            walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(element)
    return _WS.sub(" ", "".join(parts)).strip()


# ----------------------------------------------------------------------------- builder


@dataclass
class Mark:
    """A marked-up span in the linearised text (start/end are character offsets)."""

    key: int
    element: str
    attrs: dict
    start: int | None = None
    end: int | None = None


@dataclass
class TextBuilder:
    """Accumulates text with lazy separators, so offsets point at the final string.

    - `text(s)`: content; inner whitespace collapses to one space; leading/trailing
      whitespace becomes a pending space.
    - `space()` / `block()`: a pending separator (a block is a newline and wins over a space).
    - `glue()`: the next content follows the previous one with no separator at all, even
      across blocks (hyphenated words, `break="no"`, split `w`).
    - `start(mark)` / `end(mark)`: a span starts at the next content character (after
      the separator) and ends right after the last content character.
    """

    parts: list[str] = field(default_factory=list)
    length: int = 0
    pending: int = 0          # 0 none, 1 space, 2 newline
    glued: bool = False
    waiting: list[Mark] = field(default_factory=list)

    def _emit(self, core: str) -> None:
        if self.length and not self.glued and self.pending:
            sep = "\n" if self.pending == 2 else " "
            self.parts.append(sep)
            self.length += 1
        self.pending = 0
        self.glued = False
        for mark in self.waiting:
            mark.start = self.length
        self.waiting = []
        self.parts.append(core)
        self.length += len(core)

    def text(self, value: str | None) -> None:
        if not value:
            return
        core = value.strip()
        if value[:1].isspace():
            self.space()
        if core:
            self._emit(_WS.sub(" ", core))
            if value[-1:].isspace():
                self.space()

    def space(self) -> None:
        if not self.glued:
            self.pending = max(self.pending, 1)

    def block(self) -> None:
        if not self.glued:
            self.pending = 2

    def glue(self) -> None:
        self.glued = True
        self.pending = 0

    def start(self, mark: Mark) -> None:
        self.waiting.append(mark)

    def end(self, mark: Mark) -> None:
        if mark in self.waiting:      # nothing was emitted inside the span
            self.waiting.remove(mark)
            mark.start = mark.end = None
            return
        mark.end = self.length

    def result(self) -> str:
        return "".join(self.parts)


BLOCKS = frozenset({
    "p", "ab", "opener", "closer", "salute", "dateline", "signed", "postscript", "div", "div1", "div2",
    "div3", "head", "list", "item", "lg", "l", "address", "addrLine", "trailer", "byline", "argument",
    "epigraph", "table", "row", "sp", "speaker", "stage", "quote",
})
SILENT = frozenset({"note", "del", "fw", "figure", "figDesc", "graphic", "gap", "surplus", "facsimile", "teiHeader", "back", "front"})
CHOICE_PREFERENCE = ("expan", "corr", "orig", "reg", "sic", "abbr", "seg")

MarkFn = Callable[[object], dict | None]


def linearise(root, marker: MarkFn | None = None, skip: Callable[[object], bool] | None = None) -> tuple[str, list[Mark]]:
    """Plain text of `root` and the marks that `marker` asked for.

    `marker(element)` returns a dict of attributes for an element to be marked (a span
    is recorded around its content), or None. `skip(element)` may drop further elements
    (with their content, keeping their tail).
    """
    builder = TextBuilder()
    marks: list[Mark] = []

    def walk(el) -> None:
        name = local(el)
        if not name:                      # comment or processing instruction
            return
        if name in SILENT or (skip is not None and skip(el)):
            return
        part = el.get("part")
        if name in ("lb", "pb", "cb"):
            if el.get("break") == "no":
                builder.glue()
            else:
                builder.space()
            return
        if name == "pc" and el.get("force") == "inter":
            builder.glue()
            return
        if name == "space":
            builder.space()
            return
        if name == "choice":
            options = {local(c): c for c in el if isinstance(c.tag, str)}
            chosen = next((options[n] for n in CHOICE_PREFERENCE if n in options), None)
            if chosen is None and options:
                chosen = next(iter(options.values()))
            if chosen is not None:
                _content(chosen)
            return
        is_block = name in BLOCKS
        if is_block and part not in ("M", "F"):
            builder.block()
        if name == "w" and part in ("M", "F"):
            builder.glue()
        mark = None
        if marker is not None:
            attrs = marker(el)
            if attrs is not None:
                mark = Mark(len(marks), name, attrs)
                marks.append(mark)
                builder.start(mark)
        _content(el)
        if mark is not None:
            builder.end(mark)
        if name == "w" and part in ("I", "M"):
            builder.glue()
        if is_block:
            if part in ("I", "M"):
                builder.space()
            else:
                builder.block()

    def _content(el) -> None:
        builder.text(el.text)
        for child in el:
            walk(child)
            builder.text(child.tail)

    walk(root)
    return builder.result(), marks


def normalise_space(text: str) -> str:
    return _WS.sub(" ", text).strip()


class BadFiles:
    """Damaged input files: an error by default; skipped and recorded with `skip=True`.

    `handle(error)` re-raises the error (with a hint naming `--skip-bad-files`) unless
    skipping, in which case the file and the reason are recorded for the build summary.
    """

    HINT = "a whole-corpus build can skip and count such files with --skip-bad-files"

    def __init__(self, skip: bool = False) -> None:
        self.skip = skip
        self.skipped: list[dict] = []

    def handle(self, error: SourceError, role: str) -> None:
        if not self.skip:
            raise SourceError(f"{error.message} ({self.HINT})", file=error.file, row=error.row, field=error.field) from error
        self.skipped.append({"role": role, "file": Path(error.file).name if error.file else None, "error": error.message})
