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
   the summary and in the card): a commentator's gloss is the first segment of the note
   (`first_segment`: up to the first sentence-ending full stop, ";", "(" or spaced dash,
   with the abbreviation list of sources/italian/wsd_rules.yaml so "il M." or "don Abb."
   do not end it) when it has at most `gloss_words` words, opens with no remark opener
   ("Bellissimo", "Nota", "Nel Fermo e Lucia") and names no remark marker (the author, the
   text's versions); an entry is kept when at least two commentators give a gloss, and the
   answer is the gloss most similar to the other commentators' glosses (mean rapidfuzz
   token-set ratio; ties: longer, then first commentator);
4. the similarity filter: cosine similarity between the phrase and the answer (sentence
   embeddings, `--embedding-model`) must be below 0.7 (`--wsd-similarity-threshold`);
5. five distractors, as the paper makes them: for a single word, other senses of the same
   word from a Wiktionary extract in the wiktextract/kaikki JSON Lines format
   (`--wiktionary FILE`, `Wiktionary`; the sense closest to the answer is the answer's own
   sense and is never offered); for a phrase (or a word with too few senses), the
   chat model (`--chat-model`). When neither gives five, an OFFLINE FALLBACK fills the
   rest with the answers of other entries most similar to this answer (not the paper's
   method: it turns the task into matching a gloss to its phrase; every such candidate is
   labelled on the row, and the summary and card count them). A distractor whose
   similarity to the answer reaches the threshold, or that repeats another candidate, is
   discarded;
6. six candidates (answer + five distractors) in seeded order; `--wsd-questions` (200)
   entries are drawn (seeded) when more pass.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from histbench.core.errors import SourceError

from .embeddings import Embedder, similarities
from .manzoni import Phrase, ReadResult, context_for, phrase_text

N_CANDIDATES = 6
OFFLINE_SCREENING = "offline stand-in: short-gloss rule (not the paper's LLM screening)"
OFFLINE_SYNTHESIS = "offline stand-in: consensus gloss (not the paper's LLM synthesis)"
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

    @classmethod
    def from_config(cls, config: dict) -> Rules:
        groups = config.get("abbreviations") or {}
        words = {str(w) for group in groups.values() for w in (group or [])}
        screening = config.get("offline_screening") or {}
        openers = tuple(sorted((str(o) for o in screening.get("remark_openers") or []), key=len, reverse=True))
        markers = tuple(re.compile(m) for m in screening.get("markers") or [])
        return cls(frozenset(words), int(screening.get("gloss_words", 12)), openers, markers)


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


def first_segment(text: str, rules: Rules) -> str:
    """The note's opening gloss: text up to the first boundary that ends it."""
    end = len(text)
    for match in _BOUNDARY.finditer(text):
        if match.group(0) == "." and not _ends_sentence(text, match.start(), rules):
            continue
        end = match.start()
        break
    return text[:end].strip().strip(_QUOTES).strip(" ,:")


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


def gloss_of(text: str, rules: Rules, phrase: str = "") -> tuple[str | None, str]:
    """(gloss, why) for one note: the first segment when it passes the offline rules."""
    segment = first_segment(text, rules)
    if not segment:
        return None, "no opening segment"
    if len(segment.split()) > rules.gloss_words:
        return None, f"opening segment longer than {rules.gloss_words} words"
    for opener in rules.remark_openers:
        if segment == opener or segment.startswith(opener + " ") or segment.startswith(opener + ","):
            return None, f"opens with the remark opener {opener!r}"
    for marker in rules.markers:
        if marker.search(segment):
            return None, f"names a remark marker ({marker.pattern})"
    if phrase and re.search(rf"(?<!\w){re.escape(phrase.lower())}(?!\w)", segment.lower()):
        return None, "repeats the phrase it explains"
    return segment, "gloss"


def offline_screen(entry: Entry, rules: Rules) -> dict:
    glosses = {}
    for item in entry.explanations:
        gloss, _ = gloss_of(item["text"], rules, entry.text)
        if gloss is not None:
            glosses.setdefault(item["commentator"], gloss)
    kept = len(glosses) >= 2
    reason = (f"{len(glosses)} commentators open with a gloss of <= {rules.gloss_words} words"
              + ("" if kept else " (fewer than 2)"))
    return {"method": OFFLINE_SCREENING, "kept": kept, "reason": reason}


def offline_answer(entry: Entry, rules: Rules) -> str:
    from rapidfuzz import fuzz

    glosses: list[tuple[str, str]] = []
    for item in entry.explanations:
        gloss, _ = gloss_of(item["text"], rules, entry.text)
        if gloss is not None:
            glosses.append((item["commentator"], gloss))
    if not glosses:
        glosses = [(item["commentator"], first_segment(item["text"], rules) or item["text"]) for item in entry.explanations]
    best, best_key = glosses[0][1], None
    for n, (commentator, gloss) in enumerate(glosses):
        others = [g for c, g in glosses if c != commentator]
        score = float(np.mean([fuzz.token_set_ratio(gloss, o) for o in others])) if others else 0.0
        key = (score, len(gloss), -n)
        if best_key is None or key > best_key:
            best, best_key = gloss, key
    return best[:1].upper() + best[1:] if best else best


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
            out.append(Sense(str(entry.get("word") or ""), str(entry.get("pos") or ""), n, glosses[-1]))
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
        """(text, source) for every sense of the word (and of its lemma), in dictionary order."""
        out, seen = [], set()
        for sense in self.senses.get(word.lower(), []):
            text = sense.gloss.rstrip(" .;")
            text = text[:1].upper() + text[1:]
            if text.lower() in seen:
                continue
            seen.add(text.lower())
            out.append((text, f"wiktionary: {sense.word} ({sense.pos}) sense {sense.index}"))
        return out


