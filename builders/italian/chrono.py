"""Chronological ranking and authorship verification from Biblioteca Italiana snippets (3.3).

Per genre (poetry, narrative), with all snippets of eligible authors embedded once:

Ranking: anchors are drawn in a seeded random order; for an anchor, the snippets of other
authors are visited from the most to the least cosine-similar, and a snippet is taken when
its author's birth year is at least `min_gap` (100) years from every author already taken
(the anchor's included); the question is made when three are found (four authors pairwise
>= 100 years apart), else the anchor is counted as failed. The four snippets are shown in
a seeded order; the gold order is newest to oldest author birth year.

Authorship: for an anchor, the two snippets of the same author least similar to it, and
the snippet of another author born less than `max_gap` (50) years apart from the anchor's
author that is most similar to it; shown in a seeded order; the gold answer is the
other author's snippet.

`per_genre` questions (default 50) are made per genre and task; an anchor is used once
per task.

Length does not give the answer (`choice="length-balanced"`, the default; `"paper"` is the
literal rule above). Similarity selects by length: a longer snippet shares more words and
phrasing with the anchor, so the most similar other-author snippet is longer and the least
similar same-author ones shorter (on the 23 real books: the odd one was the longest of the
four in 70% of authorship items, chance 25%). Therefore:

- authorship: each question has a rank r in 0..3 (`BalancedRanks`: every block of four
  questions takes each rank once, in seeded order): the odd snippet must be longer than
  exactly r of the three same-author snippets (and as long as none); an anchor that
  cannot meet r is skipped and r waits for the next one.
  Among the combinations meeting it, the one closest to the paper's choice is taken: the
  smallest sum of the other-author snippet's place in most-similar order and the two
  same-author snippets' places in least-similar order (then the lowest places). So the odd
  one is the longest in a quarter of the items, the shortest in a quarter, by construction
  (exactly, up to the last unfinished block of four).
- ranking: the three snippets are the first combination, in most-similar order, whose
  four authors are `min_gap` years apart pairwise *and* whose lengths are nearly unrelated
  to the birth years: |Spearman(length, birth year)| <= `max_length_spearman` (0.2). Any
  rule that orders by length then has expected Spearman 0 with the gold order (the allowed
  orders are symmetric under reversal), and the mean |Spearman(length, year)| per item is
  at most 0.2, where independent lengths would give 0.5.

Searches are bounded (`SEARCH_LIMIT` candidates per list); an anchor without a combination
is skipped and counted.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .bibit import Snippet
from .embeddings import similarities

CHOICES = ("length-balanced", "paper")
SEARCH_LIMIT = 40           # candidates per list searched for a length-balanced combination
RANKING_LIMIT = 400         # ranking: candidates (in similarity order) searched for three companions
MAX_NODES = 50_000          # ranking: partial combinations tried per anchor


@dataclass
class Pool:
    genre: str
    snippets: list[Snippet]
    births: np.ndarray          # birth year per snippet
    authors: list[str]          # canonical author name per snippet
    vectors: object             # L2-normalised embeddings (dense array or sparse matrix)


class BalancedRanks:
    """Length ranks in 0..k-1 for successive questions, balanced: each block of k
    questions takes every rank once, in a seeded order. A question that cannot take its
    rank keeps it for the next anchor, so the ranks of the questions made stay balanced."""

    def __init__(self, rng: np.random.Generator, k: int) -> None:
        self.rng, self.k, self.block = rng, k, []

    def peek(self) -> int:
        if not self.block:
            self.block = [int(r) for r in self.rng.permutation(self.k)]
        return self.block[0]

    def used(self) -> None:
        self.block.pop(0)


def genre_seed(seed: int, genre: str, task: str) -> int:
    digest = hashlib.sha256(f"{seed}:{genre}:{task}".encode()).hexdigest()
    return int(digest[:16], 16)


def _snippet_record(pool: Pool, index: int, similarity: float | None) -> dict:
    snippet = pool.snippets[index]
    return {
        "snippet_id": snippet.id, "book": snippet.book, "author": pool.authors[index],
        "birth_year": int(pool.births[index]), "text": snippet.text,
        "similarity_to_anchor": None if similarity is None else round(float(similarity), 6),
    }


def _ranks(values) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(values)


def length_spearman(lengths, years) -> float:
    """Spearman's rho between snippet lengths and birth years (0 when either is constant)."""
    a, b = _ranks(lengths), _ranks(years)
    if a.std() == 0 or b.std() == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def _ranking_companions(pool: Pool, anchor: int, order: np.ndarray, min_gap: int, choice: str,
                        max_length_spearman: float) -> list[int] | None:
    births = pool.births
    authors = pool.authors
    lengths = [len(s.text) for s in pool.snippets]
    candidates = [int(j) for j in order if authors[j] != authors[anchor] and abs(int(births[j]) - int(births[anchor])) >= min_gap]
    if choice == "paper":
        taken = [anchor]
        for j in candidates:
            if all(authors[j] != authors[t] and abs(int(births[j]) - int(births[t])) >= min_gap for t in taken):
                taken.append(j)
                if len(taken) == 4:
                    return taken[1:]
        return None
    candidates = candidates[:RANKING_LIMIT]
    nodes = 0

    def search(start: int, taken: list[int]) -> list[int] | None:
        nonlocal nodes
        for k in range(start, len(candidates)):
            nodes += 1
            if nodes > MAX_NODES:
                return None
            j = candidates[k]
            if any(authors[j] == authors[t] or abs(int(births[j]) - int(births[t])) < min_gap for t in taken):
                continue
            chosen = taken + [j]
            if len(chosen) == 4:
                rho = length_spearman([lengths[t] for t in chosen], [int(births[t]) for t in chosen])
                if abs(rho) <= max_length_spearman + 1e-9:
                    return chosen[1:]
                continue
            found = search(k + 1, chosen)
            if found is not None:
                return found
            if nodes > MAX_NODES:
                return None
        return None

    return search(0, [anchor])


