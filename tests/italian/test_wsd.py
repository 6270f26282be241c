"""WSD items (paper section 3.1): the notes that explain their words, gloss segmentation,
non-empty targets, Wiktionary distractors, the funnel, the real repository layout and the
sparse TF-IDF stand-in. Fixtures: TEI written with lxml in LeggoManzoni's encoding,
wiktextract JSON Lines lines, the real chapter 1 and its 40 commentaries when present."""

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import yaml
from scipy import sparse

from histbench.builders.italian.embeddings import Embedder, pair_similarity, similarities
from histbench.builders.italian.manzoni import Note, NoteRules, discover, group_phrases, read_leggomanzoni
from histbench.builders.italian.wsd import Rules, Wiktionary, first_segment, make_entries
from histbench.core.errors import SourceError

from .conftest import REPO, SAMPLE, build, manifest, rows
from .fixtures import commentary, kaikki_entry, leggomanzoni_clone, quarantana_chapter

CONFIG = yaml.safe_load((REPO / "sources" / "italian" / "wsd_rules.yaml").read_text(encoding="utf-8"))
RULES = Rules.from_config(CONFIG)


@pytest.mark.parametrize("note,gloss", [
    ("riviera di rincontro. Riviera nell'uso si direbbe piuttosto di quella del mare.", "riviera di rincontro"),
    ("vocabolo di cui il M. si serve spesso. Non è comune.", "vocabolo di cui il M. si serve spesso"),  # was "...il M"
    ("er don Abb. Rodrigo, come dicono i bravi. Scherzo.", "er don Abb. Rodrigo, come dicono i bravi"),  # was "Er don Abb"
    ("F. Gonin disegnò la scena; bella tavola.", "F. Gonin disegnò la scena"),
    ("detto solam. dei fiumi. Raro.", "detto solam. dei fiumi"),
    ("come al cap. 12, e pag. 3. Altrove no.", "come al cap. 12, e pag. 3"),
    ("forma monottongata di V. (Ventisettana)", "forma monottongata di V."),
    ("Dai bastioni. Altrove li dice pur bastioni.", "Dai bastioni"),
])
def test_glosses_are_cut_at_sentence_ends_not_at_abbreviations_3_1(note, gloss):
    assert first_segment(note, RULES) == gloss


def _fixture_folder(tmp_path: Path) -> Path:
    root = tmp_path / "leggomanzoni"
    words = ["Si", "racconta", "che", "il", "principe", "vide", "la", "costiera", "e", "il", "ponte", "—", "dirimpetto", "."]
    ids = quarantana_chapter(root / "quarantana" / "cap2.xml", words, chapter=2)
    w = dict(zip(range(1, len(ids) + 1), ids, strict=True))
    a = [
        {"id": "A-1", "start": w[1], "ref": "Intestazione", "text": "F[rancesco] Gonin. La mano col pugnale."},   # heading
        {"id": "A-2", "start": w[8], "ref": "costiera", "text": "pendio tra il monte e la riva."},
        {"id": "A-3", "start": w[12], "ref": "—", "text": "lineetta che apre il discorso."},                    # punctuation
        {"id": "A-4", "start": w[13], "ref": "dirimpetto", "text": "di fronte."},
        {"id": "A-5", "start": w[1], "ref": "Il principio di questo capitolo", "text": "ha una certa solennità."},  # not its words
        {"id": "A-6", "start": w[5], "ref": None, "text": "il principe di Condé."},                             # no ref
    ]
    b = [
        {"id": "B-1", "start": w[1], "ref": "Capolettera s. i. [ma", "text": "Francesco Gonin.] «Iniziale del Cap. 2.»"},
        {"id": "B-2", "start": w[8], "ref": "costiera", "text": "il fianco del monte verso il lago."},
        {"id": "B-3", "start": w[12], "ref": "—", "text": "trattino."},
        {"id": "B-4", "start": w[13], "ref": "dirimpetto", "text": "faccia a faccia."},
        {"id": "B-5", "start": w[2], "type": "ed", "ref": "racconta", "text": "nota del curatore."},            # editorial
        {"id": "B-6", "start": w[11], "ref": "ponti", "text": "quello di Lecco."},                              # variant spelling
    ]
    commentary(root / "commenti" / "CommentatoreA" / "cap2.xml", "A", a, chapter=2)
    commentary(root / "commenti" / "CommentatoreB" / "cap2.xml", "B", b, chapter=2)
    return root


