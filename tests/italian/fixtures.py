"""Fixtures in the real formats, written with the field's libraries: DanteSources graphs
(rdflib, in the vocabulary of the DanteSources RDF generator), kaikki/wiktextract JSON
Lines entries, TEI letters and LeggoManzoni layouts (lxml), CoNLL-U text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

DNT = "http://perunaenciclopediadantescadigitale.eu/prindante/danterdfs/DanteRDFS.rdf#"
CRM = "http://purl.org/NET/cidoc-crm/core#"
OA = "http://www.w3.org/ns/oa/"
EFRBROO = "http://erlangen-crm.org/efrbroo/"
DCTERMS = "http://purl.org/dc/terms/"
DCTYPES = "http://purl.org/dc/dcmitype/"
TYPES = {"CONCORDANZA STRINGENTE": "citesConcordanzaStringente", "CONCORDANZA GENERICA": "citesConcordanzaGenerica",
         "CITAZIONE ESPLICITA": "citesCitazioneEsplicita"}


def dantesources_graph(work: str, work_title: str, notes: list[dict]):
    """A DanteSources note graph laid out as the project's generator writes it.

    notes: [{"book", "chapter", "paragraph", "dante_text", "body", "citations":
    [{"type", "text", "source", "source_title", "author", "author_name", "concept": bool}]}]
    """
    import rdflib
    from rdflib import RDF, Literal, Namespace, URIRef
    from rdflib.namespace import XSD

    dnt, crm, oa, efrbroo, dcterms = (Namespace(n) for n in (DNT, CRM, OA, EFRBROO, DCTERMS))
    g = rdflib.Graph()
    for prefix, ns in (("dnt", DNT), ("crm", CRM), ("oa", OA), ("efrbroo", EFRBROO), ("dcterms", DCTERMS)):
        g.bind(prefix, ns)
    w = URIRef(work)
    g.add((w, dcterms.alternative, Literal(work_title)))
    t = 0
    for j, note in enumerate(notes):
        book = URIRef(f"{work}/libro/{note['book']}")
        chapter = URIRef(f"{book}/capitolo/{note['chapter']}")
        paragraph = URIRef(f"{chapter}/paragrafo/{note['paragraph']}")
        frag = URIRef(f"{paragraph}/exprFrag/{j}")
        body = URIRef(f"{paragraph}/body/{j}")
        annotation = URIRef(f"{paragraph}/annotation/{j}")
        g.add((frag, RDF.type, efrbroo.ExpressionFragment))
        g.add((frag, crm.hasNote, body))
        g.add((frag, dnt.efChars, Literal(note["dante_text"])))
        g.add((frag, dnt.efFormat, Literal("text/plain")))
        g.add((frag, oa.hasSource, paragraph))
        g.add((paragraph, dnt.numParagraph, Literal(int(note["paragraph"]), datatype=XSD.int)))
        g.add((paragraph, dnt.isParagraphOf, chapter))
        g.add((chapter, dnt.numChapter, Literal(int(note["chapter"]), datatype=XSD.int)))
        g.add((chapter, dnt.isChapterOf, book))
        g.add((book, dnt.numBook, Literal(int(note["book"]), datatype=XSD.int)))
        g.add((book, dnt.isBookOf, w))
        g.add((body, dnt.bodyChars, Literal(note.get("body", ""))))
        g.add((body, RDF.type, URIRef(DCTYPES + "ContentAsText")))
        g.add((annotation, RDF.type, oa.Annotation))
        g.add((annotation, oa.hasTarget, frag))
        g.add((annotation, oa.hasBody, body))
        for citation in note["citations"]:
            cited = URIRef(f"{paragraph}/exprFrag1/{t}")
            t += 1
            source = URIRef(citation["source"])
            g.add((body, dnt.hasCitingFragment, cited))
            g.add((cited, dnt.efChars, Literal(citation["text"])))
            g.add((cited, oa.hasSource, body))
            g.add((cited, dnt.tipoCitazione, Literal(citation["type"])))
            g.add((cited, dnt[TYPES[citation["type"]]], source))
            g.add((source, dcterms.alternative, Literal(citation.get("source_title", "Senza titolo"))))
            author = URIRef(citation["author"])
            g.add((source, dnt.conceptCreator if citation.get("concept") else dnt.workCreator, author))
            g.add((author, dnt.creatorName, Literal(citation["author_name"])))
    return g


def kaikki_entry(word: str, pos: str, glosses: list[str], *, forms: list[str] = (), synonyms: list[str] = (),
                 lang_code: str = "it", lang: str = "Italiano") -> str:
    """One line of a wiktextract JSON Lines extract of the Italian Wiktionary (the fields
    of wiktextract's Italian WordEntry model)."""
    entry = {
        "word": word, "lang_code": lang_code, "lang": lang, "pos": pos, "pos_title": pos.capitalize(),
        "senses": [{"glosses": [g]} for g in glosses],
        "forms": [{"form": f} for f in forms],
        "synonyms": [{"word": s} for s in synonyms],
        "sounds": [], "categories": [],
    }
    return json.dumps(entry, ensure_ascii=False)


def leggomanzoni_clone(realdata: Path, root: Path, commentators: list[str] | None = None) -> Path:
    """A LeggoManzoni repository root laid out as the clone is (quarantana/,
    commenti/xml/in_lavorazione/<commentator>/cap*.xml and <commentator>.xml,
    commenti/xml/pronti/, commenti/txt/, translations/<language>/cap*.xml, the web app),
    filled with the real chapter 1 and commentaries we hold."""
    from lxml import etree

    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(realdata / "quarantana", root / "quarantana")
    names = commentators or sorted(p.name for p in (realdata / "commenti").iterdir() if p.is_dir())
    work = root / "commenti" / "xml" / "in_lavorazione"
    for name in names:
        (work / name).mkdir(parents=True)
        shutil.copy(realdata / "commenti" / name / "cap1.xml", work / name / "cap1.xml")
        shutil.copy(realdata / "commenti" / name / "cap1.xml", work / f"{name}.xml")   # the single-file compilation
    (root / "commenti" / "xml" / "pronti").mkdir(parents=True)
    shutil.copy(realdata / "commenti" / names[0] / "cap1.xml", root / "commenti" / "xml" / "pronti" / f"{names[0]}.xml")
    (root / "commenti" / "txt").mkdir(parents=True)
    (root / "commenti" / "txt" / f"{names[0]}_C.txt").write_text("testo del commento\n", encoding="utf-8")
    # a translation aligned with the Quarantana words: notes whose targets are real word ids
    tei = "http://www.tei-c.org/ns/1.0"
    for language in ("English_1845", "French_1828"):
        folder = root / "translations" / language
        folder.mkdir(parents=True)
        doc = etree.Element(f"{{{tei}}}TEI", nsmap={None: tei})
        body = etree.SubElement(etree.SubElement(doc, f"{{{tei}}}text"), f"{{{tei}}}body")
        for k, (a, b) in enumerate([("c1_10001", "c1_10006"), ("c1_10150", "c1_10152")]):
            note = etree.SubElement(body, f"{{{tei}}}note", target=f"quarantana/cap1.xml#{a}",
                                    targetEnd=f"quarantana/cap1.xml#{b}", type="comm")
            ref = etree.SubElement(note, f"{{{tei}}}ref")
            ref.text = "Quel ramo del lago di Como" if k == 0 else "somigliare a una"
            ref.tail = f": translation {language} {k}"
        etree.ElementTree(doc).write(str(folder / "cap1.xml"), encoding="utf-8", xml_declaration=True)
    (root / "views").mkdir()
    (root / "views" / "index.ejs").write_text("<html></html>\n", encoding="utf-8")
    (root / "app.js").write_text("// web application\n", encoding="utf-8")
    (root / "README.md").write_text("# LeggoManzoni\n", encoding="utf-8")
    return root


def quarantana_chapter(path: Path, words: list[str], chapter: int = 1) -> list[str]:
    """A Quarantana chapter as LeggoManzoni encodes it (one <w xml:id="cN_1000k"> per word,
    a figure and a heading before the first passage); returns the word ids."""
    from lxml import etree

    div = etree.Element("div", type="capitolo", n=str(chapter))
    div.set("{http://www.w3.org/XML/1998/namespace}id", f"capitolo{chapter}")
    figure = etree.SubElement(etree.SubElement(div, "p"), "figure")
    figure.set("{http://www.w3.org/XML/1998/namespace}id", f"c{chapter}_16098")
    etree.SubElement(div, "head").text = f"CAPITOLO {chapter}"
    p = etree.SubElement(div, "p")
    etree.SubElement(p, "milestone", unit="comma", n="1")
    ids = []
    for k, word in enumerate(words, start=1):
        w = etree.SubElement(p, "w")
        w.set("{http://www.w3.org/XML/1998/namespace}id", f"c{chapter}_{10000 + k}")
        w.text = word
        ids.append(f"c{chapter}_{10000 + k}")
    path.parent.mkdir(parents=True, exist_ok=True)
    etree.ElementTree(div).write(str(path), encoding="utf-8", xml_declaration=True)
    return ids


def commentary(path: Path, title: str, notes: list[dict], chapter: int = 1) -> None:
    """A LeggoManzoni commentary file: notes [{"id", "start", "end"?, "ref", "text", "type"?}]."""
    from lxml import etree

    tei = "http://www.tei-c.org/ns/1.0"
    root = etree.Element(f"{{{tei}}}TEI", nsmap={None: tei})
    title_stmt = etree.SubElement(etree.SubElement(etree.SubElement(root, f"{{{tei}}}teiHeader"), f"{{{tei}}}fileDesc"),
                                  f"{{{tei}}}titleStmt")
    etree.SubElement(title_stmt, f"{{{tei}}}title").text = title
    div = etree.SubElement(etree.SubElement(etree.SubElement(root, f"{{{tei}}}text"), f"{{{tei}}}body"), f"{{{tei}}}div")
    for note in notes:
        el = etree.SubElement(div, f"{{{tei}}}note", type=note.get("type", "comm"),
                              target=f"quarantana/cap{chapter}.xml#{note['start']}")
        el.set("{http://www.w3.org/XML/1998/namespace}id", note["id"])
        if note.get("end"):
            el.set("targetEnd", f"quarantana/cap{chapter}.xml#{note['end']}")
        if note.get("ref") is not None:
            ref = etree.SubElement(el, f"{{{tei}}}ref", rend="bold")
            ref.text = note["ref"]
            ref.tail = ":  " + note["text"]
        else:
            el.text = note["text"]
    path.parent.mkdir(parents=True, exist_ok=True)
    etree.ElementTree(root).write(str(path), encoding="utf-8", xml_declaration=True)
