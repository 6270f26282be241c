"""Sentence embeddings for the WSD similarity filter and the snippet selection (3.1, 3.3).

`--embedding-model` takes a sentence-transformers model: a Hub id (default
`sentence-transformers/paraphrase-multilingual-mpnet-base-v2`, the paper's model) or a local
folder. `tfidf` selects a lexical stand-in (character 2-4-gram TF-IDF fitted on the texts
of each call) for machines without any sentence-transformers model; it is recorded in the
build manifest and is not the paper's setting.

A model is loaded once per process and reused (`Embedder.get`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from histbench.builders.core.errors import BuildError
from histbench.builders.core.extras import require

DEFAULT_MODEL = "sentence-transformers/paraphrase-multilingual-mpnet-base-v2"
TFIDF = "tfidf"

_LOADED: dict[str, object] = {}


@dataclass
class Embedder:
    spec: str
    batch_size: int = 32

    @classmethod
    def get(cls, spec: str, batch_size: int = 32) -> Embedder:
        return cls(spec, batch_size)

    def _model(self):
        if self.spec in _LOADED:
            return _LOADED[self.spec]
        SentenceTransformer = require("sentence_transformers", "embedding the snippets",
                                      alternative="pass --embedding-model tfidf").SentenceTransformer
        try:
            model = SentenceTransformer(self.spec)
        except Exception as exc:  # noqa: BLE001 - any loading failure gets the same advice
            raise BuildError(
                f"cannot load the sentence-transformers model {self.spec!r} ({type(exc).__name__}: {exc}); "
                "give --embedding-model a local model folder (or a Hub id when online), or 'tfidf'",
                field="--embedding-model",
            ) from exc
        _LOADED[self.spec] = model
        return model

    def encode(self, texts: list[str]) -> np.ndarray:
        """L2-normalised embeddings, shape (len(texts), dim)."""
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        if self.spec == TFIDF:
            from sklearn.feature_extraction.text import TfidfVectorizer

            matrix = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), lowercase=True).fit_transform(texts)
            dense = matrix.toarray().astype(np.float32)
        else:
            dense = np.asarray(
                self._model().encode(texts, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True),
                dtype=np.float32,
            )
        norms = np.linalg.norm(dense, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return dense / norms

    def identity(self) -> dict:
        return {"model": self.spec, "kind": "tfidf" if self.spec == TFIDF else "sentence-transformers"}


def pair_similarity(embedder: Embedder, left: list[str], right: list[str]) -> np.ndarray:
    """Cosine similarity of left[i] with right[i] (one encode call for both lists)."""
    if not left:
        return np.zeros(0)
    vectors = embedder.encode(list(left) + list(right))
    a, b = vectors[: len(left)], vectors[len(left):]
    return np.einsum("ij,ij->i", a, b)
