"""Word sense disambiguation questions from LeggoManzoni (3.1).

Pipeline, each step recorded on every row and counted in the summary (the funnel is
printed beside the paper's figures, `funnel`):

1. phrases explained by at least two commentators (`manzoni.group_phrases`, overlap rule
   and note filter documented there), with their context (`--wsd-context`: the sentence,
   default, or the numbered passage) and the phrase's character offsets in it; a phrase
   with no letter or digit (a note on a dash or a quote) has no target and is left out;
2. screening (is the entry about meaning, not history or literary judgement?) and
3. answer synthesis (one explanation aggregating the commentators'). With
   `--chat-model` both are the paper's LLM steps (prompts in sources/italian/prompts.yaml).
   Without it an OFFLINE STAND-IN runs (deterministic; labelled as such on every row, in
   the summary and in the card; not the paper's method): a note's gloss is its first
   segment (`first_segment`: up to the first sentence-ending full stop, ";", "(" or spaced
   dash, with the abbreviation list of sources/italian/wsd_rules.yaml so "il M." or "don
   Abb." do not end it) after a lead-in ("nel senso di", "cioè"), unless `gloss_of` reads
   it as one of the reviewer's classes: a quotation or dictionary entry, a remark, a note on
   the older text or a variant reading (a form with a usage label included), a paraphrase
   of the story, a fragment, a comment longer than `gloss_words` words, or the phrase
   itself. An entry is kept when the gloss of a note on exactly its phrase agrees with
   (shares a content word with: `glosses_agree`; with the sense inventory, or a MultiWordNet
   synset: `synonyms_agree`) a gloss of another commentator (notes on a
   longer or shorter span support, never answer: they gloss a neighbouring word; two
   editions of one commentary, or copied notes, are one voice: `_voices`); the answer is
   the gloss most commentators agree with (then the closest to the others, the shortest);
4. the similarity filter: cosine similarity between the phrase and the answer (sentence
   embeddings, `--embedding-model`) must be below 0.7 (`--wsd-similarity-threshold`);
5. five distractors, as the paper makes them: for a single word, the senses of the word
   and of its lemma from a Wiktionary extract in the wiktextract/kaikki JSON Lines format
   (`--wiktionary FILE`, `Wiktionary`), each followed by its own synonyms; for a phrase
   (or a word with too few senses), the chat model (`--chat-model`). When neither gives
   five, an OFFLINE FALLBACK fills the rest with the answers of other entries whose target
   has the same form (`form_class`: one word or a phrase, and what Italian morphology says
   of it: adverb in -mente, gerund, infinitive, imperfect, participle; prepositional, noun
   or verb phrase; then the same final vowel when five such exist), most similar to this
   answer first (not the paper's method: every such candidate is labelled on the row, and
   the summary and card count them). Every candidate, whatever its source, is discarded
   when it repeats the answer, a commentator's gloss of the phrase or another candidate,
   shares a content word with the answer or any commentator's gloss, or reaches the
   similarity threshold with any of them (`_filter`): the dictionary's sense that the
   commentators explain is never offered, nor a synonym of it. Of the usable candidates,
   five are taken so that the answer's length rank among the six is balanced over the
   questions (`--wsd-distractor-choice`; `_balanced_pick`). A reviewer's decisions
   (`--reviews`, review.py) come first: the distractors a reviewer kept are offered again
   first (pinned, with the source the sheet showed), then the replacements, before any other
   source; dropped distractors are never offered again for the phrase;
6. six candidates (answer + five distractors) in seeded order; questions are drawn in a
   seeded order of the phrases that stays the same across rebuilds (reviewed ones first),
   `--wsd-questions` (200) of them, an entry without five usable distractors giving its
   place to the next.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from histbench.core.errors import SourceError

from .embeddings import Embedder, similarities
from .manzoni import Phrase, ReadResult, context_for, phrase_text

N_CANDIDATES = 6
OFFLINE_SCREENING = "offline stand-in: commentators' agreement rule (not the paper's LLM screening)"
OFFLINE_SYNTHESIS = "offline stand-in: the agreed gloss (not the paper's LLM synthesis)"
FALLBACK = "offline fallback: answer of another entry"
_QUOTES = "‘’'\"«»“”"
_BOUNDARY = re.compile(r"[.;(]|\s[-–—]\s")
PAPER_FUNNEL = {
    "phrases annotated by the commentaries": 15172,
    "phrases explained by at least two commentators": 1492,
    "entries kept by screening": 817,
    "entries below the similarity threshold": None,
    "questions": 200,
}


@dataclass
class Rules:
    """Gloss segmentation and offline screening rules (sources/italian/wsd_rules.yaml)."""

    abbreviations: frozenset[str]
    gloss_words: int
    remark_openers: tuple[str, ...]
    markers: tuple[re.Pattern, ...]
    lead_ins: tuple[str, ...] = ()
    dictionaries: tuple[re.Pattern, ...] = ()
    readings: tuple[re.Pattern, ...] = ()
    narrative: tuple[re.Pattern, ...] = ()
    usage_labels: frozenset[str] = frozenset()
    stopwords: frozenset[str] = frozenset()
    agreement_ratio: float = 80.0
    variant_ratio: float = 80.0
    copy_ratio: float = 90.0
    imperfect: re.Pattern | None = None

    @classmethod
    def from_config(cls, config: dict) -> Rules:
        groups = config.get("abbreviations") or {}
        words = {str(w) for group in groups.values() for w in (group or [])}
        screening = config.get("offline_screening") or {}
        by_length = lambda items: tuple(sorted((str(o) for o in items or []), key=len, reverse=True))  # noqa: E731
        compiled = lambda items: tuple(re.compile(m) for m in items or [])  # noqa: E731
        return cls(
            frozenset(words), int(screening.get("gloss_words", 12)), by_length(screening.get("remark_openers")),
            compiled(screening.get("markers")), by_length(screening.get("lead_ins")),
            compiled(screening.get("dictionaries")), compiled(screening.get("readings")),
            compiled(screening.get("narrative_markers")),
            frozenset(_fold(str(u)) for u in screening.get("usage_labels") or []),
            frozenset(_fold(str(w)) for w in screening.get("stopwords") or []),
            float(screening.get("agreement_ratio", 80)), float(screening.get("variant_ratio", 80)),
            float(screening.get("copy_ratio", 90)),
            re.compile(screening["imperfect_verb"]) if screening.get("imperfect_verb") else None,
        )


def _fold(text: str) -> str:
    from unidecode import unidecode

    return " ".join(re.findall(r"[a-z0-9]+", unidecode(text or "").lower()))


def _ends_sentence(text: str, dot: int, rules: Rules) -> bool:
    """Whether the full stop at text[dot] ends a sentence (module doc, step 3)."""
    after = text[dot + 1:]
    if after and not after[0].isspace():
        return False                                   # "12.11", "a.a.", "...»"
    following = after.lstrip()
    if following and (following[0].islower() or following[0].isdigit()):
        return False                                   # "il M. par che", "cap. 12"
    word = re.search(r"([^\W\d_]+)$", text[:dot])
    if word is None:
        return True
    token = word.group(1)
    if len(token) == 1 or token in rules.abbreviations:
        return False                                   # "F. Gonin", "don Abb. Rodrigo"
    if len(token) >= 5 and token.endswith("m") and token[:-1].isalpha():
        return False                                   # "solam.", "specialm."
    return True


def _boundary(text: str, rules: Rules) -> tuple[int, str]:
    """Where the note's opening segment ends, and the boundary there ("", ".", ";", "(", dash)."""
    for match in _BOUNDARY.finditer(text):
        if match.group(0) == "." and not _ends_sentence(text, match.start(), rules):
            continue
        return match.start(), match.group(0).strip()
    return len(text), ""


