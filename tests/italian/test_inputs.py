"""Every real encoding is read; a damaged file is a one-line error naming it (CLI exit 2,
no output folder), or with --skip-bad-files skipped and counted. Fixtures: TEI written by
lxml (UTF-8, UTF-8 with BOM, UTF-16), CoNLL-U text cut the ways files get cut."""

import shutil
from pathlib import Path

import pytest
from lxml import etree

from histbench.builders.italian.bibit import read_books
from histbench.builders.italian.syntax import read_conllu
from histbench.builders.italian.tei import BadFiles
from histbench.cli import main
from histbench.core.errors import SourceError

from .conftest import SAMPLE, build, manifest, rows

TEI = "http://www.tei-c.org/ns/1.0"


def _letter_tree(text: str = "Ricevo da Faenza la nota.") -> etree._ElementTree:
    root = etree.Element(f"{{{TEI}}}TEI", nsmap={None: TEI})
    header = etree.SubElement(root, f"{{{TEI}}}teiHeader")
    profile = etree.SubElement(header, f"{{{TEI}}}profileDesc")
    corresp = etree.SubElement(profile, f"{{{TEI}}}correspDesc")
    sent = etree.SubElement(corresp, f"{{{TEI}}}correspAction", type="sent")
    etree.SubElement(sent, f"{{{TEI}}}persName").text = "Pietro Canneti"
    body = etree.SubElement(etree.SubElement(root, f"{{{TEI}}}text"), f"{{{TEI}}}body")
    p = etree.SubElement(body, f"{{{TEI}}}p")
    before, _, after = text.partition("Faenza")
    p.text = before
    place = etree.SubElement(p, f"{{{TEI}}}placeName")
    place.text = "Faenza"
    place.tail = after
    return etree.ElementTree(root)


def _letters(tmp_path: Path) -> Path:
    folder = tmp_path / "letters"
    folder.mkdir()
    _letter_tree().write(str(folder / "L1.xml"), encoding="utf-8", xml_declaration=True)
    return folder


def test_utf16_letter_is_read_like_utf8(tmp_path):
    folder = _letters(tmp_path)
    _letter_tree("Scrivo a Faenza oggi.").write(str(folder / "L2.xml"), encoding="UTF-16", xml_declaration=True)
    assert (folder / "L2.xml").read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")
    out = build(tmp_path, {"classense": str(folder)}, classense_subset=0)
    letters = {r["id"]: r for r in rows(out, "ner_classense")}
    assert set(letters) == {"L1", "L2"}
    faenza = letters["L2"]["entities"][0]
    assert letters["L2"]["text"][faenza["start"]:faenza["end"]] == "Faenza"


@pytest.mark.parametrize("name,content,message", [
    ("empty.xml", b"", "the file is empty"),
    ("note.xml", b"<?xml version='1.0'?><letter><p>Caro amico</p></letter>", "not a TEI document: the root element is <letter>"),
    ("cut.xml", b'<TEI xmlns="http://www.tei-c.org/ns/1.0"><text><body><p>Ricevo', "not well-formed XML"),
    # issue 39, class 8: nesting the text walkers would recurse into (a RecursionError before)
    ("deep.xml", ('<TEI xmlns="http://www.tei-c.org/ns/1.0"><text><body><p>' + "<hi>" * 1500 + "x" + "</hi>" * 1500
                  + "</p></body></text></TEI>").encode(), "nested more than 500 levels"),
    # an entity the file uses but does not declare (an external DTD is never read): its words would be lost
    ("entity.xml", b'<?xml version="1.0"?><!DOCTYPE TEI SYSTEM "http://example.invalid/tei.dtd">'
                   b'<TEI xmlns="http://www.tei-c.org/ns/1.0"><text><body><p>perch&egrave;</p></body></text></TEI>',
     "&egrave; is not declared in the file"),
])
def test_damaged_letter_is_an_error_naming_it_or_skipped_and_counted(tmp_path, name, content, message):
    folder = _letters(tmp_path)
    (folder / name).write_bytes(content)
    with pytest.raises(SourceError, match=message) as info:
        build(tmp_path / "a", {"classense": str(folder)}, classense_subset=0)
    assert name in str(info.value) and "--skip-bad-files" in str(info.value)
    assert not (tmp_path / "a" / "italian-1.0.0").exists()
    out = build(tmp_path / "b", {"classense": str(folder)}, classense_subset=0, skip_bad_files=True)
    assert [r["id"] for r in rows(out, "ner_classense")] == ["L1"]
    summary = manifest(out)["summary"]
    assert summary["tasks"]["ner_classense"]["counts"]["damaged files skipped (--skip-bad-files)"] == 1
    assert [s["file"] for s in summary["damaged_files_skipped"]] == [name]


