"""Sentence embeddings for the WSD similarity filter and the snippet selection (3.1, 3.3).

`--embedding-model` takes a sentence-transformers model: a Hub id (default
`sentence-transformers/paraphrase-multilingual-mpnet-base-v2`, the paper's model) or a local
folder. `tfidf` selects a lexical stand-in (character 2-4-gram TF-IDF fitted on the texts
of each call) for machines without any sentence-transformers model; it is recorded in the
build manifest and is not the paper's setting. Its vectors stay a scipy sparse matrix
(rows L2-normalised by scikit-learn), so memory grows with the characters embedded, not
with texts x vocabulary: on the whole LeggoManzoni repository a dense matrix would take
tens of GiB. `similarities` and `pair_similarity` take either kind of matrix.

A model is loaded once per process and reused (`Embedder.get`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from histbench.core.errors import BuildError
from histbench.core.extras import require
from histbench.core.paths import folder_fingerprint, portable_name

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

    def encode(self, texts: list[str]):
        """L2-normalised embeddings, shape (len(texts), dim): a dense array, or a CSR
        sparse matrix for the TF-IDF stand-in."""
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        if self.spec == TFIDF:
            from sklearn.feature_extraction.text import TfidfVectorizer

            # norm="l2" (the default) normalises each row; the matrix stays sparse
            return TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), lowercase=True,
                                   dtype=np.float32).fit_transform(texts).tocsr()
        dense = np.asarray(
            self._model().encode(texts, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True),
            dtype=np.float32,
        )
        norms = np.linalg.norm(dense, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return dense / norms

    def identity(self) -> dict:
        """The model as a build may record it: a Hub id as given, a local folder by its
        portable name and fingerprint (never the user's directories)."""
        if self.spec == TFIDF:
            return {"model": TFIDF, "kind": "tfidf"}
        identity = {"model": portable_name(self.spec), "kind": "sentence-transformers"}
        if Path(self.spec).expanduser().is_dir():
            identity["fingerprint"] = folder_fingerprint(Path(self.spec).expanduser())
        return identity


def similarities(matrix, vector) -> np.ndarray:
    """Cosine similarity of every row of `matrix` with `vector` (one row of the same
    kind), as a 1-D array; both dense or both sparse, rows L2-normalised."""
    from scipy import sparse  # here, not at import: discovering the builders needs no scipy

    if sparse.issparse(matrix):
        row = vector if sparse.issparse(vector) else sparse.csr_matrix(vector)
        return np.asarray((matrix @ row.T).todense()).ravel()
    return np.asarray(matrix @ np.asarray(vector).ravel()).ravel()


def pair_similarity(embedder: Embedder, left: list[str], right: list[str]) -> np.ndarray:
    """Cosine similarity of left[i] with right[i] (one encode call for both lists)."""
    if not left:
        return np.zeros(0)
    from scipy import sparse

    vectors = embedder.encode(list(left) + list(right))
    a, b = vectors[: len(left)], vectors[len(left):]
    if sparse.issparse(vectors):
        return np.asarray(a.multiply(b).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", a, b)