def first_segment(text: str, rules: Rules) -> str:
    """The note's opening gloss: text up to the first boundary that ends it."""
    end, _ = _boundary(text, rules)
    return _strip_quotes(text[:end].strip()).strip(" ,:")


def _sentence_goes_on(text: str, rules: Rules) -> bool:
    """Whether the segment was cut at a bracket inside a sentence that goes on after it
    ("Il Sinodo ... di Trento (1545-1563), aveva proibito ..."): the segment is then the
    subject or the start of a longer sentence, not a gloss."""
    end, kind = _boundary(text, rules)
    if kind != "(":
        return False
    close = text.find(")", end)
    if close < 0:
        return True
    after = text[close + 1:].lstrip()
    return bool(after) and (after[0] in ",:" or after[0].islower())


_PAIRS = {"«": "»", "“": "”", "‘": "’", '"': '"', "'": "'"}


def _strip_quotes(text: str) -> str:
    """Remove quotes enclosing the whole text (‘pericoloso’ -> pericoloso) and a quote
    left dangling at either end («stessi e più forti -> stessi e più forti); a quotation
    inside the text stays. A final ’ is an apostrophe ("un po’") unless a ‘ opened it."""
    text = text.strip()
    while len(text) >= 2 and text[0] in _PAIRS and text[-1] == _PAIRS[text[0]]:
        inner = text[1:-1]
        if (text[0] != _PAIRS[text[0]] and (text[0] in inner or text[-1] in inner and text[0] == "‘")) or not _balanced(inner):
            break
        text = inner.strip()
    for opening, closing in (("«", "»"), ("“", "”"), ("‘", "’")):
        if text[:1] == opening and closing not in text:
            text = text[1:].strip()
        if closing != "’" and text[-1:] == closing and opening not in text:
            text = text[:-1].strip()
    return text


def _balanced(text: str) -> bool:
    for a, b in (("«", "»"), ("“", "”"), ("(", ")"), ("[", "]")):
        if text.count(a) != text.count(b):
            return False
    return text.count('"') % 2 == 0


@dataclass
class Entry:
    phrase: Phrase
    text: str
    context: str
    target_start: int
    target_end: int
    explanations: list[dict]
    screening: dict = field(default_factory=dict)
    answer: str = ""
    synthesis: str = ""
    similarity: float | None = None
    distractors: list[tuple[str, str]] = field(default_factory=list)   # (text, source)
    review: object | None = None         # the reviewer's decisions (review.ItemReview), if any
    language: str = "it"                 # `phrase_language`: it, la (Latin) or es (Spanish)
    review_record: dict | None = None    # the row's `review`


def item_key(entry: Entry) -> str:
    """The phrase's identity across rebuilds (chapter:first-last word), as review sheets name it."""
    from .review import item_key as key

    return key(entry.phrase.chapter, entry.phrase.start, entry.phrase.end)


_FOREIGN_CUES = {"la": re.compile(r"\b(?:in latino|(?:formula|espressione|frase|motto|detto|parole|citazione|sentenza) latin[aeio])", re.I),
                 "es": re.compile(r"\b(?:in spagnolo|(?:formula|espressione|frase|motto|detto|parole|citazione) spagnol[aeio])", re.I)}
LANGUAGE_NAMES = {"it": "Italian", "la": "Latin", "es": "Spanish"}
# Italian words that simplemma's Italian dictionary lacks (apocopes, elided forms) and that
# its Latin or Spanish one knows: never evidence of another language
_ITALIAN_SHORT = {"gran", "don", "san", "fra", "dell", "nell", "quell", "sull", "dall", "coll", "bel", "buon", "mastro"}


def phrase_language(entry: Entry) -> str:
    """"la" or "es" when the target is a Latin or Spanish phrase, else "it" (the commentators
    gloss such phrases, but the question then tests translation). simplemma's dictionaries
    decide, on the phrase's words of three letters or more, names (a capital inside the
    phrase) and Italian apocopes ("gran", "don", "dell'") left out: with two or more such
    words, the phrase is foreign when most of them are unknown to the Italian dictionary and
    known to the Latin (or Spanish) one, or when half are and a commentator says so ("in
    latino", "espressione latina", "frase spagnola" in a note's first 120 characters; not
    "dal latino", an etymology). A single word is Italian: many of Manzoni's Tuscan or Lombard
    forms are in no modern Italian dictionary, and a note's etymology is no evidence."""
    import simplemma

    tokens = re.findall(r"[^\W\d_]+", entry.text)
    words = [t.lower() for n, t in enumerate(tokens)
             if len(t) >= 3 and t.lower() not in _ITALIAN_SHORT and not (n and t[:1].isupper())]
    if len(words) < 2:
        return "it"
    foreign = [w for w in words if not simplemma.is_known(w, lang="it")]
    counts = {lang: sum(1 for w in foreign if simplemma.is_known(w, lang=lang)) for lang in ("la", "es")}
    # the language knowing more of the words ("Dios nos valga": Spanish), Latin on a tie
    for lang in sorted(counts, key=lambda k: -counts[k]):
        said = any(_FOREIGN_CUES[lang].search(e["text"][:120]) for e in entry.explanations)
        if counts[lang] * 2 > len(words) or (said and counts[lang] * 2 >= len(words)):
            return lang
    return "it"


def label_languages(entries: list[Entry], policy: str, stats: Counter) -> list[Entry]:
    """Label every entry with `phrase_language`; with policy "drop" (the default,
    `--wsd-foreign-phrases`) leave Latin and Spanish phrases out, counted by language."""
    out = []
    for entry in entries:
        entry.language = phrase_language(entry)
        if entry.language != "it":
            stats[f"{LANGUAGE_NAMES[entry.language]} phrases ({'dropped' if policy == 'drop' else 'kept'}; "
                  "--wsd-foreign-phrases)"] += 1
            if policy == "drop":
                continue
        out.append(entry)
    return out


