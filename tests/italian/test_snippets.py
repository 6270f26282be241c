"""Authorship and ranking snippets (3.3) from Biblioteca Italiana verse: a lacuna printed as a
row of dots, and other editorial marks, are not text (issue 42: 12 of 50 authorship items held
a snippet with under 200 characters of real text), and a verse snippet is whole lines."""

from collections import Counter
from pathlib import Path

from histbench.builders.italian.bibit import cut_snippets, read_book, real_length, whole_lines


def _poem_book(path: Path, lines: list[str]) -> Path:
    verse = "".join(f"<l>{line}</l>" for line in lines)
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<TEI.2><teiHeader><fileDesc><titleStmt><title>Rime</title><author>Giovanni Muzzarelli</author></titleStmt>"
        "</fileDesc><profileDesc><textClass><keywords scheme=\"CGB\"><term>Poesia</term></keywords></textClass>"
        f"</profileDesc></teiHeader><text><body><div1><head>Canzone</head><lg>{verse}</lg></div1></body></text></TEI.2>\n",
        encoding="utf-8")
    return path


LINES = [
    "Nel mezzo della selva oscura e fonda",
    "andava il pellegrino senza guida,",
    "e l'aura gli parlava dalla sponda.",
    ". . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . .",
    ". . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . .",
    ". . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . .",
    "Poi vide il lume della stella fida",
    "e il cuore gli si aperse alla speranza. Allor",
    "riprese il passo, e vinse ogni paura",
    "che l'avea stretto nella lunga stanza.",
]


def test_a_lacuna_line_is_not_text_and_cuts_the_poem(tmp_path):
    book = read_book(_poem_book(tmp_path / "bibit000001", LINES))
    assert [len(p.lines) for p in book.poems] == [3, 4]                 # the dotted lines are gone, the poem cut there
    assert all(". . ." not in line for p in book.poems for line in p.lines)
    stats: Counter = Counter()
    snippets = cut_snippets(book, 60, 600, stats)
    assert snippets and all(". . ." not in s.text for s in snippets)
    # a snippet never joins the lines on either side of the lacuna
    assert not any("sponda" in s.text and "stella" in s.text for s in snippets)


def test_the_minimum_length_counts_real_text_only():
    dotted = "Canto primo\n" + ". . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . ."
    assert real_length(dotted) == len("Canto primo")
    assert real_length("Amor [. . .] mi mosse * * * e disse") == len("Amor mi mosse e disse")
    assert real_length("Tanto gentile e tanto onesta pare") == len("Tanto gentile e tanto onesta pare")


def test_a_verse_snippet_is_whole_lines(tmp_path):
    book = read_book(_poem_book(tmp_path / "bibit000002", LINES))
    text = book.poems[1].text()
    spans = whole_lines(text, [(0, text.index("speranza.") + len("speranza.")),
                               (text.index("Allor"), len(text))])
    assert spans == [(0, len(text))]                    # "speranza." ends inside a line: it runs on
    for snippet in cut_snippets(book, 40, 600, Counter()):
        lines = set(book.poems[0].lines) | set(book.poems[1].lines)
        assert all(line in lines for line in snippet.text.split("\n") if line)