def test_notes_that_do_not_explain_their_words_are_left_out_and_counted_3_1(tmp_path):
    read = read_leggomanzoni(_fixture_folder(tmp_path), NoteRules.from_config(CONFIG))
    assert sorted(n.note_id for n in read.notes) == ["A-2", "A-4", "B-2", "B-4", "B-6"]
    stats = read.stats
    assert stats["notes on a chapter heading, initial or illustration (left out)"] == 2
    assert stats["notes whose <ref> does not repeat the words they point at (left out)"] == 1
    assert stats["notes without a <ref> repeating their words (left out)"] == 3        # no ref, and the two on "—"
    assert stats["notes of type 'ed' (not word notes; left out)"] == 1
    assert stats["notes read"] == 12 == stats["notes usable (about their words, resolved span, non-empty explanation)"] + 7
    assert read.excluded_examples["notes on a chapter heading, initial or illustration (left out)"] == ["A-1", "B-1"]


def test_a_phrase_needs_a_word_to_ask_about_3_1(tmp_path):
    # notes on "—" never pass the ref rule; a phrase reached another way is still refused
    read = read_leggomanzoni(_fixture_folder(tmp_path), NoteRules.from_config(CONFIG))
    dash = read.chapters["cap2"].words[11]
    assert dash.text == "—"
    read.notes += [Note(c, c, f"{c}-dash", "x", "cap2", dash.index, dash.index, "—", "lineetta.") for c in ("A", "B")]
    stats = Counter(read.stats)
    entries = make_entries(read, group_phrases(read.notes, 8, stats), "sentence", stats)
    assert sorted(e.text for e in entries) == ["costiera", "dirimpetto"]
    assert stats["phrases with no word to ask about (a note on punctuation; left out)"] == 1
    assert all(e.context[e.target_start:e.target_end] == e.text and e.target_end > e.target_start for e in entries)


def test_the_schema_refuses_an_empty_target(sample_build):
    schema = json.loads((REPO / "schemas" / "italian.wsd.schema.json").read_text(encoding="utf-8"))
    row = rows(sample_build, "wsd")[0]
    jsonschema.validate(row, schema)
    for bad in ({"target_phrase": ""}, {"target_phrase": "—"}, {"target_end": 0}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**row, **bad}, schema)


def test_wiktionary_senses_of_words_and_of_their_lemmas(tmp_path):
    lines = [
        kaikki_entry("badare", "verb", ["fare attenzione", "prendersi cura di qualcuno"], forms=["bado", "badano"]),
        kaikki_entry("bada", "verb", ["terza persona singolare dell'indicativo presente di badare"]),
        kaikki_entry("ufficio", "noun", ["compito, incarico", "complesso di preghiere del clero"], forms=["ufizio"]),
        json.dumps({"word": "diluviavano", "lang_code": "it", "lang": "Italian", "pos": "verb",
                    "senses": [{"glosses": ["third-person plural imperfect indicative of diluviare"],
                                "form_of": [{"word": "diluviare"}], "tags": ["form-of"]}]}),
        kaikki_entry("diluviare", "verb", ["piovere a dirotto", "cadere in gran quantità"]),
        kaikki_entry("costa", "noun", ["coast"], lang_code="en", lang="English"),
    ]
    path = tmp_path / "it-extract.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    wik = Wiktionary(path, {"bada", "ufizio", "diluviavano", "costa", "bado"})
    assert [t for t, _ in wik.distractors("bada")] == ["Fare attenzione", "Prendersi cura di qualcuno"]
    assert [t for t, _ in wik.distractors("Ufizio")] == ["Compito, incarico", "Complesso di preghiere del clero"]
    assert [t for t, _ in wik.distractors("diluviavano")] == ["Piovere a dirotto", "Cadere in gran quantità"]
    assert wik.distractors("costa") == []                                   # an English-language entry
    assert wik.distractors("bada")[0][1] == "wiktionary: badare (verb) sense 1"
    assert wik.stats["Italian entries read"] == 5


def test_a_damaged_or_foreign_wiktionary_extract_is_an_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(kaikki_entry("badare", "verb", ["fare attenzione"]) + '\n{"word": "ba\n', encoding="utf-8")
    with pytest.raises(SourceError, match=r"bad\.jsonl.*line 2: not a JSON object"):
        Wiktionary(path, {"badare"})
    path.write_text(kaikki_entry("cost", "noun", ["price"], lang_code="en", lang="English") + "\n", encoding="utf-8")
    with pytest.raises(SourceError, match="no Italian entries"):
        Wiktionary(path, {"cost"})


def test_distractors_follow_the_paper_and_any_fallback_is_labelled_3_1(sample_build):
    wsd = rows(sample_build, "wsd")
    with_senses = [r for r in wsd if r["target_phrase"] in ("costiera", "ufizio", "bada", "conto", "appiglio", "coniglio")]
    assert len(with_senses) == 6
    assert all(any(s.startswith("wiktionary: ") for s in r["candidate_sources"]) for r in with_senses)
    coniglio = next(r for r in wsd if r["target_phrase"] == "coniglio")
    assert "Persona paurosa, vile" not in coniglio["candidates"]          # the answer's own sense is never offered
    task = manifest(sample_build)["summary"]["tasks"]["wsd"]
    kinds = task["methods"]["distractors"]
    assert kinds["wiktionary"] > 0 and kinds["offline fallback (answers of other entries)"] > 0
    assert task["methods"]["screening"].startswith("offline stand-in")
    card = (sample_build / "README.md").read_text(encoding="utf-8")
    assert "use offline-fallback distractors" in card and "offline stand-in" in card
    for row in wsd:
        fallback = [s for s in row["candidate_sources"] if s.startswith("offline fallback")]
        assert all("answer of another entry" in s for s in fallback)


