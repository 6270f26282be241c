"""The fixed vocabularies of Chronologic-EN: reasoning types, groups, frame types, and
the distractor families parsed from `answer_types`.

Shared by the builder and the evaluators (likelihood, generation, judges), so every part
of histbench groups questions the same way as Table 1 and Tables 3-4 of the paper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Table 1 order (paper section 4): reasoning type -> group.
REASONING_TYPES: tuple[str, ...] = (
    "sentence_cloze",
    "phrase_cloze",
    "topic_sentence",
    "constrained_generation",
    "character_modeling",
    "knowledge",
    "inference",
    "abstention",
)
GROUP_OF: dict[str, str] = {
    "sentence_cloze": "cloze",
    "phrase_cloze": "cloze",
    "topic_sentence": "cloze",
    "constrained_generation": "generation",
    "character_modeling": "generation",
    "knowledge": "knowledge",
    "inference": "knowledge",
    "abstention": "knowledge",
}
GROUPS: tuple[str, ...] = ("cloze", "generation", "knowledge")
# Column headings of Tables 3 and 4.
GROUP_LABELS: dict[str, str] = {"cloze": "Cloze", "generation": "Gen.", "knowledge": "Know."}
GROUP_TITLES: dict[str, str] = {
    "cloze": "Cloze tasks",
    "generation": "Generation tasks",
    "knowledge": "Knowledge and inference",
}
TYPE_LABELS: dict[str, str] = {
    "sentence_cloze": "structured cloze - sentence",
    "phrase_cloze": "structured cloze - phrase",
    "topic_sentence": "topic sentence",
    "constrained_generation": "constrained generation",
    "character_modeling": "character modeling",
    "knowledge": "knowledge",
    "inference": "inference",
    "abstention": "abstention",
}
FRAME_TYPES: tuple[str, ...] = ("world_context", "book_context", "passage_context")

# Table 1 of the paper (Chronologic-EN-1.0, 866 questions): a build of the full release
# is compared with these counts in its summary.
PAPER_TABLE1: dict[str, int] = {
    "sentence_cloze": 160,
    "phrase_cloze": 155,
    "topic_sentence": 44,
    "constrained_generation": 158,
    "character_modeling": 115,
    "knowledge": 94,
    "inference": 78,
    "abstention": 62,
}
PAPER_TOTAL = 866

MIN_OPTIONS, MAX_OPTIONS = 4, 8
GROUND_TRUTH_PROBABILITY = 1.0

# Distractor families (see parse_answer_type).
FAMILIES: tuple[str, ...] = (
    "ground_truth",
    "manual",
    "negation",
    "same_book",
    "same_character",
    "other_book",
    "anachronistic_model",
    "anachronistic_year",
    "anachronistic_manual",
    "anachronistic_source",
    "other",
)
_MODIFIERS = re.compile(r"^(metadataless|distort\d+)_")
_YEAR = re.compile(r"^\d{4}$")


@dataclass(frozen=True)
class AnswerType:
    """One parsed `answer_types` entry.

    family: one of FAMILIES; generator: the model (or non-model source such as
    "wikipedia") that wrote an anachronistic distractor; year: the year of an
    `anachronistic_<year>` or `other_book_<year>` distractor; variants: modifiers such as
    "manual" (hand-edited), "metadataless" (written without the metadata frame),
    "distort1"/"distort2"; stylistic: the option is wrong (chiefly) by its style, i.e. it
    was written outside the period (every anachronistic_* family).
    """

    raw: str
    family: str
    generator: str | None = None
    year: int | None = None
    variants: tuple[str, ...] = field(default_factory=tuple)

    @property
    def stylistic(self) -> bool:
        return self.family.startswith("anachronistic")


def _looks_like_model(name: str) -> bool:
    """Model names carry a version or size (digits, '-', ':', '/', '.'); 'wikipedia',
    'google' or 'older' name non-model modern or older sources."""
    return bool(re.search(r"[\d\-:/.]", name))


def parse_answer_type(raw: str) -> AnswerType:
    """Parse an `answer_types` entry of the release into its distractor family.

    Rules (checked against every type in the authors' public sample):
    ``ground_truth``, ``manual``, ``same_book``, ``same_character`` are families of their
    own; ``negation`` and ``manual_negation`` are ``negation`` (the latter with variant
    "manual"); ``other_book_<year>`` is ``other_book``; ``anachronistic_<year>`` is
    ``anachronistic_year``; ``anachronistic_manual`` is ``anachronistic_manual``;
    ``[manual_]anachronistic_[metadataless_|distortN_]*<name>`` is ``anachronistic_model``
    when <name> looks like a model name (has a digit, '-', ':', '/' or '.'), otherwise
    ``anachronistic_source`` (e.g. wikipedia, google, older). Anything else is ``other``
    (counted in the build summary, never an error).
    """
    text = raw.strip()
    if text in ("ground_truth", "manual", "same_book", "same_character", "negation"):
        return AnswerType(raw, text)
    if text == "manual_negation":
        return AnswerType(raw, "negation", variants=("manual",))
    if text.startswith("other_book_") and _YEAR.match(text[len("other_book_"):]):
        return AnswerType(raw, "other_book", year=int(text[len("other_book_"):]))
    variants: list[str] = []
    if text.startswith("manual_anachronistic_"):
        variants.append("manual")
        text = text[len("manual_"):]
    if text.startswith("anachronistic_"):
        rest = text[len("anachronistic_"):]
        if _YEAR.match(rest):
            return AnswerType(raw, "anachronistic_year", year=int(rest), variants=tuple(variants))
        if rest == "manual":
            return AnswerType(raw, "anachronistic_manual", variants=tuple(variants))
        while match := _MODIFIERS.match(rest):
            variants.append(match.group(1))
            rest = rest[match.end():]
        if rest:
            family = "anachronistic_model" if _looks_like_model(rest) else "anachronistic_source"
            return AnswerType(raw, family, generator=rest, variants=tuple(variants))
    return AnswerType(raw, "other")
