"""Bias beta and domain adequacy delta (the temporal valence paper, section 3, Equations 1-4).

For a model m and a sentence s, the model's top-k fillers w_1..w_k come with their
probabilities p_1..p_k (Eq. 1) and the annotated token-in-sentence valences
x = (sigma(w_1, s), ..., sigma(w_k, s)) (Eq. 2). Then

    beta(m, s)  = sum_i p_i * sigma(w_i, s)          (Eq. 3: the dot product of p and x)
    delta(m, s) = 1 - |rho(s) - beta(m, s)| / 2      (Eq. 4: the distance projected on [0, 1])

Probabilities. The paper multiplies the probabilities the model gives its top
predictions, i.e. the softmax over the whole vocabulary, without renormalising them over
the top-k; this is histbench's default (`raw`). beta then lies in [-P, P] where P is the
top-k mass, so a model that spreads its probability over many fillers gets a bias closer
to 0. The alternative (`renormalised`) divides by the probability mass of the scored
words, which makes beta a weighted mean of sigma (always within the scale's range).
Both are computed and stored; `--probabilities` chooses which one the report leads with.

Which fillers are scored. Only whole words with a sigma are scored. Not scored, and
reported with their probability mass per model and sentence:
- `subword`: a continuation word piece (BERT's "##ing", or a BPE/SentencePiece piece
  without its word-start marker): it is not a word that fills the slot;
- `special`: [UNK], [SEP], <s> ... tokens;
- `skipped`: a word the annotators explicitly skipped (punctuation, not a word here);
- `unannotated`: a whole word nobody annotated. By default a (model, sentence) with an
  unannotated word in its top-k gets no beta (status `incomplete`, counted and listed),
  because leaving it out would silently change the number; `--allow-unannotated` scores
  it over the annotated words only and reports the missing mass.
With `raw` probabilities an unscored filler contributes nothing (as if sigma = 0 but
without claiming neutrality); with `renormalised` it is left out of the denominator too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

PROBABILITY_MODES = ("raw", "renormalised")
DEFAULT_MODE = "raw"

_SPECIAL = re.compile(r"^(\[[A-Za-z_]+\d*\]|<[^<>\s]+>|\[unused\d+\])$")
WORD_START_MARKERS = ("\u0120", "\u2581")   # byte-level BPE 'Ġ', SentencePiece '▁'
CONTINUATION_PREFIX = "##"


# ---------------------------------------------------------------------- the paper's formulas


def bias(probabilities: Sequence[float], sigmas: Sequence[float]) -> float:
    """beta(m, s) = sum_i p_i * sigma(w_i, s) (Eq. 3). Raises on unequal lengths."""
    if len(probabilities) != len(sigmas):
        raise ValueError(f"{len(probabilities)} probabilities but {len(sigmas)} valences")
    return float(math.fsum(p * s for p, s in zip(probabilities, sigmas, strict=True)))


def renormalised_bias(probabilities: Sequence[float], sigmas: Sequence[float]) -> float:
    """sum_i p_i * sigma_i / sum_i p_i: beta with the probabilities renormalised over the scored words."""
    total = math.fsum(probabilities)
    if total <= 0:
        return float("nan")
    return bias(probabilities, sigmas) / total


def adequacy(rho: float, beta: float) -> float:
    """delta(m, s) = 1 - |rho(s) - beta(m, s)| / 2 (Eq. 4); NaN when beta is undefined."""
    if beta is None or (isinstance(beta, float) and math.isnan(beta)):
        return float("nan")
    return 1.0 - abs(rho - beta) / 2.0


# ---------------------------------------------------------------------- word pieces


@dataclass(frozen=True)
class Piece:
    word: str       # the word the token spells (markers removed, stripped)
    kind: str       # word | subword | special


def uses_word_start_markers(pieces: Iterable[str]) -> bool:
    """True for BPE / SentencePiece vocabularies (word starts carry 'Ġ' or '▁')."""
    return any(p.startswith(WORD_START_MARKERS) for p in pieces)


def classify_piece(piece: str, decoded: str | None = None, *, marker_vocabulary: bool = False,
                   after_space: bool = True) -> Piece:
    """What a predicted vocabulary entry is, for scoring.

    piece: the vocabulary entry (e.g. 'thou', '##ing', 'Ġthou', '▁thou', '[UNK]').
    decoded: the decoded text of the token, when known (an empty decode means a special token).
    marker_vocabulary: the model marks word starts ('Ġ', '▁'); then an entry without the
    marker, in a slot that follows a space, continues the previous word.
    after_space: the mask follows whitespace in the sentence (false at the very start or
    right after a bracket or quote, where no marker is expected).
    """
    raw = piece if piece is not None else (decoded or "")
    if _SPECIAL.match(raw.strip()):
        return Piece(raw.strip(), "special")
    if raw.startswith(CONTINUATION_PREFIX) and len(raw) > len(CONTINUATION_PREFIX):
        return Piece(raw[len(CONTINUATION_PREFIX):], "subword")
    has_marker = raw.startswith(WORD_START_MARKERS)
    word = raw.lstrip("".join(WORD_START_MARKERS)).strip()
    if decoded is not None and decoded.strip():
        word = decoded.strip()
    if not word:
        return Piece(raw, "special")
    if marker_vocabulary and not has_marker and after_space:
        return Piece(word, "subword")
    return Piece(word, "word")


# ---------------------------------------------------------------------- sigma lookup


@dataclass(frozen=True)
class ResolvedSigma:
    """The sigma used for one (sentence, token): from one or several annotators."""

    sigma: float | None       # None: skipped by everyone who annotated it
    skipped: bool
    annotators: tuple[str, ...]
    values: tuple[float | None, ...]   # per annotator; None = skipped
    method: str               # manual | automatic
    conflict: bool


def key_of(token: str, fold_case: bool) -> str:
    text = token.strip()
    return text.casefold() if fold_case else text


def resolve_sigmas(annotations: Iterable[Mapping], *, fold_case: bool = True, policy: str = "mean",
                   source: str = "manual") -> dict[tuple[str, str], ResolvedSigma]:
    """One sigma per (sentence_id, token key) from annotation rows.

    source: `manual` (default) uses manual annotations only; `automatic` only automatic
    ones; `manual+automatic` manual where any exist, automatic elsewhere.
    policy when annotators disagree (a conflict; always reported):
      `mean`          the mean of their values (skips ignored unless everyone skipped);
      `prefer:NAME`   NAME's annotation where NAME annotated, the mean of the others elsewhere;
      `error`         ValueError listing the conflicts.
    """
    if source not in ("manual", "automatic", "manual+automatic"):
        raise ValueError(f"unknown sigma source {source!r} (manual, automatic, manual+automatic)")
    preferred = policy.split(":", 1)[1] if policy.startswith("prefer:") else None
    if policy not in ("mean", "error") and preferred is None:
        raise ValueError(f"unknown conflict policy {policy!r} (mean, error, prefer:NAME)")
    grouped: dict[tuple[str, str], dict[str, list[Mapping]]] = {}
    for row in annotations:
        key = (row["sentence_id"], key_of(row["token"], fold_case))
        grouped.setdefault(key, {}).setdefault(row.get("method", "manual"), []).append(row)
    resolved: dict[tuple[str, str], ResolvedSigma] = {}
    conflicts = []
    for key, by_method in grouped.items():
        if source == "manual":
            rows, method = by_method.get("manual"), "manual"
        elif source == "automatic":
            rows, method = by_method.get("automatic"), "automatic"
        else:
            rows, method = (by_method["manual"], "manual") if "manual" in by_method else (by_method.get("automatic"), "automatic")
        if not rows:
            continue
        # one value per annotator (a case-folded duplicate from the same annotator: the first)
        per_annotator: dict[str, float | None] = {}
        for row in rows:
            per_annotator.setdefault(row["annotator"], None if row["skipped"] else float(row["sigma"]))
        values = tuple(per_annotator.values())
        conflict = len(set(values)) > 1
        if conflict:
            conflicts.append((key, per_annotator))
        if preferred is not None and preferred in per_annotator:
            chosen = [per_annotator[preferred]]
        else:
            chosen = list(values)
        numbers = [v for v in chosen if v is not None]
        sigma = math.fsum(numbers) / len(numbers) if numbers else None
        resolved[key] = ResolvedSigma(sigma, sigma is None, tuple(per_annotator), values, method, conflict)
    if policy == "error" and conflicts:
        listed = "; ".join(
            f"{sid}/{tok}: " + ", ".join(f"{a}={'skip' if v is None else f'{v:g}'}" for a, v in per.items())
            for (sid, tok), per in conflicts[:20]
        )
        raise ValueError(f"{len(conflicts)} sentence x token pairs have conflicting annotations: {listed}")
    return resolved


# ---------------------------------------------------------------------- scoring one (model, sentence)


@dataclass
class Candidate:
    rank: int
    token: str
    word: str
    kind: str
    probability: float
    sigma: float | None = None
    status: str = ""          # scored | subword | special | skipped | unannotated


def score_candidates(candidates: Sequence[Candidate], rho: float, *, allow_unannotated: bool = False) -> dict:
    """beta and delta (raw and renormalised) and the probability mass of every status.

    Candidates must already carry their status and sigma (see `attach_sigmas`).
    """
    mass = {status: 0.0 for status in ("scored", "subword", "special", "skipped", "unannotated")}
    for c in candidates:
        mass[c.status] += c.probability
    scored = [c for c in candidates if c.status == "scored"]
    n_unannotated = sum(c.status == "unannotated" for c in candidates)
    probabilities = [c.probability for c in scored]
    sigmas = [float(c.sigma) for c in scored]
    if n_unannotated and not allow_unannotated:
        status = "incomplete"
    elif not scored:
        status = "no scored word"
    else:
        status = "ok"
    if status == "ok":
        beta_raw = bias(probabilities, sigmas)
        beta_renorm = renormalised_bias(probabilities, sigmas)
    else:
        beta_raw = beta_renorm = float("nan")
    return {
        "k": len(candidates),
        "n_scored": len(scored),
        "n_unannotated": n_unannotated,
        "mass_topk": math.fsum(c.probability for c in candidates),
        **{f"mass_{name}": value for name, value in mass.items()},
        "beta_raw": beta_raw,
        "beta_renormalised": beta_renorm,
        "delta_raw": adequacy(rho, beta_raw),
        "delta_renormalised": adequacy(rho, beta_renorm),
        "status": status,
    }


def attach_sigmas(candidates: Sequence[Candidate], sentence_id: str, sigmas: Mapping[tuple[str, str], ResolvedSigma],
                  fold_case: bool = True) -> list[Candidate]:
    """Give each candidate its status and sigma (in place; also returned)."""
    for c in candidates:
        if c.kind != "word":
            c.status, c.sigma = c.kind, None
            continue
        found = sigmas.get((sentence_id, key_of(c.word, fold_case)))
        if found is None:
            c.status, c.sigma = "unannotated", None
        elif found.skipped:
            c.status, c.sigma = "skipped", None
        else:
            c.status, c.sigma = "scored", found.sigma
    return list(candidates)