def make_entries(read: ReadResult, phrases: list[Phrase], unit: str, stats: Counter) -> list[Entry]:
    entries = []
    for phrase in phrases:
        chapter = read.chapters[phrase.chapter]
        context, a, b = context_for(chapter, phrase.start, phrase.end, unit)
        text = phrase_text(chapter, phrase.start, phrase.end)
        if not re.search(r"\w", text) or b <= a or context[a:b] != text:
            stats["phrases with no word to ask about (a note on punctuation; left out)"] += 1
            continue
        explanations = []
        for note in sorted(phrase.notes, key=lambda n: (n.commentator, n.note_id)):
            explanations.append({"commentator": note.commentator, "note_id": note.note_id, "lemma": note.lemma,
                                 "text": note.explanation})
        entries.append(Entry(phrase, text, context, a, b, explanations))
    return entries


# ----------------------------------------------------------------------------- offline


_FUNCTION_END = re.compile(r"\b(?:di|del|della|dei|delle|e|ed|o|che|a|al|alla|il|lo|la|i|gli|le|per|con|ma|da|in|un|una|non)$",
                           re.IGNORECASE)


def _lead_in(text: str, rules: Rules) -> str:
    """The text without a lead-in that announces a gloss ("nel senso di", "cioè", "qui vale")."""
    for _ in range(2):
        low = text.lower()
        for lead in rules.lead_ins:
            if low.startswith(lead.lower()) and (len(text) == len(lead) or not text[len(lead)].isalnum()):
                text = text[len(lead):].lstrip(" ,:")
                break
        else:
            break
    return text


def gloss_of(text: str, rules: Rules, phrase: str = "", ref: str = "") -> tuple[str | None, str]:
    """(gloss, why) for one note: its first segment when the offline rules take it for an
    explanation of the phrase's meaning; else (None, the rule that refused it). The rules
    (sources/italian/wsd_rules.yaml) refuse, in this order: a quotation or dictionary entry
    (an opening «, "Voce: ...", a dictionary named in the opening: Cherubini, Tommaseo, ...);
    a note on the older text (readings: "Per «...»", "nella prima edizione", V, 1827, ...)
    or a form with a usage label ("tosto. Lett."); a remark (remark openers, markers of the
    author, the text's versions, style, characters, an article opening a remark on the word
    itself: "l'avverbio ...", "la forma ..."); a paraphrase of the story (narrative
    markers: "dunque", "ormai", ...); a fragment (cut inside a quotation or bracket, or
    ending on a function word); a gloss longer than `gloss_words` words; the phrase itself or
    a spelling variant of it ("soperchierie" for "soverchierie"). `ref`: the words the note
    itself points at (its <ref>), which may be more than the phrase ("stavano a bada")."""
    body = _lead_in(text.strip(), rules)
    if body[:1] in "«“\"":
        return None, "a quotation or dictionary entry (opens with a quotation mark)"
    segment = first_segment(body, rules)
    if not segment:
        return None, "not a meaning (no opening segment)"
    if _sentence_goes_on(body, rules):
        return None, "a fragment (cut at a bracket inside a longer sentence)"
    opening = _with_parenthesis(body, rules)
    for pattern in rules.dictionaries:
        if pattern.search(opening):
            return None, f"a quotation or dictionary entry (names {pattern.pattern})"
    if re.match(r"^[^\s:]{2,}\s*:\s", segment) and phrase and _close_form(segment.split(":", 1)[0], phrase, rules):
        return None, "a quotation or dictionary entry (headword: definition)"
    for pattern in rules.readings:
        if pattern.search(opening):
            return None, f"a note on the older text or a variant reading ({pattern.pattern})"
    rest = body[len(segment):].lstrip(" .,;:»’'\"")
    label = _fold(rest.split(".", 1)[0]) if rest else ""
    tail = _fold(segment.rsplit(",", 1)[1]) if "," in segment else ""
    if label in rules.usage_labels or tail in rules.usage_labels:
        return None, "a note on the older text or a variant reading (a form with a usage label)"
    segment = _lead_in(segment, rules)
    segment = _strip_quotes(segment)
    items = [_strip_quotes(i.strip().replace("'", "’") if i.strip()[:1] == "‘" else i.strip()) for i in segment.split(",")]
    if phrase:
        while len(items) > 1 and _close_form(items[0], phrase, rules):
            items = items[1:]
    segment = ", ".join(i for i in items if i)
    if not segment:
        return None, "not a meaning (no opening segment)"
    head = segment[:1].upper() + segment[1:]
    for opener in rules.remark_openers:
        if head == opener or head.startswith(opener + " ") or head.startswith(opener + ","):
            return None, f"a remark (opens with {opener!r})"
    for marker in rules.markers:
        if marker.search(segment):
            return None, f"a remark (names {marker.pattern})"
    for marker in rules.narrative:
        if marker.search(segment):
            return None, f"a paraphrase of the story ({marker.pattern})"
    if (rules.imperfect is not None and rules.imperfect.search(segment)
            and not rules.imperfect.search(f"{phrase} {ref}")):
        return None, "a paraphrase of the story (a verb in the imperfect where the phrase has none)"
    if "«" in segment or "“" in segment or not _balanced(segment) or _FUNCTION_END.search(segment):
        return None, "a fragment (a quotation, an open bracket, or a function word at its end)"
    if len(segment.split()) > rules.gloss_words:
        return None, f"a comment, not a gloss (longer than {rules.gloss_words} words)"
    if phrase and re.search(rf"(?<!\w){re.escape(phrase.lower())}(?!\w)", segment.lower()):
        return None, "not a meaning (repeats the phrase it explains)"
    if phrase and _close_form(segment, phrase, rules):
        return None, "not a meaning (the phrase itself or a spelling variant of it)"
    return segment, "gloss"


def _with_parenthesis(text: str, rules: Rules) -> str:
    """The opening segment, with the parenthesis that follows it when it was cut there
    ("... toponimo (che M. qui e altrove muta ...)"): where a note says whose words or which
    reading its gloss is."""
    end, kind = _boundary(text, rules)
    if kind != "(":
        return text[:end]
    close = text.find(")", end)
    return text[:close + 1 if close >= 0 else len(text)]


def _close_form(text: str, phrase: str, rules: Rules) -> bool:
    from rapidfuzz import fuzz

    a, b = _fold(text), _fold(phrase)
    return bool(a) and bool(b) and fuzz.ratio(a, b) >= rules.variant_ratio


def content_words(text: str, rules: Rules, exclude: str = "") -> set[str]:
    """Folded words of 4+ letters, not stopwords nor words of `exclude` (the phrase)."""
    skip = set(_fold(exclude).split())
    return {w for w in _fold(text).split() if len(w) >= 4 and w not in rules.stopwords and w not in skip}


def glosses_agree(a: str, b: str, rules: Rules, phrase: str = "") -> bool:
    """Two glosses agree when they share a content word (rapidfuzz ratio >= agreement_ratio:
    "borgate" / "grosse borgate", "fessure" / "fessure, spaccature"), words of `phrase`
    (the target and its context sentence: two remarks on the story share its words) not
    counted."""
    from rapidfuzz import fuzz

    wa, wb = content_words(a, rules, phrase), content_words(b, rules, phrase)
    return any(x == y or fuzz.ratio(x, y) >= rules.agreement_ratio for x in wa for y in wb)


