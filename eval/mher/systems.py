"""Deterministic reference systems that answer in every MHER condition.

Tables 3-7 compare systems across conditions on the same items. Generative models are
scored with the JSON protocol (run.py); these reference systems let the same analyses run
without a language model (the demo, smoke tests): a standardised logistic regression on
similarity features of what the condition shows, fitted on DEV only:

  name_only, unresolved      name features (the name-only model)
  context_only               the six context features (the context-only model)
  source_grounded, shuffled  name and context features (fitted on DEV source-grounded
                             items; the shuffled conditions reuse that model, as a model
                             told nothing would)

Probabilities are (p, 1 - p, 0) over (same, different, ambiguous); the action follows the
protocol's rule (argmax, exact tie -> ambiguous). These systems never abstain; they are
labelled as reference systems in every report, never as language models.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from . import baselines as B
from .data import Bench, Prediction
from .metrics import LABEL_CODES
from .protocol import ACTIONS, action_of, condition_family, visible_item

FIT_CONDITION = {"name_only": "name_only", "unresolved": "name_only", "context_only": "context_only",
                 "source_grounded": "source_grounded", "shuffled": "source_grounded"}


def lexical_features() -> dict[str, Callable[[], list[tuple[str, B.Scorer]]]]:
    """Feature factories per evidence kind for the lexical reference system."""
    return {
        "name": lambda: [("unidecode_levenshtein", B.StringSimilarityScorer("levenshtein", True)),
                         ("unidecode_tfidf_char", B.NameTfidfScorer(True))],
        "context": B.context_feature_scorers,
    }


def embedding_features(model) -> dict[str, Callable[[], list[tuple[str, B.Scorer]]]]:
    model = B.embedding_cache(model)
    return {
        "name": lambda: [("embedding_name", B.EmbeddingScorer(model, "name"))],
        "context": lambda: [("embedding_context", B.EmbeddingScorer(model, "context"))],
    }


def _scorers_for(family: str, factories) -> list[tuple[str, B.Scorer]]:
    kinds = {"name_only": ["name"], "unresolved": ["name"], "context_only": ["context"],
             "source_grounded": ["name", "context"], "shuffled": ["name", "context"]}[family]
    return [pair for kind in kinds for pair in factories[kind]()]


class ReferenceSystem:
    """A logistic reference system over feature factories (see the module docstring)."""

    def __init__(self, name: str, factories, seed: int = 0):
        self.name = name
        self.factories = factories
        self.seed = seed
        self.models: dict[str, B.FittedBaseline] = {}

    def fit(self, bench: Bench) -> ReferenceSystem:
        for family in ("name_only", "context_only", "source_grounded"):
            records = bench.items(family, "dev")
            views = [visible_item(family, r) for r in records]
            gold = [LABEL_CODES[r["label"]] for r in records]
            self.models[family] = B.fit_logistic(f"{self.name}:{family}", _scorers_for(family, self.factories), family,
                                                 views, gold, seed=self.seed, evidence=family)
        return self

    def describe(self) -> dict:
        return {family: model.describe() for family, model in self.models.items()}

    def predict(self, condition: str, records: Sequence[dict]) -> list[tuple[tuple[float, float, float], str]]:
        family = condition_family(condition)
        model = self.models[FIT_CONDITION[family]]
        # name_only's model needs name views; unresolved records have the same shape
        view_condition = "name_only" if family == "unresolved" else condition
        views = [visible_item(view_condition, r) for r in records]
        _, p_same = model.predict(views)
        out = []
        for p in np.asarray(p_same, dtype=float):
            probabilities = (float(p), float(1.0 - p), 0.0)
            out.append((probabilities, action_of(probabilities)))
        return out


def system_predictions(system: ReferenceSystem, bench: Bench, conditions: Sequence[str],
                       splits: Sequence[str]) -> list[Prediction]:
    predictions = []
    for condition in conditions:
        for split in splits:
            if condition == "unresolved" and split != "test":
                continue
            records = bench.items(condition, split)
            for record, (probabilities, action) in zip(records, system.predict(condition, records), strict=True):
                assert action in ACTIONS
                predictions.append(Prediction(system.name, condition, split, Bench.item_id(condition, record),
                                              probabilities, action))
    return predictions