def test_tei_entity_lists_are_not_letters_and_are_counted(tmp_path, realdata):
    # the real Canneti-Fiacchi repository ships <listPerson>, <listPlace>, <listBibl> files
    out = build(tmp_path, {"classense": str(realdata / "classense")}, classense_subset=0)
    task = manifest(out)["summary"]["tasks"]["ner_classense"]
    assert task["counts"]["TEI entity lists and other fragments (not letters; not read)"] == 6
    assert "entities/people/cited-people.xml" in task["tei_files_not_letters"]
    assert task["counts"]["files that are not XML (README, templates; not read)"] == 3    # README, LICENSE, letter-base.txt


def _book(path: Path, note: str = "Fonte a stampa.") -> None:
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE TEI.2 SYSTEM "http://backend.bibliotecaitaliana.it/DTD/bibit.dtd">\n'
        f"<TEI.2><teiHeader><fileDesc><titleStmt><title>Rime</title><author>Giovanni Muzzarelli</author></titleStmt>"
        f"<notesStmt><note>{note}</note></notesStmt></fileDesc></teiHeader>"
        "<text><body><div1><lg><l>Prima riga del canto.</l></lg></div1></body></text></TEI.2>\n",
        encoding="utf-8",
    )


def test_book_with_bom_and_book_with_nul_bytes_are_read_and_the_repair_named(tmp_path):
    folder = tmp_path / "xml"
    folder.mkdir()
    _book(folder / "bibit000001")
    (folder / "bibit000002").write_bytes(b"\xef\xbb\xbf" + (folder / "bibit000001").read_bytes())
    _book(folder / "bibit000549", "BID SBN: ITICCUCFI\x00000596.")      # the real corpus's stray NUL
    (folder / "README.md").write_text("# biblioteca_italiana\n", encoding="utf-8")
    repairs: list[str] = []
    books, stats = read_books(folder, BadFiles(), repairs)
    assert [b.file for b in books] == ["bibit000001", "bibit000002", "bibit000549"]
    assert repairs == ["bibit000549: 1 NUL byte removed before parsing"]
    assert stats["files that are not XML (README, JSON, archives; not read)"] == 1


def test_damaged_book_stops_the_build_unless_skipped(tmp_path):
    folder = tmp_path / "xml"
    shutil.copytree(SAMPLE / "bibit", folder)
    (folder / "bibit999999").write_text("<TEI.2><teiHeader><fileDesc>", encoding="utf-8")
    with pytest.raises(SourceError, match=r"bibit999999.*not well-formed XML.*--skip-bad-files"):
        read_books(folder, BadFiles())
    books, stats = read_books(folder, bad := BadFiles(skip=True))
    assert len(books) == 13 and stats["damaged files skipped (--skip-bad-files)"] == 1
    assert bad.skipped[0]["file"] == "bibit999999"


SENTENCE = (
    "# sent_id = 1\n# text = Io vidi la donna.\n"
    "1\tIo\tio\tPRON\t_\t_\t2\tnsubj\t_\t_\n"
    "2\tvidi\tvedere\tVERB\t_\t_\t0\troot\t_\t_\n"
    "3\tla\til\tDET\t_\t_\t4\tdet\t_\t_\n"
    "4\tdonna\tdonna\tNOUN\t_\t_\t2\tobj\t_\tSpaceAfter=No\n"
    "5\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_\n\n"
)


CUT_MID_LINE = SENTENCE + SENTENCE[:-60]                              # the last line stops inside its 4th field
CUT_MID_SENTENCE = SENTENCE + SENTENCE.split("4\tdonna")[0] + "\n"     # words 4-5 lost; word 3 (line 13) points at 4