def _voices(notes: list, rules: Rules) -> dict[int, str]:
    """A voice per note: the commentator's name folded without digits ("Viti_Sapegno" and
    "Viti-Sapegno2005" are one commentary in two editions), and notes copied from one
    another (rapidfuzz ratio >= copy_ratio on texts of 60+ characters) share one voice."""
    from rapidfuzz import fuzz

    voices: dict[int, str] = {}
    for i, note in enumerate(notes):
        voice = re.sub(r"[^a-z]+", "", _fold(note.commentator))
        for j in range(i):
            other = notes[j]
            if (len(note.explanation) >= 60 and len(other.explanation) >= 60
                    and fuzz.ratio(note.explanation, other.explanation) >= rules.copy_ratio):
                voice = voices[j]
                break
        voices[i] = voice
    return voices


# The longest phrase (in words) whose glosses may agree through a synonym: on longer ones (a
# maxim, "i miei venticinque lettori") the commentators' notes are mostly remarks, and two
# remarks share synonyms ("sentenza" / "massima", "espressione" / "formula").
SYNONYM_AGREEMENT_WORDS = 3
_WORDS = re.compile(r"[^\W\d_]+")


def synonyms_agree(a: str, b: str, rules: Rules, phrase: str, lexicon) -> bool:
    """Two glosses agree through the sense inventory when a content word of one and a content
    word of the other (words of `phrase` not counted) share a MultiWordNet synset ("pauroso"
    / "vile", "finezze": "gentilezze" / "cortesia"): the same meaning in other words, which
    the spelling agreement misses."""
    senses_a = {sid for w in content_words(a, rules, phrase) for lemma in lexicon.lemmas_of(w)
                for sid, _ in lexicon.synsets(lemma)}
    if not senses_a:
        return False
    return any(sid in senses_a for w in content_words(b, rules, phrase) for lemma in lexicon.lemmas_of(w)
               for sid, _ in lexicon.synsets(lemma))


def offline_screen(entry: Entry, rules: Rules, stats: Counter | None = None, refusals: Counter | None = None,
                   lexicon=None) -> dict:
    """The offline stand-in for the paper's LLM screening and synthesis (module doc, step
    3): kept when a gloss of a note on exactly this phrase agrees with a gloss of another
    commentator (any note of the phrase); the answer is that gloss, the one most commentators
    agree with (then the closest to the others, then the shortest). With the sense inventory
    (`lexicon`), glosses of a phrase of at most SYNONYM_AGREEMENT_WORDS words that share no
    word also agree when they share a synset (`synonyms_agree`); only notes the rules read as
    glosses take part, so no refused class comes back."""
    from rapidfuzz import fuzz

    phrase = entry.phrase
    notes = sorted(phrase.notes, key=lambda n: (n.commentator, n.note_id))
    voices = _voices(notes, rules)
    glosses: list[tuple[int, str, bool]] = []
    for i, note in enumerate(notes):
        gloss, why = gloss_of(note.explanation, rules, entry.text, note.lemma)
        exact = (note.start, note.end) == (phrase.start, phrase.end)
        if stats is not None:
            kind = why.split(" (", 1)[0]
            if gloss is not None and not exact:
                kind = "a gloss of a longer or shorter span (supports another gloss, never the answer)"
            stats[f"offline screening, notes read as {kind}"] += 1
            if refusals is not None and gloss is None:
                refusals[why] += 1
        if gloss is not None:
            glosses.append((i, gloss, exact))
    best, best_key, support, by_synonym = None, None, [], False
    for i, gloss, exact in glosses:
        if not exact:
            continue
        agreeing = sorted({voices[j] for j, other, _ in glosses if voices[j] != voices[i]
                           and glosses_agree(gloss, other, rules, entry.context)})
        through_synonyms = False
        if not agreeing and lexicon is not None and len(_WORDS.findall(entry.text)) <= SYNONYM_AGREEMENT_WORDS:
            agreeing = sorted({voices[j] for j, other, _ in glosses if voices[j] != voices[i]
                               and synonyms_agree(gloss, other, rules, entry.context, lexicon)})
            through_synonyms = bool(agreeing)
        if not agreeing:
            continue
        others = [o for j, o, _ in glosses if voices[j] != voices[i]]
        closeness = float(np.mean([fuzz.token_set_ratio(gloss, o) for o in others]))
        key = (not through_synonyms, len(agreeing), closeness, -len(gloss.split()), -i)
        if best_key is None or key > best_key:
            best, best_key, support, by_synonym = (i, gloss), key, agreeing, through_synonyms
    if best is None:
        reason = (f"{len(glosses)} note(s) open with a gloss; none on exactly this phrase agrees with another "
                  "commentator's" if glosses else "no note opens with a gloss")
        return {"method": OFFLINE_SCREENING, "kept": False, "reason": reason, "answer": None}
    i, gloss = best
    answer = gloss[:1].upper() + gloss[1:]
    reason = (f"the gloss of {notes[i].commentator} agrees with {len(support)} other commentator(s) "
              f"({', '.join(support)})" + (" through a MultiWordNet synonym" if by_synonym else ""))
    if stats is not None and by_synonym:
        stats["entries kept through a synonym agreement (MultiWordNet)"] += 1
    return {"method": OFFLINE_SCREENING, "kept": True, "reason": reason, "answer": answer}


def offline_answer(entry: Entry, rules: Rules) -> str:
    """The offline answer: the screened consensus gloss, else (when a chat answer did not
    parse) the first gloss the rules accept, else the first note's opening segment."""
    screened = offline_screen(entry, rules)
    if screened["answer"]:
        return screened["answer"]
    for item in entry.explanations:
        gloss, _ = gloss_of(item["text"], rules, entry.text)
        if gloss is not None:
            return gloss[:1].upper() + gloss[1:]
    text = first_segment(entry.explanations[0]["text"], rules) or entry.explanations[0]["text"]
    return text[:1].upper() + text[1:]


# ----------------------------------------------------------------------------- chat


def _explanations_block(entry: Entry) -> str:
    return "\n".join(f"- {e['commentator']}: {e['text']}" for e in entry.explanations)


def chat_screen_and_answer(entries: list[Entry], chat, prompts: dict, rules: Rules, stats: Counter) -> None:
    from histbench.core.parsing import extract_json_object

    def conv(name: str, entry: Entry, **extra) -> list[dict]:
        spec = prompts[name]
        values = {"phrase": entry.text, "context": entry.context, "explanations": _explanations_block(entry), **extra}
        return [{"role": "system", "content": spec["system"]}, {"role": "user", "content": spec["user"].format(**values)}]

    answers = chat.ask([conv("screen", e) for e in entries], "wsd screening")
    for entry, text in zip(entries, answers, strict=True):
        parsed = extract_json_object(text)
        verdict = parsed.value.get("suitable") if parsed.ok else None
        if isinstance(verdict, str):
            verdict = verdict.strip().lower() in ("true", "yes", "si", "sì")
        if verdict is None:
            stats["wsd screening answers that did not parse (entry left out)"] += 1
        entry.screening = {"method": f"chat: {chat.spec}", "kept": bool(verdict),
                           "reason": str(parsed.value.get("reason", "")) if parsed.ok else f"unparsed answer: {text[:200]}"}
    kept = [e for e in entries if e.screening["kept"]]
    answers = chat.ask([conv("synthesize", e) for e in kept], "wsd answers")
    for entry, text in zip(kept, answers, strict=True):
        parsed = extract_json_object(text)
        answer = parsed.value.get("answer") if parsed.ok else None
        if isinstance(answer, str) and answer.strip():
            entry.answer = answer.strip()
            entry.synthesis = f"chat: {chat.spec}"
        else:
            stats["wsd synthesis answers that did not parse (offline stand-in used)"] += 1
            entry.answer = offline_answer(entry, rules)
            entry.synthesis = OFFLINE_SYNTHESIS + " (the chat answer did not parse)"


