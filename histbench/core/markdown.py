"""Numbers and Markdown tables as the build summaries, reports and the demo print them, and
the one escape for untrusted text that enters Markdown (`escape_markdown`)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence


def format_number(value, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.{digits}f}"
    return str(value)


def format_ci(value: float | None, low: float | None, high: float | None, digits: int = 3, percent: bool = False,
              *, method: str | None = None, n: int | None = None, constant: bool | None = None) -> str:
    """'0.512 [0.480, 0.544]' (or in percent), and '(Wilson, n=40)' after it when the method
    or n is given (issue 43: the method named beside each interval, n always shown).

    An interval of no width is never printed as "[0.0, 0.0]": it is said in words,
    "0.0 (every resample 0.0; percentile bootstrap, n=4)" when every resample was the
    same (`constant`), "0.0 (95% of resamples 0.0; ...)" otherwise."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    scale = 100.0 if percent else 1.0
    text = f"{value * scale:.{digits}f}"
    note = ", ".join(p for p in (method, None if n is None else f"n={n:,}") if p)
    if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
        shown_low, shown_high = f"{low * scale:.{digits}f}", f"{high * scale:.{digits}f}"
        if shown_low == shown_high:   # no width as shown ("[20.0, 20.0]" from 0.19999999999999998 and 0.2)
            which = "every resample" if constant else "95% of resamples"
            return f"{text} ({which} {shown_low}{'; ' + note if note else ''})"
        text += f" [{shown_low}, {shown_high}]"
    return f"{text} ({note})" if note else text


#: the characters the report renderer (Python-Markdown with its tables extension) reads as
#: syntax anywhere in a line and lets a backslash escape; '&' and '<' become entities instead
_MARKDOWN_SYNTAX = re.compile(r"([\\`*_\[\]|])")
#: what starts a block only at the start of a line (heading, quote, list item, numbered item)
_BLOCK_START = re.compile(r"^(\s*)([#>+\-=]|\d+[.)])")
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")
#: control characters no HTML page may hold (shown as U+FFFD, the replacement character)
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def escape_markdown(text: object) -> str:
    """Untrusted text (a run label, a run folder's name, a model's answer) made literal inside
    a line of Markdown: line breaks become spaces, '&' and '<' entities, and every character
    that is syntax anywhere in a line (backslash, backtick, '*', '_', brackets, '|') is
    backslash-escaped, as is a heading, quote or list marker at its start; so the text renders
    as itself and cannot start a heading, a list, a link, an image, emphasis, a table cell or
    raw HTML. Other characters stay as they are ("Qwen3-8B", "gpt-4o.mini"), so the Markdown
    copy of a report stays readable. Control characters show as U+FFFD."""
    text = CONTROL_CHARACTERS.sub("\ufffd", _LINE_BREAKS.sub(" ", str(text)))
    text = _MARKDOWN_SYNTAX.sub(r"\\\1", text.replace("&", "&amp;").replace("<", "&lt;"))
    return _BLOCK_START.sub(_escape_block_start, text, count=1)


def escape_cell(text: object) -> str:
    """Untrusted text made literal inside a Markdown table cell: `escape_markdown` without
    the rule for a block marker at the start, which a cell cannot open ("0.5 [0.1, 0.9]"
    stays as it is)."""
    text = CONTROL_CHARACTERS.sub("\ufffd", _LINE_BREAKS.sub(" ", str(text)))
    return _MARKDOWN_SYNTAX.sub(r"\\\1", text.replace("&", "&amp;").replace("<", "&lt;"))


def code_span(text: object) -> str:
    """Untrusted text as a Markdown code span: fenced with more backticks than any run of
    backticks inside it (so it cannot close the span early), line breaks as spaces, control
    characters as U+FFFD. For names shown as code in a sentence: a run folder, a file."""
    text = CONTROL_CHARACTERS.sub("\ufffd", _LINE_BREAKS.sub(" ", str(text)))
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _escape_block_start(match: re.Match) -> str:
    marker = match.group(2)
    # '=' (a setext underline) has no backslash escape in Python-Markdown: an entity instead
    return match.group(1) + ("&#61;" if marker == "=" else marker[:-1] + "\\" + marker[-1])


def _cell(value) -> str:
    """A table cell: a pipe not already escaped is escaped (an escaped one, `\\|`, stays: a
    pipe after an even number of backslashes would end the cell), line breaks become spaces."""
    text = format_number(value) if not isinstance(value, str) else value
    return re.sub(r"(?<!\\)((?:\\\\)*)\|", r"\1\\|", _LINE_BREAKS.sub(" ", text))


def markdown_table(rows: Iterable[Mapping | Sequence], columns: Sequence[str] | None = None, align: str | None = None) -> str:
    """A GitHub-style Markdown table from dicts (or sequences with `columns`).

    `align` is one character per column: 'l' or 'r' (default: left for the first
    column, right for the others).
    """
    rows = list(rows)
    if columns is None:
        columns = list(rows[0].keys()) if rows and isinstance(rows[0], Mapping) else []
    if not columns:
        return ""
    align = align or ("l" + "r" * (len(columns) - 1))
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(str(c) for c in columns) + " |", "| " + " | ".join(sep) + " |"]
    for row in rows:
        values = [row.get(c) for c in columns] if isinstance(row, Mapping) else list(row)
        lines.append("| " + " | ".join(_cell(v) for v in values) + " |")
    return "\n".join(lines)
