"""Readers: safe TEI parsing, letter linearisation with offsets, the WSD overlap rule,
P4 books and snippets, CoNLL-U offsets (fixtures written with lxml and as CoNLL-U text)."""

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from lxml import etree

from histbench.builders.italian.bibit import Book, Poem, cut_snippets, read_book, verse_sentences
from histbench.builders.italian.letters import EntityScheme, read_letter, select_subset
from histbench.builders.italian.manzoni import same_phrase
from histbench.builders.italian.tei import parse_xml
from histbench.core.errors import SourceError

from .conftest import REPO

TEI = "http://www.tei-c.org/ns/1.0"
SCHEMES = yaml.safe_load((REPO / "sources" / "italian" / "ner_entities.yaml").read_text(encoding="utf-8"))


def _letter(tmp_path: Path, body_xml: str, lang: str = "it") -> Path:
    root = etree.fromstring(
        f'<TEI xmlns="{TEI}"><teiHeader><profileDesc><correspDesc>'
        '<correspAction type="sent"><persName>Vincenzo Bellini</persName><date when="1830-11-25"/></correspAction>'
        '<correspAction type="received"><persName>Giovanni Battista Perucchini</persName></correspAction>'
        f'</correspDesc><langUsage><language ident="{lang}"/></langUsage></profileDesc></teiHeader>'
        f'<text><body>{body_xml}</body></text></TEI>'
    )
    path = tmp_path / "letter.xml"
    etree.ElementTree(root).write(str(path), encoding="utf-8", xml_declaration=True)
    return path


def test_letter_text_and_offsets_follow_what_the_model_sees(tmp_path):
    body = (
        '<ab><lb/>la mia amica <choice><abbr>Mad<am>:</am></abbr><expan>Mad<ex>am</ex>a</expan></choice>'
        '<lb/><persName ref="#L">Levis,</persName> canta al '
        '<orgName xml:id="a" next="#b">teatro della</orgName><lb/><orgName xml:id="b" prev="#a">Fenice.</orgName> '
        'per <w>can<lb break="no"/>tare</w> con <rs type="person">Ella stessa</rs> e la <term>cavatina</term>'
        '<note>nota editoriale</note><del>via</del>.</ab>'
    )
    letter = read_letter(_letter(tmp_path, body), EntityScheme.from_config("bellini", SCHEMES, Path("x")))
    assert letter.text == "la mia amica Madama Levis, canta al teatro della Fenice. per cantare con Ella stessa e la cavatina."
    found = {(e["text"], e["type"]) for e in letter.entities}
    assert found == {("Levis", "PER"), ("teatro della Fenice", "ORG"), ("cavatina", "MUSIC")}
    for entity in letter.entities:
        assert letter.text[entity["start"]:entity["end"]] == entity["text"]
    merged = next(e for e in letter.entities if e["type"] == "ORG")
    assert merged["parts"] == 2
    assert [e["text"] for e in letter.excluded] == ["Ella stessa"]
    assert (letter.sender, letter.recipient, letter.date, letter.language) == (
        "Vincenzo Bellini", "Giovanni Battista Perucchini", "1830-11-25", "it")


def test_hyphen_pc_joins_a_word_across_paragraphs(tmp_path):
    body = '<p>considerata pre<pc force="inter">-</pc>\n</p><pb/><p><pc force="inter">-</pc>mura del <persName>Dottore</persName></p>'
    letter = read_letter(_letter(tmp_path, body), EntityScheme.from_config("classense", SCHEMES, Path("x")))
    assert letter.text == "considerata premura del Dottore"


def test_malformed_tei_names_file_and_line(tmp_path):
    bad = tmp_path / "broken.xml"
    bad.write_text('<TEI xmlns="http://www.tei-c.org/ns/1.0">\n<text>\n<body><p>aperto</body>\n</text></TEI>\n', encoding="utf-8")
    with pytest.raises(SourceError) as info:
        parse_xml(bad)
    assert "broken.xml" in str(info.value) and "line 3" in str(info.value)


def test_p4_book_with_unreachable_dtd_is_read_offline(tmp_path):
    path = tmp_path / "bibit999999"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE TEI.2 SYSTEM "http://host.invalid/bibit.dtd">\n'
        "<TEI.2><teiHeader><fileDesc><titleStmt><title>Rime</title><author>Guido Gozzano</author></titleStmt>"
        "<publicationStmt><idno>bibit999999</idno></publicationStmt></fileDesc>"
        '<profileDesc><langUsage><language id="ita">Italiano</language></langUsage>'
        '<textClass><keywords scheme="CGB"><term>Poesia</term></keywords></textClass></profileDesc></teiHeader>'
        '<text><body><div1 type="poesia"><head>I</head><lg><l>prima riga del canto</l><l part="I">seconda</l></lg>'
        '<lg><l part="F">e fine</l><l>terza riga</l></lg><lg lang="lat"><l>versus latinus</l></lg></div1></body></text></TEI.2>',
        encoding="utf-8",
    )
    book = read_book(path)
    assert (book.author, book.genre, book.kind, book.languages) == ("Guido Gozzano", "Poesia", "verse", ["ita"])
    assert book.poems[0].lines == ["prima riga del canto", "seconda e fine", "terza riga"]
    assert book.stats["verse lines not in Italian (left out)"] == 1


