"""Runs compared: the leaderboard of a report of several runs, and the side-by-side item view.

`histbench report BENCHMARK RUN1 RUN2 ...` puts, above the benchmark's own tables,

- a leaderboard: one row per run (and per system of a run of several), one column per
  headline metric (results.json's metrics with `headline`), each cell the estimate with its
  interval, the interval's method and n; where a headline metric names the paper's table
  cell it reproduces (`published`: table, column, row), the paper's own values for that
  cell follow as rows of their own, a paper model a run names (through the declared
  aliases, never guessed) marked with the run;
- a side-by-side item view (compare/index.html): one row per item, one column per run (and
  system), each cell the run's parsed answer and outcome; a filter keeps the items on
  which the runs disagree (different outcomes or different parsed answers). An item is
  the same across runs by its config and id (a system's own prefix "SYSTEM:" left out).

The page is static and offline like the per-item viewer: its data is a JSON block that no
text can close, its script (allowed by hash, nothing else) writes every value with
textContent, so an answer or label is shown as text and never run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from histbench.core.atomic import atomic_directory
from histbench.core.markdown import escape_cell, escape_markdown, markdown_table
from histbench.core.pages import csp_meta, escape
from histbench.core.runfolder import RunFolder, format_metric
from histbench.core.secrets import scrub_text
from histbench.eval.viewer import INLINE_SCRIPT, check_page_folder, script_json

COMPARE_MARKER = "histbench run comparison"


@dataclass
class Column:
    """One run (or one system of a run of several) in the comparison."""

    run: str
    system: str | None
    label: str


def _columns(folder: RunFolder) -> list[Column]:
    systems = list(dict.fromkeys(item.get("system") for item in folder.items if item.get("system") is not None))
    names = folder.system_labels
    if not systems:
        return [Column(folder.label, None, folder.label)]
    return [Column(folder.label, s, f"{folder.label}: {names.get(s, s)}" if len(systems) > 1 or s != folder.label
                   else folder.label) for s in systems]


def item_key(item: Mapping) -> str:
    """The item across runs: config and id, the system's own prefix left out."""
    ident = str(item["id"])
    system = item.get("system")
    if system is not None and ident.startswith(f"{system}:"):
        ident = ident[len(system) + 1:]
    return f"{item.get('config')}\u241f{ident}"


def _short(value, limit: int = 200) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def comparison_rows(folders: Sequence[RunFolder]) -> tuple[list[Column], list[dict]]:
    """(columns, rows): a row per item key in first-seen order, with each column's cell
    (parsed answer, outcome, score) or None where that run has no such item, and whether the
    runs that have it disagree."""
    columns: list[Column] = []
    cells: dict[str, dict[int, dict]] = {}
    meta: dict[str, dict] = {}
    for folder in folders:
        own = _columns(folder)
        position = {c.system: len(columns) + k for k, c in enumerate(own)}
        columns += own
        for item in folder.items:
            key = item_key(item)
            meta.setdefault(key, {"config": item.get("config"), "id": key.split("\u241f", 1)[1],
                                  "gold": _short(item.get("gold"))})
            parsed = item.get("parsed") if item.get("parse_error") is None else None
            cells.setdefault(key, {})[position[item.get("system")]] = {
                "parsed": _short(parsed), "outcome": item["outcome"], "score": item.get("score"),
                "error": _short(item.get("parse_error"))}
    rows = []
    for key, by_column in cells.items():
        answers = {(c["outcome"], c["parsed"]) for c in by_column.values()}
        rows.append({**meta[key], "cells": [by_column.get(k) for k in range(len(columns))],
                     "disagree": len(by_column) > 1 and len(answers) > 1})
    return columns, rows


_PAGE = """<!DOCTYPE html>
<!-- __MARKER__. -->
<html lang="en"><head>__CSP__
<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
body { font-family: system-ui, sans-serif; margin: 0 1.2rem 3rem 1.2rem; color: #1f2328; }
table { border-collapse: collapse; font-size: 0.88rem; } th, td { border: 1px solid #d0d7de; padding: 0.2rem 0.45rem;
  text-align: left; vertical-align: top; max-width: 28rem; overflow-wrap: anywhere; } th { background: #f6f8fa; }
td.correct { background: #dafbe1; } td.wrong { background: #ffebe9; } td.invalid { background: #fff8c5; }
td.absent { color: #8c959f; } tr.hidden { display: none; } #counts { color: #57606a; }
</style></head>
<body><h1 id="title"></h1><p id="counts"></p>
<label><input type="checkbox" id="disagree"> only the items on which the runs disagree</label>
<table id="items"><thead></thead><tbody></tbody></table>
<script type="application/json" id="data">__DATA__</script>
<script>
(function () {
  var data = JSON.parse(document.getElementById("data").textContent);
  document.getElementById("title").textContent = data.title;
  var head = document.querySelector("#items thead"), body = document.querySelector("#items tbody");
  var tr = document.createElement("tr");
  ["config", "item", "gold"].concat(data.columns).forEach(function (name) {
    var th = document.createElement("th"); th.textContent = name; tr.appendChild(th);
  });
  head.appendChild(tr);
  data.rows.forEach(function (row) {
    var tr = document.createElement("tr");
    tr.className = row.disagree ? "disagree" : "agree";
    [row.config, row.id, row.gold].forEach(function (text) {
      var td = document.createElement("td"); td.textContent = text === null ? "" : text; tr.appendChild(td);
    });
    row.cells.forEach(function (cell) {
      var td = document.createElement("td");
      if (cell === null) { td.className = "absent"; td.textContent = "(not in this run)"; }
      else {
        td.className = cell.outcome;
        td.textContent = (cell.error ? cell.error : cell.parsed) + " \\u2014 " + cell.outcome
          + (cell.score === null ? "" : " (" + cell.score + ")");
      }
      tr.appendChild(td);
    });
    body.appendChild(tr);
  });
  var box = document.getElementById("disagree"), counts = document.getElementById("counts");
  function apply() {
    var shown = 0;
    Array.prototype.forEach.call(body.rows, function (tr) {
      var hide = box.checked && tr.className.indexOf("disagree") !== 0;
      tr.classList.toggle("hidden", hide); if (!hide) { shown += 1; }
    });
    counts.textContent = shown + " of " + data.rows.length + " items shown; the runs disagree on "
      + data.disagree + ".";
  }
  box.addEventListener("change", apply);
  if (location.hash.indexOf("disagree=1") >= 0) { box.checked = true; }
  apply();
})();
</script>
</body></html>
"""