def chat_distractors(entries: list[Entry], chat, prompts: dict, n: int) -> list[list[str]]:
    from histbench.core.parsing import extract_json_object

    spec = prompts["distractors"]
    conversations = []
    for entry in entries:
        values = {"phrase": entry.text, "context": entry.context, "answer": entry.answer, "n": n,
                  "explanations": _explanations_block(entry)}
        conversations.append([{"role": "system", "content": spec["system"]},
                              {"role": "user", "content": spec["user"].format(**values)}])
    out = []
    for text in chat.ask(conversations, "wsd distractors"):
        parsed = extract_json_object(text)
        items = parsed.value.get("distractors") if parsed.ok else None
        out.append([str(i).strip() for i in items if str(i).strip()] if isinstance(items, list) else [])
    return out


# ----------------------------------------------------------------------------- Wiktionary

# Glosses of inflected forms in the Italian edition name the lemma last:
# "terza persona plurale dell'indicativo imperfetto di diluviare", "plurale di casa".
_FORM_GLOSS = re.compile(
    r"\b(?:persona|plurale|singolare|femminile|maschile|participio|gerundio|infinito|imperativo|congiuntivo|"
    r"condizionale|indicativo|forma)\b.*\b(?:di|del|dello|della|dell')\s*([^\W\d_][\w']*)\s*[.;]?\s*$",
    re.IGNORECASE,
)


@dataclass
class Sense:
    word: str           # the headword whose sense this is
    pos: str
    index: int          # position of the sense in its entry (1-based)
    gloss: str
    synonyms: tuple[str, ...] = ()    # the sense's own synonyms (`senses[i].synonyms`)


class Wiktionary:
    """Senses of Italian words from a wiktextract/kaikki JSON Lines extract.

    One JSON object per line (the format kaikki.org distributes and `wiktwords` writes):
    `word`, `lang_code` ("it"), `pos`, `senses: [{"glosses": [...], "form_of": [{"word"}]}]`,
    `forms: [{"form"}]`. Only Italian entries (`lang_code` "it") are used; use the Italian
    edition's extract (glosses in Italian, as the paper's dictionary, derived from the
    Italian Wiktionary). Only the words asked for are kept in memory; the file is read
    twice at most (the second pass fetches the lemmas of inflected forms). A form's lemma
    comes from `form_of` (English edition), from an entry listing the word among its
    `forms`, or from an Italian form gloss ("... di diluviare").
    """

    def __init__(self, path: Path, words: set[str]) -> None:
        self.path = Path(path)
        self.wanted = {w.lower() for w in words}
        self.senses: dict[str, list[Sense]] = {}
        self.lemmas: dict[str, set[str]] = {}
        self.stats: Counter = Counter()
        lemma_senses: dict[str, list[Sense]] = {}
        pending: set[str] = set()
        for _, entry in self._entries():
            word = str(entry.get("word") or "").strip()
            key = word.lower()
            forms = {str(f.get("form") or "").lower() for f in entry.get("forms") or [] if isinstance(f, dict)}
            found = (forms & self.wanted) - {key}
            for form in found:
                self.lemmas.setdefault(form, set()).add(key)
            if found:
                lemma_senses.setdefault(key, []).extend(self._senses(entry))
            if key in self.wanted:
                self.senses.setdefault(key, []).extend(self._senses(entry))
                for lemma in self._form_of(entry):
                    self.lemmas.setdefault(key, set()).add(lemma)
                    pending.add(lemma)
        pending -= set(lemma_senses)
        pending -= set(self.senses)
        if pending:
            for _, entry in self._entries():
                key = str(entry.get("word") or "").strip().lower()
                if key in pending:
                    lemma_senses.setdefault(key, []).extend(self._senses(entry))
        for key in list(self.lemmas):
            for lemma in sorted(self.lemmas[key]):
                self.senses.setdefault(key, []).extend(lemma_senses.get(lemma, []) or self.senses.get(lemma, []))
        self.stats["words asked for"] = len(self.wanted)
        self.stats["words with at least one sense"] = sum(1 for w in self.wanted if self.senses.get(w))

    def _entries(self):
        opener = gzip.open if self.path.suffix.lower() == ".gz" else open
        italian = 0
        try:
            with opener(self.path, "rt", encoding="utf-8") as handle:
                for n, line in enumerate(handle, start=1):
                    if not line.strip():
                        continue
                    try:
                        entry = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise SourceError(f"line {n}: not a JSON object ({exc.msg}); expected one wiktextract entry per line",
                                          file=self.path, field="line") from exc
                    if not isinstance(entry, dict):
                        raise SourceError(f"line {n}: not a JSON object; expected one wiktextract entry per line",
                                          file=self.path, field="line")
                    if entry.get("lang_code") != "it":
                        continue
                    italian += 1
                    yield n, entry
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise SourceError(f"cannot read the Wiktionary extract: {exc}", file=self.path) from exc
        if not italian:
            raise SourceError("no Italian entries (lang_code \"it\") in the Wiktionary extract", file=self.path)
        self.stats["Italian entries read"] = italian

    @staticmethod
    def _senses(entry: dict) -> list[Sense]:
        out = []
        for n, sense in enumerate(entry.get("senses") or [], start=1):
            if not isinstance(sense, dict) or sense.get("form_of") or "form-of" in (sense.get("tags") or []):
                continue
            glosses = [str(g).strip() for g in sense.get("glosses") or [] if str(g).strip()]
            if not glosses or _FORM_GLOSS.search(glosses[-1]):
                continue
            synonyms = tuple(str(x.get("word")).strip() for x in sense.get("synonyms") or []
                             if isinstance(x, dict) and str(x.get("word") or "").strip())
            out.append(Sense(str(entry.get("word") or ""), str(entry.get("pos") or ""), n, glosses[-1], synonyms))
        return out

    @staticmethod
    def _form_of(entry: dict) -> set[str]:
        lemmas = set()
        for sense in entry.get("senses") or []:
            if not isinstance(sense, dict):
                continue
            for item in sense.get("form_of") or []:
                if isinstance(item, dict) and item.get("word"):
                    lemmas.add(str(item["word"]).lower())
            for gloss in sense.get("glosses") or []:
                match = _FORM_GLOSS.search(str(gloss))
                if match:
                    lemmas.add(match.group(1).lower())
        return lemmas

    def distractors(self, word: str) -> list[tuple[str, str]]:
        """(text, source) for every sense of the word (and of its lemma), in dictionary order,
        each sense followed by its own synonyms (a synonym listed for the whole entry is not
        tied to a sense, may name the sense in context, and is never offered)."""
        out, seen = [], set()
        for sense in self.senses.get(word.lower(), []):
            label = f"wiktionary: {sense.word} ({sense.pos}) sense {sense.index}"
            items = [(sense.gloss.rstrip(" .;"), label)] + [(x, f"{label} synonym") for x in sense.synonyms]
            for text, source in items:
                text = text[:1].upper() + text[1:]
                if not text or text.lower() in seen:
                    continue
                seen.add(text.lower())
                out.append((text, source))
        return out


