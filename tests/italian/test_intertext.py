"""DanteSources (paper section 3.5): the query matches the real vocabulary (graphs written
with rdflib as the DanteSources RDF generator lays them out), several files merge, and
RDF reading is bounded and safe against entity expansion."""

import time

import pytest
import rdflib

from histbench.builders.italian.intertext import _expanded_rdfxml, load_citations
from histbench.cli import main
from histbench.core.errors import SourceError

from .conftest import REPO, SAMPLE, build, manifest, rows
from .fixtures import DNT, dantesources_graph

QUERY = REPO / "sources" / "italian" / "dantesources.rq"
SOURCE = "http://perunaenciclopediadantescadigitale.eu/resource/fonte/canzone-cor-gentile"
AUTHOR = "http://perunaenciclopediadantescadigitale.eu/resource/autore/cecco-campestre"


def _citation(kind, text, **extra):
    return {"type": kind, "text": text, "source": SOURCE, "source_title": "Canzone del cor gentile", "author": AUTHOR,
            "author_name": "Cecco Campestre", **extra}


def _rime():
    return dantesources_graph("http://perunaenciclopediadantescadigitale.eu/resource/work/rime", "Rime", [
        {"book": 1, "chapter": 3, "paragraph": 2, "dante_text": "Amore e il cor gentile sono una cosa, sì come il saggio in suo dittare pone.",
         "body": "Cfr. la canzone.", "citations": [_citation("CONCORDANZA STRINGENTE", "né fece amor prima che gentil core")]},
        {"book": 1, "chapter": 3, "paragraph": 5, "dante_text": "Lo sole che splende e da lume a ogni cosa creata.",
         "body": "Eco.", "citations": [_citation("CONCORDANZA GENERICA", "così fu lo splendore lucente e chiaro")]},
    ])


def _convivio():
    return dantesources_graph("http://perunaenciclopediadantescadigitale.eu/resource/work/convivio", "Convivio", [
        {"book": 4, "chapter": 20, "paragraph": 7, "dante_text": "E quel foco d'amore che nel gentil core s'accende come in pietra virtute.",
         "body": "Concordanza.", "citations": [
             _citation("CONCORDANZA STRINGENTE", "Foco d'amore in gentil cor s'accende come virtute in pietra preziosa"),
             {"type": "CITAZIONE ESPLICITA", "text": "gentilezza", "source": "http://perunaenciclopediadantescadigitale.eu/resource/concetto/x",
              "author": "http://perunaenciclopediadantescadigitale.eu/resource/work/convivioautore/inesistente/0",
              "author_name": "Non disponibile", "concept": True},
         ]},
    ])


def test_query_reads_the_real_vocabulary_from_rdfxml_and_turtle_files(tmp_path):
    rime = tmp_path / "RimeNote.rdf"
    convivio = tmp_path / "NoteConvivio.ttl"
    _rime().serialize(str(rime), format="xml")
    _convivio().serialize(str(convivio), format="turtle")
    citations, stats = load_citations([rime, convivio], QUERY)
    by_text = {c.cited_text: c for c in citations}
    assert len(citations) == 4 and stats["citation rows"] == 4
    stringent = by_text["né fece amor prima che gentil core"]
    assert (stringent.type, stringent.source_author, stringent.source_title) == ("CONCORDANZA STRINGENTE", "Cecco Campestre",
                                                                                  "Canzone del cor gentile")
    assert (stringent.dante_work, stringent.dante_location) == ("Rime", "book 1, chapter 3, paragraph 2")
    concept = by_text["gentilezza"]
    assert concept.type == "CITAZIONE ESPLICITA" and concept.source_author is None      # "Non disponibile"
    out = build(tmp_path, {"dantesources": [str(rime), str(convivio)], "bibit": str(SAMPLE / "bibit"),
                           "authors": str(SAMPLE / "authors.csv")}, questions_per_genre=1)
    inter = rows(out, "intertext")
    assert {r["cited_text"] for r in inter} == {"né fece amor prima che gentil core",
                                                "Foco d'amore in gentil cor s'accende come virtute in pietra preziosa"}
    counts = manifest(out)["summary"]["tasks"]["intertext"]["counts"]
    assert counts["citations of type CONCORDANZA GENERICA (left out)"] == 1
    assert counts["citations of type CITAZIONE ESPLICITA (left out)"] == 1


