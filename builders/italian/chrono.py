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
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .bibit import Snippet
from .embeddings import similarities


@dataclass
class Pool:
    genre: str
    snippets: list[Snippet]
    births: np.ndarray          # birth year per snippet
    authors: list[str]          # canonical author name per snippet
    vectors: object             # L2-normalised embeddings (dense array or sparse matrix)


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


def ranking_questions(pool: Pool, per_genre: int, min_gap: int, seed: int, stats: Counter) -> list[dict]:
    rng = np.random.default_rng(genre_seed(seed, pool.genre, "ranking"))
    n = len(pool.snippets)
    questions: list[dict] = []
    if n == 0:
        return questions
    births = pool.births
    authors = np.array(pool.authors, dtype=object)
    for anchor in rng.permutation(n):
        if len(questions) >= per_genre:
            break
        sims = similarities(pool.vectors, pool.vectors[anchor])
        order = np.argsort(-sims, kind="stable")
        taken = [int(anchor)]
        years = [int(births[anchor])]
        for j in order:
            if authors[j] == authors[anchor] or any(authors[j] == authors[t] for t in taken):
                continue
            if all(abs(int(births[j]) - y) >= min_gap for y in years):
                taken.append(int(j))
                years.append(int(births[j]))
                if len(taken) == 4:
                    break
        if len(taken) < 4:
            stats[f"{pool.genre} ranking anchors without three authors {min_gap}+ years apart (skipped)"] += 1
            continue
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


def authorship_questions(pool: Pool, per_genre: int, max_gap: int, seed: int, stats: Counter) -> list[dict]:
    rng = np.random.default_rng(genre_seed(seed, pool.genre, "authorship"))
    n = len(pool.snippets)
    questions: list[dict] = []
    if n == 0:
        return questions
    authors = pool.authors
    for anchor in rng.permutation(n):
        if len(questions) >= per_genre:
            break
        anchor = int(anchor)
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
        chosen = [anchor, same[0], same[1], near[0]]
        shown = [chosen[i] for i in rng.permutation(4)]
        records = [_snippet_record(pool, i, None if i == anchor else sims[i]) for i in shown]
        questions.append({
            "id": f"authorship-{pool.genre}-{len(questions):03d}",
            "genre": pool.genre,
            "snippets": records,
            "anchor_index": shown.index(anchor),
            "gold_index": shown.index(near[0]),
            "same_author": authors[anchor],
            "other_author": authors[near[0]],
        })
    return questions
