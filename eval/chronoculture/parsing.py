"""Turning a model's answer into a distribution over the question's options (B.1).

The prompt asks for a JSON object mapping each option to a percentage. The parser:

1. finds the first JSON object in the text (`histbench.eval.parsing.extract_json_object`:
   plain, fenced, embedded in prose, or lightly repaired), and reads one value per option;
   an object whose only value is another object (``{"distribution": {...}}``) is unwrapped;
2. only when no JSON object parses (as in B.1), falls back to a regular expression that
   finds each option label followed by a number (``Agree: 40%``, ``"Agree" = 40``); a
   JSON object that parses but lacks an option is invalid, not re-read by the fallback;
3. converts values to floats (``"40%"`` and ``"40"`` are numbers), clips negatives to
   zero and divides by the total, whatever the total was;
4. declares the output invalid when an option is missing, a value is not a number or
   is not finite, or the total after clipping is not positive and finite.

Option labels match case-insensitively, ignoring surrounding spaces, quotes and a final
period; keys that match no option are ignored. An invalid output keeps its reason, and
the evaluator counts and excludes it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from histbench.eval.parsing import extract_json_object, parse_number

_NUMBER = r"([-+\u2212]?\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?)"


@dataclass(frozen=True)
class ParsedDistribution:
    """A normalised distribution (one probability per option, in option order) or an error."""

    probabilities: tuple[float, ...] | None
    route: str                  # "json", "fenced", "embedded", "repaired", "regex" or "none"
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.probabilities is not None

    def to_json(self) -> dict:
        return {"probabilities": list(self.probabilities) if self.probabilities else None,
                "route": self.route, "error": self.error}


def normalise_label(text: str) -> str:
    text = re.sub(r"\s+", " ", str(text)).strip().strip("\"'`*").strip()
    return text.rstrip(".").strip().casefold()


def _values_from_object(obj: dict, options: list[str]) -> tuple[list | None, str | None]:
    """One raw value per option from a JSON object, or an error."""
    if len(obj) == 1:
        (inner,) = obj.values()
        if isinstance(inner, dict):
            wanted = {normalise_label(o) for o in options}
            if not wanted & {normalise_label(k) for k in obj} and wanted & {normalise_label(k) for k in inner}:
                obj = inner
    by_label: dict[str, object] = {}
    for key, value in obj.items():
        label = normalise_label(key)
        if label in by_label:
            return None, f"option {key!r} is given twice"
        by_label[label] = value
    return _in_option_order(by_label, options)


def _regex_values(text: str, options: list[str]) -> tuple[list | None, str | None]:
    """Each option label followed by a number, anywhere in the text (longest label first)."""
    labels = sorted({o for o in options}, key=len, reverse=True)
    alternation = "|".join(re.escape(label.strip()) for label in labels)
    pattern = re.compile(
        rf"(?<![\w])({alternation})(?![\w])[\"'`*]*\s*(?:[:=\-\u2013]|is|was)?\s*[\"'`*]*\s*{_NUMBER}\s*%?",
        re.IGNORECASE,
    )
    found: dict[str, str] = {}
    for match in pattern.finditer(text):
        label = normalise_label(match.group(1))
        found.setdefault(label, match.group(2).replace("\u2212", "-").replace(",", "."))
    return _in_option_order(found, options)


def _in_option_order(by_label: dict, options: list[str]) -> tuple[list | None, str | None]:
    """The values found per normalised label, in the options' order; the first missing option is the error."""
    values = []
    for option in options:
        label = normalise_label(option)
        if label not in by_label:
            return None, f"option {option!r} is missing"
        values.append(by_label[label])
    return values, None


def normalise_values(values: list, options: list[str]) -> tuple[tuple[float, ...] | None, str | None]:
    """Numbers, negatives clipped to zero, divided by their total (B.1), or an error."""
    numbers = []
    for option, value in zip(options, values, strict=True):
        number = parse_number(value)
        if number is None:
            return None, f"value for option {option!r} is not a number: {value!r}"
        if not math.isfinite(number):
            return None, f"value for option {option!r} is not finite: {value!r}"
        numbers.append(max(number, 0.0))
    total = math.fsum(numbers)
    if not (math.isfinite(total) and total > 0):
        return None, f"the values add up to {total!r} after clipping negatives (need a positive total)"
    return tuple(n / total for n in numbers), None


def parse_distribution(text: str | None, options: list[str]) -> ParsedDistribution:
    """The distribution a model gave for `options` (see the module docstring)."""
    if not options:
        raise ValueError("a question needs options")
    if not text or not text.strip():
        return ParsedDistribution(None, "none", "empty output")
    extracted = extract_json_object(text)
    if extracted.ok:
        values, error = _values_from_object(extracted.value, options)
        if values is None:
            return ParsedDistribution(None, extracted.route, error)
        probabilities, error = normalise_values(values, options)
        return ParsedDistribution(probabilities, extracted.route, error)
    values, error = _regex_values(text, options)
    if values is None:
        return ParsedDistribution(None, "regex", f"{extracted.error}; regex fallback: {error}")
    probabilities, error = normalise_values(values, options)
    return ParsedDistribution(probabilities, "regex", error)


@dataclass(frozen=True)
class ParsedChoice:
    """The option index a model chose in the modal-answer format (A.5), or an error."""

    index: int | None
    route: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.index is not None

    def to_json(self) -> dict:
        return {"index": self.index, "route": self.route, "error": self.error}


def parse_choice(text: str | None, options: list[str], keys: list[str] | None = None) -> ParsedChoice:
    """The single option chosen: a JSON {"answer": ...}, a bare label, or an option key.

    `keys` are the short codes the prompt listed for the options (e.g. "1".."4" or
    "A".."D"), if any. Exactly one option must be named; an answer that names two
    different options is invalid.
    """
    if not text or not text.strip():
        return ParsedChoice(None, "none", "empty output")
    wanted = {normalise_label(o): i for i, o in enumerate(options)}
    codes = {normalise_label(k): i for i, k in enumerate(keys or [])}
    extracted = extract_json_object(text)
    candidates: list[tuple[str, str]] = []
    if extracted.ok:
        for value in extracted.value.values():
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                candidates.append((str(value), extracted.route))
    candidates.append((text, "text"))
    for candidate, route in candidates:
        label = normalise_label(candidate)
        label = re.sub(r"^(answer|option|choice)\s*[:\-]?\s*", "", label).strip()
        if label in wanted:
            return ParsedChoice(wanted[label], route)
        stripped = label.strip("()[]. ")
        if stripped in codes:
            return ParsedChoice(codes[stripped], route)
    # A label mentioned inside prose: accept only when exactly one option is named
    # (longest labels first, so "Strongly agree" is not also read as "Agree").
    labels = sorted(options, key=len, reverse=True)
    pattern = re.compile(rf"(?<![\w])({'|'.join(re.escape(o.strip()) for o in labels)})(?![\w])", re.IGNORECASE)
    hits = {wanted[normalise_label(match.group(1))] for match in pattern.finditer(text)}
    if len(hits) == 1:
        return ParsedChoice(hits.pop(), "regex")
    if len(hits) > 1:
        return ParsedChoice(None, "regex", "the answer names more than one option")
    return ParsedChoice(None, "none", "no option named in the answer")
