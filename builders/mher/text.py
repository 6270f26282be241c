"""Text rules shared by the MHER builder, its audit and its baselines.

- `normalise`: Unicode NFKC followed by casefold, whitespace collapsed (for matching cue
  phrases and registered names inside texts).
- `surface_key`: `normalise` plus the script-aware folds below; two surfaces with the same
  key are "identical surfaces" (the benchmark's normalisation of section 8.1: no rule
  based on the written name alone can tell them apart).
- `fold`: `surface_key`, then Unidecode (a reproducible ASCII fold across scripts, not a
  historical transliteration), with whitespace collapsed.
- `surface_similarity`: rapidfuzz `fuzz.ratio` (normalised Indel similarity, 0-100) of the
  folded forms; a different-person pair at or above NEAR_SURFACE_THRESHOLD is near-surface.
- `CueList`: the documented multilingual list of equivalence-stating phrases
  (sources/mher/equivalence_cues.yaml).
- `find_names`: where registered names of a person occur in a text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from histbench.core.errors import SourceError

# 0-100 on rapidfuzz's fuzz.ratio of the Unidecode-folded forms. 85 keeps spelling
# variants of one name ("Oghul Qaimish" / "Oghul-Qaimish": 92; two Persian spellings of
# that name: 86) and leaves out forms that only share a name element ("Arghun" /
# "Arghun Aqa": 75; "Jochi" / "Jochi Qasar": 62; two Persian "... khan" titles: 80).
NEAR_SURFACE_THRESHOLD = 85.0

_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """NFKC + casefold, whitespace collapsed."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _chars(*spans: tuple[int, int] | int) -> list[str]:
    out = []
    for span in spans:
        first, last = (span, span) if isinstance(span, int) else span
        out.extend(chr(c) for c in range(first, last + 1))
    return out


# What NFKC + casefold leaves apart although the written name is the same (section 8.1
# calls two such names "exactly identical after the benchmark's normalization"):
#
# - characters that are invisible or purely typographic: joiners and zero-width spaces,
#   bidirectional marks, the soft hyphen, the combining grapheme joiner, the Arabic tatweel
#   (kashida), the Mongolian free variation selectors FVS1-4, the vowel separator, the
#   nirugu stem extender and the todo soft hyphen, the Syriac abbreviation mark;
# - ZWNJ, the Persian "half space" between the parts of a compound, written by some
#   scribes and editors as a space: it becomes a space;
# - Arabic-script letters that Arabic, Persian and Urdu orthographies encode differently:
#   Farsi yeh and alef maksura -> yeh; keheh and swash kaf -> kaf; heh goal and ae -> heh;
# - optional vowel signs of the abjads, which editions print or omit for the same name:
#   Arabic harakat, tanwin, shadda, sukun, superscript alef and Quranic annotation signs;
#   Syriac vowel points; Hebrew points;
# - decimal digits of any script -> ASCII digits (Persian and Arabic-Indic digits differ).
#
# Letters that look alike but are different letters (Latin o / ö, Cyrillic е / ё, и / й,
# Arabic alef / alef with madda or hamza) and Chinese variant characters (脫 / 脱) stay
# apart: there the written names differ.
_REMOVED = _chars(
    0x00AD, 0x034F, 0x061C, 0x0640, (0x200B, 0x200D), (0x200E, 0x200F), (0x202A, 0x202E), 0x2060,
    (0x2066, 0x2069), 0xFEFF, 0x1806, 0x180A, (0x180B, 0x180F), 0x070F,
    (0x064B, 0x065F), 0x0670, (0x06D6, 0x06DC), (0x06DF, 0x06E4), (0x06E7, 0x06E8), (0x06EA, 0x06ED),
    (0x0730, 0x074A), (0x0591, 0x05BD), 0x05BF, (0x05C1, 0x05C2), (0x05C4, 0x05C5), 0x05C7,
)
_REMOVED.remove(chr(0x200C))  # ZWNJ is a space, below
_LETTER_VARIANTS = {
    "\u06cc": "\u064a", "\u0649": "\u064a",   # Farsi yeh, alef maksura -> yeh
    "\u06a9": "\u0643", "\u06aa": "\u0643",   # keheh, swash kaf -> kaf
    "\u06c1": "\u0647", "\u06d5": "\u0647",   # heh goal, ae -> heh
    "\u200c": " ",                              # ZWNJ -> space
}
_SURFACE_TABLE = str.maketrans({**{c: None for c in _REMOVED}, **_LETTER_VARIANTS})


def _ascii_digits(text: str) -> str:
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() and not c.isascii() else c for c in text)


