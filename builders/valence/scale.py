"""The temporal valence scale T: a finite, strictly ordered set of values in [-1, 1].

The paper (section 3) uses the 5-point bipolar scale {-1, -0.5, 0, 0.5, 1}, where -1 is
the farthest period (Early Modern English) and 1 the closest to today (Modern English).
Researchers may define their own scale (e.g. a 3-point {-1, 0, 1} or a 7-point one):
any finite set of distinct values within [-1, 1], at least two of them. Sentence valences
rho and token valences sigma must lie on the scale; values are matched with a small
tolerance (0.5 written as 0.50 or 1/2 is fine) and stored as the scale's own value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DEFAULT_SCALE: tuple[float, ...] = (-1.0, -0.5, 0.0, 0.5, 1.0)
TOLERANCE = 1e-6


class ScaleError(ValueError):
    """A scale definition or a value that is not on the scale."""


def parse_number(text: str | float | int) -> float:
    """A float from user text: accepts the Unicode minus, a leading '+', and fractions like '-1/2'."""
    if isinstance(text, bool):
        raise ScaleError(f"expected a number, got {text!r}")
    if isinstance(text, int | float):
        value = float(text)
    else:
        raw = str(text).strip().replace("\u2212", "-").replace("\u2013", "-").replace(",", ".") if text is not None else ""
        if not raw:
            raise ScaleError("expected a number, got an empty value")
        try:
            if "/" in raw:
                num, den = raw.split("/", 1)
                value = float(num) / float(den)
            else:
                value = float(raw)
        except (ValueError, ZeroDivisionError) as exc:
            raise ScaleError(f"expected a number, got {text!r}") from exc
    if not math.isfinite(value):
        raise ScaleError(f"expected a finite number, got {text!r}")
    return value


@dataclass(frozen=True)
class Scale:
    values: tuple[float, ...] = DEFAULT_SCALE

    def __post_init__(self) -> None:
        values = tuple(float(v) for v in self.values)
        if len(values) < 2:
            raise ScaleError(f"a valence scale needs at least two values, got {list(values)}")
        for v in values:
            if not math.isfinite(v) or v < -1 - TOLERANCE or v > 1 + TOLERANCE:
                raise ScaleError(f"scale values must lie within [-1, 1], got {v}")
        if any(b - a <= TOLERANCE for a, b in zip(values, values[1:], strict=False)):
            raise ScaleError(f"scale values must be distinct and in increasing order, got {list(values)}")
        object.__setattr__(self, "values", values)

    @classmethod
    def parse(cls, text: str | Sequence | None) -> Scale:
        """From '-1,-0.5,0,0.5,1' (commas or spaces) or a sequence; None gives the default."""
        if text is None or (isinstance(text, str) and not text.strip()):
            return cls()
        if isinstance(text, str):
            parts = [p for p in text.replace(";", " ").replace(",", " ").split() if p]
        else:
            parts = list(text)
        return cls(tuple(parse_number(p) for p in parts))

    def on_scale(self, value: float) -> float | None:
        """The scale value equal to `value` (within tolerance), or None."""
        for v in self.values:
            if abs(v - value) <= TOLERANCE:
                return v
        return None

    def check(self, value: str | float, what: str = "value") -> float:
        """Parse and match a value; ScaleError naming the scale when it is not on it."""
        number = parse_number(value)
        matched = self.on_scale(number)
        if matched is None:
            raise ScaleError(f"{what} {value!r} is not on the scale {self.describe()}")
        return matched

    def snap(self, value: float) -> float:
        """The nearest scale value (ties go to the value nearer 0, i.e. the more neutral one)."""
        return min(self.values, key=lambda v: (abs(v - value), abs(v)))

    def describe(self) -> str:
        return "{" + ", ".join(_fmt(v) for v in self.values) + "}"

    def to_list(self) -> list[float]:
        return list(self.values)

    @property
    def low(self) -> float:
        return self.values[0]

    @property
    def high(self) -> float:
        return self.values[-1]


def _fmt(value: float) -> str:
    return f"{value:g}"


def scale_from_manifest(options: dict | None) -> Scale:
    """The scale a build was made with (histbench.json options), default when absent."""
    values: Iterable | None = (options or {}).get("scale")
    return Scale.parse(list(values) if values else None)