def test_the_bundled_sample_is_in_the_real_vocabulary():
    graph = rdflib.Graph().parse(str(SAMPLE / "dantesources.ttl"), format="turtle")
    assert {str(p) for p in graph.predicates()} >= {DNT + "hasCitingFragment", DNT + "tipoCitazione", DNT + "efChars"}


def test_a_graph_in_another_vocabulary_is_an_error_that_names_its_predicates(tmp_path):
    text = (SAMPLE / "dantesources.ttl").read_text(encoding="utf-8").replace(DNT, "http://dantenetwork.it/ontology#")
    path = tmp_path / "other.ttl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SourceError, match=r"found no citations in the graph of other\.ttl.*dantenetwork\.it/ontology#hasCitingFragment"):
        load_citations([path], QUERY)


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE rdf:RDF [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:dnt="DNT">
 <rdf:Description rdf:about="http://example.org/a"><dnt:efChars>&lol9;</dnt:efChars></rdf:Description>
</rdf:RDF>
""".replace("DNT", DNT)


def test_a_billion_laughs_file_is_refused_at_once(tmp_path, capsys):
    path = tmp_path / "dantesources.rdf"
    path.write_text(BILLION_LAUGHS, encoding="utf-8")
    assert path.stat().st_size < 1100
    started = time.perf_counter()
    with pytest.raises(SourceError, match=r"dantesources\.rdf.*cannot read the RDF/XML: .*amplification"):
        load_citations([path], QUERY)
    assert time.perf_counter() - started < 5          # rdflib alone expands it for minutes
    code = main(["build", "italian", "--dantesources", str(path), "--bibit", str(SAMPLE / "bibit"),
                 "--out", str(tmp_path / "out"), "--embedding-model", "tfidf"])
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("[italian]")]
    assert code == 2 and len(err) == 1 and "dantesources.rdf" in err[0]
    assert not (tmp_path / "out" / "italian-1.0.0").exists()


def test_rdfxml_internal_entities_are_expanded_and_external_ones_never_loaded(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("SEGRETO", encoding="utf-8")
    head, _, rest = _rime().serialize(format="xml").partition("<rdf:RDF")
    rest = rest.replace(f'xmlns:dnt="{DNT}"', 'xmlns:dnt="&dnt;"')       # as ontology editors write namespaces
    path = tmp_path / "RimeNote.rdf"
    path.write_text(head + f'<!DOCTYPE rdf:RDF [<!ENTITY dnt "{DNT}">]>\n<rdf:RDF' + rest, encoding="utf-8")
    citations, _ = load_citations([path], QUERY)
    assert len(citations) == 2                                   # &dnt; expanded: the namespace is the real one
    assert b"<!DOCTYPE" not in _expanded_rdfxml(path)
    leaking = tmp_path / "Leak.rdf"
    leaking.write_text(head + f'<!DOCTYPE rdf:RDF [<!ENTITY leak SYSTEM "{secret.as_uri()}">]>\n<rdf:RDF'
                       + rest.replace("&dnt;", DNT).replace("Cfr. la canzone.", "Cfr. &leak;"), encoding="utf-8")
    with pytest.raises(SourceError, match=r"Leak\.rdf.*Entity 'leak' not defined") as info:
        load_citations([leaking], QUERY)
    assert "SEGRETO" not in str(info.value)


def test_graph_size_is_bounded(tmp_path):
    path = tmp_path / "RimeNote.ttl"
    _rime().serialize(str(path), format="turtle")
    with pytest.raises(SourceError, match=r"RimeNote\.ttl.*more than 20 triples \(--rdf-max-triples\)"):
        load_citations([path], QUERY, max_triples=20)