@lru_cache(maxsize=65536)
def surface_key(text: str) -> str:
    """The benchmark's surface-identity key: NFKC, casefold, then the script-aware folds
    listed above, whitespace collapsed. Equal keys = identical surfaces."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_SURFACE_TABLE)
    return _SPACE.sub(" ", _ascii_digits(text)).strip()


@lru_cache(maxsize=65536)
def fold(text: str) -> str:
    """`surface_key` then Unidecode to ASCII, lowercased, whitespace collapsed."""
    from unidecode import unidecode

    return _SPACE.sub(" ", unidecode(surface_key(text)).lower()).strip()


def surface_similarity(a: str, b: str) -> float:
    """rapidfuzz fuzz.ratio (0-100) of the folded surfaces."""
    from rapidfuzz import fuzz

    return float(fuzz.ratio(fold(a), fold(b)))


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return (
        0x2E80 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or 0x20000 <= code <= 0x3FFFF
        or 0x3040 <= code <= 0x30FF or 0xAC00 <= code <= 0xD7AF
    )


@lru_cache(maxsize=65536)
def phrase_pattern(phrase: str, allow_prefix: bool = True) -> re.Pattern:
    """A regex for a normalised phrase: word boundaries at alphabetic ends (not for CJK,
    which has no spaces); with `allow_prefix`, a trailing '*' makes it a prefix (stem) match."""
    prefix = allow_prefix and phrase.endswith("*")
    body = normalise(phrase[:-1] if prefix else phrase)
    if not body:
        raise ValueError("empty phrase")
    escaped = re.escape(body).replace(r"\ ", r"\s+")
    left = r"(?<!\w)" if body[0].isalnum() and not _is_cjk(body[0]) else ""
    right = r"(?!\w)" if not prefix and body[-1].isalnum() and not _is_cjk(body[-1]) else ""
    return re.compile(left + escaped + right)


@dataclass(frozen=True)
class CueHit:
    language: str
    phrase: str
    start: int
    end: int


class CueList:
    """Equivalence-stating phrases per language; `find` checks a text against all of them."""

    def __init__(self, phrases: dict[str, list[str]], path: str = "equivalence cues",
                 aliases: dict[str, str] | None = None):
        self.path = path
        self.phrases = {lang: list(items) for lang, items in phrases.items()}
        self.aliases = {k: v for k, v in (aliases or {}).items() if v in self.phrases}
        self._compiled: list[tuple[str, str, re.Pattern]] = []
        for lang, items in self.phrases.items():
            for phrase in items:
                try:
                    self._compiled.append((lang, phrase, phrase_pattern(str(phrase))))
                except (ValueError, re.error) as exc:
                    raise SourceError(f"bad cue phrase {phrase!r} ({exc})", file=path, field=lang) from exc

    @property
    def languages(self) -> set[str]:
        """Language codes with a list, directly or through `aliases` (e.g. lzh -> zh)."""
        return set(self.phrases) | set(self.aliases)

    @classmethod
    def load(cls, path: Path, extra: Path | None = None) -> CueList:
        phrases, aliases = cls._read(path), cls._read_aliases(path)
        if extra is not None:
            for lang, items in cls._read(extra).items():
                phrases.setdefault(lang, []).extend(items)
            aliases.update(cls._read_aliases(extra))
        return cls(phrases, str(path) if extra is None else f"{path} + {extra}", aliases)

    @staticmethod
    def _read_aliases(path: Path) -> dict[str, str]:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        aliases = data.get("aliases") or {}
        if not isinstance(aliases, dict):
            raise SourceError("'aliases' must map a language code to a code with a list", file=path)
        return {str(k).lower(): str(v).lower() for k, v in aliases.items()}

    @staticmethod
    def _read(path: Path) -> dict[str, list[str]]:
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise SourceError(f"cannot read the equivalence cue list: {exc}", file=path) from exc
        languages = data.get("languages") if isinstance(data, dict) else None
        if not isinstance(languages, dict) or not languages:
            raise SourceError("the cue list needs a 'languages' mapping: code -> list of phrases", file=path)
        out: dict[str, list[str]] = {}
        for lang, items in languages.items():
            if not isinstance(items, list) or not all(isinstance(i, str) and i.strip() for i in items):
                raise SourceError("expected a list of non-empty phrases", file=path, field=str(lang))
            out[str(lang).lower()] = [i.strip() for i in items]
        return out

    def find(self, text: str) -> list[CueHit]:
        norm = normalise(text)
        hits = []
        for lang, phrase, pattern in self._compiled:
            match = pattern.search(norm)
            if match:
                hits.append(CueHit(lang, phrase, match.start(), match.end()))
        return hits


def find_names(text: str, names, exclude=()) -> list[str]:
    """Registered names (other than those in `exclude`) that occur in `text`.

    An occurrence that lies inside an occurrence of an excluded name (the side's own
    surface form) does not count: "Batu" inside the own form "Batu Khan" is the own form,
    while "Great Bolad" around the own form "Bolad" is another name. Names equal to an
    excluded name after normalisation are skipped.
    """
    norm = normalise(text)
    excluded = {normalise(e) for e in exclude if e}
    own_spans = [m.span() for own in excluded if own
                 for m in phrase_pattern(own, allow_prefix=False).finditer(norm)]
    found = []
    for name in sorted({normalise(n) for n in names if n}):
        if not name or name in excluded:
            continue
        for match in phrase_pattern(name, allow_prefix=False).finditer(norm):
            start, end = match.span()
            if not any(s <= start and end <= e for s, e in own_spans):
                found.append(name)
                break
    return found


def tokens(text: str) -> list[str]:
    """Word tokens of the normalised text (Unicode \\w runs; CJK characters one by one)."""
    out = []
    for token in re.findall(r"\w+", normalise(text)):
        if any(_is_cjk(c) for c in token):
            out.extend(token)
        else:
            out.append(token)
    return out
