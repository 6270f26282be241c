""""Did you mean" for a misspelt name (a benchmark, an option, a model kind), by difflib's
closeness ratio."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: how close (difflib's ratio) a known name must be to be suggested
CUTOFF = 0.6


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name closest to `word`, or None when none is close enough."""
    matches = difflib.get_close_matches(str(word), [str(k) for k in known], n=1, cutoff=CUTOFF)
    return matches[0] if matches else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """' (did you mean 'chronologic'?)' for a close known name, else ''."""
    match = closest(word, known)
    return f" (did you mean {match!r}?)" if match is not None else ""