def write_comparison(folders: Sequence[RunFolder], out: Path, benchmark: str) -> Path:
    """Write the side-by-side item view of `folders` into the folder `out` (replaced as a
    whole, only when it is a comparison written before or new); returns index.html's path."""
    out = Path(out)
    check_page_folder(out, COMPARE_MARKER, "histbench run comparison", "comparison")
    columns, rows = comparison_rows(folders)
    disagree = sum(row["disagree"] for row in rows)
    data = {"title": f"{benchmark}: {len(folders)} runs side by side", "columns": [c.label for c in columns],
            "rows": rows, "disagree": disagree}
    values = {"MARKER": COMPARE_MARKER, "CSP": csp_meta(INLINE_SCRIPT.findall(_PAGE)), "TITLE": escape(data["title"]),
              "DATA": script_json(data)}
    html = re.sub(r"__(MARKER|CSP|TITLE|DATA)__", lambda m: values[m.group(1)], _PAGE)
    with atomic_directory(out) as tmp:
        (tmp / "index.html").write_text(scrub_text(html), encoding="utf-8")
    return out / "index.html"


# --------------------------------------------------------------------------- the leaderboard


def _paper_rows(benchmark: str, metric: Mapping, run_models: Mapping[str, Sequence[str]]) -> list[dict]:
    """The paper's values of the cell a headline metric reproduces: [{model, value, runs}];
    run_models: {a leaderboard row: the names it goes by (its system, its model spec)}."""
    from histbench.core.published import load_aliases, load_tables

    ref = metric.get("published")
    if not ref:
        return []
    tables = load_tables(benchmark)
    table = tables.get(int(ref["table"]))
    if table is None:
        return []
    aliases = load_aliases(benchmark)
    matched = {}
    for run, names in run_models.items():
        paper_model = next((m for m in (aliases.match(name) for name in names) if m), None)
        if paper_model:
            matched.setdefault(paper_model, []).append(run)
    out = []
    for row in table.rows:
        if row["column"] != ref["column"] or (ref.get("row") is not None and row.get("row") != ref["row"]):
            continue
        model = aliases.canonical(row["model"])
        unit = row["unit"]
        value = f"{row['value']}{'%' if unit == 'percent' else ''}" if unit in ("percent", "fraction") \
            else f"{row['value']} ({unit})"
        out.append({"model": model, "value": value, "runs": matched.get(model, []), "table": table.number,
                    "section": table.section})
    return out


def leaderboard_markdown(benchmark: str, folders: Sequence[RunFolder]) -> str:
    """The leaderboard of several runs (module docstring), as Markdown."""
    columns: list[str] = []
    rows: dict[tuple[str, str | None], dict[str, str]] = {}
    references: dict[str, Mapping] = {}
    run_models: dict[str, list[str]] = {}
    for folder in folders:
        # a run of one system is named by the run alone (a reference run's system is the run)
        single = len({m.get("system") for m in folder.metrics if m.get("headline")}) == 1
        for metric in folder.metrics:
            if not metric.get("headline"):
                continue
            heading = metric.get("label") or metric["metric"]
            if heading not in columns:
                columns.append(heading)
                references.setdefault(heading, metric)
            system = metric.get("system")
            shown = folder.system_labels.get(system, system) if system and not single else None
            rows.setdefault((folder.label, shown), {})[heading] = format_metric(metric)
            names = [system] if system else [folder.run.get("model") or folder.run.get("baseline") or folder.label]
            run_models[f"{folder.label}: {shown}" if shown else folder.label] = [n for n in names if n]
    if not rows:
        return "None of these runs has a headline metric yet."
    table = []
    for (run, system), cells in rows.items():
        table.append({"run": escape_cell(run), "system": escape_cell(system or ""),
                      **{escape_cell(c): escape_cell(cells.get(c, "")) for c in columns}})
    has_system = any(system for _, system in rows)
    if not has_system:
        table = [{k: v for k, v in r.items() if k != "system"} for r in table]
    text = markdown_table(table, align=("ll" if has_system else "l") + "r" * len(columns))
    parts = [text, ""]
    for heading in columns:
        paper = _paper_rows(benchmark, references[heading], run_models)
        if not paper:
            continue
        ref = references[heading]["published"]
        parts += [f"The paper's values of this cell ({escape_markdown(heading)}: Table {paper[0]['table']}, "
                  f"{escape_markdown(ref['column'])}{', ' + escape_markdown(ref['row']) if ref.get('row') else ''}; "
                  f"section {escape_markdown(paper[0]['section'])}):", ""]
        parts.append(markdown_table([{"paper model": escape_cell(p["model"]), "value": escape_cell(p["value"]),
                                      "the same model in": escape_cell(", ".join(p["runs"]))} for p in paper],
                                    align="lrl"))
        parts.append("")
    return "\n".join(parts).strip() + "\n"
