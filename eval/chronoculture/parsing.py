"""Turning a model's answer into a distribution over the question's options (B.1).

The prompt asks for a JSON object mapping each option to a percentage. The parser:

1. finds the first JSON object in the text (`histbench.core.parsing.extract_json_object`:
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

Decisions where B.1 is silent (each has a test):

- **Decimal commas.** The values are percentages, which never need a thousands
  separator, so a comma between digits is a decimal comma: ``"40,5"`` is 40.5 (a quoted
  JSON value), and so is an unquoted ``40,5`` (which makes the object invalid JSON, so
  the regular expression reads it). With both separators the last one is the decimal
  point (``"1.234,5"`` and ``"1,234.5"`` are 1234.5).
- **Scale points.** On a numeric scale (every option label starts with its own number:
  ``1 (completely dissatisfied)``, ``2``, ... ``10 (completely satisfied)``) a key that is
  only the number (``"1"``, ``"10"``), or the number followed by the label's words
  (``"1 = completely dissatisfied"``), names that option. Labels that do not start with a
  number (``Agree``) never match a bare number: ``"1"`` could mean a position or a code.
- **Modal answers (A.5)** may be a JSON ``{"answer": ...}``, a bare letter or label, a
  letter with its label (``B. Agree``), or a sentence (``The answer is B.``); an explicit
  "answer/option/choice is X" decides, otherwise exactly one option must be named.
  The prompt asks for ``{"answer": "<letter>"}``; a letter in either case is that option
  where the answer format puts it (``{"answer": "b"}``, ``Answer: b``, ``b)``, a bare
  ``b``), but inside prose only an upper-case letter names an option ("a" is the article:
  ``The answer is a good one`` names none).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from histbench.core.parsing import extract_json_object

_NUMBER = r"([-+\u2212]?\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?)"
_SCALE_POINT = re.compile(r"^\s*([-+]?\d+)(?![\d.,])\s*(.*)$", re.DOTALL)
_KEY_SEPARATORS = " \t:=-\u2013\u2014()[].,"


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


def scale_points(options: list[str]) -> dict[str, int] | None:
    """{number: option index} when every label starts with its own number (a numeric scale), else None."""
    points: dict[str, int] = {}
    for i, option in enumerate(options):
        match = _SCALE_POINT.match(str(option))
        if match is None:
            return None
        number = str(int(match.group(1)))
        if number in points:
            return None
        points[number] = i
    return points


def _option_of_key(key: str, labels: dict[str, int], points: dict[str, int] | None, options: list[str]) -> int | None:
    """The option a JSON key names: its label, or on a numeric scale its number (alone or with the label's words)."""
    label = normalise_label(key)
    if label in labels:
        return labels[label]
    if points is None:
        return None
    match = _SCALE_POINT.match(label)
    if match is None or str(int(match.group(1))) not in points:
        return None
    i = points[str(int(match.group(1)))]
    rest = match.group(2).strip(_KEY_SEPARATORS).casefold()
    words = _SCALE_POINT.match(normalise_label(options[i])).group(2).strip(_KEY_SEPARATORS).casefold()
    return i if rest in ("", words) else None


def _values_from_object(obj: dict, options: list[str]) -> tuple[list | None, str | None]:
    """One raw value per option from a JSON object, or an error."""
    labels = {normalise_label(o): i for i, o in enumerate(options)}
    points = scale_points(options)

    def names_options(keys) -> bool:
        return any(_option_of_key(str(k), labels, points, options) is not None for k in keys)

    if len(obj) == 1:
        (inner,) = obj.values()
        if isinstance(inner, dict) and not names_options(obj) and names_options(inner):
            obj = inner
    by_option: dict[int, object] = {}
    for key, value in obj.items():
        i = _option_of_key(str(key), labels, points, options)
        if i is None:
            continue
        if i in by_option:
            return None, f"option {options[i]!r} is given twice"
        by_option[i] = value
    return _in_option_order({normalise_label(options[i]): v for i, v in by_option.items()}, options)


def _regex_values(text: str, options: list[str]) -> tuple[list | None, str | None]:
    """Each option label followed by a number, anywhere in the text (longest label first).

    On a numeric scale, an option still missing may also be written as its bare number
    followed by ':' or '=' (``"2": 7``, ``2 = 7%``).
    """
    labels = sorted({o for o in options}, key=len, reverse=True)
    alternation = "|".join(re.escape(label.strip()) for label in labels)
    pattern = re.compile(
        rf"(?<![\w])({alternation})(?![\w])[\"'`*]*\s*(?:[:=\-\u2013]|is|was)?\s*[\"'`*]*\s*{_NUMBER}\s*%?",
        re.IGNORECASE,
    )
    found: dict[str, str] = {}
    for match in pattern.finditer(text):
        label = normalise_label(match.group(1))
        found.setdefault(label, match.group(2))
    points = scale_points(options)
    if points is not None and len(found) < len(options):
        bare = re.compile(rf"(?<![\w.,])[\"'`*]*(\d+)[\"'`*]*\s*[:=]\s*[\"'`*]*\s*{_NUMBER}\s*%?")
        for match in bare.finditer(text):
            i = points.get(str(int(match.group(1))))
            if i is not None:
                found.setdefault(normalise_label(options[i]), match.group(2))
    return _in_option_order(found, options)


def percent_number(value) -> float | None:
    """A percentage from a JSON value or a string ('45%', ' 12.5 ', '40,5'); None if it is not a number.

    A comma is a decimal comma (see the module docstring); with both separators the last
    one is the decimal point and the other groups thousands.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    text = value.strip().replace("\u2212", "-").rstrip("%").strip()
    if "," in text and "." in text:
        decimal = "," if text.rfind(",") > text.rfind(".") else "."
        text = text.replace("." if decimal == "," else ",", "").replace(",", ".")
    elif text.count(",") == 1:
        text = text.replace(",", ".")
    elif text.count(",") > 1:
        text = text.replace(",", "")
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[-+]?(inf|infinity|nan)", text, re.IGNORECASE):
        return None
    return float(text)


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
        number = percent_number(value)
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


_ANSWER_PHRASE = r"\b(?:answer|option|choice|letter)\b(?:\s+(?:is|would be|was|will be))?\s*[:\-=]?\s*"
_ANSWER_END = re.compile(r"[\"'`*)\]]*\s*(?:$|[.,;:!?\n}])")


def _ends_answer(text: str, end: int) -> bool:
    """Whether a key found at text[:end] ends the answer (a lower-case letter names an option only
    there: "Answer: b" or "the answer is b." do, "the answer is a good one" does not)."""
    return _ANSWER_END.match(text, end) is not None


def parse_choice(text: str | None, options: list[str], keys: list[str] | None = None) -> ParsedChoice:
    """The single option chosen (A.5): a JSON {"answer": ...}, a bare label or option key,
    a key with its label ("B. Agree"), or a sentence ("The answer is B.").

    `keys` are the short codes the prompt listed for the options (e.g. "A".."D"), if
    any. In order: a JSON value or the whole text that is a label, a key, or a key with
    its own label; an explicit "answer/option/choice is X" (X a key or a label); an
    answer that starts with a key ("B) ...", "**B**"); and last a label mentioned in
    prose, accepted only when exactly one option is named (an answer that names two
    different options is invalid). A key matches in either case where the answer format
    puts it: the whole answer or JSON value ("b"), after "answer/option/choice" when
    nothing but punctuation follows ("Answer: b"), or at the start with its delimiter
    ("b) ..."); in prose only as written (upper case), so the article "a" is never read
    as option A.
    """
    if not text or not text.strip():
        return ParsedChoice(None, "none", "empty output")
    wanted = {normalise_label(o): i for i, o in enumerate(options)}
    codes = {str(k).strip(): i for i, k in enumerate(keys or [])}
    folded = {k.casefold(): i for k, i in codes.items()}
    if len(folded) < len(codes):  # keys that differ only in case ("a" and "A"): no case variants
        folded = dict(codes)
    code_alternation = "|".join(re.escape(k) for k in sorted(codes, key=len, reverse=True))
    label_alternation = "|".join(re.escape(o.strip()) for o in sorted(options, key=len, reverse=True))

    def whole(candidate: str) -> int | None:
        """The option a short answer names entirely: a label, a key, or a key with its own label."""
        label = normalise_label(candidate)
        label = re.sub(r"^(answer|option|choice)\s*[:\-]?\s*", "", label).strip()
        if label in wanted:
            return wanted[label]
        raw = candidate.strip().strip("\"'`*").strip()
        raw = re.sub(r"^(?i:answer|option|choice)\s*[:\-]?\s*", "", raw).strip()
        bare = raw.strip("()[]. *")
        if bare.casefold() in folded:  # the whole answer is a key, in either case ("b", "(B)")
            return folded[bare.casefold()]
        if codes:
            match = re.fullmatch(rf"[(\[]?({code_alternation})[)\].:]\s*(.+)", raw, re.DOTALL | re.IGNORECASE)
            if match and match.group(1).casefold() in folded:
                index = folded[match.group(1).casefold()]
                if normalise_label(match.group(2)) == normalise_label(options[index]):
                    return index
        return None

    extracted = extract_json_object(text)
    candidates: list[tuple[str, str]] = []
    if extracted.ok:
        for value in extracted.value.values():
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                candidates.append((str(value), extracted.route))
    candidates.append((text, "text"))
    for candidate, route in candidates:
        index = whole(candidate)
        if index is not None:
            return ParsedChoice(index, route)
    # "The answer is B." / "My choice: Strongly agree"
    targets = "|".join(x for x in (code_alternation, label_alternation) if x)
    phrase = re.compile(rf"{_ANSWER_PHRASE}[\"'`*(\[]*({targets})(?![\w])(?:\s*(?:or|and|/|,)\s*({targets})(?![\w]))?",
                        re.IGNORECASE)
    named = set()
    for match in phrase.finditer(text):
        for number, found in ((1, match.group(1)), (2, match.group(2))):
            if found is None:
                continue
            if found in codes:
                named.add(codes[found])
            elif normalise_label(found) in wanted:
                named.add(wanted[normalise_label(found)])
            elif found.casefold() in folded and _ends_answer(text, match.end(number)):
                named.add(folded[found.casefold()])  # "Answer: b", "the answer is b."
    if len(named) == 1:
        return ParsedChoice(named.pop(), "sentence")
    if len(named) > 1:
        return ParsedChoice(None, "sentence", "the answer names more than one option")
    # an answer that starts with a key: "B) Agree, because ...", "**C**"
    if codes:
        match = re.match(rf"\s*[*\"'`]*[(\[]?({code_alternation})(?:[)\].:*\"'`]|\s*$)", text, re.IGNORECASE)
        if match and match.group(1).casefold() in folded:
            index = folded[match.group(1).casefold()]
            after = re.match(rf"[\s*\"'`]*({label_alternation})(?![\w])", text[match.end():], re.IGNORECASE)
            if after and wanted[normalise_label(after.group(1))] != index:
                return ParsedChoice(None, "sentence", "the answer names more than one option")
            return ParsedChoice(index, "sentence")
    # A label mentioned inside prose: accept only when exactly one option is named
    # (longest labels first, so "Strongly agree" is not also read as "Agree").
    pattern = re.compile(rf"(?<![\w])({label_alternation})(?![\w])", re.IGNORECASE)
    hits = {wanted[normalise_label(match.group(1))] for match in pattern.finditer(text)}
    if len(hits) == 1:
        return ParsedChoice(hits.pop(), "regex")
    if len(hits) > 1:
        return ParsedChoice(None, "regex", "the answer names more than one option")
    return ParsedChoice(None, "none", "no option named in the answer")
