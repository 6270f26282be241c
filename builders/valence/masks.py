"""Finding the one masked slot in a test sentence, whatever the mask is spelt like.

Test sets are written by hand and reused across models whose mask tokens differ
(`[MASK]` for BERT, `<mask>` for RoBERTa). The builder accepts the common spellings
in any letter case (`[MASK]`, `[mask]`, `<mask>`, `<MASK>`, `{mask}`, with or without
inner spaces) plus any extra pattern a user gives (`--mask-pattern`, a regular
expression such as `_{3,}` for blanks), checks that every sentence holds exactly one,
and stores the sentence with the canonical `[MASK]` and its left and right context.
The evaluator later replaces the canonical mask with the model's own mask token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CANONICAL_MASK = "[MASK]"
BUILTIN_MASK_PATTERN = r"\[\s*mask\s*\]|<\s*mask\s*>|\{\s*mask\s*\}"


class MaskError(ValueError):
    """A sentence without exactly one mask."""


@dataclass(frozen=True)
class MaskedSentence:
    text: str          # with the canonical [MASK]
    left: str          # everything before the mask
    right: str         # everything after the mask
    spelling: str      # the mask as written in the source

    def filled(self, word: str) -> str:
        return f"{self.left}{word}{self.right}"

    def with_mask(self, mask_token: str) -> str:
        return f"{self.left}{mask_token}{self.right}"


def mask_regex(extra_pattern: str | None = None) -> re.Pattern:
    pattern = BUILTIN_MASK_PATTERN
    if extra_pattern:
        try:
            re.compile(extra_pattern)
        except re.error as exc:
            raise MaskError(f"--mask-pattern {extra_pattern!r} is not a valid regular expression: {exc}") from exc
        pattern = f"{pattern}|(?:{extra_pattern})"
    return re.compile(pattern, re.IGNORECASE)


def split_mask(text: str, regex: re.Pattern | None = None) -> MaskedSentence:
    """Split a sentence at its single mask; MaskError when there are none or several."""
    regex = regex or mask_regex()
    found = list(regex.finditer(text))
    if not found:
        raise MaskError("no mask found (write the masked word as [MASK] or <mask>)")
    if len(found) > 1:
        spelled = ", ".join(repr(m.group(0)) for m in found)
        raise MaskError(f"{len(found)} masks found ({spelled}); a test sentence masks exactly one word")
    match = found[0]
    left, right = text[: match.start()], text[match.end():]
    return MaskedSentence(f"{left}{CANONICAL_MASK}{right}", left, right, match.group(0))
