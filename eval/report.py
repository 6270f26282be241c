"""Report building blocks shared by every benchmark: sections, Markdown tables, HTML.

A report is a list of `ReportSection`s written as `index.md` and `index.html` (the
Markdown converted with the `markdown` package) plus `report.json` with every number.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from histbench.builders.core.schema import to_native

_HTML_HEAD = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.45; }}
table {{ border-collapse: collapse; margin: 1rem 0; font-size: 0.92rem; }}
th, td {{ border: 1px solid #ccc; padding: 0.25rem 0.55rem; text-align: left; }}
th {{ background: #f3f3f3; }}
td {{ font-variant-numeric: tabular-nums; }}
code, pre {{ background: #f6f6f6; }}
pre {{ padding: 0.6rem; overflow-x: auto; }}
img {{ max-width: 100%; }}
</style></head><body>
"""


@dataclass
class ReportSection:
    """One section of a report: Markdown body (no top heading), figures, numbers."""

    title: str
    markdown: str
    figures: list[Path] = field(default_factory=list)
    data: dict = field(default_factory=dict)


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


def format_ci(value: float | None, low: float | None, high: float | None, digits: int = 3, percent: bool = False) -> str:
    """'0.512 [0.480, 0.544]' (or in percent)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    scale = 100.0 if percent else 1.0
    text = f"{value * scale:.{digits}f}"
    if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
        text += f" [{low * scale:.{digits}f}, {high * scale:.{digits}f}]"
    return text


def _cell(value) -> str:
    text = format_number(value) if not isinstance(value, str) else value
    return text.replace("|", "\\|").replace("\n", " ")


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


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def markdown_to_html(markdown_text: str, title: str) -> str:
    import markdown

    body = markdown.markdown(markdown_text, extensions=["tables", "fenced_code", "toc"])
    return _HTML_HEAD.format(title=html.escape(title)) + body + "\n</body></html>\n"


def write_report(sections: list[ReportSection], out_dir: Path, title: str, intro: str = "") -> Path:
    """Write index.md, index.html and report.json into out_dir; returns index.md's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = [f"# {title}", ""]
    if intro:
        parts += [intro, ""]
    for section in sections:
        parts += [f"## {section.title}", "", section.markdown.strip(), ""]
    text = "\n".join(parts)
    (out_dir / "index.md").write_text(text, encoding="utf-8")
    (out_dir / "index.html").write_text(markdown_to_html(text, title), encoding="utf-8")
    data = {section.title: to_native(section.data) for section in sections}
    (out_dir / "report.json").write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return out_dir / "index.md"