# ----------------------------------------------------------------------------- questions


def is_single_word(entry: Entry) -> bool:
    return re.fullmatch(r"[^\W\d_]+(?:['’][^\W\d_]+)?", entry.text) is not None and " " not in entry.text


_CLITICS = r"(?:lo|la|li|le|gli|glie\w*|ne|si|ci|vi|mi|ti|sene|sela|selo)?"
_WORD_CLASSES = (
    ("adverb in -mente", re.compile(r"\w{3,}mente$")),
    ("gerund", re.compile(rf"\w{{2,}}(?:ando|endo){_CLITICS}$")),
    ("infinitive", re.compile(rf"\w{{2,}}(?:are|ere|ire|ar|er|ir|rre){_CLITICS}$")),
    ("imperfect", re.compile(r"\w{2,}(?:ava|eva|iva|avano|evano|ivano|avan|evan|ivan)$")),
    ("participle", re.compile(r"\w{2,}(?:ato|ata|ati|ate|uto|uta|uti|ute|ito|ita|iti|ite)$")),
)
_PREPOSITIONS = {"a", "ad", "di", "d", "da", "in", "con", "su", "per", "tra", "fra", "al", "allo", "alla", "ai", "agli",
                 "alle", "all", "del", "dello", "della", "dei", "degli", "delle", "dell", "dal", "dallo", "dalla", "dai",
                 "dagli", "dalle", "dall", "nel", "nello", "nella", "nei", "negli", "nelle", "nell", "sul", "sullo",
                 "sulla", "sui", "sugli", "sulle", "sull", "col", "coi", "pel", "sur", "de", "ne"}
_ARTICLES = {"il", "lo", "la", "i", "gli", "le", "un", "uno", "una", "l", "un'", "quel", "quello", "quella", "quei",
             "questo", "questa", "que"}


def form_class(text: str) -> str:
    """The target's form, as far as Italian morphology says it: for one word (one token:
    "d'adoperarsi" is one, classed by its last part) its class from its ending (adverb in -mente, gerund, infinitive, imperfect, participle; clitics
    allowed) or "word"; for a phrase its first word's kind (prepositional phrase, noun
    phrase after an article or demonstrative, verb phrase after a verb form of the classes
    above) or "phrase"."""
    words = re.findall(r"[^\W\d_]+", text.lower())
    if not words:
        return "phrase"
    if not re.search(r"\s", text.strip()):           # one token, elision included ("d'adoperarsi")
        for name, pattern in _WORD_CLASSES:
            if pattern.fullmatch(words[-1]):
                return f"word: {name}"
        return "word"
    first = words[0]
    if first in _PREPOSITIONS:
        return "phrase: prepositional"
    if first in _ARTICLES:
        return "phrase: noun phrase"
    for name, pattern in _WORD_CLASSES:
        if pattern.fullmatch(first):
            return f"phrase: verb phrase ({name})"
    return "phrase"


def commentator_glosses(entry: Entry, rules: Rules | None) -> list[str]:
    """Every commentator's gloss of the phrase (the offline rules' gloss, else the note's
    opening segment): what no distractor may repeat."""
    out = []
    for item in entry.explanations:
        gloss = None
        if rules is not None:
            gloss, _ = gloss_of(item["text"], rules, entry.text)
            gloss = gloss or first_segment(item["text"], rules)
        out.append(gloss or item["text"][:200])
    return [g for g in out if g]


def lexicon_senses(entry: Entry, lexicon, rules: Rules | None, glosses: list[str] | None = None) -> tuple[list, dict]:
    """The other senses of a single-word target the lexicon offers (lexicon.py
    `distractors`), avoiding the gold and the commentators' glosses and notes."""
    glosses = commentator_glosses(entry, rules) if glosses is None else glosses
    notes = ([" ".join(sorted(content_words(item["text"][:300], rules, entry.text))) for item in entry.explanations]
             if rules is not None else None)
    return lexicon.distractors(entry.text, [entry.answer, *glosses], notes=notes)


def prefer_sense_inventory(entries: list[Entry], lexicon, rules: Rules | None, stats: Counter) -> list[Entry]:
    """The entries in their order, but with the unreviewed single words whose lemma has at
    least three showable other senses moved up behind the reviewed ones: when the screening
    keeps more entries than the questions asked, those that test a word's senses are asked
    first (the order among each group is unchanged)."""
    reviewed = [e for e in entries if e.review is not None]
    rich, rest = [], []
    for entry in entries:
        if entry.review is not None:
            continue
        if is_single_word(entry) and len(lexicon_senses(entry, lexicon, rules)[0]) >= 3:
            rich.append(entry)
        else:
            rest.append(entry)
    stats["entries drawn first for three other senses of the lemma (MultiWordNet)"] = len(rich)
    return reviewed + rich + rest


@dataclass
class DistractorRules:
    """How distractors are checked and chosen (module doc, step 5)."""

    threshold: float                 # embedding similarity at or above which a candidate is taken for the answer
    rules: Rules | None = None       # the gloss rules: a candidate sharing a content word with a gloss is refused


