"""Metrics of the Historical Italian benchmark (paper 3.1-3.5).

MCQ accuracy (wsd, authorship, head, deprel, intertext); mean Spearman correlation
(chrono_ranking); named entities (3.2):

1. mapping: a model names entities by text (and type), not by offsets. Predictions are
   mapped onto the letter in the order given: each goes to the first occurrence of its
   exact text (`str.find`) whose start is not already taken by an earlier prediction; a
   prediction whose text does not occur (or whose occurrences are all taken) has no span.
2. strict: a prediction is a true positive when a gold entity has exactly its span and its
   type (each gold entity matches at most one prediction).
3. fuzzy: a prediction is a true positive when a gold entity of the same type, not matched
   yet, has an overlap ratio |LCS| / (|pred| + |gt| - |LCS|) > 0.5 with it, LCS being the
   longest common substring of the two surface strings (the best-scoring gold entity wins;
   ties: the one nearest to the prediction's mapped position).
4. precision, recall and F1 per entity type from counts pooled over letters, then
   macro-averaged over the types that occur in the gold data or the predictions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np


def longest_common_substring(a: str, b: str) -> int:
    """Length of the longest common substring (contiguous), by dynamic programming."""
    if not a or not b:
        return 0
    best = 0
    previous = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        current = [0] * (len(b) + 1)
        ai = a[i - 1]
        for j in range(1, len(b) + 1):
            if ai == b[j - 1]:
                current[j] = previous[j - 1] + 1
                if current[j] > best:
                    best = current[j]
        previous = current
    return best


def overlap_ratio(pred: str, gold: str) -> float:
    """|LCS| / (|pred| + |gt| - |LCS|) (3.2)."""
    lcs = longest_common_substring(pred, gold)
    denominator = len(pred) + len(gold) - lcs
    return lcs / denominator if denominator else 0.0


def map_predictions(text: str, predictions: Sequence[dict]) -> list[dict]:
    """Each prediction {"text", "type"} gets "start"/"end" (None when not found)."""
    taken: set[int] = set()
    mapped = []
    for pred in predictions:
        surface = str(pred.get("text") or "")
        start = None
        if surface:
            position = text.find(surface)
            while position >= 0 and position in taken:
                position = text.find(surface, position + 1)
            if position >= 0:
                start = position
                taken.add(position)
        mapped.append({"text": surface, "type": str(pred.get("type") or ""), "start": start,
                       "end": None if start is None else start + len(surface)})
    return mapped


@dataclass
class TypeCounts:
    tp: int = 0
    n_pred: int = 0
    n_gold: int = 0

    def prf(self) -> tuple[float, float, float]:
        p = self.tp / self.n_pred if self.n_pred else 0.0
        r = self.tp / self.n_gold if self.n_gold else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return p, r, f


def match_letter(gold: Sequence[dict], mapped: Sequence[dict], mode: str) -> list[bool]:
    """For each mapped prediction, whether it is a true positive (strict or fuzzy)."""
    used: set[int] = set()
    hits = []
    for pred in mapped:
        hit = None
        if mode == "strict":
            if pred["start"] is not None:
                for k, g in enumerate(gold):
                    if k not in used and g["type"] == pred["type"] and g["start"] == pred["start"] and g["end"] == pred["end"]:
                        hit = k
                        break
        else:
            best = None
            for k, g in enumerate(gold):
                if k in used or g["type"] != pred["type"]:
                    continue
                ratio = overlap_ratio(pred["text"], g["text"])
                if ratio <= 0.5:
                    continue
                distance = abs(g["start"] - pred["start"]) if pred["start"] is not None else 0
                key = (ratio, -distance)
                if best is None or key > best[0]:
                    best = (key, k)
            hit = None if best is None else best[1]
        if hit is not None:
            used.add(hit)
        hits.append(hit is not None)
    return hits


def ner_scores(letters: Iterable[tuple[Sequence[dict], Sequence[dict]]]) -> dict:
    """letters: (gold entities, mapped predictions) per letter -> strict and fuzzy scores."""
    out = {}
    letters = list(letters)
    for mode in ("strict", "fuzzy"):
        counts: dict[str, TypeCounts] = {}
        for gold, mapped in letters:
            for g in gold:
                counts.setdefault(g["type"], TypeCounts()).n_gold += 1
            for pred, hit in zip(mapped, match_letter(gold, mapped, mode), strict=True):
                c = counts.setdefault(pred["type"], TypeCounts())
                c.n_pred += 1
                c.tp += int(hit)
        per_type = {t: dict(zip(("precision", "recall", "f1"), c.prf(), strict=True), tp=c.tp, n_pred=c.n_pred, n_gold=c.n_gold)
                    for t, c in sorted(counts.items())}
        if per_type:
            macro = {m: float(np.mean([v[m] for v in per_type.values()])) for m in ("precision", "recall", "f1")}
        else:
            macro = {"precision": 0.0, "recall": 0.0, "f1": 0.0}
        tp = sum(c.tp for c in counts.values())
        n_pred = sum(c.n_pred for c in counts.values())
        n_gold = sum(c.n_gold for c in counts.values())
        micro = TypeCounts(tp, n_pred, n_gold).prf()
        out[mode] = {**macro, "micro": dict(zip(("precision", "recall", "f1"), micro, strict=True)), "per_type": per_type}
    return out


def spearman(predicted_order: Sequence[int], gold_order: Sequence[int]) -> float:
    """Spearman correlation between two orderings of the same items (no ties):
    1 - 6 sum d^2 / (n (n^2 - 1)), d the difference of each item's ranks."""
    n = len(gold_order)
    if sorted(predicted_order) != sorted(gold_order) or n < 2:
        raise ValueError("the predicted order must be a permutation of the gold items")
    pred_rank = {item: r for r, item in enumerate(predicted_order)}
    gold_rank = {item: r for r, item in enumerate(gold_order)}
    d2 = sum((pred_rank[i] - gold_rank[i]) ** 2 for i in gold_order)
    return 1.0 - 6.0 * d2 / (n * (n * n - 1))
