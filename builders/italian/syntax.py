"""Head prediction and dependency relation prediction from CoNLL-U (3.4).

Reading (`conllu`): every `*.conllu` file in the folder, after `validate_conllu` checked
its structure (10 columns, ids 1..n, HEAD inside the sentence, one root, closing empty
line: a file cut mid-line or mid-sentence is an error naming file, line and field, or
skipped and counted with `--skip-bad-files`); a sentence's text is its `# text`
comment (else the words joined with their SpaceAfter). Multiword tokens (`3-4 nel`) and
empty nodes (`8.1`) are not words a question can ask about; the words of a multiword
token are never selected, never heads shown to the model and never distractors, because
their forms ("in", "il") are not in the text the model reads. Character offsets of words in
the sentence text come from MISC `start_char`/`end_char` (relative to the sentence's first
word) when they slice the text to the word's form (case aside: a treebank may write "poi"
for the text's "Poi"; the text's spelling is what questions show), else from scanning the text in order.

Head questions: one per sentence. Candidates for the selected word: not punctuation, not
the root, not inside a multiword token, whose head is a visible non-punctuation word and
that leaves at least three distractors. Distractors are the sentence's other visible words
(not punctuation, not the selected word, not the head, no form equal to the head's or to
an already chosen one), ranked by how many of case, gender, number and part of speech
they share with the head (more first), ties broken in seeded random order. The selected
word is drawn at random (seeded) among the candidates. Options are shown in seeded order.

Relation questions: `per_relation` (2) per relation type (root excluded by default), drawn
at random (seeded) among visible words with a visible head. Distractors: the three
relations most frequent among the corpus's words of the same part of speech as the selected
word (other than the true one; ties by name), filled from the corpus-wide most frequent
relations when fewer (`--deprel-distractors most-frequent`). Relations are shown by readable
names (sources/italian/deprel_names.yaml).

Length-balanced relation distractors (the default): two questions per relation type make
rare relations, whose readable names are long ("clausal modifier of a noun"), as frequent
among the gold answers as common ones, while the most frequent distractors have short
names ("object", "case marker"): on the real Cavalcanti treebank the longest name was the
gold in 41% of the questions (chance 25%). So each question has a rank r in 0..3 (every
block of four questions takes each rank once, in seeded order) and the distractors are the most frequent relations (same order as above) such
that the gold name is longer than exactly r of them and as long as none; when r is not
possible (the gold's name is among the longest or shortest), the nearest possible rank is
used and counted.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from histbench.core.errors import SourceError

from .tei import BadFiles

FEATURES = ("Case", "Gender", "Number")
MAX_SKIP = 12


@dataclass
class WordInfo:
    id: int
    form: str
    lemma: str
    upos: str
    feats: dict
    head: int | None
    deprel: str
    start: int
    end: int
    in_mwt: bool


@dataclass
class Sentence:
    doc: str
    sent_id: str
    text: str
    words: list[WordInfo]
    file: str

    def word(self, word_id: int) -> WordInfo | None:
        for w in self.words:
            if w.id == word_id:
                return w
        return None


def _offsets(text: str, tokens: list, stats: Counter) -> dict[object, tuple[int, int]]:
    """(start, end) in `text` for every token id (ints and MWT range tuples)."""
    covered: set[int] = set()
    for t in tokens:
        if isinstance(t["id"], tuple) and t["id"][1] == "-":
            covered.update(range(t["id"][0], t["id"][2] + 1))
    surface = [
        t for t in tokens
        if (isinstance(t["id"], tuple) and t["id"][1] == "-") or (isinstance(t["id"], int) and t["id"] not in covered)
    ]
    result: dict[object, tuple[int, int]] = {}
    with_misc = [t for t in surface if "start_char" in (t.get("misc") or {}) and "end_char" in (t.get("misc") or {})]
    if surface and len(with_misc) == len(surface):
        base = int(surface[0]["misc"]["start_char"])
        for token in surface:
            a = int(token["misc"]["start_char"]) - base
            b = int(token["misc"]["end_char"]) - base
            if not (0 <= a <= b <= len(text)) or text[a:b].lower() != token["form"].lower():
                result = {}
                stats["sentences whose MISC offsets do not slice the text to the words (scanned instead)"] += 1
                break
            result[_key(token["id"])] = (a, b)
    if result:
        stats["sentences with MISC start_char/end_char offsets"] += 1
        return _spread(tokens, result)
    cursor = 0
    folded = text.lower()
    for token in surface:
        form = token["form"].lower()
        found = folded.find(form, cursor)
        # only spaces or punctuation may lie between the previous word and this one, or a
        # short stretch the treebank's text repeats or spells differently (<= 12 characters)
        gap = text[cursor:found]
        if found < 0 or (any(ch.isalnum() for ch in gap) and len(gap) > MAX_SKIP):
            result[_key(token["id"])] = (cursor, cursor)
            stats["words not found in the sentence text (never asked about)"] += 1
            continue
        result[_key(token["id"])] = (found, found + len(form))
        cursor = found + len(form)
    stats["sentences with offsets found by scanning the text"] += 1
    return _spread(tokens, result)


def _spread(tokens: list, result: dict) -> dict:
    # words inside a multiword token get the token's span
    for token in tokens:
        if isinstance(token["id"], tuple) and token["id"][1] == "-":
            first, _, last = token["id"]
            for word_id in range(first, last + 1):
                result[word_id] = result[_key(token["id"])]
    return result


def _key(token_id) -> object:
    return token_id if isinstance(token_id, int) else tuple(token_id)


def _text_from_tokens(tokens: list) -> str:
    parts = []
    skip_until = 0
    for token in tokens:
        tid = token["id"]
        if isinstance(tid, tuple) and tid[1] == "-":
            skip_until = tid[2]
        elif isinstance(tid, int):
            if tid <= skip_until:
                continue
        else:
            continue
        parts.append(token["form"])
        misc = token.get("misc") or {}
        if misc.get("SpaceAfter") != "No":
            parts.append(" ")
    return "".join(parts).strip()


_ID = re.compile(r"^(\d+)(?:-(\d+)|\.(\d+))?$")


def validate_conllu(path: Path, text: str) -> None:
    """Check the structure `conllu` does not: every word line has the 10 columns, word ids
    run 1..n in each sentence, every HEAD is 0..n (or "_" on multiword tokens and empty
    nodes), a sentence has exactly one root, and the file ends with the empty line that
    closes its last sentence. A file cut mid-line or mid-sentence fails one of these; the
    error names the file, the line and the field."""
    lines = text.split("\n")
    sentence: list[tuple[int, list[str]]] = []

    def close() -> None:
        words = [(n, cols) for n, cols in sentence if cols[0].isdigit()]
        for k, (n, cols) in enumerate(words, start=1):
            if int(cols[0]) != k:
                raise SourceError(f"line {n}: word id {cols[0]}, expected {k} (ids run 1..n in a sentence)",
                                  file=path, field="ID")
        size = len(words)
        roots = 0
        for n, cols in words:
            head = cols[6]
            if not head.isdigit():
                raise SourceError(f"line {n}: HEAD {head!r} is not a word id", file=path, field="HEAD")
            if int(head) > size:
                raise SourceError(f"line {n}: HEAD {head} points outside the sentence, which has {size} words",
                                  file=path, field="HEAD")
            if int(head) == int(cols[0]):
                raise SourceError(f"line {n}: word {cols[0]} is its own head", file=path, field="HEAD")
            roots += head == "0"
        if words and roots != 1:
            first = words[0][0]
            raise SourceError(f"line {first}: the sentence starting here has {roots} root words (HEAD 0), "
                              "expected exactly one (the file may be cut mid-sentence)", file=path, field="HEAD")

    for n, line in enumerate(lines, start=1):
        if not line.strip():
            if sentence:
                close()
            sentence = []
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise SourceError(f"line {n}: {len(cols)} tab-separated fields, a CoNLL-U word line has 10 "
                              "(the line may be cut)", file=path, field="line")
        if not _ID.match(cols[0]):
            raise SourceError(f"line {n}: ID {cols[0]!r} is not a word id, a range (3-4) or an empty node (8.1)",
                              file=path, field="ID")
        sentence.append((n, cols))
    if sentence:
        close()
    if text.strip() and not text.endswith("\n\n"):
        raise SourceError(f"line {len(text.rstrip(chr(10)).split(chr(10)))}: the file does not end with the empty line "
                          "that closes a sentence (it may be cut)", file=path, field="line")


def read_conllu(folder: Path, bad: BadFiles | None = None) -> tuple[list[Sentence], Counter]:
    import conllu

    bad = bad or BadFiles()
    stats: Counter = Counter()
    sentences: list[Sentence] = []
    files = sorted(p for p in Path(folder).rglob("*.conllu") if p.is_file())
    if not files:
        raise SourceError("no .conllu files in this folder", file=folder)
    for path in files:
        try:
            try:
                text = path.read_bytes().decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                line = path.read_bytes()[: exc.start].count(b"\n") + 1
                raise SourceError(f"line {line}: not UTF-8 text ({exc.reason})", file=path, field="line") from exc
            validate_conllu(path, text)
            try:
                parsed = conllu.parse(text)
            except Exception as exc:  # noqa: BLE001 - conllu raises several types
                raise SourceError(f"not valid CoNLL-U: {exc}", file=path) from exc
        except SourceError as exc:
            bad.handle(exc, "cavalcanti")
            stats["damaged files skipped (--skip-bad-files)"] += 1
            continue
        doc = path.stem
        for n, sentence in enumerate(parsed):
            meta = sentence.metadata or {}
            doc = meta.get("newdoc id", doc)
            text = meta.get("text") or _text_from_tokens(list(sentence))
            tokens = list(sentence)
            stats["multiword tokens"] += sum(1 for t in tokens if isinstance(t["id"], tuple) and t["id"][1] == "-")
            stats["empty nodes (ignored)"] += sum(1 for t in tokens if isinstance(t["id"], tuple) and t["id"][1] == ".")
            try:
                offsets = _offsets(text, tokens, stats)
            except SourceError as exc:
                raise SourceError(f"sentence {meta.get('sent_id', n)}: {exc.message}", file=path) from exc
            mwt_words = set()
            for t in tokens:
                if isinstance(t["id"], tuple) and t["id"][1] == "-":
                    mwt_words.update(range(t["id"][0], t["id"][2] + 1))
            spans = Counter(offsets[t["id"]] for t in tokens if isinstance(t["id"], int) and t["id"] not in mwt_words)
            words = []
            for t in tokens:
                if not isinstance(t["id"], int):
                    continue
                start, end = offsets[t["id"]]
                in_mwt = t["id"] in mwt_words
                if not in_mwt and (start == end or spans[(start, end)] > 1):
                    in_mwt = True  # shares its written form with another word, or is not in the text
                    stats["words sharing their written form with another word (never asked about)"] += 1
                words.append(WordInfo(
                    # the form as written in the sentence text (the treebank may normalise case)
                    id=t["id"], form=t["form"] if in_mwt else text[start:end], lemma=t["lemma"] or "", upos=t["upos"] or "_",
                    feats=dict(t["feats"] or {}), head=t["head"] if isinstance(t["head"], int) else None,
                    deprel=t["deprel"] or "_", start=start, end=end, in_mwt=in_mwt,
                ))
            sentences.append(Sentence(doc, str(meta.get("sent_id", n)), text, words, path.name))
    stats["sentences"] = len(sentences)
    return sentences, stats


def _visible(word: WordInfo | None) -> bool:
    return word is not None and not word.in_mwt and word.upos != "PUNCT"


def _word_record(sentence: Sentence, word: WordInfo) -> dict:
    same = [w for w in sentence.words if w.form == word.form and not w.in_mwt]
    return {
        "id": word.id, "form": word.form, "upos": word.upos, "start": word.start, "end": word.end,
        "occurrence": 1 + [w.id for w in same].index(word.id) if word in same else 1,
        "occurrences": max(1, len(same)),
    }


def head_questions(sentences: list[Sentence], seed: int, stats: Counter) -> list[dict]:
    rng = np.random.default_rng(seed)
    questions = []
    for sentence in sentences:
        candidates = []
        for word in sentence.words:
            if not _visible(word) or not word.head:
                continue
            head = sentence.word(word.head)
            if not _visible(head):
                continue
            distractors = _head_distractors(sentence, word, head)
            if len(distractors) >= 3:
                candidates.append((word, head, distractors))
        if not candidates:
            stats["sentences with no word to ask a head question about (skipped)"] += 1
            continue
        word, head, ranked = candidates[int(rng.integers(len(candidates)))]
        # ties in shared-feature count are broken in seeded random order
        keys = rng.random(len(ranked))
        ranked = [d for _, d in sorted(zip(keys, ranked, strict=True), key=lambda p: (-p[1][1], p[0]))]
        chosen, seen = [], {head.form.lower()}
        for distractor, shared in ranked:
            if distractor.form.lower() in seen:
                continue
            seen.add(distractor.form.lower())
            chosen.append((distractor, shared))
            if len(chosen) == 3:
                break
        options = [head] + [d for d, _ in chosen]
        order = [int(i) for i in rng.permutation(4)]
        shown = [options[i] for i in order]
        questions.append({
            "id": f"head-{len(questions):03d}",
            "doc": sentence.doc, "sent_id": sentence.sent_id, "file": sentence.file,
            "text": sentence.text,
            "token": _word_record(sentence, word),
            "head": _word_record(sentence, head),
            "options": [_word_record(sentence, w) for w in shown],
            "option_forms": [w.form for w in shown],
            "gold_index": shown.index(head),
            "distractor_shared_features": [s for _, s in chosen],
            "deprel": word.deprel,
        })
    return questions


def _shared(a: WordInfo, b: WordInfo) -> int:
    count = sum(1 for f in FEATURES if a.feats.get(f) == b.feats.get(f) and a.feats.get(f) is not None)
    return count + (1 if a.upos == b.upos else 0)


def _head_distractors(sentence: Sentence, word: WordInfo, head: WordInfo) -> list[tuple[WordInfo, int]]:
    out = []
    forms = set()
    for other in sentence.words:
        if other.id in (word.id, head.id) or not _visible(other):
            continue
        if other.form.lower() in (head.form.lower(), word.form.lower()) or other.form.lower() in forms:
            continue
        forms.add(other.form.lower())
        out.append((other, _shared(other, head)))
    return out


def readable(deprel: str, names: dict) -> str:
    if deprel in names:
        return str(names[deprel])
    base, _, sub = deprel.partition(":")
    if base in names:
        return f"{names[base]} ({sub})" if sub else str(names[base])
    return deprel


def _deprel_distractors(ranked: list[str], gold_name: str, names: dict, rank: int | None) -> tuple[list[str], int | None]:
    """Three distractor relations from `ranked` (most frequent for the word's part of speech
    first, then the others by overall frequency; names distinct), and the length rank used.

    rank None: the three most frequent (3.4). Else the three with the smallest sum of
    frequency places such that the gold name is longer than exactly `rank` of them and as
    long as none of them; when no three can (a gold name longer than all but one or two
    others), the feasible rank nearest to the drawn one (lower first)."""
    if rank is None or len(ranked) < 3:
        return ranked[:3], None
    gold = len(gold_name)
    lengths = [len(readable(r, names)) for r in ranked]
    shorter = [i for i, n in enumerate(lengths) if n < gold]
    longer = [i for i, n in enumerate(lengths) if n > gold]
    feasible = [k for k in range(4) if len(shorter) >= k and len(longer) >= 3 - k]
    if not feasible:
        return ranked[:3], None
    rank = min(feasible, key=lambda k: (abs(k - rank), k))
    # the cheapest choice: the `rank` most frequent shorter names and the 3 - rank most frequent longer ones
    best = sorted(shorter[:rank] + longer[:3 - rank])
    return [ranked[i] for i in best], rank


def deprel_questions(sentences: list[Sentence], names: dict, per_relation: int, exclude: list[str],
                     seed: int, stats: Counter, choice: str = "length-balanced") -> list[dict]:
    rng = np.random.default_rng(seed)
    by_pos: dict[str, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    pool: dict[str, list[tuple[Sentence, WordInfo, WordInfo]]] = defaultdict(list)
    for sentence in sentences:
        for word in sentence.words:
            if word.deprel in ("_", ""):
                continue
            by_pos[word.upos][word.deprel] += 1
            overall[word.deprel] += 1
            if word.deprel in exclude or word.in_mwt or not word.head:
                continue
            head = sentence.word(word.head)
            if head is None or head.in_mwt:
                continue
            pool[word.deprel].append((sentence, word, head))
    from .chrono import BalancedRanks

    ranks = BalancedRanks(np.random.default_rng([seed, 4]), 4)
    questions = []
    for relation in sorted(overall):
        if relation in exclude:
            stats[f"relation {relation} excluded by option"] += overall[relation]
            continue
        items = pool.get(relation, [])
        if not items:
            stats["relation types with no word visible in the text (skipped)"] += 1
            continue
        if len(items) < per_relation:
            stats[f"relation types with fewer than {per_relation} usable words"] += 1
        picks = sorted(int(i) for i in rng.choice(len(items), size=min(per_relation, len(items)), replace=False))
        for pick in picks:
            sentence, word, head = items[pick]
            ranked = [r for r, _ in sorted(by_pos[word.upos].items(), key=lambda kv: (-kv[1], kv[0]))
                      if r != relation and r not in exclude]
            for r, _ in sorted(overall.items(), key=lambda kv: (-kv[1], kv[0])):
                if r != relation and r not in ranked and r not in exclude:
                    ranked.append(r)
            pool_names, seen_names = [], {readable(relation, names)}
            for r in ranked:
                if readable(r, names) in seen_names:
                    continue
                seen_names.add(readable(r, names))
                pool_names.append(r)
            rank = ranks.peek() if choice == "length-balanced" else None
            distractors, used = _deprel_distractors(pool_names, readable(relation, names), names, rank)
            if rank is not None:
                ranks.used()
                if used != rank:
                    stats["relation questions whose length rank was infeasible (nearest feasible rank used)"] += 1
            if len(distractors) < 3:
                stats["relation questions without three distractor relations (skipped)"] += 1
                continue
            codes = [relation] + distractors
            order = [int(i) for i in rng.permutation(4)]
            shown = [codes[i] for i in order]
            questions.append({
                "id": f"deprel-{len(questions):03d}",
                "doc": sentence.doc, "sent_id": sentence.sent_id, "file": sentence.file,
                "text": sentence.text,
                "token": _word_record(sentence, word),
                "head": _word_record(sentence, head),
                "deprel": relation,
                "relation": readable(relation, names),
                "option_codes": shown,
                "options": [readable(c, names) for c in shown],
                "gold_index": shown.index(relation),
            })
    return questions
