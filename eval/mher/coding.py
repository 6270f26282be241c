"""Table 7: the Source-grounded errors, coded by a person, read back into the report.

`histbench report mher` lists every Source-grounded error of every system in
`source_grounded_errors.csv` (gold, action, whether Context-only was right, both
rationales, and an empty `category` column). A person codes the `category` column with
the paper's Table 7 categories (sources/mher/error_categories.yaml) and reruns the
report: the codes are read back and tabulated against name-induced / persistent.

A file a person coded is never overwritten. The rule: the report writes
`source_grounded_errors.csv` when it is absent or holds no code yet; once any row has a
category, the file is left as it is and read; errors of the current runs that it does not
code are written to `source_grounded_errors.uncoded.csv` (itself left alone once a row of
it is coded). `--error-codes FILE` reads the codes from another file (never written).
Codes are matched to errors by (model, pair_id); coded rows that are not errors of the
current runs are counted and named in the report.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from histbench.core.atomic import write_text_atomic
from histbench.core.errors import EvalError
from histbench.core.resources import Resources
from histbench.core.sheets import restore, sheet_text

ERRORS_CSV = "source_grounded_errors.csv"
UNCODED_CSV = "source_grounded_errors.uncoded.csv"
COLUMNS = ["model", "pair_id", "gold", "source_grounded_action", "context_only_correct", "source_grounded_rationale",
           "context_only_rationale", "category"]
CATEGORY_FILE = "error_categories.yaml"
UNCODED = "not coded yet"


def load_categories(path: Path | None = None) -> dict:
    """{"labels": [...in table order], "by_key": normalised text -> label, "other": label, "source": ...}."""
    resources = Resources.default()
    path = path or resources.source_dir("mher") / CATEGORY_FILE
    data = resources.load_yaml(path)
    labels = [c["label"] for c in data["categories"]]
    by_key = {}
    for category in data["categories"]:
        by_key[_norm(category["label"])] = category["label"]
        by_key[_norm(category["key"])] = category["label"]
    return {"labels": labels, "by_key": by_key, "other": data.get("other", "Other"), "source": data.get("source"),
            "categories": data["categories"]}


def _norm(text: str) -> str:
    text = re.sub(r"[\u2010-\u2015\u2212-]", "-", text.casefold())
    text = re.sub(r"\s*([/-])\s*", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


def canonical_category(value: str | None, categories: dict, file=None, row=None) -> str | None:
    """The Table 7 label a coded cell means; None for an empty cell; an error otherwise."""
    if value is None or not value.strip():
        return None
    key = _norm(value)
    if key in categories["by_key"]:
        return categories["by_key"][key]
    if key == "other" or key.startswith("other:"):
        return categories["other"]
    allowed = "; ".join(f"{c['label']!r} (or {c['key']!r})" for c in categories["categories"])
    raise EvalError(f"{value!r} is not a Table 7 category: use {allowed}, or 'other: <description>'",
                    file=file, row=row, field="category")


def _rows(path: Path) -> list[tuple[int, dict]]:
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            missing = [c for c in ("model", "pair_id", "category") if c not in header]
            if missing:
                raise EvalError(f"missing column(s) {', '.join(missing)} (a coded copy of {ERRORS_CSV} is expected)",
                                file=path)
            return [(reader.line_num, {k: restore(v) if isinstance(v, str) else v for k, v in row.items()})
                    for row in reader]
    except UnicodeDecodeError as exc:
        raise EvalError(f"not UTF-8 text ({exc.reason})", file=path) from exc
    except csv.Error as exc:
        raise EvalError(f"not a readable CSV file: {exc}", file=path) from exc


def is_coded(path: Path) -> bool:
    """Whether a person has written any category into the file."""
    if not path.is_file():
        return False
    return any((row.get("category") or "").strip() for _, row in _rows(path))


def read_codes(path: Path, categories: dict) -> dict[tuple[str, str], str]:
    """(model, pair_id) -> Table 7 label, for every coded row (empty rows are uncoded)."""
    codes: dict[tuple[str, str], str] = {}
    rows_of: dict[tuple[str, str], int] = {}
    for line, row in _rows(path):
        label = canonical_category(row.get("category"), categories, path, line)
        if label is None:
            continue
        key = ((row.get("model") or "").strip(), (row.get("pair_id") or "").strip())
        if not all(key):
            raise EvalError("a coded row needs its model and pair_id", file=path, row=line)
        if key in codes and codes[key] != label:
            raise EvalError(f"{key[0]} {key[1]} is coded twice, as {codes[key]!r} (row {rows_of[key]}) and {label!r}",
                            file=path, row=line, field="category")
        codes[key], rows_of[key] = label, line
    return codes


def error_rows(analysis: dict, rationales: dict) -> list[dict]:
    """One CSV row per Source-grounded error of every system (model label, pair id...)."""
    rows = []
    for label, res in analysis.get("models", {}).items():
        for item in res.get("source_errors", {}).get("items", []):
            system = res.get("system", label)
            rows.append({
                "model": label, "pair_id": item["pair_id"], "gold": item["gold"],
                "source_grounded_action": item["action"], "context_only_correct": item["context_only_correct"],
                "source_grounded_rationale": rationales.get((system, "source_grounded", item["pair_id"])) or "",
                "context_only_rationale": rationales.get((system, "context_only", item["pair_id"])) or "",
                "category": "",
            })
    return rows


def _csv_text(rows: list[dict]) -> str:
    """The listing a person opens in a spreadsheet: the models' rationales are untrusted, so
    every cell has its formula triggers neutralised (histbench.core.sheets)."""
    return sheet_text(COLUMNS, rows, lineterminator="\n")


def code_errors(analysis: dict, rationales: dict, out_dir: Path, codes_path: Path | None = None) -> dict:
    """Write the error listing where allowed (module docstring), read the codes, and return
    what Table 7 needs: per error its code (or None), plus the files used and written."""
    categories = load_categories()
    rows = error_rows(analysis, rationales)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    listing = out_dir / ERRORS_CSV
    written: list[str] = []
    listing_coded = is_coded(listing)
    if not listing_coded:
        write_text_atomic(listing, _csv_text(rows))
        written.append(str(listing))
    source = Path(codes_path) if codes_path else (listing if listing_coded else None)
    if source is not None and not source.is_file():
        raise EvalError("no such file of Table 7 codes", file=source, field="--error-codes")
    codes = read_codes(source, categories) if source is not None else {}
    current = {(r["model"], r["pair_id"]) for r in rows}
    uncoded = [r for r in rows if (r["model"], r["pair_id"]) not in codes]
    uncoded_file = out_dir / UNCODED_CSV
    if source is not None and uncoded and not is_coded(uncoded_file):
        write_text_atomic(uncoded_file, _csv_text(uncoded))
        written.append(str(uncoded_file))
    stale = sorted(k for k in codes if k not in current)
    return {
        "categories": categories["labels"], "other": categories["other"], "category_source": categories["source"],
        "codes_file": str(source) if source else None, "listing": str(listing), "listing_was_coded": listing_coded,
        "written": written, "codes": {f"{m}\t{p}": c for (m, p), c in codes.items() if (m, p) in current},
        "uncoded": len(uncoded), "errors": len(rows),
        "stale": [{"model": m, "pair_id": p, "category": codes[(m, p)]} for m, p in stale],
    }


def coded_counts(analysis: dict, coding: dict) -> dict[str, dict[str, dict[str, int]]]:
    """model -> category (Table 7 labels, Other, not coded yet) -> {name_induced, persistent, total}."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    order = [*coding["categories"], coding["other"], UNCODED]
    for label, res in analysis.get("models", {}).items():
        items = res.get("source_errors", {}).get("items", [])
        if not items:
            continue
        table = {c: {"name_induced": 0, "persistent": 0, "total": 0} for c in order}
        for item in items:
            category = coding["codes"].get(f"{label}\t{item['pair_id']}", UNCODED)
            cell = table[category]
            cell["total"] += 1
            if item["context_only_correct"] is True:
                cell["name_induced"] += 1
            elif item["context_only_correct"] is False:
                cell["persistent"] += 1
        out[label] = {c: v for c, v in table.items() if v["total"] or c in coding["categories"]}
    return out
