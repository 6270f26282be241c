"""Word sense disambiguation questions from LeggoManzoni (3.1).

Pipeline, each step recorded on every row:

1. phrases explained by at least two commentators (`manzoni.group_phrases`, overlap rule
   documented there), with their context (`--wsd-context`: the sentence, default, or the
   numbered passage) and the phrase's character offsets in it;
2. screening (is the entry about meaning, not history or literary judgement?) and
   3. answer synthesis (one explanation aggregating the commentators'). With
   `--chat-model` both are the paper's LLM steps (prompts in sources/italian/prompts.yaml).
   Offline (default, deterministic): an entry is kept when at least two commentators begin
   their note with a short gloss (first segment, up to the first '.', ';' or '(', of at most
   `GLOSS_WORDS` words); the answer is the gloss most similar to the other commentators'
   glosses (mean rapidfuzz token-set ratio; ties: longer, then first commentator);
4. the similarity filter: cosine similarity between the phrase and the answer (sentence
   embeddings, `--embedding-model`) must be below 0.7 (`--wsd-similarity-threshold`);
5. five distractors: from a user synonym dictionary (`--wsd-synonyms`, Wiktionary-derived;
   single-word phrases), else from the chat model, else the answers of other entries that
   are most similar to this answer; a distractor whose similarity to the answer reaches the
   threshold, or that repeats another candidate, is discarded;
6. six candidates (answer + five distractors) in seeded order; `--wsd-questions` (200)
   entries are drawn (seeded) when more pass.

Synonym dictionary: CSV/TSV (header `word,synonyms[,gloss]`, synonyms separated by ';' or
','), JSON (`{"word": ["syn", ...]}` or a list of such rows) or JSON Lines rows. Each row is
one sense of the word; a distractor is the sense's gloss when given, else its synonyms.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from histbench.builders.core.errors import SourceError

from .embeddings import Embedder
from .manzoni import Phrase, ReadResult, context_for, phrase_text

GLOSS_WORDS = 12
N_CANDIDATES = 6
_SEGMENT = re.compile(r"[.;(]|\s[-–—]\s")
_QUOTES = "‘’'\"«»“”"


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


def first_segment(text: str) -> str:
    segment = _SEGMENT.split(text, maxsplit=1)[0]
    return segment.strip().strip(_QUOTES).strip(" ,:")


def make_entries(read: ReadResult, phrases: list[Phrase], unit: str) -> list[Entry]:
    entries = []
    for phrase in phrases:
        chapter = read.chapters[phrase.chapter]
        context, a, b = context_for(chapter, phrase.start, phrase.end, unit)
        explanations = []
        for note in sorted(phrase.notes, key=lambda n: (n.commentator, n.note_id)):
            explanations.append({"commentator": note.commentator, "note_id": note.note_id, "lemma": note.lemma,
                                 "text": note.explanation})
        entries.append(Entry(phrase, phrase_text(chapter, phrase.start, phrase.end), context, a, b, explanations))
    return entries


# ----------------------------------------------------------------------------- offline


def offline_screen(entry: Entry) -> dict:
    glosses = {}
    for item in entry.explanations:
        segment = first_segment(item["text"])
        if segment and len(segment.split()) <= GLOSS_WORDS:
            glosses.setdefault(item["commentator"], segment)
    kept = len(glosses) >= 2
    reason = (f"{len(glosses)} commentators open with a gloss of <= {GLOSS_WORDS} words"
              + ("" if kept else " (fewer than 2)"))
    return {"method": "offline: short-gloss heuristic", "kept": kept, "reason": reason}


def offline_answer(entry: Entry) -> str:
    from rapidfuzz import fuzz

    glosses: list[tuple[str, str]] = []
    for item in entry.explanations:
        segment = first_segment(item["text"])
        if segment and len(segment.split()) <= GLOSS_WORDS:
            glosses.append((item["commentator"], segment))
    if not glosses:
        glosses = [(item["commentator"], first_segment(item["text"]) or item["text"]) for item in entry.explanations]
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


def chat_screen_and_answer(entries: list[Entry], chat, prompts: dict, stats: Counter) -> None:
    from histbench.eval.parsing import extract_json_object

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
            stats["wsd synthesis answers that did not parse (offline answer used)"] += 1
            entry.answer = offline_answer(entry)
            entry.synthesis = "offline: consensus gloss (chat answer did not parse)"


def chat_distractors(entries: list[Entry], chat, prompts: dict, n: int) -> list[list[str]]:
    from histbench.eval.parsing import extract_json_object

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


# ----------------------------------------------------------------------------- synonyms


def load_synonyms(path: Path) -> dict[str, list[str]]:
    """word (lower case) -> list of sense texts (gloss, else the synonyms joined)."""
    path = Path(path)
    rows: list[dict] = []
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".tsv"):
            with path.open(encoding="utf-8-sig", newline="") as handle:
                reader = csv.DictReader(handle, delimiter="\t" if suffix == ".tsv" else ",")
                if "word" not in (reader.fieldnames or []) or "synonyms" not in (reader.fieldnames or []):
                    raise SourceError("the synonym table needs the columns word and synonyms", file=path)
                rows = list(reader)
        elif suffix == ".jsonl":
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        elif suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            rows = [{"word": k, "synonyms": v} for k, v in data.items()] if isinstance(data, dict) else list(data)
        else:
            raise SourceError("unknown synonym dictionary format (expected .csv, .tsv, .json or .jsonl)", file=path)
    except (OSError, json.JSONDecodeError) as exc:
        raise SourceError(f"cannot read the synonym dictionary: {exc}", file=path) from exc
    senses: dict[str, list[str]] = {}
    for n, row in enumerate(rows, start=1):
        word = str(row.get("word") or "").strip().lower()
        if not word:
            raise SourceError("a synonym row without a word", file=path, row=n, field="word")
        synonyms = row.get("synonyms") or []
        if isinstance(synonyms, str):
            synonyms = [s.strip() for s in re.split(r"[;,]", synonyms) if s.strip()]
        gloss = str(row.get("gloss") or "").strip()
        text = gloss or (", ".join(synonyms[:4]))
        if text:
            senses.setdefault(word, []).append(text)
    return senses


# ----------------------------------------------------------------------------- questions


def choose_distractors(
    entries: list[Entry], pool: list[Entry], embedder: Embedder, threshold: float, synonyms: dict | None,
    chat_lists: list[list[str]] | None, stats: Counter,
) -> None:
    """Fill entry.distractors (five each when possible) from the sources in order."""
    need = N_CANDIDATES - 1
    pool_answers = [e.answer for e in pool]
    pool_vectors = embedder.encode(pool_answers) if pool_answers else np.zeros((0, 1))
    for k, entry in enumerate(entries):
        proposals: list[tuple[str, str]] = []
        if synonyms is not None and len(entry.text.split()) == 1:
            proposals += [(s, "synonym dictionary") for s in synonyms.get(entry.text.lower(), [])]
        if chat_lists is not None:
            proposals += [(s, "chat model") for s in chat_lists[k]]
        checked = _filter(entry, proposals, embedder, threshold, stats)
        if len(checked) < need and len(pool) > 1:
            position = next((i for i, e in enumerate(pool) if e is entry), None)
            own = pool_vectors[position] if position is not None else embedder.encode(pool_answers + [entry.answer])[-1]
            sims = pool_vectors @ own
            for j in np.argsort(-sims, kind="stable"):
                other = pool[int(j)]
                if other is entry or other.text.lower() == entry.text.lower() or sims[j] >= threshold:
                    continue
                if any(other.answer.lower() == t.lower() for t, _ in checked) or other.answer.lower() == entry.answer.lower():
                    continue
                checked.append((other.answer, f"answer of another entry ({other.text})"))
                if len(checked) >= need:
                    break
        entry.distractors = checked[:need]


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
    sims = vectors[1:] @ vectors[0]
    kept = []
    for (text, source), sim in zip(unique, sims, strict=True):
        if sim >= threshold:
            stats["distractors too similar to the answer (discarded)"] += 1
            continue
        kept.append((text, source))
    return kept


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