def choose_distractors(
    entries: list[Entry], pool: list[Entry], embedder: Embedder, threshold: float, wiktionary: Wiktionary | None,
    ask_chat, stats: Counter, rules: Rules | None = None, rng: np.random.Generator | None = None, balance: bool = True,
    lexicon=None,
) -> None:
    """Fill entry.distractors (five each when possible) from the sources in order (module
    doc, step 5). `ask_chat(entries)` returns the chat model's proposals for the entries the
    dictionary could not serve (None: no chat model)."""
    need = N_CANDIDATES - 1
    checks = DistractorRules(threshold, rules)
    rng = rng if rng is not None else np.random.default_rng(0)
    glosses = {id(e): commentator_glosses(e, rules) for e in entries}
    checked: list[list[tuple[str, str]]] = []
    fixed: list[list[tuple[str, str]]] = []      # the reviewer's replacements: offered first, unchecked
    refused: list[set[str]] = []                 # what a reviewer dropped or replaced: never offered again
    for entry in entries:
        review = entry.review
        refused.append(review.excluded() if review is not None else set())
        fixed.append((review.pinned() + [(r, f"reviewer ({review.reviewer})") for _, r in review.replaced])[:need]
                     if review is not None else [])
        skip = refused[-1] | {t.casefold() for t, _ in fixed[-1]}
        proposals = wiktionary.distractors(entry.text) if wiktionary is not None and is_single_word(entry) else []
        if proposals:
            stats["Wiktionary candidates offered for single words"] += len(proposals)
        if lexicon is not None and is_single_word(entry):
            senses, counts = lexicon_senses(entry, lexicon, rules, glosses[id(entry)])
            for name, value in counts.items():
                stats[f"MultiWordNet: {name}"] += value
            stats["MultiWordNet: single words with at least one sense"] += bool(counts["senses of the lemma"])
            stats["MultiWordNet: other senses offered for single words"] += len(senses)
            proposals = proposals + senses
        checked.append(_filter(entry, proposals, glosses[id(entry)], embedder, checks, stats, skip=skip))
    short = [k for k, found in enumerate(checked) if len(found) + len(fixed[k]) < need]
    if ask_chat is not None and short:
        for k, lists in zip(short, ask_chat([entries[k] for k in short]), strict=True):
            taken = {t.casefold() for t, _ in checked[k] + fixed[k]} | refused[k]
            extra = [(t, "chat model") for t in lists if t.strip().casefold() not in taken]
            checked[k] += _filter(entries[k], extra, glosses[id(entries[k])], embedder, checks, stats, skip=taken)
    from .chrono import BalancedRanks

    ranks = BalancedRanks(rng, N_CANDIDATES)
    fallback = _Fallback(pool, embedder, lexicon)
    for entry, found, given, skip in zip(entries, checked, fixed, refused, strict=True):
        rank = ranks.peek() if balance else None
        if balance:
            ranks.used()
        want = need - len(given)
        rival = bool(rng.random() < SPELLING_RIVAL_SHARE) if balance else False
        gold_spelling = spelling_similarity(entry.answer, entry.text)
        if (rival and lexicon is not None and is_single_word(entry)
                and not any(spelling_similarity(t, entry.text) >= gold_spelling for t, _ in given + found)):
            # no candidate is spelt as much like the target as the gold: a form-alike of the lexicon is
            taken = skip | {t.casefold() for t, _ in found + given}
            alike = _filter(entry, lexicon.paronyms(entry.text, gold_spelling, [entry.answer, *glosses[id(entry)]]),
                            glosses[id(entry)], embedder, checks, stats, skip=taken)
            stats["distractors spelt like the target (a lexicon word with another meaning)"] += bool(alike)
            found = alike[:1] + found
        if len(found) >= want:
            entry.distractors = _balanced_pick(given, _rival_first(entry, found, rival), len(entry.answer), want, rank)
            continue
        taken = skip | {t.casefold() for t, _ in found + given}
        extra = _filter(entry, fallback.candidates(entry, stats), glosses[id(entry)], embedder, checks, stats, skip=taken)
        if rival and not any(spelling_similarity(t, entry.text) >= spelling_similarity(entry.answer, entry.text)
                             for t, _ in given + found):
            extra = _rival_first(entry, extra, True)
        entry.distractors = _balanced_pick(given + found, extra, len(entry.answer), want - len(found), rank)


# Share of questions given a distractor at least as close in spelling to the target as the
# gold (when the sources have one): the gold, a gloss, often shares the target's stem
# ("ufizio" / "L'ufficio divino"), so "the option most similar in spelling" would otherwise
# find it (the shortcut audit's most_similar_spelling rule); 5/6 leaves it the closest in
# about one question in six, as chance does.
SPELLING_RIVAL_SHARE = 5 / 6


def _rival_first(entry: Entry, candidates: list[tuple[str, str]], rival: bool) -> list[tuple[str, str]]:
    """The candidates with the first one at least as close in spelling to the target as the
    gold moved to the front (when `rival`)."""
    if not rival or not candidates:
        return candidates
    gold = spelling_similarity(entry.answer, entry.text)
    for i, (text, _) in enumerate(candidates):
        if spelling_similarity(text, entry.text) >= gold:
            return [candidates[i]] + candidates[:i] + candidates[i + 1:]
    return candidates


def ending(text: str) -> str:
    """The last vowel of a single word's ending (o, a, i, e) or "other": with `form_class`,
    what distinguishes "villaggi" (plural) from "nubile" or "ricco"."""
    words = re.findall(r"[^\W\d_]+", unidecode_lower(text))
    last = words[-1][-1:] if words else ""
    return last if last in "oaie" and last else "other"


def unidecode_lower(text: str) -> str:
    from unidecode import unidecode

    return unidecode(text or "").lower()


def spelling_similarity(option: str, target: str) -> float:
    """How much an option shares the target's spelling: the best difflib ratio between a
    word of the option and a word of the target (casefolded), as the shortcut audit's
    `most_similar_spelling` rule measures it."""
    from ..machinery.shortcuts import spelling_similarity as measure

    return measure(option, target)


NEAR_FORM = 0.75     # spelling_similarity at which an option repeats a form of the target ("rabbattere" for "rabbattuto")


class _Fallback:
    """The offline fallback: answers of other entries whose target has the same form
    (`form_class`, and for single words the same final vowel, `ending`; when fewer than
    five such, the same form class whatever the ending), most similar to this answer first;
    never an entry of the same phrase. With the lexicon (lexicon.py), a candidate must also
    agree with the target in part of speech, gender and number as its morphological
    analysis determines them (`Features.clashes`: a feature either side leaves open agrees),
    and must not repeat a form of the target (a word whose `spelling_similarity` to it reaches
    NEAR_FORM, 0.75) unless the gold does. (Not "less similar in spelling than the gold":
    that would make the most similar spelling point at the gold, the very shortcut the audit
    measures.)"""

    def __init__(self, pool: list[Entry], embedder: Embedder, lexicon=None) -> None:
        self.pool = pool
        self.embedder = embedder
        self.lexicon = lexicon
        self.vectors = embedder.encode([e.answer for e in pool]) if pool else None
        self.keys = [(form_class(e.text), ending(e.text) if is_single_word(e) else "") for e in pool]

    def candidates(self, entry: Entry, stats: Counter | None = None) -> list[tuple[str, str]]:
        found = self._candidates(entry)
        if self.lexicon is None or not found:
            return found
        target = self.lexicon.features(entry.text)
        if target.pos is None and entry.answer:
            # a word the wordnet does not know ("quartiere", a noun in -ere): the gold's part of
            # speech stands for it, so an infinitive is not offered for a noun
            target = replace(target, pos=self.lexicon.features(entry.answer).pos)
        gold_near = spelling_similarity(entry.answer, entry.text) >= NEAR_FORM
        out = []
        for text, source in found:
            if self.lexicon.features(text).clashes(target):
                if stats is not None:
                    stats["fallback candidates disagreeing with the target in part of speech, gender or number (refused)"] += 1
                continue
            if spelling_similarity(text, entry.text) >= NEAR_FORM and not gold_near:
                if stats is not None:
                    stats["fallback candidates repeating a form of the target when the gold does not (refused)"] += 1
                continue
            out.append((text, source))
        return out

    def _candidates(self, entry: Entry) -> list[tuple[str, str]]:
        if not self.pool:
            return []
        own = (form_class(entry.text), ending(entry.text) if is_single_word(entry) else "")
        position = next((i for i, e in enumerate(self.pool) if e is entry), None)
        vector = self.vectors[position] if position is not None else self.embedder.encode([entry.answer])[0]
        sims = similarities(self.vectors, vector)
        exact, relaxed = [], []
        for j in np.argsort(-sims, kind="stable"):
            other = self.pool[int(j)]
            key = self.keys[int(j)]
            if other is entry or other.text.lower() == entry.text.lower() or key[0] != own[0]:
                continue
            if key == own:
                exact.append((other.answer, f"{FALLBACK} ({other.text}; {own[0]}" + (f", -{own[1]})" if own[1] else ")")))
            else:
                relaxed.append((other.answer, f"{FALLBACK} ({other.text}; {own[0]}, another ending)"))
        return exact + relaxed


