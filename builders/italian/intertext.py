"""Intertextuality detection from DanteSources RDF and Biblioteca Italiana poems (3.5).

The graph (one or more files: Turtle, RDF/XML, N-Triples; read with rdflib, files merged)
is queried with the SPARQL file `sources/italian/dantesources.rq`, written in the
vocabulary of the DanteSources data (see that file). Rows whose type is not in `types`
(default: "CONCORDANZA STRINGENTE", direct verbal correspondence) are counted and left out.

Reading is bounded: a file over `MAX_RDF_BYTES`, or a graph over `max_triples` triples, is
refused with an error naming the file. RDF/XML is first parsed by lxml with internal
entities expanded under libxml2's amplification limit (a "billion laughs" file is refused
at once), external entities and DTDs never loaded; rdflib then reads the expanded
document, which has no DOCTYPE left to expand.

For each kept citation the cited lines are located in a Biblioteca Italiana poem: among
the poems of the books by the cited author (all books when the author is not found), the
window of consecutive lines that best matches the cited text (rapidfuzz ratio on folded
text, at least `min_score`) wins; a cited text like "vv. 11-12" names the lines directly
(in the poem whose title matches the cited work best). The poem is cut into chunks of
`chunk_lines` (4) lines from its first line; the chunk holding most cited lines is the
positive, one other chunk of the same poem (seeded) the negative; the two are shown in
seeded order as A and B. Identical (passage, positive chunk) pairs are made once.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from histbench.core.errors import SourceError

from .authors import AuthorTable, fold
from .bibit import Book, Poem

RDF_FORMATS = {"ttl": "turtle", "turtle": "turtle", "rdf": "xml", "xml": "xml", "owl": "xml", "nt": "nt", "n3": "n3"}
REQUIRED_VARS = ("citation", "type", "danteText", "citedText")
PLACEHOLDERS = {"", "Non disponibile", "Senza titolo"}
_VERSES = re.compile(r"^\s*vv?\.\s*(\d+)(?:\s*[-–]\s*(\d+))?\s*$", re.IGNORECASE)


@dataclass
class Citation:
    id: str
    type: str
    dante_text: str
    cited_text: str
    dante_work: str | None
    dante_location: str | None
    source_work: str | None
    source_title: str | None
    source_author: str | None


MAX_RDF_BYTES = 1 << 30


class _TooManyTriples(Exception):
    pass


def _bounded_graph(limit: int):
    import rdflib

    class BoundedGraph(rdflib.Graph):
        """A graph that refuses to grow past `limit` triples while a parser fills it."""

        def add(self, triple):
            if len(self) >= limit:
                raise _TooManyTriples()
            return super().add(triple)

    return BoundedGraph()


def _expanded_rdfxml(path: Path) -> bytes:
    """RDF/XML with internal entities expanded safely (module doc) and no DOCTYPE left."""
    from lxml import etree

    from .tei import _NoExternal

    parser = etree.XMLParser(resolve_entities="internal", no_network=True, load_dtd=False, huge_tree=False,
                             collect_ids=False)
    parser.resolvers.add(_NoExternal())
    try:
        # from bytes: the resolver answers every load by URL, the document's own included
        tree = etree.parse(io.BytesIO(Path(path).read_bytes()), parser)
    except etree.XMLSyntaxError as exc:
        message = re.sub(r",? line \d+, column \d+.*$", "", exc.msg or str(exc)).strip()
        line = exc.position[0] if exc.position else exc.lineno
        raise SourceError(f"line {line}: cannot read the RDF/XML: {message}", file=path) from exc
    return etree.tostring(tree.getroot(), encoding="utf-8")


def load_graph(paths: list[Path], max_triples: int):
    """One rdflib graph from every file (module doc: bounded, entity-safe)."""
    graph = _bounded_graph(int(max_triples))
    for path in paths:
        path = Path(path)
        fmt = RDF_FORMATS.get(path.suffix.lower().lstrip("."))
        if fmt is None:
            raise SourceError("unknown RDF format (expected .ttl, .rdf, .xml, .owl, .nt)", file=path)
        size = path.stat().st_size
        if size > MAX_RDF_BYTES:
            raise SourceError(f"{size:,} bytes: larger than the {MAX_RDF_BYTES:,} bytes a DanteSources graph file may have",
                              file=path)
        try:
            if fmt == "xml":
                graph.parse(data=_expanded_rdfxml(path), format="xml", publicID=path.resolve().as_uri())
            else:
                graph.parse(str(path), format=fmt)
        except SourceError:
            raise
        except _TooManyTriples as exc:
            raise SourceError(f"the graph has more than {max_triples:,} triples (--rdf-max-triples)", file=path) from exc
        except Exception as exc:  # noqa: BLE001 - rdflib raises many parser-specific types
            message = " ".join(str(exc).split())[:300]
            raise SourceError(f"cannot parse the RDF graph as {fmt}: {type(exc).__name__}: {message}", file=path) from exc
    return graph


def load_citations(paths: list[Path] | Path, query_path: Path, max_triples: int = 10_000_000) -> tuple[list[Citation], Counter]:
    stats: Counter = Counter()
    paths = [paths] if isinstance(paths, str | Path) else list(paths)
    graph = load_graph(paths, max_triples)
    stats["triples"] = len(graph)
    query = Path(query_path).read_text(encoding="utf-8")
    try:
        result = graph.query(query)
    except Exception as exc:  # noqa: BLE001 - pyparsing and rdflib errors alike
        raise SourceError(f"the SPARQL query failed: {exc}", file=query_path) from exc
    names = [str(v) for v in (result.vars or [])]
    missing = [v for v in REQUIRED_VARS if v not in names]
    if missing:
        raise SourceError(f"the SPARQL query must select ?{', ?'.join(missing)}", file=query_path)
    rows: list[Citation] = []
    seen = set()
    for row in result:
        values = {name: (None if row[name] is None else str(row[name])) for name in names}
        for name in ("sourceAuthor", "sourceTitle"):     # the generator's placeholders for missing values
            if (values.get(name) or "").strip() in PLACEHOLDERS:
                values[name] = None
        key = (values["citation"], values.get("sourceWork"))
        if key in seen:
            continue
        seen.add(key)
        rows.append(Citation(
            id=values["citation"], type=(values["type"] or "").strip(), dante_text=(values["danteText"] or "").strip(),
            cited_text=(values["citedText"] or "").strip(), dante_work=values.get("danteWork"),
            dante_location=values.get("danteLocation"), source_work=values.get("sourceWork"),
            source_title=values.get("sourceTitle"), source_author=values.get("sourceAuthor"),
        ))
    if not rows:
        hints = sorted({str(p) for p in graph.predicates() if str(p).endswith(("hasCitingFragment", "tipoCitazione"))})
        hint = f" (the graph has {', '.join(hints)}: put that namespace in the query's PREFIX lines)" if hints else ""
        raise SourceError(f"the SPARQL query found no citations in the graph of {', '.join(p.name for p in map(Path, paths))}{hint}",
                          file=query_path)
    stats["citation rows"] = len(rows)
    return rows, stats


def _chunks(poem: Poem, size: int) -> list[tuple[int, int]]:
    return [(i, min(i + size, len(poem.lines))) for i in range(0, len(poem.lines), size)]


def _locate(citation: Citation, poems: list[tuple[Book, Poem]], min_score: float) -> tuple[Book, Poem, int, int, float] | None:
    from rapidfuzz import fuzz

    verses = _VERSES.match(citation.cited_text)
    if verses:
        first = int(verses.group(1))
        last = int(verses.group(2) or first)
        title = fold(citation.source_title or "")
        best = None
        for book, poem in poems:
            score = fuzz.ratio(fold(poem.title), title) if title else 0.0
            if last <= len(poem.lines) and (best is None or score > best[-1]):
                best = (book, poem, first - 1, last, score)
        return best
    target = fold(citation.cited_text)
    if not target:
        return None
    n_lines = max(1, citation.cited_text.count("\n") + 1, round(len(target) / 40))
    best = None
    for book, poem in poems:
        folded = [fold(line) for line in poem.lines]
        for width in {max(1, n_lines - 1), n_lines, n_lines + 1}:
            for start in range(0, max(1, len(folded) - width + 1)):
                window = " ".join(folded[start:start + width])
                score = fuzz.ratio(window, target)
                if best is None or score > best[-1]:
                    best = (book, poem, start, min(start + width, len(folded)), score)
    if best is None or best[-1] < min_score:
        return None
    return best


def intertext_questions(
    citations: list[Citation], books: list[Book], table: AuthorTable, types: list[str], chunk_lines: int,
    min_score: float, seed: int, stats: Counter,
) -> list[dict]:
    rng = np.random.default_rng(seed)
    wanted = {t.strip().upper() for t in types}
    by_author: dict[str, list[tuple[Book, Poem]]] = {}
    everything: list[tuple[Book, Poem]] = []
    for book in books:
        author = table.find(book.author, book.author_alt)
        key = author.name if author else fold(book.author)
        for poem in book.poems:
            by_author.setdefault(key, []).append((book, poem))
            everything.append((book, poem))
    questions: list[dict] = []
    made = set()
    for citation in citations:
        if citation.type.upper() not in wanted:
            stats[f"citations of type {citation.type or '(none)'} (left out)"] += 1
            continue
        if not citation.dante_text or not citation.cited_text:
            stats["citations without Dante's text or the cited text (left out)"] += 1
            continue
        author = table.find(citation.source_author) if citation.source_author else None
        key = author.name if author else fold(citation.source_author or "")
        pool = by_author.get(key)
        if not pool:
            stats["citations whose source author has no Biblioteca Italiana book (searched all books)"] += 1
            pool = everything
        located = _locate(citation, pool, min_score)
        if located is None:
            stats["citations whose cited lines were not found in any poem (left out)"] += 1
            continue
        book, poem, first, last, score = located
        chunks = _chunks(poem, chunk_lines)
        overlaps = [max(0, min(b, last) - max(a, first)) for a, b in chunks]
        positive = int(np.argmax(overlaps))
        negatives = [i for i, o in enumerate(overlaps) if o == 0]
        if not negatives:
            stats["citations whose poem has no chunk without cited lines (left out)"] += 1
            continue
        pair = (citation.dante_text, book.id, poem.index, positive)
        if pair in made:
            stats["duplicate (passage, positive chunk) pairs (made once)"] += 1
            continue
        made.add(pair)
        negative = negatives[int(rng.integers(len(negatives)))]
        texts = {i: "\n".join(poem.lines[chunks[i][0]:chunks[i][1]]) for i in (positive, negative)}
        positive_first = bool(rng.integers(2) == 0)
        a, b = (positive, negative) if positive_first else (negative, positive)
        questions.append({
            "id": f"intertext-{len(questions):03d}",
            "citation": citation.id,
            "citation_type": citation.type,
            "dante_text": citation.dante_text,
            "dante_work": citation.dante_work,
            "dante_location": citation.dante_location,
            "source_work": citation.source_title or citation.source_work,
            "source_author": author.name if author else citation.source_author,
            "source_book": book.id,
            "source_poem": poem.title or None,
            "cited_text": citation.cited_text,
            "cited_lines": [first + 1, last],
            "match_score": round(float(score), 3),
            "text_a": texts[a],
            "text_b": texts[b],
            "chunk_a": [chunks[a][0] + 1, chunks[a][1]],
            "chunk_b": [chunks[b][0] + 1, chunks[b][1]],
            "gold": "A" if positive_first else "B",
        })
    return questions


def poets(citations: list[Citation], types: list[str], table: AuthorTable) -> set[str]:
    """Canonical names of the cited poets (excluded from the ranking and authorship tasks)."""
    wanted = {t.strip().upper() for t in types}
    names = set()
    for citation in citations:
        if citation.type.upper() in wanted and citation.source_author:
            author = table.find(citation.source_author)
            names.add(author.name if author else citation.source_author)
    return names
