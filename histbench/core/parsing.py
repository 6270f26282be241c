"""Pulling structured answers out of model text.

Models wrap JSON in Markdown fences, add prose before or after it, use single quotes or
trailing commas. `extract_json_object` finds the first JSON object in the text that
parses (strictly first, then after light repairs) and says which route it took, so
evaluators can count how answers were recovered. It never guesses values: anything it
cannot parse is reported as a failure for the evaluator's own fallback.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


@dataclass(frozen=True)
class Extracted:
    value: Any | None
    route: str          # "json", "fenced", "embedded", "repaired" or "none"
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.value is not None


def _balanced_objects(text: str):
    """Yield every substring that starts at '{' and ends at its matching '}' (string-aware)."""
    for start, char in enumerate(text):
        if char != "{":
            continue
        depth, in_string, escaped = 0, False, False
        for end in range(start, len(text)):
            c = text[end]
            if in_string:
                if escaped:
                    escaped = False
                elif c == "\\":
                    escaped = True
                elif c == '"':
                    in_string = False
            elif c == '"':
                in_string = True
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    yield text[start:end + 1]
                    break


def _repair(candidate: str) -> str:
    repaired = _TRAILING_COMMA.sub(r"\1", candidate)
    if '"' not in repaired and "'" in repaired:
        repaired = repaired.replace("'", '"')
    return repaired


def _loads_object(candidate: str):
    try:
        value = json.loads(candidate)
    except (json.JSONDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def extract_json_object(text: str | None) -> Extracted:
    """The first JSON object in `text` (see module docstring)."""
    if not text or not text.strip():
        return Extracted(None, "none", "empty output")
    stripped = text.strip()
    value = _loads_object(stripped)
    if value is not None:
        return Extracted(value, "json")
    for block in _FENCE.findall(stripped):
        value = _loads_object(block.strip())
        if value is not None:
            return Extracted(value, "fenced")
    candidates = list(_balanced_objects(stripped))
    for candidate in candidates:
        value = _loads_object(candidate)
        if value is not None:
            return Extracted(value, "embedded")
    for candidate in candidates:
        value = _loads_object(_repair(candidate))
        if value is not None:
            return Extracted(value, "repaired")
    return Extracted(None, "none", "no JSON object found" if not candidates else "JSON object does not parse")


def parse_number(value: Any) -> float | None:
    """A number from a JSON value or a string such as '45%', ' 12.5 ' or '1,234'; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip().rstrip("%").strip().replace(",", "")
        try:
            return float(text)
        except ValueError:
            return None
    return None
