"""Metrics of the Historical Italian benchmark (paper sections 3.1-3.5).

MCQ accuracy (wsd, authorship, head, deprel, intertext); mean Spearman correlation
(chrono_ranking); named entities (3.2):

1. mapping (3.2: "sequentially scanning the text and, for each predicted entity, matching
   its text to the first occurrence that has not already been assigned to a previous
   prediction"): a model names entities by text (and type), not by offsets. Predictions
   are mapped onto the letter in the order given: each goes to the first occurrence of its
   exact text that stands as a word (no letter or digit joined to it on either side, so
   "Biblioteca" is not found inside "Bibliotecari") and overlaps no text an earlier
   prediction took ("Lionello" after "Lionello d'Este" goes to the next "Lionello").
   A prediction with no such occurrence is "not found"; for fuzzy matching only, it is
   placed where the letter best matches it (rapidfuzz `partial_ratio_alignment`, score at
   least `ALIGN_MIN_SCORE`, among the words no prediction took), so a misspelt name still
   has a position.
2. strict: a prediction is a true positive when a gold entity has exactly its span and its
   type (each gold entity matches at most one prediction).
3. fuzzy: a prediction is a true positive when a gold entity of the same type, not matched
   yet, overlaps its position in the letter and has an overlap ratio
   |LCS| / (|pred| + |gt| - |LCS|) > 0.5 with it (LCS: the longest common substring of
   the two surface strings; the best-scoring gold entity wins, ties: the nearest).
4. precision, recall and F1 per entity type from counts pooled over letters, then
   macro-averaged over the types of the annotation scheme (the row's `entity_types`) that
   have gold entities in the letters scored. Predictions of a type outside the scheme
   (a model's invented "MISC", "DATE") are not scored as any type: they are reported
   apart (`invented_types`, `invented_predictions`), since the paper's prompt names the
   types. Scheme types with no gold entity in the letters scored are listed with their
   predictions (`types_without_gold`) and left out of the macro average (their recall is
   undefined). Intervals: percentile bootstrap over letters.

The ceiling (`ceiling`): what a perfect answer scores under this mapping, the gold
entities themselves listed in order of appearance. It is below 1 when an entity's text
also occurs, unannotated, earlier in the letter (the first free occurrence is taken), e.g.
a place named once in a greeting and annotated only later.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

ALIGN_MIN_SCORE = 80.0


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


def _stands_as_word(text: str, start: int, end: int) -> bool:
    """No letter or digit joins the occurrence text[start:end] to its neighbours."""
    if start > 0 and text[start].isalnum() and text[start - 1].isalnum():
        return False
    if end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        return False
    return True


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def map_predictions(text: str, predictions: Sequence[dict], align: bool = True) -> list[dict]:
    """Each prediction {"text", "type"} gets "start"/"end" (None when not found) and, when
    not found, "aligned_start"/"aligned_end" (its fuzzy position, or None)."""
    from rapidfuzz import fuzz

    taken: set[tuple[int, int]] = set()
    mapped = []
    pending = []
    for pred in predictions:
        surface = str(pred.get("text") or "")
        start = None
        if surface:
            position = text.find(surface)
            while position >= 0:
                span = (position, position + len(surface))
                if not any(_overlaps(span, t) for t in taken) and _stands_as_word(text, *span):
                    start = position
                    taken.add(span)
                    break
                position = text.find(surface, position + 1)
        item = {"text": surface, "type": str(pred.get("type") or ""), "start": start,
                "end": None if start is None else start + len(surface)}
        if start is None:
            item["aligned_start"] = item["aligned_end"] = None
            pending.append(item)
        mapped.append(item)
    if align:
        for item in pending:
            surface = item["text"].strip()
            if len(surface) < 2:
                continue
            masked = list(text)
            for a, b in taken:
                masked[a:b] = "\0" * (b - a)
            found = fuzz.partial_ratio_alignment(surface, "".join(masked), score_cutoff=ALIGN_MIN_SCORE)
            if found is not None and found.dest_end > found.dest_start:
                item["aligned_start"], item["aligned_end"] = int(found.dest_start), int(found.dest_end)
                taken.add((item["aligned_start"], item["aligned_end"]))
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


def _position(pred: dict) -> tuple[int, int] | None:
    if pred.get("start") is not None:
        return pred["start"], pred["end"]
    if pred.get("aligned_start") is not None:
        return pred["aligned_start"], pred["aligned_end"]
    return None


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
            where = _position(pred)
            best = None
            if where is not None:
                for k, g in enumerate(gold):
                    if k in used or g["type"] != pred["type"] or not _overlaps(where, (g["start"], g["end"])):
                        continue
                    ratio = overlap_ratio(pred["text"], g["text"])
                    if ratio <= 0.5:
                        continue
                    key = (ratio, -abs(g["start"] - where[0]))
                    if best is None or key > best[0]:
                        best = (key, k)
            hit = None if best is None else best[1]
        if hit is not None:
            used.add(hit)
        hits.append(hit is not None)
    return hits


def _macro(tp: np.ndarray, n_pred: np.ndarray, n_gold: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Macro P/R/F1 over the last axis, over types with gold > 0 (NaN when none)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n_pred > 0, tp / np.maximum(n_pred, 1), 0.0)
        r = np.where(n_gold > 0, tp / np.maximum(n_gold, 1), np.nan)
        f = np.where(p + np.nan_to_num(r) > 0, 2 * p * np.nan_to_num(r) / (p + np.nan_to_num(r)), 0.0)
    scored = n_gold > 0
    k = scored.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mp = np.where(scored, p, 0.0).sum(axis=-1) / k
        mr = np.where(scored, np.nan_to_num(r), 0.0).sum(axis=-1) / k
        mf = np.where(scored, f, 0.0).sum(axis=-1) / k
    return mp, mr, mf


def ner_scores(letters: Iterable[tuple[Sequence[dict], Sequence[dict]]], labels: Sequence[str],
               n_resamples: int = 1000, seed: int = 0) -> dict:
    """letters: (gold entities, mapped predictions) per letter -> strict and fuzzy scores
    over the scheme's `labels` (module doc, step 4), with bootstrap intervals."""
    from histbench.eval.stats import bootstrap_counts, percentile_interval

    letters = list(letters)
    labels = list(labels)
    column = {t: i for i, t in enumerate(labels)}
    out: dict = {}
    invented: dict[str, int] = {}
    for _, mapped in letters:
        for pred in mapped:
            if pred["type"] not in column:
                invented[pred["type"] or "(no type)"] = invented.get(pred["type"] or "(no type)", 0) + 1
    counts_boot = bootstrap_counts(len(letters), n_resamples, seed) if letters and n_resamples else None
    for mode in ("strict", "fuzzy"):
        per_letter = np.zeros((len(letters), 3, len(labels)))          # tp, n_pred, n_gold
        for n, (gold, mapped) in enumerate(letters):
            for g in gold:
                if g["type"] in column:
                    per_letter[n, 2, column[g["type"]]] += 1
            for pred, hit in zip(mapped, match_letter(gold, mapped, mode), strict=True):
                if pred["type"] in column:
                    per_letter[n, 1, column[pred["type"]]] += 1
                    per_letter[n, 0, column[pred["type"]]] += int(hit)
        pooled = per_letter.sum(axis=0)
        per_type = {}
        for t, i in column.items():
            c = TypeCounts(int(pooled[0, i]), int(pooled[1, i]), int(pooled[2, i]))
            per_type[t] = dict(zip(("precision", "recall", "f1"), c.prf(), strict=True), tp=c.tp, n_pred=c.n_pred, n_gold=c.n_gold)
        mp, mr, mf = (float(x) for x in _macro(pooled[0], pooled[1], pooled[2]))
        result = {"precision": _nan_to_zero(mp), "recall": _nan_to_zero(mr), "f1": _nan_to_zero(mf)}
        if counts_boot is not None:
            boot = np.einsum("bn,nkt->bkt", counts_boot.astype(float), per_letter)
            bp, br, bf = _macro(boot[:, 0], boot[:, 1], boot[:, 2])
            for name, samples in (("precision", bp), ("recall", br), ("f1", bf)):
                samples = samples[~np.isnan(samples)]
                low, high = percentile_interval(samples) if samples.size else (np.nan, np.nan)
                result[f"{name}_ci"] = [float(low), float(high)]
                if samples.size and samples.min() == samples.max():
                    result[f"{name}_ci_constant"] = True   # every resample the same (reports say so)
        tp, n_pred, n_gold = (int(pooled[k].sum()) for k in range(3))
        result["micro"] = dict(zip(("precision", "recall", "f1"), TypeCounts(tp, n_pred, n_gold).prf(), strict=True))
        result["per_type"] = per_type
        out[mode] = result
    out["entity_types"] = labels
    out["types_without_gold"] = [t for t in labels if out["strict"]["per_type"][t]["n_gold"] == 0]
    out["invented_types"] = dict(sorted(invented.items()))
    out["invented_predictions"] = int(sum(invented.values()))
    return out


def _nan_to_zero(value: float) -> float:
    return 0.0 if value != value else value


def ceiling(letters: Iterable[tuple[str, Sequence[dict]]], labels: Sequence[str]) -> dict:
    """What a perfect answer scores (module doc): letters are (text, gold entities)."""
    pairs = []
    misplaced = 0
    total = 0
    for text, gold in letters:
        perfect = [{"text": g["text"], "type": g["type"]} for g in sorted(gold, key=lambda g: (g["start"], g["end"]))]
        mapped = map_predictions(text, perfect)
        ordered = sorted(gold, key=lambda g: (g["start"], g["end"]))
        misplaced += sum(1 for m, g in zip(mapped, ordered, strict=True) if m["start"] != g["start"])
        total += len(gold)
        pairs.append((gold, mapped))
    scores = ner_scores(pairs, labels, n_resamples=0) if pairs else None
    return {
        "strict_f1": scores["strict"]["f1"] if scores else None,
        "fuzzy_f1": scores["fuzzy"]["f1"] if scores else None,
        "gold_entities": total,
        "mapped_to_another_occurrence": misplaced,
    }


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
