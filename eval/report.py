"""Report building blocks shared by every benchmark: sections, Markdown tables, HTML.

A report is a list of `ReportSection`s written as `index.md` and `index.html` (the
Markdown converted with the `markdown` package) plus `report.json` with every number.

`histbench report <benchmark>` writes a report folder atomically (`run_report`): the
benchmark's reporter writes figures, tables and index into a hidden temporary sibling of
`--out`, which replaces the folder only when the reporter finished; a failed report leaves
the earlier one exactly as it was. An `--out` folder that holds something other than a
report (no index.md or report.json) is never replaced. Every file written by
`write_report` is scrubbed of the credentials the process read.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from histbench.builders.core.atomic import atomic_directory, write_text_atomic
from histbench.builders.core.errors import UsageError
from histbench.builders.core.schema import to_native

if TYPE_CHECKING:
    import argparse

    from histbench.eval.plugin import BenchmarkEvaluator

#: the report folder being staged: (temporary folder, final folder)
_STAGING: ContextVar[tuple[Path, Path] | None] = ContextVar("histbench_report_staging", default=None)
REPORT_MARKERS = ("index.md", "report.json")

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
    """Write index.md, index.html and report.json into out_dir; returns index.md's path
    (where it will be once a staged report folder is in place, see `run_report`)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = [f"# {title}", ""]
    if intro:
        parts += [intro, ""]
    for section in sections:
        parts += [f"## {section.title}", "", section.markdown.strip(), ""]
    text = "\n".join(parts)
    data = {section.title: to_native(section.data) for section in sections}
    rendered = {
        "index.md": text,
        "index.html": markdown_to_html(text, title),
        "report.json": json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n",
    }
    for name, content in rendered.items():
        write_text_atomic(out_dir / name, content)
    return final_path(out_dir / "index.md")


def final_path(path: Path) -> Path:
    """Where a path inside the report folder being staged will be once it is in place."""
    staging = _STAGING.get()
    path = Path(path)
    if staging is None:
        return path
    tmp, final = staging
    try:
        return final / path.relative_to(tmp)
    except ValueError:
        return path


def check_report_folder(out: Path) -> None:
    """A clear error when `out` exists and is not a report folder (it would be replaced)."""
    out = Path(out)
    if not out.exists():
        return
    if not out.is_dir():
        raise UsageError("the report folder is a file", file=out, field="--out")
    if any(out.iterdir()) and not any((out / name).is_file() for name in REPORT_MARKERS):
        raise UsageError(
            "this folder exists and holds no report (no index.md or report.json); a report replaces its whole "
            "folder, so choose a new or empty --out folder", file=out, field="--out",
        )


@contextmanager
def staged_report(out: Path) -> Iterator[Path]:
    """A temporary folder to write a whole report into; it replaces `out` only when the
    block succeeds (an error leaves `out` as it was)."""
    out = Path(out).expanduser()
    check_report_folder(out)
    with atomic_directory(out) as tmp:
        token = _STAGING.set((tmp, out))
        try:
            yield tmp
        finally:
            _STAGING.reset(token)
        _retarget(tmp, out)


TEXT_SUFFIXES = frozenset({".md", ".html", ".json", ".jsonl", ".csv", ".tsv", ".txt", ".yaml", ".yml"})


def _retarget(tmp: Path, final: Path) -> None:
    """Paths of the staging folder that a reporter wrote into its text files (e.g. "the
    ledger is in OUT/ledger.csv") become the final folder's paths."""
    forms = sorted({(str(tmp), str(final)), (str(tmp.resolve()), str(final.resolve()))}, key=lambda f: -len(f[0]))
    for path in tmp.rglob("*"):
        if path.suffix.lower() not in TEXT_SUFFIXES or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if any(old in text for old, _ in forms):
            for old, new in forms:
                text = text.replace(old, new)
            write_text_atomic(path, text)


def run_report(evaluator: BenchmarkEvaluator, args: argparse.Namespace) -> None:
    """`histbench report <benchmark>`: the evaluator's report, written atomically into the
    folder its `report_out(args)` names (nothing staged when it names none)."""
    out = evaluator.report_out(args)
    if out is None:
        evaluator.run_report(args)
        return
    with staged_report(Path(out)) as tmp:
        args.out = tmp
        evaluator.run_report(args)