def _balanced_pick(taken: list[tuple[str, str]], candidates: list[tuple[str, str]], gold: int, k: int,
                   rank: int | None) -> list[tuple[str, str]]:
    """`taken` plus k of `candidates` (in their order of preference) such that the gold
    answer is longer than exactly `rank` of the five distractors (and as long as none of
    the added ones), or the nearest rank the candidates allow (lower first)."""
    if k <= 0:
        return taken[:N_CANDIDATES - 1]
    if rank is None:
        return taken + candidates[:k]
    shorter = [c for c in candidates if len(c[0]) < gold]
    longer = [c for c in candidates if len(c[0]) > gold]
    ties = [c for c in candidates if len(c[0]) == gold]
    have = sum(1 for t, _ in taken if len(t) < gold)
    feasible = [s for s in range(k + 1) if s <= len(shorter) and k - s <= len(longer)]
    if not feasible:
        chosen = shorter + longer + ties
        order = {id(c): i for i, c in enumerate(candidates)}
        return taken + sorted(chosen, key=lambda c: order[id(c)])[:k]
    s = min(feasible, key=lambda n: (abs(have + n - rank), n))
    picked = shorter[:s] + longer[:k - s]
    order = {id(c): i for i, c in enumerate(candidates)}
    return taken + sorted(picked, key=lambda c: order[id(c)])


def _filter(entry: Entry, proposals: list[tuple[str, str]], glosses: list[str], embedder: Embedder,
            checks: DistractorRules, stats: Counter, skip: set[str] | None = None) -> list[tuple[str, str]]:
    """The proposals that are not the answer: none repeating the answer, another candidate
    or a commentator's gloss; none sharing a content word with the answer or a commentator's
    gloss (the offline rules' `glosses_agree`, words of the phrase not counted; unlike the
    screening's agreement, words of the context count: a distractor must not even share
    them with an explanation); none whose embedding similarity to the answer or to any commentator's gloss
    reaches the threshold."""
    if not proposals:
        return []
    unique: list[tuple[str, str]] = []
    seen = {entry.answer.strip().casefold(), *(g.strip().casefold() for g in glosses), *(skip or set())}
    for text, source in proposals:
        if text.strip().casefold() in seen:
            stats["distractors repeating the answer, a commentator's gloss or another candidate (discarded)"] += 1
            continue
        seen.add(text.strip().casefold())
        unique.append((text.strip(), source))
    if not unique:
        return []
    references = [entry.answer] + [g for g in glosses if g.strip().lower() != entry.answer.strip().lower()]
    kept = []
    if checks.rules is not None:
        lexical = []
        for text, source in unique:
            if any(glosses_agree(text, ref, checks.rules, entry.text) for ref in references):
                stats["distractors sharing a content word with the answer or a commentator's gloss (discarded)"] += 1
                continue
            lexical.append((text, source))
        unique = lexical
    if not unique:
        return []
    vectors = embedder.encode(references + [t for t, _ in unique])
    ref_vectors, cand_vectors = vectors[:len(references)], vectors[len(references):]
    for (text, source), n in zip(unique, range(len(unique)), strict=True):
        sims = similarities(ref_vectors, cand_vectors[n])
        if float(np.max(sims)) >= checks.threshold:
            stats["distractors too similar to the answer or a commentator's gloss (discarded)"] += 1
            continue
        kept.append((text, source))
    return kept


def source_kind(source: str) -> str:
    """'wiktionary', 'chat model', 'offline fallback' or 'gold' for a candidate source label."""
    if source.startswith("wiktionary"):
        return "wiktionary"
    if source.startswith("multiwordnet") and "spelt like the target" in source:
        return "multiwordnet (a word spelt like the target, another meaning)"
    if source.startswith("multiwordnet"):
        return "multiwordnet (other senses of the lemma)"
    if source.startswith(FALLBACK):
        return "offline fallback (answers of other entries)"
    return source


def funnel(stats: Counter, distinct_spans: int, kept: int, passing: int, questions: int) -> list[dict]:
    """This build's counts beside the paper's (3.1), step by step."""
    ours = {
        "phrases annotated by the commentaries": distinct_spans,
        "phrases explained by at least two commentators": int(stats["phrases explained by at least two commentators"]),
        "entries kept by screening": kept,
        "entries below the similarity threshold": passing,
        "questions": questions,
    }
    return [{"step": step, "this build": ours[step], "paper (3.1)": PAPER_FUNNEL[step]} for step in ours]


def to_record(entry: Entry, index: int, rng: np.random.Generator, similarity_model: str) -> dict:
    # the distractors in a fixed order (by text) before the seeded shuffle: a question's order depends
    # on its candidates, not on which source offered them first (a reviewer's pinned distractors
    # come back in the order they were shown)
    candidates = [(entry.answer, "gold")] + sorted(entry.distractors, key=lambda d: (d[0].casefold(), d[1]))
    order = [int(i) for i in rng.permutation(len(candidates))]
    shown = [candidates[i] for i in order]
    phrase = entry.phrase
    from .review import NOT_REVIEWED, finish_record

    return {
        "id": f"wsd-{index:04d}",
        "item_key": item_key(entry),
        "chapter": phrase.chapter,
        "target_phrase": entry.text,
        "phrase_language": entry.language,
        "context": entry.context,
        "target_start": entry.target_start,
        "target_end": entry.target_end,
        "word_span": [phrase.start, phrase.end],
        "commentators": phrase.commentators,
        "explanations": entry.explanations,
        "screening_method": entry.screening["method"],
        "screening_reason": entry.screening["reason"],
        "synthesis_method": entry.synthesis,
        "answer": entry.answer,
        "similarity": round(float(entry.similarity), 6),
        "similarity_model": similarity_model,
        "candidates": [c for c, _ in shown],
        "candidate_sources": [s for _, s in shown],
        "gold_index": order.index(0),
        "review": finish_record(entry.review_record or dict(NOT_REVIEWED), [t for t, _ in candidates[1:]]),
    }