def _verse_book(poems: list[list[str]]) -> Book:
    return Book("b", "b", "t", "A", None, ["ita"], "Poesia", None, "verse",
                [line for poem in poems for line in poem + [""]], [Poem(i, "", lines) for i, lines in enumerate(poems)])


def test_verse_snippets_end_sentences_within_one_poem_3_3():
    # 3.3: "The text is split at natural sentence endings"; snippets never run across poems
    rnd = np.random.default_rng(0)
    poems = []
    for _ in range(12):
        lines = []
        for _ in range(int(rnd.integers(8, 30))):
            words = " ".join(["parola"] * int(rnd.integers(3, 9)))
            end = "." if rnd.random() < 0.3 else ","
            lines.append(words + end)
        lines[-1] = lines[-1].rstrip(",.") + "."
        poems.append(lines)
    stats = Counter()
    snippets = cut_snippets(_verse_book(poems), 200, 600, stats)
    texts = ["\n".join(p) for p in poems]
    assert snippets and all(200 <= len(s.text) <= 600 for s in snippets)
    assert all(s.text.endswith(".") for s in snippets)
    assert all(any(s.text in t for t in texts) for s in snippets)          # inside one poem
    assert all(s.text.split("\n")[0] in {line for p in poems for line in p} or s.text[0].isupper() for s in snippets)
    assert stats["text left at the end of a poem, shorter than the minimum (dropped)"] > 0


def test_verse_sentence_ends_inside_a_line_and_at_line_ends():
    text = "del cielo azzurro. - È l'usignolo, o Rosa! -\nIl mare, al buio, fu cattivo. Urlava\nsotto gli schiocchi della folgore! ora\nqua e là"
    spans = verse_sentences(text)
    pieces = [text[a:b] for a, b in spans]
    # a closing dash at a line end belongs to the sentence; "! ora" (lower case) does not end one;
    # the poem's end ends its last sentence
    assert pieces == ["del cielo azzurro.", "- È l'usignolo, o Rosa! -", "Il mare, al buio, fu cattivo.",
                      "Urlava\nsotto gli schiocchi della folgore! ora\nqua e là"]


def test_stage_directions_inside_lines_are_not_verse(tmp_path):
    path = tmp_path / "bibit000409"
    path.write_text(
        '<TEI.2><teiHeader><fileDesc><titleStmt><title>Dramma</title><author>Pietro Metastasio</author></titleStmt>'
        "</fileDesc></teiHeader><text><body><div1><sp><speaker>TITO</speaker><lg><l>Io mi ricorderò. <stage>(parte</stage></l>"
        "</lg></sp></div1></body></text></TEI.2>", encoding="utf-8")
    assert read_book(path).poems[0].lines == ["Io mi ricorderò."]


def test_overlap_rule_nested_spans_sharing_an_edge_word_3_1():
    assert same_phrase((10, 10), (10, 12))      # "somigliare" / "somigliare a una"
    assert same_phrase((5, 6), (6, 6))          # "il ponte" / "ponte"
    assert not same_phrase((1, 6), (4, 4))      # "di" inside "Quel ramo del lago di Como"
    assert not same_phrase((1, 3), (3, 5))      # crossing spans are not merged


def test_subset_chi_square_preserves_distribution_3_2():
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 30, size=(60, 4)).astype(float)
    chosen, test = select_subset(counts, 25, seed=0, draws=2000)
    assert len(chosen) == 25 == len(set(chosen))
    from scipy.stats import chisquare
    p = counts.sum(0) / counts.sum()
    sub = counts[chosen].sum(0)
    assert test["chi2"] == pytest.approx(chisquare(sub, p * sub.sum()).statistic)
    assert test["dof"] == 3 and test["p_value"] > 0.5


def test_an_anonymous_book_is_read_and_left_out_of_the_author_tasks(tmp_path):
    # the real corpus holds 22 works that name no author (bibit000029, the Liber Maiolichinus)
    path = tmp_path / "bibit000029"
    path.write_text(
        "<TEI.2><teiHeader><fileDesc><titleStmt><title>Liber Maiolichinus</title></titleStmt></fileDesc></teiHeader>"
        "<text><body><div1><lg><l>Prima riga.</l></lg></div1></body></text></TEI.2>", encoding="utf-8")
    assert read_book(path).author == ""
