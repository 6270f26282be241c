"""Loading a trained style judge and predicting with it (any Hugging Face encoder).

A judge folder is what `style.train` writes: the fine-tuned model and tokenizer
(`save_pretrained`) and `histbench_style.json`, which says what the judge is (kind
"date" or "authenticity"), its bins and sigma, its maximum length, how texts are
normalised, the base model it was trained from, and its held-out metrics.

Prediction is batched (texts sorted by length to limit padding), on CUDA when available
(override with device=...), in eval mode without gradients; long texts are truncated to
the judge's max_length tokens (256 by default, as in the paper).

Text normalisation for the authenticity detector ("punctuation-v1"), applied the same way
in training and scoring: typographic quotes, dashes and ellipses become plain ASCII,
Markdown emphasis and heading marks (* _ # `) are removed and whitespace is collapsed, so
that typography does not give away who wrote a passage (paper A.1.2). The date predictor
reads texts as they are.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from histbench.core.errors import EvalError
from histbench.core.readers import read_json_object

META_NAME = "histbench_style.json"
DATE = "date"
AUTHENTICITY = "authenticity"
DEFAULT_BASE_MODEL = "microsoft/deberta-v3-large"
DEFAULT_MAX_LENGTH = 256
NORMALISATION = "punctuation-v1"

_PUNCT = str.maketrans({"“": '"', "”": '"', "„": '"', "«": '"', "»": '"', "‘": "'", "’": "'", "‚": "'",
                        "—": "-", "–": "-", "‒": "-", "―": "-", "‑": "-", "…": "...", "*": None, "_": None,
                        "#": None, "`": None})
_SPACE = re.compile(r"\s+")


def normalise_text(text: str, scheme: str | None) -> str:
    if not scheme:
        return text
    if scheme != NORMALISATION:
        raise EvalError(f"unknown text normalisation {scheme!r}")
    return _SPACE.sub(" ", text.translate(_PUNCT)).strip()


def pick_device(device: str | None = None) -> str:
    import torch

    if device:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class StyleJudge:
    path: Path
    meta: dict
    tokenizer: object = field(repr=False)
    model: object = field(repr=False)
    device: str = "cpu"

    @property
    def kind(self) -> str:
        return self.meta["kind"]

    @property
    def max_length(self) -> int:
        return int(self.meta.get("max_length", DEFAULT_MAX_LENGTH))

    def identity(self) -> dict:
        return {"path": str(self.path), "kind": self.kind, "base_model": self.meta.get("base_model"),
                "weights_sha256": weights_digest(self.path), "max_length": self.max_length,
                "text_normalisation": self.meta.get("text_normalisation")}

    def logits(self, texts, batch_size: int = 32, desc: str | None = None) -> np.ndarray:
        import torch

        from histbench.core.progress import progress

        texts = [normalise_text(str(t), self.meta.get("text_normalisation")) for t in texts]
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = [None] * len(texts)
        self.model.eval()
        batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
        with torch.no_grad():
            for batch in progress(batches, desc=desc or f"style: {self.kind}", unit="batch"):
                encoded = self.tokenizer([texts[i] for i in batch], truncation=True, max_length=self.max_length,
                                         padding=True, return_tensors="pt").to(self.device)
                logits = self.model(**encoded).logits.float().cpu().numpy()
                for i, row in zip(batch, logits, strict=True):
                    out[i] = row
        width = self.model.config.num_labels
        return np.stack(out) if out else np.zeros((0, width))

    def predict(self, texts, batch_size: int = 32) -> np.ndarray:
        """date: (n, 36) probabilities; authenticity: (n,) probability of authentic."""
        from scipy.special import softmax

        probs = softmax(self.logits(texts, batch_size), axis=1) if len(texts) else np.zeros((0, self.model.config.num_labels))
        return probs if self.kind == DATE else probs[:, 1]


def read_meta(path: Path) -> dict:
    file = Path(path) / META_NAME
    if not file.is_file():
        raise EvalError(f"not a histbench style judge (no {META_NAME}); train one with "
                        "`python -m histbench.eval.chronologic.style.train`", file=path)
    return read_json_object(file, error=EvalError)


def load_judge(path: str | Path, kind: str, device: str | None = None) -> StyleJudge:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = Path(path).expanduser()
    meta = read_meta(path)
    if meta.get("kind") != kind:
        raise EvalError(f"this style judge is a {meta.get('kind')!r} model, not {kind!r}", file=path)
    device = pick_device(device)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        model = AutoModelForSequenceClassification.from_pretrained(str(path)).to(device)
    except (OSError, ValueError) as exc:
        raise EvalError(f"cannot load the style judge: {exc}", file=path) from exc
    expected = 36 if kind == DATE else 2
    if model.config.num_labels != expected:
        raise EvalError(f"a {kind} judge has {expected} outputs, this model has {model.config.num_labels}", file=path)
    return StyleJudge(path, meta, tokenizer, model, device)


def weights_digest(path: Path) -> str:
    """sha256 over the judge's weight files (names and bytes), for result identities."""
    digest = hashlib.sha256()
    files = sorted(p for p in Path(path).iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file())
    for file in files:
        digest.update(file.name.encode())
        with file.open("rb") as handle:
            hashlib.file_digest(handle, lambda: digest)   # streams the file into the running digest
    return digest.hexdigest()
