"""MHER non-generative baselines (paper section 5.2, Table 2).

Every fitted quantity (thresholds, TF-IDF vocabularies and weights, logistic coefficients,
decision directions) is chosen on DEV only. Scoring functions receive only the
model-visible view of an item (`protocol.visible_item`), never a record: TEST labels are
out of their reach, and `fit` is the only function that sees labels (DEV ones).

Name-form methods (Name-only condition; surfaces only):
  exact                    same iff the surfaces are equal (fixed rule, nothing fitted)
  exact_normalised         same iff the surfaces have the same surface key (NFKC, casefold and
                           the script-aware folds of builders/mher/text.py: the benchmark's
                           normalisation, so it says `same` exactly on identical surfaces)
  levenshtein              rapidfuzz normalised Levenshtein similarity, DEV threshold
  jaro_winkler             rapidfuzz Jaro-Winkler similarity, DEV threshold
  tfidf_char               cosine of character 2-5-gram TF-IDF (fitted on DEV names), DEV threshold
  unidecode_levenshtein, unidecode_jaro_winkler, unidecode_tfidf_char
                           the same after the Unidecode fold (an ASCII fold across scripts)
Context methods (Context-only condition; the two contexts only):
  ctx_tfidf_char           character 2-5-gram TF-IDF cosine (fitted on DEV contexts)
  ctx_tfidf_word           word 1-2-gram TF-IDF cosine (fitted on DEV contexts)
  ctx_jaccard              token Jaccard similarity
  ctx_sequence             sequence similarity (rapidfuzz Indel ratio of the normalised texts)
  ctx_length               absolute difference of log token counts (direction chosen on DEV)
  ctx_logistic             the six features above (char, word, Jaccard, sequence, length
                           difference, mean log length) standardised, logistic regression;
                           5-fold out-of-fold accuracy on DEV, then refit on all of DEV
Embedding methods (a local sentence-transformers model or an OpenAI-compatible
/embeddings endpoint, see embeddings.py):
  embedding_name, embedding_context   cosine of normalised embeddings, DEV thresholds
                           (separate for names and contexts)

Threshold rule (shared with the leakage audit): the DEV-accuracy-maximising cut between
distinct DEV scores, the middle one when several tie; `same` when score >= cut.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from histbench.builders.mher.audit import Threshold, apply_threshold, best_threshold, jaccard
from histbench.builders.mher.text import fold, normalise, surface_key, tokens
from histbench.core.errors import EvalError

from .metrics import DIFFERENT, SAME

NAME_METHODS = ("exact", "exact_normalised", "levenshtein", "jaro_winkler", "tfidf_char",
                "unidecode_levenshtein", "unidecode_jaro_winkler", "unidecode_tfidf_char")
CONTEXT_METHODS = ("ctx_tfidf_char", "ctx_tfidf_word", "ctx_jaccard", "ctx_sequence", "ctx_length", "ctx_logistic")
EMBEDDING_METHODS = ("embedding_name", "embedding_context")
LABELS = {
    "exact": "Exact match",
    "exact_normalised": "Exact normalized match (surface key)",
    "levenshtein": "Unicode Levenshtein",
    "jaro_winkler": "Unicode Jaro-Winkler",
    "tfidf_char": "Unicode char 2-5-gram TF-IDF",
    "unidecode_levenshtein": "Unidecode + Levenshtein",
    "unidecode_jaro_winkler": "Unidecode + Jaro-Winkler",
    "unidecode_tfidf_char": "Unidecode + char 2-5-gram TF-IDF",
    "ctx_tfidf_char": "Char 2-5-gram TF-IDF",
    "ctx_tfidf_word": "Word 1-2-gram TF-IDF",
    "ctx_jaccard": "Token Jaccard",
    "ctx_sequence": "Sequence similarity",
    "ctx_length": "Context length difference",
    "ctx_logistic": "Six-feature logistic (standardised)",
    "embedding_name": "Sentence embedding",
    "embedding_context": "Sentence embedding",
}

View = dict  # {"a": {...}, "b": {...}} from protocol.visible_item


def _surfaces(views: Sequence[View], folded: bool) -> tuple[list[str], list[str]]:
    f = fold if folded else normalise
    return [f(v["a"]["surface"]) for v in views], [f(v["b"]["surface"]) for v in views]


def _contexts(views: Sequence[View]) -> tuple[list[str], list[str]]:
    return [v["a"]["context"] for v in views], [v["b"]["context"] for v in views]


def _tfidf_cosine(vectorizer, left: list[str], right: list[str]) -> np.ndarray:
    if not left:
        return np.zeros(0)
    a, b = vectorizer.transform(left), vectorizer.transform(right)
    return np.asarray(a.multiply(b).sum(axis=1)).ravel()


class Scorer:
    """Maps views to one score per item; `fit_unsupervised` may look at DEV texts only."""

    evidence = "name"

    def fit_unsupervised(self, dev_views: Sequence[View]) -> None:
        """Label-free fitting on DEV texts (vocabularies, IDF weights)."""

    def scores(self, views: Sequence[View]) -> np.ndarray:
        raise NotImplementedError


class EqualityScorer(Scorer):
    """1 when the surfaces are equal: as written, or (`normalised`) after the surface key."""

    def __init__(self, normalised: bool):
        self.normalised = normalised

    def scores(self, views):
        if self.normalised:
            left = [surface_key(v["a"]["surface"]) for v in views]
            right = [surface_key(v["b"]["surface"]) for v in views]
        else:
            left = [v["a"]["surface"] for v in views]
            right = [v["b"]["surface"] for v in views]
        return np.array([1.0 if a == b else 0.0 for a, b in zip(left, right, strict=True)])


class StringSimilarityScorer(Scorer):
    def __init__(self, metric: str, folded: bool):
        self.metric, self.folded = metric, folded

    def scores(self, views):
        from rapidfuzz.distance import JaroWinkler, Levenshtein

        fn = Levenshtein.normalized_similarity if self.metric == "levenshtein" else JaroWinkler.similarity
        left, right = _surfaces(views, self.folded)
        return np.array([fn(a, b) for a, b in zip(left, right, strict=True)], dtype=float)


class NameTfidfScorer(Scorer):
    def __init__(self, folded: bool):
        self.folded = folded
        self.vectorizer = None

    def fit_unsupervised(self, dev_views):
        from sklearn.feature_extraction.text import TfidfVectorizer

        left, right = _surfaces(dev_views, self.folded)
        self.vectorizer = TfidfVectorizer(analyzer="char", ngram_range=(2, 5), lowercase=False).fit(left + right)

    def scores(self, views):
        left, right = _surfaces(views, self.folded)
        return _tfidf_cosine(self.vectorizer, left, right)


class ContextTfidfScorer(Scorer):
    evidence = "context"

    def __init__(self, analyzer: str):
        self.analyzer = analyzer
        self.vectorizer = None

    def fit_unsupervised(self, dev_views):
        from sklearn.feature_extraction.text import TfidfVectorizer

        left, right = _contexts(dev_views)
        if self.analyzer == "char":
            vectorizer = TfidfVectorizer(analyzer="char", ngram_range=(2, 5), preprocessor=normalise)
        else:
            vectorizer = TfidfVectorizer(analyzer="word", ngram_range=(1, 2), preprocessor=normalise,
                                         token_pattern=r"(?u)\b\w+\b")
        self.vectorizer = vectorizer.fit(left + right)

    def scores(self, views):
        left, right = _contexts(views)
        return _tfidf_cosine(self.vectorizer, left, right)


class JaccardScorer(Scorer):
    evidence = "context"

    def scores(self, views):
        left, right = _contexts(views)
        return np.array([jaccard(a, b) for a, b in zip(left, right, strict=True)], dtype=float)


class SequenceScorer(Scorer):
    evidence = "context"

    def scores(self, views):
        from rapidfuzz import fuzz

        left, right = _contexts(views)
        return np.array([fuzz.ratio(normalise(a), normalise(b)) / 100.0 for a, b in zip(left, right, strict=True)])


def _log_length(text: str) -> float:
    return math.log1p(len(tokens(text)))


class LengthDifferenceScorer(Scorer):
    evidence = "context"

    def scores(self, views):
        left, right = _contexts(views)
        return np.array([abs(_log_length(a) - _log_length(b)) for a, b in zip(left, right, strict=True)])


class MeanLengthScorer(Scorer):
    evidence = "context"

    def scores(self, views):
        left, right = _contexts(views)
        return np.array([(_log_length(a) + _log_length(b)) / 2 for a, b in zip(left, right, strict=True)])


class EmbeddingCache:
    """An embedding model (sentence-transformers' `encode`) with a text -> vector cache, so
    each text is encoded (or sent to an API) once."""

    def __init__(self, model):
        self.model = model
        self.vectors: dict[str, np.ndarray] = {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        todo = sorted({t for t in texts if t not in self.vectors})
        if todo:
            encoded = self.model.encode(todo, batch_size=32, normalize_embeddings=True, show_progress_bar=False,
                                        convert_to_numpy=True)
            self.vectors.update(zip(todo, encoded, strict=True))
        return np.array([self.vectors[t] for t in texts])


def embedding_cache(model) -> EmbeddingCache:
    return model if isinstance(model, EmbeddingCache) else EmbeddingCache(model)


class EmbeddingScorer(Scorer):
    """Cosine similarity of sentence-transformers embeddings (normalised)."""

    def __init__(self, model, evidence: str):
        self.cache = embedding_cache(model)
        self.evidence = evidence

    def _texts(self, views):
        if self.evidence == "name":
            return [v["a"]["surface"] for v in views], [v["b"]["surface"] for v in views]
        return _contexts(views)

    def scores(self, views):
        left, right = self._texts(views)
        if not left:
            return np.zeros(0)
        a, b = self.cache.encode(left), self.cache.encode(right)
        return np.einsum("ij,ij->i", a, b).astype(float)


@dataclass
class FittedBaseline:
    """A baseline after fitting on DEV: `predict(views)` gives actions (0 same, 1 different)
    and p(same)."""

    name: str
    evidence: str
    condition: str
    dev_accuracy: float
    threshold: Threshold | None = None
    details: dict = field(default_factory=dict)
    _predict: Callable | None = None

    def predict(self, views: Sequence[View]) -> tuple[np.ndarray, np.ndarray]:
        return self._predict(views)

    def describe(self) -> dict:
        out = {"name": self.name, "label": LABELS.get(self.name, self.name), "evidence": self.evidence,
               "condition": self.condition, "dev_accuracy": self.dev_accuracy, **self.details}
        if self.threshold is not None:
            out["threshold"] = {"value": self.threshold.value, "direction": self.threshold.direction,
                                "constant": self.threshold.constant, "rule": self.threshold.describe()}
        return out


def _dev_gold(dev_gold) -> np.ndarray:
    gold = np.asarray(dev_gold, dtype=int)
    if gold.size == 0:
        raise EvalError("no DEV items to fit the baselines on")
    return gold


def fit_threshold_baseline(name: str, scorer: Scorer, condition: str, dev_views, dev_gold,
                           direction: str = "higher", fixed: bool = False) -> FittedBaseline:
    gold = _dev_gold(dev_gold)
    scorer.fit_unsupervised(dev_views)
    dev_scores = scorer.scores(dev_views)
    same = gold == SAME
    if fixed:
        threshold = Threshold(0.5, "higher", float(((dev_scores >= 0.5) == same).mean()))
    else:
        threshold = best_threshold(dev_scores, same, direction)

    def predict(views):
        scores = scorer.scores(views)
        decided = apply_threshold(scores, threshold)
        return np.where(decided, SAME, DIFFERENT), decided.astype(float)

    return FittedBaseline(name, scorer.evidence, condition, threshold.accuracy, None if fixed else threshold,
                          {"rule": "fixed: same iff equal" if fixed else "DEV threshold"}, predict)


def context_feature_scorers() -> list[tuple[str, Scorer]]:
    return [("char_tfidf", ContextTfidfScorer("char")), ("word_tfidf", ContextTfidfScorer("word")),
            ("jaccard", JaccardScorer()), ("sequence", SequenceScorer()),
            ("length_difference", LengthDifferenceScorer()), ("mean_length", MeanLengthScorer())]


def fit_logistic(name: str, scorers: list[tuple[str, Scorer]], condition: str, dev_views, dev_gold, seed: int = 0,
                 evidence: str = "context") -> FittedBaseline:
    """Standardised logistic regression on the scorers' features: 5-fold (stratified,
    seeded) out-of-fold accuracy on DEV, then a refit on all of DEV."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    gold = _dev_gold(dev_gold)
    for _, scorer in scorers:
        scorer.fit_unsupervised(dev_views)

    def features(views):
        return np.column_stack([scorer.scores(views) for _, scorer in scorers]) if views else np.zeros((0, len(scorers)))

    x_dev = features(dev_views)
    y_dev = (gold == SAME).astype(int)
    smallest = int(min(y_dev.sum(), (1 - y_dev).sum()))
    folds = min(5, smallest)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    if folds >= 2:
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        oof = cross_val_predict(model, x_dev, y_dev, cv=splitter, method="predict_proba")[:, 1]
        dev_accuracy = float(((oof >= 0.5) == (y_dev == 1)).mean())
    else:
        dev_accuracy = float("nan")
    if smallest == 0:
        raise EvalError("the logistic baseline needs DEV items of both classes")
    model.fit(x_dev, y_dev)

    def predict(views):
        if not views:
            return np.zeros(0, dtype=int), np.zeros(0)
        p_same = model.predict_proba(features(views))[:, 1]
        return np.where(p_same >= 0.5, SAME, DIFFERENT), p_same

    coef = model[-1].coef_[0].tolist()
    details = {"rule": f"{folds}-fold out-of-fold on DEV, refit on DEV" if folds >= 2 else "refit on DEV (too few items for folds)",
               "features": [n for n, _ in scorers], "coefficients": coef,
               "intercept": float(model[-1].intercept_[0]), "folds": folds}
    return FittedBaseline(name, evidence, condition, dev_accuracy, None, details, predict)


