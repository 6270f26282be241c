"""The Chronologic authors' published likelihood figures (Table 3), to show beside a
user's runs (`--published-table3` of `histbench eval chronologic` and `histbench report
chronologic`).

Three formats are read, so that a newer leaderboard of the authors can be shown as it is:

- the bundled `sources/chronologic/published/table3.yaml`: the authors' leaderboard.md
  text verbatim under `table`, with its `source` (repository, path, commit) and the
  number of `questions` it was computed on;
- the authors' `leaderboard.md` itself: a Markdown table with a `Model` column, then
  "<Scope> Brier" / "<Scope> Acc" columns each followed by a "95% CI" column
  ("[low, high]"), scopes Overall, Cloze, Constrained Generation, Knowledge And Inference;
- the authors' `leaderboard.csv`: model, overall_brier, cloze_acc,
  constrained_generation_acc, knowledge_and_inference_acc (no intervals).

Accuracies are fractions here (the files print percent). A malformed file is an
EvalError naming the file, the row and the column.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from histbench.core.errors import EvalError

PUBLISHED_FILE = "published/table3.yaml"
#: the authors' scope names -> histbench scopes
SCOPES = {
    "overall": "overall",
    "cloze": "group:cloze",
    "constrained generation": "group:generation",
    "knowledge and inference": "group:knowledge",
}
METRIC_WORDS = {"brier": "brier", "acc": "acc"}
_NUMBER = r"(-?\d+(?:\.\d+)?)(%?)"


@dataclass(frozen=True)
class PublishedRow:
    label: str
    #: metric ("brier", "acc") -> scope -> {"median", "low", "high"} (low/high may be None)
    cells: dict[str, dict[str, dict]]


@dataclass(frozen=True)
class PublishedTable3:
    rows: tuple[PublishedRow, ...]
    path: str
    source: dict = field(default_factory=dict)
    questions: int | None = None

    @property
    def citation(self) -> str:
        src = self.source
        if src.get("repository") and src.get("path"):
            commit = f" at commit {src['commit'][:7]}" if src.get("commit") else ""
            return f"GitHub {src['repository']}, {src['path']}{commit}"
        return str(self.path)


def _value(text: str, where: str, path: Path) -> float:
    match = re.fullmatch(_NUMBER, text.strip())
    if not match:
        raise EvalError(f"{where}: expected a number, got {text!r}", file=path)
    value = float(match.group(1))
    return value / 100.0 if match.group(2) else value


def _interval(text: str, where: str, path: Path) -> tuple[float, float]:
    match = re.fullmatch(r"\[\s*([^,\]]+?)\s*,\s*([^\]]+?)\s*\]", text.strip())
    if not match:
        raise EvalError(f"{where}: expected an interval [low, high], got {text!r}", file=path)
    return _value(match.group(1), where, path), _value(match.group(2), where, path)


def _column_key(name: str) -> tuple[str, str] | None:
    words = name.strip().lower()
    for suffix, metric in METRIC_WORDS.items():
        if words.endswith(" " + suffix):
            scope = words[: -len(suffix) - 1].strip()
            if scope in SCOPES:
                return metric, SCOPES[scope]
    return None


def parse_markdown(text: str, path: Path) -> list[PublishedRow]:
    """The authors' leaderboard.md table."""
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("|")]
    if len(lines) < 3:
        raise EvalError("no Markdown table with a header, a rule and rows", file=path)

    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    header = cells(lines[0])
    if header[0].lower() != "model":
        raise EvalError(f"the first column must be 'Model', got {header[0]!r}", file=path, row=1)
    columns: list[tuple[int, str, str, int | None]] = []  # (index, metric, scope, interval index)
    for i, name in enumerate(header[1:], start=1):
        key = _column_key(name)
        if key is None:
            continue
        ci = i + 1 if i + 1 < len(header) and header[i + 1].lower().startswith("95% ci") else None
        columns.append((i, *key, ci))
    if not any(m == "brier" and s == "overall" for _, m, s, _ in columns):
        raise EvalError("no 'Overall Brier' column", file=path, row=1)
    rows = []
    for number, line in enumerate(lines[2:], start=3):
        values = cells(line)
        if len(values) != len(header):
            raise EvalError(f"{len(values)} cells for {len(header)} columns", file=path, row=number)
        out: dict[str, dict[str, dict]] = {}
        for i, metric, scope, ci in columns:
            where = f"row {number}, column {header[i]!r}"
            low = high = None
            if ci is not None:
                low, high = _interval(values[ci], where + " (95% CI)", path)
            out.setdefault(metric, {})[scope] = {"median": _value(values[i], where, path), "low": low, "high": high}
        rows.append(PublishedRow(values[0], out))
    return rows


def parse_csv(text: str, path: Path) -> list[PublishedRow]:
    """The authors' leaderboard.csv (no intervals)."""
    reader = csv.DictReader(io.StringIO(text))
    fields = [f.strip().lower() for f in reader.fieldnames or []]
    if not fields or fields[0] != "model" or "overall_brier" not in fields:
        raise EvalError("expected the columns model, overall_brier, <scope>_acc ...", file=path, row=1)
    rows = []
    for number, record in enumerate(reader, start=2):
        record = {k.strip().lower(): (v or "").strip() for k, v in record.items()}
        out: dict[str, dict[str, dict]] = {}
        for name, text_value in record.items():
            if name == "model":
                continue
            key = _column_key(name.replace("_", " "))
            if key is None:
                continue
            metric, scope = key
            value = _value(text_value, f"row {number}, column {name!r}", path)
            if metric == "acc":
                value /= 100.0  # the csv prints percent without a sign
            out.setdefault(metric, {})[scope] = {"median": value, "low": None, "high": None}
        rows.append(PublishedRow(record["model"], out))
    return rows


def load_published_table3(path: str | Path | None = None) -> PublishedTable3:
    """The bundled published Table 3, or the authors' leaderboard file at `path`."""
    import yaml

    from histbench.core.resources import Resources

    path = Path(path) if path else Resources.default().source_dir("chronologic") / PUBLISHED_FILE
    if not path.is_file():
        raise EvalError("published Table 3 file not found", file=path)
    text = path.read_text(encoding="utf-8")
    source: dict = {}
    questions = None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise EvalError(f"not valid YAML ({exc})", file=path) from exc
        if not isinstance(data, dict) or not isinstance(data.get("table"), str):
            raise EvalError("expected a mapping with the leaderboard's text under 'table'", file=path, field="table")
        source = dict(data.get("source") or {})
        questions = data.get("questions")
        rows = parse_markdown(data["table"], path)
    elif path.suffix.lower() == ".csv":
        rows = parse_csv(text, path)
    else:
        rows = parse_markdown(text, path)
    if not rows:
        raise EvalError("the table has no rows", file=path)
    return PublishedTable3(tuple(rows), str(path), source, questions)
