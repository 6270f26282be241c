"""The papers' own results tables, shipped as data, and how a report sets them beside a run.

Each benchmark whose paper reports model results ships them under
`sources/<benchmark>/published/`: one `tableN.yaml` per results table (paper, table, section,
caption, models, notes, rows of model / row / column / value / unit, transcribed from the paper)
and `aliases.yaml`, which says which run model names stand for which of the paper's models.
A run is matched to a paper model only through that list (exactly, or by the last path segment
of the run's model name, so a Hub id `org/NAME` or a folder `.../NAME` matches `NAME`).

`published_markdown(benchmark, table, run_models)` renders one table: the rows of the paper's
models that a run names first (marked with the run), then the others as reference rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import SchemaError
from .markdown import escape_markdown, markdown_table

ROW_KEYS = {"model", "row", "column", "value", "unit"}
REQUIRED_ROW_KEYS = {"model", "column", "value", "unit"}
UNITS = {"percent", "fraction", "ratio", "cosine", "benefit x100", "percentage points", "items"}
TOP_KEYS = {"paper", "table", "section", "caption", "models", "notes", "rows"}


@dataclass
class PublishedTable:
    benchmark: str
    number: int
    paper: str
    section: str
    caption: str
    models: list[str]
    rows: list[dict]
    notes: str | None = None
    path: Path | None = None

    def columns(self) -> list[str]:
        return list(dict.fromkeys(r["column"] for r in self.rows))


@dataclass
class Aliases:
    models: dict[str, list[str]] = field(default_factory=dict)   # paper model -> accepted run names
    printed: dict[str, str] = field(default_factory=dict)        # printed short name -> paper model

    def canonical(self, printed: str) -> str:
        return self.printed.get(printed, printed)

    def match(self, run_model: str | None) -> str | None:
        """The paper model a run's model name stands for, or None: only declared names match."""
        if not run_model:
            return None
        text = str(run_model).strip()
        candidates = {text, re.split(r"[\\/]", text.rstrip("/\\"))[-1]}
        for paper_model, names in self.models.items():
            if candidates & set(names):
                return paper_model
        return None


def published_dir(benchmark: str) -> Path:
    from .resources import Resources

    return Resources.default().source_dir(benchmark) / "published"


def _check_table(data, path: Path) -> None:
    if not isinstance(data, dict):
        raise SchemaError("a published table must be a mapping", file=path)
    missing = {"paper", "table", "section", "caption", "rows"} - set(data)
    if missing:
        raise SchemaError(f"published table lacks {', '.join(sorted(missing))}", file=path)
    extra = set(data) - TOP_KEYS
    if extra:
        raise SchemaError(f"published table has unknown keys {', '.join(sorted(extra))}", file=path)
    if not isinstance(data["rows"], list) or not data["rows"]:
        raise SchemaError("published table has no rows", file=path)
    for i, row in enumerate(data["rows"], 1):
        if not isinstance(row, dict) or not REQUIRED_ROW_KEYS <= set(row) or set(row) - ROW_KEYS:
            raise SchemaError(f"row {i} must have model, column, value, unit (and optionally row)", file=path)
        if isinstance(row["value"], bool) or not isinstance(row["value"], (int, float)):
            raise SchemaError(f"row {i}: value {row['value']!r} is not a number", file=path)
        if row["unit"] not in UNITS:
            raise SchemaError(f"row {i}: unknown unit {row['unit']!r}", file=path)


def load_table(path: Path, benchmark: str) -> PublishedTable:
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SchemaError(f"cannot read the published table: {exc}", file=path) from exc
    _check_table(data, Path(path))
    models = data.get("models") or list(dict.fromkeys(r["model"] for r in data["rows"]))
    return PublishedTable(benchmark, int(data["table"]), data["paper"], data["section"], data["caption"],
                          list(models), data["rows"], data.get("notes"), Path(path))


def load_tables(benchmark: str, folder: Path | None = None) -> dict[int, PublishedTable]:
    """Every shipped results table of `benchmark`, by table number ({} when it ships none)."""
    folder = Path(folder) if folder is not None else published_dir(benchmark)
    tables = {}
    for path in sorted(folder.glob("table*.yaml")):
        table = load_table(path, benchmark)
        tables[table.number] = table
    return tables


def load_aliases(benchmark: str, folder: Path | None = None) -> Aliases:
    import yaml

    path = (Path(folder) if folder is not None else published_dir(benchmark)) / "aliases.yaml"
    if not path.exists():
        return Aliases()
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    models = {**(data.get("models") or {}), **(data.get("baselines") or {})}
    if not isinstance(models, dict) or not all(isinstance(v, list) for v in models.values()):
        raise SchemaError("aliases.yaml: `models` must map each paper model to a list of run names", file=path)
    return Aliases({str(k): [str(n) for n in v] for k, v in models.items()},
                   {str(k): str(v) for k, v in (data.get("printed") or {}).items()})


def _value(row: dict) -> str:
    value = row["value"]
    if row["unit"] == "items":
        return str(int(value))
    bound = any(word in row["column"] for word in ("CI", "lowest", "highest"))
    if row["unit"] in ("benefit x100", "percentage points") and value > 0 and not bound:
        return f"+{value}"
    return str(value)


def published_markdown(benchmark: str, number: int, run_models=(), *, tables=None, aliases=None) -> str:
    """The paper's Table `number` as Markdown, for reports: rows of the models the runs name
    (through the declared aliases) first, then the others as reference rows; '' when none ships."""
    tables = tables if tables is not None else load_tables(benchmark)
    table = tables.get(number)
    if table is None:
        return ""
    aliases = aliases if aliases is not None else load_aliases(benchmark)
    matched: dict[str, list[str]] = {}
    for run_model in run_models:
        paper_model = aliases.match(run_model)
        if paper_model is not None:
            matched.setdefault(paper_model, []).append(str(run_model))
    columns = table.columns()
    has_row = any("row" in r for r in table.rows)
    groups: dict[tuple, dict] = {}
    for r in table.rows:
        groups.setdefault((r["model"], r.get("row", "")), {})[r["column"]] = _value(r)
    lines = []
    for (model, row_label), cells in groups.items():
        paper_model = aliases.canonical(model)
        runs = matched.get(paper_model)
        # a run's model name is the user's text: escaped where it enters the report's Markdown
        source = f"paper; your run {', '.join(escape_markdown(r) for r in runs)}" if runs else "paper (reference)"
        line = {"Source": source, "Model": model}
        if has_row:
            line["Row"] = row_label
        line.update(cells)
        lines.append((0 if runs else 1, line))
    lines.sort(key=lambda x: x[0])
    # "Source" first: a report links a row whose first cell is a run's label to that run's items,
    # and a paper row is no run's
    header = ["Source", "Model"] + (["Row"] if has_row else []) + columns
    units = sorted({r["unit"] for r in table.rows})
    intro = (f"The paper's own figures for its Table {table.number} (units: {', '.join(units)}). "
             + ("Rows marked \"your run\" are the paper's figures for the model a run names (matched by the "
                "declared aliases); the others are reference rows."
                if matched else "No run names one of the paper's models, so its rows are shown for reference."))
    # a bold line just above the table names it: the report site makes it the table's caption panel
    title = f"**The paper's Table {table.number} ({table.section})**"
    return (intro + "\n\n" + title + "\n\n"
            + markdown_table([line for _, line in lines], header, "ll" + ("l" if has_row else "") + "r" * len(columns)))