# ----------------------------------------------------------------------------- questions


def is_single_word(entry: Entry) -> bool:
    return re.fullmatch(r"[^\W\d_]+(?:['’][^\W\d_]+)?", entry.text) is not None and " " not in entry.text


def choose_distractors(
    entries: list[Entry], pool: list[Entry], embedder: Embedder, threshold: float, wiktionary: Wiktionary | None,
    ask_chat, stats: Counter,
) -> None:
    """Fill entry.distractors (five each when possible) from the sources in order (module
    doc, step 5). `ask_chat(entries)` returns the chat model's proposals for the entries the
    dictionary could not serve (None: no chat model)."""
    need = N_CANDIDATES - 1
    checked: list[list[tuple[str, str]]] = []
    for entry in entries:
        proposals = []
        if wiktionary is not None and is_single_word(entry):
            proposals = _without_own_sense(entry, wiktionary.distractors(entry.text), embedder, stats)
        checked.append(_filter(entry, proposals, embedder, threshold, stats)[:need])
    short = [k for k, found in enumerate(checked) if len(found) < need]
    if ask_chat is not None and short:
        for k, lists in zip(short, ask_chat([entries[k] for k in short]), strict=True):
            taken = {t.lower() for t, _ in checked[k]}
            extra = [(t, "chat model") for t in lists if t.strip().lower() not in taken]
            checked[k] += _filter(entries[k], extra, embedder, threshold, stats)[:need - len(checked[k])]
    pool_answers = [e.answer for e in pool]
    pool_vectors = embedder.encode(pool_answers) if pool_answers else None
    for entry, found in zip(entries, checked, strict=True):
        if len(found) < need and len(pool) > 1 and pool_vectors is not None:
            position = next((i for i, e in enumerate(pool) if e is entry), None)
            if position is not None:
                sims = similarities(pool_vectors, pool_vectors[position])
            else:
                sims = similarities(embedder.encode(pool_answers + [entry.answer])[:-1], embedder.encode([entry.answer])[0])
            for j in np.argsort(-sims, kind="stable"):
                other = pool[int(j)]
                if other is entry or other.text.lower() == entry.text.lower() or sims[j] >= threshold:
                    continue
                if any(other.answer.lower() == t.lower() for t, _ in found) or other.answer.lower() == entry.answer.lower():
                    continue
                found.append((other.answer, f"{FALLBACK} ({other.text})"))
                if len(found) >= need:
                    break
        entry.distractors = found[:need]


def _without_own_sense(entry: Entry, senses: list[tuple[str, str]], embedder: Embedder, stats: Counter) -> list[tuple[str, str]]:
    """The dictionary lists the sense the commentators explain too: the sense closest to
    the answer is taken to be that one and never offered as a distractor."""
    if not senses:
        return senses
    vectors = embedder.encode([entry.answer] + [t for t, _ in senses])
    sims = similarities(vectors[1:], vectors[0])
    own = int(np.argmax(sims))
    stats["Wiktionary senses closest to the answer (taken as the answer's own sense; not offered)"] += 1
    return [s for i, s in enumerate(senses) if i != own]


def _filter(entry: Entry, proposals: list[tuple[str, str]], embedder: Embedder, threshold: float, stats: Counter) -> list[tuple[str, str]]:
    if not proposals:
        return []
    unique: list[tuple[str, str]] = []
    seen = {entry.answer.strip().lower()}
    for text, source in proposals:
        if text.strip().lower() in seen:
            stats["distractors repeating the answer or another candidate (discarded)"] += 1
            continue
        seen.add(text.strip().lower())
        unique.append((text.strip(), source))
    if not unique:
        return []
    vectors = embedder.encode([entry.answer] + [t for t, _ in unique])
    sims = similarities(vectors[1:], vectors[0])
    kept = []
    for (text, source), sim in zip(unique, sims, strict=True):
        if sim >= threshold:
            stats["distractors too similar to the answer (discarded)"] += 1
            continue
        kept.append((text, source))
    return kept


def source_kind(source: str) -> str:
    """'wiktionary', 'chat model', 'offline fallback' or 'gold' for a candidate source label."""
    if source.startswith("wiktionary"):
        return "wiktionary"
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
    candidates = [(entry.answer, "gold")] + list(entry.distractors)
    order = [int(i) for i in rng.permutation(len(candidates))]
    shown = [candidates[i] for i in order]
    phrase = entry.phrase
    return {
        "id": f"wsd-{index:04d}",
        "chapter": phrase.chapter,
        "target_phrase": entry.text,
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
    }