def fit_baselines(dev_name_views, dev_name_gold, dev_context_views, dev_context_gold, embedding_model=None,
                  embedding_label: str | None = None, seed: int = 0) -> list[FittedBaseline]:
    """Fit every baseline on DEV. Name methods use Name-only DEV views, context methods
    Context-only DEV views."""
    fitted = [
        fit_threshold_baseline("exact", EqualityScorer(False), "name_only", dev_name_views, dev_name_gold, fixed=True),
        fit_threshold_baseline("exact_normalised", EqualityScorer(True), "name_only", dev_name_views, dev_name_gold,
                               fixed=True),
    ]
    for folded in (False, True):
        prefix = "unidecode_" if folded else ""
        fitted.append(fit_threshold_baseline(f"{prefix}levenshtein", StringSimilarityScorer("levenshtein", folded),
                                             "name_only", dev_name_views, dev_name_gold))
        fitted.append(fit_threshold_baseline(f"{prefix}jaro_winkler", StringSimilarityScorer("jaro_winkler", folded),
                                             "name_only", dev_name_views, dev_name_gold))
        fitted.append(fit_threshold_baseline(f"{prefix}tfidf_char", NameTfidfScorer(folded), "name_only",
                                             dev_name_views, dev_name_gold))
    single = {"ctx_tfidf_char": ContextTfidfScorer("char"), "ctx_tfidf_word": ContextTfidfScorer("word"),
              "ctx_jaccard": JaccardScorer(), "ctx_sequence": SequenceScorer()}
    for name, scorer in single.items():
        fitted.append(fit_threshold_baseline(name, scorer, "context_only", dev_context_views, dev_context_gold))
    fitted.append(fit_threshold_baseline("ctx_length", LengthDifferenceScorer(), "context_only", dev_context_views,
                                         dev_context_gold, direction="either"))
    fitted.append(fit_logistic("ctx_logistic", context_feature_scorers(), "context_only", dev_context_views,
                               dev_context_gold, seed=seed))
    if embedding_model is not None:
        embedding_model = embedding_cache(embedding_model)
        for evidence, condition, views, gold in (("name", "name_only", dev_name_views, dev_name_gold),
                                                 ("context", "context_only", dev_context_views, dev_context_gold)):
            baseline = fit_threshold_baseline(f"embedding_{evidence}", EmbeddingScorer(embedding_model, evidence),
                                              condition, views, gold)
            baseline.details["model"] = embedding_label
            fitted.append(baseline)
    return fitted