def test_the_funnel_is_printed_beside_the_papers_figures_3_1(sample_build):
    task = manifest(sample_build)["summary"]["tasks"]["wsd"]
    funnel = {f["step"]: (f["this build"], f["paper (3.1)"]) for f in task["funnel"]}
    assert funnel["phrases explained by at least two commentators"] == (9, 1492)
    assert funnel["entries kept by screening"][1] == 817 and funnel["questions"] == (len(rows(sample_build, "wsd")), 200)
    card = (sample_build / "README.md").read_text(encoding="utf-8")
    assert "| phrases explained by at least two commentators | 9 | 1,492 |" in card


def _as_repository(sample: Path, root: Path) -> Path:
    """The bundled sample laid out as the LeggoManzoni clone is (translations included)."""
    shutil.copytree(sample / "quarantana", root / "quarantana")
    for folder in (sample / "commenti").iterdir():
        target = root / "commenti" / "xml" / "in_lavorazione" / folder.name
        shutil.copytree(folder, target)
        shutil.copy(folder / "cap1.xml", target.parent / f"{folder.name}.xml")
    for language in ("English_1845", "Spanish_1858"):
        shutil.copytree(sample / "commenti" / "CommentatoreA", root / "translations" / language)
    (root / "README.md").write_text("# LeggoManzoni\n", encoding="utf-8")
    return root


def test_the_repository_root_is_read_as_the_clone_is_laid_out(tmp_path, sample_build):
    root = _as_repository(SAMPLE / "leggomanzoni", tmp_path / "clone")
    layout = discover(root)
    assert sorted(layout.commentaries) == ["CommentatoreA", "CommentatoreB"] and layout.commentary_root == "commenti/xml"
    assert layout.not_read["translations/ (aligned translations, not commentaries)"] == 2
    assert layout.not_read["single-file commentaries <commentator>.xml (the same notes as the per-chapter folders)"] == 2
    out = build(tmp_path, {"leggomanzoni": str(root), "wiktionary": str(SAMPLE / "wiktionary.jsonl")}, wsd_questions=0)
    assert [r["candidates"] for r in rows(out, "wsd")] == [r["candidates"] for r in rows(sample_build, "wsd")]
    assert manifest(out)["summary"]["tasks"]["wsd"]["commentators"] == ["CommentatoreA", "CommentatoreB"]


def test_two_commentary_folders_of_one_name_are_an_error(tmp_path):
    root = _as_repository(SAMPLE / "leggomanzoni", tmp_path / "clone")
    shutil.copytree(root / "commenti" / "xml" / "in_lavorazione" / "CommentatoreA", root / "commenti" / "xml" / "pronti" / "CommentatoreA")
    with pytest.raises(SourceError, match="two commentary folders are named 'CommentatoreA'"):
        discover(root)


def test_real_repository_layout_gives_the_forty_commentators(tmp_path, realdata):
    root = leggomanzoni_clone(realdata / "leggomanzoni", tmp_path / "leggomanzoni")
    read = read_leggomanzoni(root, NoteRules.from_config(CONFIG))
    assert len(read.commentators) == 40 and not any("_18" in c or "_19" in c for c in read.commentators)
    assert read.layout.not_read["translations/ (aligned translations, not commentaries)"] == 2
    assert read.layout.not_read["single-file commentaries <commentator>.xml (the same notes as the per-chapter folders)"] == 41
    assert not any(n.file.startswith("translations") for n in read.notes)


def test_tfidf_stand_in_stays_sparse_and_matches_the_library():
    from sklearn.metrics.pairwise import cosine_similarity

    rng = np.random.default_rng(0)
    words = ["monte", "lago", "riva", "ponte", "costiera", "sega", "fiume", "valle", "borgo", "strada"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(2, 9)))) for _ in range(300)]
    embedder = Embedder("tfidf")
    matrix = embedder.encode(texts)
    assert sparse.issparse(matrix) and matrix.shape[0] == 300
    assert similarities(matrix, matrix[7]) == pytest.approx(cosine_similarity(matrix, matrix[7]).ravel(), abs=1e-5)
    pairs = pair_similarity(embedder, texts[:150], texts[150:])
    both = embedder.encode(texts)
    expected = np.diag(cosine_similarity(both[:150], both[150:]))
    assert pairs == pytest.approx(expected, abs=1e-5)