def ranking_questions(pool: Pool, per_genre: int, min_gap: int, seed: int, stats: Counter,
                      choice: str = "length-balanced", max_length_spearman: float = 0.2) -> list[dict]:
    rng = np.random.default_rng(genre_seed(seed, pool.genre, "ranking"))
    n = len(pool.snippets)
    questions: list[dict] = []
    if n == 0:
        return questions
    for anchor in rng.permutation(n):
        if len(questions) >= per_genre:
            break
        anchor = int(anchor)
        sims = similarities(pool.vectors, pool.vectors[anchor])
        order = np.argsort(-sims, kind="stable")
        companions = _ranking_companions(pool, anchor, order, min_gap, choice, max_length_spearman)
        if companions is None:
            if choice == "paper" or _ranking_companions(pool, anchor, order, min_gap, "paper", 1.0) is None:
                stats[f"{pool.genre} ranking anchors without three authors {min_gap}+ years apart (skipped)"] += 1
            else:
                stats[f"{pool.genre} ranking anchors without a combination whose lengths are unrelated to the years "
                      f"(|Spearman| <= {max_length_spearman}; skipped)"] += 1
            continue
        taken = [anchor] + companions
        shown = [taken[i] for i in rng.permutation(4)]
        records = [_snippet_record(pool, i, None if i == anchor else sims[i]) for i in shown]
        gold = sorted(range(4), key=lambda k: (-records[k]["birth_year"], k))
        questions.append({
            "id": f"ranking-{pool.genre}-{len(questions):03d}",
            "genre": pool.genre,
            "snippets": records,
            "anchor_index": shown.index(int(anchor)),
            "gold_order": gold,
            "years": [r["birth_year"] for r in records],
        })
    return questions


def _authorship_choice(pool: Pool, anchor: int, same: list[int], near: list[int], rank: int | None) -> tuple[int, int, int] | None:
    """(same-author, same-author, other-author) snippets: the paper's choice when `rank` is
    None, else the combination closest to it whose odd snippet is longer than exactly
    `rank` of the three same-author snippets and as long as none of them (module doc)."""
    if rank is None:
        return same[0], same[1], near[0]
    lengths = [len(s.text) for s in pool.snippets]
    best, best_key = None, None
    same_c, near_c = same[:SEARCH_LIMIT], near[:SEARCH_LIMIT]
    for i_o, o in enumerate(near_c):
        for i1 in range(len(same_c)):
            for i2 in range(i1 + 1, len(same_c)):
                key = (i_o + i1 + i2, i_o, i1, i2)
                if best_key is not None and key >= best_key:
                    continue
                group = (anchor, same_c[i1], same_c[i2])
                if any(lengths[g] == lengths[o] for g in group):
                    continue
                if sum(lengths[g] < lengths[o] for g in group) == rank:
                    best, best_key = (same_c[i1], same_c[i2], o), key
    return best


def authorship_questions(pool: Pool, per_genre: int, max_gap: int, seed: int, stats: Counter,
                         choice: str = "length-balanced") -> list[dict]:
    rng = np.random.default_rng(genre_seed(seed, pool.genre, "authorship"))
    n = len(pool.snippets)
    questions: list[dict] = []
    if n == 0:
        return questions
    authors = pool.authors
    ranks = BalancedRanks(np.random.default_rng(genre_seed(seed, pool.genre, "authorship-ranks")), 4)
    for anchor in rng.permutation(n):
        if len(questions) >= per_genre:
            break
        anchor = int(anchor)
        rank = ranks.peek() if choice == "length-balanced" else None
        sims = similarities(pool.vectors, pool.vectors[anchor])
        same = [j for j in range(n) if j != anchor and authors[j] == authors[anchor]]
        if len(same) < 2:
            stats[f"{pool.genre} authorship anchors whose author has fewer than 3 snippets (skipped)"] += 1
            continue
        same.sort(key=lambda j: (sims[j], j))
        near = [j for j in range(n) if authors[j] != authors[anchor] and abs(int(pool.births[j]) - int(pool.births[anchor])) < max_gap]
        if not near:
            stats[f"{pool.genre} authorship anchors with no other author born within {max_gap} years (skipped)"] += 1
            continue
        near.sort(key=lambda j: (-sims[j], j))
        picked = _authorship_choice(pool, anchor, same, near, rank)
        if picked is None:
            stats[f"{pool.genre} authorship anchors without a combination of the next length rank (skipped)"] += 1
            continue
        if rank is not None:
            ranks.used()
        first, second, other = picked
        chosen = [anchor, first, second, other]
        shown = [chosen[i] for i in rng.permutation(4)]
        records = [_snippet_record(pool, i, None if i == anchor else sims[i]) for i in shown]
        questions.append({
            "id": f"authorship-{pool.genre}-{len(questions):03d}",
            "genre": pool.genre,
            "snippets": records,
            "anchor_index": shown.index(anchor),
            "gold_index": shown.index(other),
            "same_author": authors[anchor],
            "other_author": authors[other],
        })
    return questions