@pytest.mark.parametrize("content,message", [
    (CUT_MID_LINE, f"line {len(CUT_MID_LINE.splitlines())}: 4 tab-separated fields, a CoNLL-U word line has 10"),
    (SENTENCE + SENTENCE[:-40], "line 14: the file does not end with the empty line"),   # cut inside MISC
    (CUT_MID_SENTENCE, "line 13: HEAD 4 points outside the sentence, which has 3 words"),
    (SENTENCE.replace("\t4\tdet", "\t42\tdet"), "line 5: HEAD 42 points outside the sentence, which has 5 words"),
    (SENTENCE.replace("\t0\troot", "\t4\tcop"), "line 3: the sentence starting here has 0 root words"),
    (SENTENCE.rstrip("\n"), "line 7: the file does not end with the empty line"),
])
def test_damaged_conllu_is_an_error_naming_file_line_and_field(tmp_path, content, message):
    folder = tmp_path / "gold"
    folder.mkdir()
    (folder / "good.conllu").write_text(SENTENCE, encoding="utf-8")
    (folder / "bad.conllu").write_text(content, encoding="utf-8")
    with pytest.raises(SourceError, match=message) as info:
        read_conllu(folder)
    assert "bad.conllu" in str(info.value)
    sentences, stats = read_conllu(folder, BadFiles(skip=True))
    assert [s.file for s in sentences] == ["good.conllu"] and stats["damaged files skipped (--skip-bad-files)"] == 1


def test_cli_exits_2_with_one_line_naming_the_file_and_writes_nothing(tmp_path, capsys):
    folder = _letters(tmp_path)
    (folder / "broken.xml").write_text('<TEI xmlns="http://www.tei-c.org/ns/1.0"><text>', encoding="utf-8")
    code = main(["build", "italian", "--classense", str(folder), "--out", str(tmp_path / "out"), "--classense-subset", "0"])
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("[italian]")]   # progress log
    assert code == 2 and len(err) == 1 and err[0].startswith("histbench: error: ") and "broken.xml" in err[0]
    assert not (tmp_path / "out" / "italian-1.0.0").exists()
    code = main(["build", "italian", "--classense", str(folder), "--out", str(tmp_path / "out"), "--classense-subset", "0",
                 "--skip-bad-files"])
    assert code == 0 and (tmp_path / "out" / "italian-1.0.0").is_dir()


def test_internal_entities_are_expanded_never_dropped(tmp_path):
    """issue 39, class 8: an entity a letter declares in its own DOCTYPE is expanded (it was
    silently dropped, losing its words); marked-up text after it keeps the right offsets."""
    folder = _letters(tmp_path)
    (folder / "L2.xml").write_bytes(
        b'<?xml version="1.0"?><!DOCTYPE TEI [<!ENTITY ab "Ricevo da"><!ENTITY both "&ab; ieri, &ab;">]>'
        b'<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><profileDesc><correspDesc><correspAction type="sent">'
        b'<persName>Pietro Canneti</persName></correspAction></correspDesc></profileDesc></teiHeader>'
        b'<text><body><p>&both; <placeName>Faenza</placeName> la nota.</p></body></text></TEI>')
    out = build(tmp_path, {"classense": str(folder)}, classense_subset=0)
    letter = {r["id"]: r for r in rows(out, "ner_classense")}["L2"]
    assert letter["text"] == "Ricevo da ieri, Ricevo da Faenza la nota."
    faenza = letter["entities"][0]
    assert letter["text"][faenza["start"]:faenza["end"]] == "Faenza"


@pytest.mark.parametrize("entities, message", [
    ('<!ENTITY a "0123456789"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">', "expands to more than 100 characters"),
    ('<!ENTITY a "x &nowhere;">', "refers to &nowhere;, which the file does not declare"),
])
def test_entity_expansion_is_measured_before_it_is_expanded(tmp_path, monkeypatch, entities, message):
    """histbench's own guard, whatever libxml2's amplification check lets through: the
    declared entities' expanded sizes are computed from the declarations first."""
    from histbench.builders.italian import tei

    monkeypatch.setattr(tei, "MAX_ENTITY_EXPANSION", 100)
    path = tmp_path / "l.xml"
    path.write_text(f'<?xml version="1.0"?><!DOCTYPE TEI SYSTEM "http://example.invalid/tei.dtd" [{entities}]><TEI><p>&b;</p></TEI>'.replace(
        "<p>&b;</p>", "<p>&b;</p>" if "ENTITY b" in entities else "<p>&a;</p>"))
    with pytest.raises(SourceError, match=message) as info:
        tei.parse_xml(path)
    assert "l.xml" in str(info.value) and "\n" not in str(info.value)
    monkeypatch.setattr(tei, "MAX_ENTITY_EXPANSION", 1_000_000)
    if "nowhere" not in entities:
        assert tei.plain_text(tei.parse_xml(path).getroot()) == "0123456789" * 11
