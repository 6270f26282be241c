"""Free-generation report: Table 4 and Table 7 layouts, channels, judge reliability, ledger.

`histbench report chronologic RUN [RUN ...]` hands every free-generation run folder
(results.json of mode "generate") to `report`. For each run it reads what the later
modes left in the folder: judged-*/substantive.json (one per judge; a run judged by two
judges gives two rows) and style-*/style.json (the newest, if several). Cells that a run
has not been scored on stay empty.

- Table 4 layout: Model, Effort, Cloze, Generation, Knowledge (substantive scores, 0-100),
  Date fidelity, Error in years (signed), Human authenticity.
- Table 7 layout: the same rows with 95% percentile bootstrap intervals.
- Channels: the pass/fail and partial-credit means with their question counts, empty
  answers and questions left unscored.
- Judge reliability (A.2.1): pooled alpha, beta and the questions with alpha above 0.25,
  as recorded with the anchors the run was judged against.
- With `--published`, the paper's published rows of Tables 4 and 7 (the authors'
  results/freegen/free_gen_results_1.0.csv, shipped in sources/chronologic/published/)
  beside the runs, marked as published.
- With `--out`, a per-question ledger CSV of every run (generation_ledger.csv).

"Effort" is the candidate's reasoning-effort option when its backend options name one
(any option whose name contains "effort"), else empty.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from histbench.core.markdown import code_span, escape_markdown
from histbench.eval.report import ReportSection, markdown_table

from .generation import MODE
from .style.scoring import STYLE_NAME
from .substantive import GROUP_ORDER, SUBSTANTIVE_NAME

GROUP_TITLES = {"cloze": "Cloze", "generation": "Generation", "knowledge": "Knowledge"}
LEDGER_FILE = "generation_ledger.csv"


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def collect(run_dir: Path, results: dict) -> list[dict]:
    """One entry per (run, judge): the generation results, substantive and style results."""
    run_dir = Path(run_dir)
    styles = sorted(run_dir.glob(f"style-*/{STYLE_NAME}"), key=lambda p: p.stat().st_mtime)
    style = _read(styles[-1]) if styles else None
    judged = [d for d in (_read(p) for p in sorted(run_dir.glob(f"judged-*/{SUBSTANTIVE_NAME}"))) if d]
    if not judged:
        return [{"run_dir": run_dir, "generation": results, "substantive": None, "style": style}]
    return [{"run_dir": run_dir, "generation": results, "substantive": s, "style": style} for s in judged]


def _effort(generation: dict) -> str:
    options = (generation.get("model") or {}).get("options") or {}
    for key, value in options.items():
        if "effort" in key.lower() and value not in (None, ""):
            return str(value)
    return ""


def _label(entry: dict, several_judges: bool) -> str:
    label = entry["generation"].get("label") or (entry["generation"].get("model") or {}).get("spec", "?")
    if several_judges and entry["substantive"]:
        label += f" [judge {entry['substantive']['judges']['pass_fail']['spec']}]"
    return label


def _value(cell: dict | None, digits: int = 1) -> str:
    if not cell or cell.get("estimate") is None or (isinstance(cell["estimate"], float) and math.isnan(cell["estimate"])):
        return ""
    return f"{cell['estimate']:.{digits}f}"


def _interval(cell: dict | None, digits: int = 1) -> str:
    text = _value(cell, digits)
    if text and cell.get("low") is not None and cell.get("high") is not None:
        text += f" [{cell['low']:.{digits}f}, {cell['high']:.{digits}f}]"
    return text


def table_rows(entries: list[dict]) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    several = len({str(e["run_dir"]) for e in entries}) < len(entries)
    table4, table7, channels, reliability = [], [], [], []
    for e in entries:
        label = _label(e, several)
        groups = (e["substantive"] or {}).get("scores", {}).get("groups", {})
        style = (e["style"] or {}).get("scores", {})
        row4 = {"Model": label, "Effort": _effort(e["generation"])}
        row7 = dict(row4)
        for g in GROUP_ORDER:
            row4[GROUP_TITLES[g]] = _value(groups.get(g))
            row7[GROUP_TITLES[g]] = _interval(groups.get(g))
        row4["Date fidelity"] = _value(style.get("date_fidelity"))
        row4["Error in years"] = _value(style.get("error_years"))
        row4["Human authenticity"] = _value(style.get("human_authenticity"))
        row7["Date fidelity"] = _interval(style.get("date_fidelity"))
        row7["Error in years"] = _interval(style.get("error_years"))
        row7["Human authenticity"] = _interval(style.get("human_authenticity"))
        table4.append(row4)
        table7.append(row7)
        if e["substantive"]:
            s = e["substantive"]
            ch = s["scores"]["channels"]
            counts = s["counts"]
            autos = counts.get("automatic_verdicts", {})
            channels.append({"Model": label, "Pass/fail": _interval(ch.get("pass_fail")), "n pass/fail": ch["pass_fail"]["n"],
                             "Partial credit": _interval(ch.get("partial")), "n partial": ch["partial"]["n"],
                             "automatic verdicts": sum(autos.values()), "retried replies":
                             counts.get("pass_fail_retried", 0) + counts.get("partial_retried", 0),
                             "empty answers": counts["empty_answers"], "unscored": counts["unscored_questions"]})
            pooled = s["anchors"]["reliability"]
            calibration = s["anchors"].get("calibration") or {}
            reliability.append({
                "Model": label, "pass/fail judge": s["judges"]["pass_fail"]["spec"],
                "partial judge": s["judges"]["partial"]["spec"],
                "alpha (pooled)": "" if pooled["alpha_pooled"] is None else f"{pooled['alpha_pooled']:.3f}",
                "alpha trials": pooled["alpha_trials"],
                "beta": "" if pooled["beta"] is None else f"{pooled['beta']:.3f}",
                "beta trials": pooled["beta_trials"],
                "alpha > 0.25": len(pooled.get("alpha_over_threshold", [])),
                "calibration slope": f"{calibration['slope']:.3f}" if calibration else "",
                "calibration": calibration.get("source", ""),
            })
    return table4, table7, channels, reliability


def ledger_rows(entries: list[dict]) -> list[dict]:
    rows = []
    several = len({str(e["run_dir"]) for e in entries}) < len(entries)
    for e in entries:
        label = _label(e, several)
        style_by_q = {a["question_number"]: a for a in (e["style"] or {}).get("answers", [])}
        answers = {a["question_number"]: a for a in e["generation"]["answers"]}
        substantive = {r["question_number"]: r for r in (e["substantive"] or {}).get("ledger", [])}
        for number, answer in answers.items():
            row = {"model": label, "question_number": number, "answer": answer["answer"], "empty_answer": answer["empty"],
                   "finish_reason": answer.get("finish_reason")}
            for key, value in substantive.get(number, {}).items():
                if key not in ("question_number", "empty_answer"):
                    row[key] = value
            for key, value in style_by_q.get(number, {}).items():
                if key != "question_number":
                    row[f"style_{key}"] = value
            rows.append(row)
    return rows


def published_table_rows() -> tuple[list[dict], list[dict], str]:
    """The paper's rows of Tables 4 and 7 in the report's layout, and their source file."""
    from .published import published_rows

    rows, source = published_rows()
    table4, table7 = [], []
    for r in rows:
        label = f"{r['model']} (published)"
        row4 = {"Model": label, "Effort": r["effort"], "Cloze": r["cloze"], "Generation": r["generation"],
                "Knowledge": r["knowledge"], "Date fidelity": r["date_fidelity"], "Error in years": r["error_in_years"],
                "Human authenticity": r["human_authenticity"]}
        row7 = dict(row4)
        for key, title in (("cloze", "Cloze"), ("generation", "Generation"), ("knowledge", "Knowledge")):
            row7[title] = f"{r[key]} [{r[key + '_lo']}, {r[key + '_hi']}]"
        table4.append(row4)
        table7.append(row7)
    return table4, table7, source


def generation_markdown(entries: list[dict], published: bool = False) -> str:
    table4, table7, channels, reliability = table_rows(entries)
    for row in (*table4, *table7, *channels):   # run labels are untrusted text: escaped where they enter Markdown
        row["Model"] = escape_markdown(row["Model"])
    if published:
        p4, p7, source = published_table_rows()
        table4, table7 = table4 + p4, table7 + p7
    columns4 = ["Model", "Effort", "Cloze", "Generation", "Knowledge", "Date fidelity", "Error in years", "Human authenticity"]
    lines = [
        "Substantive scores (Cloze, Generation, Knowledge) are mean question scores x 100: pass/fail questions score "
        "0, 1/3, 2/3 or 1, partial-credit questions sigmoid(logit(0.9) + slope x mean delta); answers identical to an option get their verdict without a judge. Date fidelity and "
        "human authenticity are conformal 0-100 scores (100 = indistinguishable from period prose); error in years "
        "is the mean signed residual of the date predictor (negative = sounds older than the target).",
        "",
        "**Table 4 layout**",
        "",
        markdown_table(table4, columns4),
        "",
        "**Table 7 layout** (95% percentile intervals of the three-layer bootstrap: questions, each partial-credit "
        "question's delta posterior, and the calibration draws; the plug-in estimate need not be central)",
        "",
        markdown_table(table7, columns4),
    ]
    if published:
        lines += ["", f"Rows marked (published) are the paper's, as the authors' file `{source}` gives them (the published "
                  "Table 7 has intervals for the substantive columns only); a run sits on their scale when it was judged "
                  "by the same judges against anchors built with `--published-judgments` and `--published-calibration`."]
    if channels:
        lines += ["", "**Channels**", "", markdown_table(channels, list(channels[0]))]
    if reliability:
        lines += ["", "**Judge reliability** (A.2.1, from the anchors each run was judged against)", "",
                  markdown_table(reliability, list(reliability[0]))]
    own = table4[: len(entries)]
    missing = [r["Model"] for r, e in zip(own, entries, strict=True) if not e["substantive"]]
    if missing:
        lines += ["", f"Not judged yet (run `--mode judge`): {', '.join(missing)}."]
    datasets = {(e["generation"].get("dataset") or {}).get("data_sha256") for e in entries}
    if len(datasets) > 1:
        lines += ["", "**Warning:** these runs were generated on different builds of the dataset; they are not comparable."]
    lines += ["", "Signatures:", ""]
    for e, row in zip(entries, own, strict=True):
        lines.append(f"- {row['Model']}: generation {code_span(e['generation']['signature']['text'])}"
                     + (f"; judge {code_span(e['substantive']['signature']['text'])}" if e["substantive"] else ""))
    return "\n".join(lines)


def report(runs: list[tuple[Path, dict]], args) -> ReportSection:
    entries = [entry for run_dir, results in runs for entry in collect(run_dir, results)]
    published = bool(getattr(args, "published", False))
    markdown = generation_markdown(entries, published)
    out = getattr(args, "out", None)
    if out:
        from .anchors import _write_csv

        Path(out).mkdir(parents=True, exist_ok=True)
        _write_csv(Path(out) / LEDGER_FILE, ledger_rows(entries))
        markdown += f"\n\nPer-question ledger: `{Path(out) / LEDGER_FILE}`."
    table4, table7, channels, reliability = table_rows(entries)
    data = {row["Model"]: {"substantive": (e["substantive"] or {}).get("scores"), "style": (e["style"] or {}).get("scores")}
            for row, e in zip(table4, entries, strict=True)}
    if published:
        p4, _, source = published_table_rows()
        data["published"] = {"source": source, "rows": p4}
    return ReportSection("Free generation (Table 4, Table 7)", markdown, data=data)


REPORTERS = {MODE: report}
