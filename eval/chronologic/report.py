"""`histbench report chronologic RUN [RUN ...]`: tables from run folders.

Each run folder (the run format: run.json, results.json, items.jsonl) names
chronologic's own results file among its extras, chronologic.json, whose "mode" picks the
reporter; runs are grouped by mode and handed to that mode's reporter (`REPORTERS` in the package). The likelihood reporter makes Table 3:
models sorted by Brier score (lower is better), accuracy per group, with 95% intervals.
"""

from __future__ import annotations

from pathlib import Path

from histbench.builders.chronologic.taxonomy import GROUP_LABELS, GROUPS, REASONING_TYPES, TYPE_LABELS
from histbench.core.errors import UsageError
from histbench.core.markdown import code_span, escape_markdown
from histbench.eval.report import ReportSection, markdown_table

from .files import OWN_NAME, read_own_file


def load_results(run_dir: Path) -> dict:
    """chronologic's own results of a run folder (its chronologic.json, found through the
    run folder's run.json; a folder written before the run format is refused with the
    command that converts it), or of a chronologic.json given as a file."""
    run_dir = Path(run_dir)
    if run_dir.is_dir():
        from . import EVALUATOR

        path = EVALUATOR.open_run(run_dir).extra(OWN_NAME)
    else:
        path = run_dir
    return read_own_file(path, run_dir)


def run_report(args, reporters: dict) -> list[ReportSection]:
    from histbench.eval.report import write_report

    by_mode: dict[str, list[tuple[Path, dict]]] = {}
    for run_dir in args.runs:
        data = load_results(run_dir)
        by_mode.setdefault(data.get("mode", "?"), []).append((Path(run_dir), data))
    sections = []
    for mode, runs in by_mode.items():
        if mode not in reporters:
            raise UsageError(f"no report for runs of mode {mode!r} in this installation "
                             f"(reports exist for: {', '.join(reporters)})", file=runs[0][0])
        sections.append(reporters[mode](runs, args))
    for section in sections:
        print(f"## {section.title}\n\n{section.markdown.strip()}\n")
    if getattr(args, "out", None):
        index = write_report(sections, args.out, "Chronologic-EN report")
        print(f"written: {index}")
    return sections


# --------------------------------------------------------------------------- likelihood


def _cell(interval: dict | None, scale: float = 1.0, digits: int = 3, key: str = "estimate",
          with_n: bool = False) -> str:
    """'0.512 [0.480, 0.544]', with ' (n=3)' when `with_n`; an interval of no width as shown is
    said in words, never "[0.0, 0.0]" (issue 43): "0.0 (every resample 0.0; n=3)"."""
    if not interval:
        return ""
    value = f"{interval[key] * scale:.{digits}f}"
    n = f"n={interval['n']}" if with_n and interval.get("n") is not None else ""
    if interval.get("low") is None or interval.get("high") is None:
        return f"{value} ({n})" if n else value
    low, high = f"{interval['low'] * scale:.{digits}f}", f"{interval['high'] * scale:.{digits}f}"
    if low == high:
        which = "every resample" if interval.get("constant") else "95% of resamples"
        return f"{value} ({which} {low}{'; ' + n if n else ''})"
    return f"{value} [{low}, {high}]" + (f" ({n})" if n else "")


def _median(interval: dict | None, scale: float = 1.0, digits: int = 3) -> str:
    return _cell(interval, scale, digits, key="median")


def sort_by_brier(results: list[dict]) -> list[dict]:
    """Table 3 order: lowest (best) Brier first; ties by label."""
    return sorted(results, key=lambda r: (r["metrics"]["brier"]["overall"]["median"], r["label"]))


def _table3_rows(results: list[dict], published) -> list[dict]:
    rows = []
    for r in results:
        m = r["metrics"]
        row = {"_brier": m["brier"]["overall"]["median"], "Model": escape_markdown(r["label"]),
               "Brier": _median(m["brier"]["overall"], digits=4)}
        for group in GROUPS:
            row[GROUP_LABELS[group]] = _median(m["acc"].get(f"group:{group}"), 100, 1)
        row["n"] = r["counts"]["questions"]
        row["Source"] = "this run"
        rows.append(row)
    if published is not None:
        for p in published.rows:
            brier = p.cells.get("brier", {}).get("overall")
            row = {"_brier": brier["median"] if brier else float("inf"), "Model": p.label,
                   "Brier": _median(brier, digits=4)}
            for group in GROUPS:
                row[GROUP_LABELS[group]] = _median(p.cells.get("acc", {}).get(f"group:{group}"), 100, 1)
            row["n"] = published.questions if published.questions is not None else ""
            row["Source"] = "published"
            rows.append(row)
    rows.sort(key=lambda row: (row["_brier"], row["Model"]))
    return rows


def likelihood_markdown(results: list[dict], published=None) -> str:
    """Table 3 (the authors' Brier and accuracy per group, bootstrap medians, with the
    published rows when `published` is a PublishedTable3), then the secondary columns."""
    results = sort_by_brier(results)
    main = _table3_rows(results, published)
    columns = ["Model", "Brier", *(GROUP_LABELS[g] for g in GROUPS), "n", "Source"]
    secondary = []
    for r in results:
        m = r["metrics"]
        row = {"Model": escape_markdown(r["label"])}
        for group in GROUPS:
            row[f"Brier {GROUP_LABELS[group]}"] = _median(m["brier"].get(f"group:{group}"), digits=4)
        row["Acc."] = _median(m["acc"]["overall"], 100, 1)
        row["Acc. any GT"] = _cell(m["acc_any"]["overall"], 100, 1)
        for group in GROUPS:
            row[f"any GT {GROUP_LABELS[group]}"] = _cell(m["acc_any"].get(f"group:{group}"), 100, 1)
        row["Brier (softmax)"] = _cell(m["brier_softmax"]["overall"], digits=4)
        row["Brier (softmax, graded)"] = _cell(m["brier_softmax_graded"]["overall"], digits=4)
        row["acc (sum LL)"] = _cell(m["acc_sum"]["overall"], 100, 1)
        row["acc_norm (LL/char)"] = _cell(m["acc_norm"]["overall"], 100, 1)
        secondary.append(row)
    secondary_columns = ["Model", *(f"Brier {GROUP_LABELS[g]}" for g in GROUPS), "Acc.", "Acc. any GT",
                         *(f"any GT {GROUP_LABELS[g]}" for g in GROUPS), "Brier (softmax)",
                         "Brier (softmax, graded)", "acc (sum LL)", "acc_norm (LL/char)"]
    types = [t for t in REASONING_TYPES if any(f"type:{t}" in r["metrics"]["acc"] for r in results)]
    per_type = []
    for r in results:
        row = {"Model": escape_markdown(r["label"])}
        for t in types:
            cell = r["metrics"]["acc"].get(f"type:{t}")
            row[TYPE_LABELS[t]] = "" if cell is None else _cell(cell, 100, 1, with_n=True)
        per_type.append(row)
    lines = [
        "Table 3 layout: models sorted by Brier score (lower is better); group columns are accuracy in %. "
        "Both are computed as the paper's authors computed them: Brier of each option's mean per-token "
        "log-likelihood after a 5-fold cross-validated Platt calibration, against the released answer "
        "probabilities; a question is correct when the model's top option is the ground truth the release "
        "ranks first. Cells are bootstrap medians with 95% percentile intervals over questions, as the "
        "authors quote them.",
        "",
        markdown_table([{k: v for k, v in row.items() if not k.startswith("_")} for row in main], columns),
    ]
    if published is not None:
        lines += ["", f"Published rows: {published.citation} ({published.questions or '?'} questions of the full "
                  "release), figures as published."]
        sizes = {r["counts"]["questions"] for r in results}
        if published.questions is not None and sizes - {published.questions}:
            lines += ["", f"**Note:** runs on {', '.join(str(n) for n in sorted(sizes))} questions are not on the "
                      f"question set of the published rows ({published.questions}); compare them with care."]
    lines += [
        "",
        "Secondary columns: the authors' Brier per group (bootstrap median); Acc. = the Table 3 rule overall; "
        "Acc. any GT = a choice of any ground truth counts, exact ties share the credit; Brier (softmax) = "
        "(1/n) sum_i (p_i - y_i)^2 with p the softmax of the mean per-token log-likelihoods over the "
        "question's own options and y = 1/k on each of its k ground truths ((graded): y = answer "
        "probabilities normalised); acc (sum LL) and acc_norm (LL/char) are lm-evaluation-harness's acc and "
        "acc_norm. These are full-sample values with 95% percentile bootstrap intervals over questions (the "
        "resamples of Table 3); an interval of no width is said in words.",
        "",
        markdown_table(secondary, secondary_columns),
        "",
        "Accuracy (%, the Table 3 rule) per reasoning type, full-sample values with 95% percentile bootstrap "
        "intervals and n, the questions of the type:",
        "",
        markdown_table(per_type, ["Model", *(TYPE_LABELS[t] for t in types)]),
    ]
    datasets = {r["dataset"].get("data_sha256") for r in results}
    if len(datasets) > 1:
        lines += ["", "**Warning:** these runs were computed on different builds of the dataset "
                  f"({', '.join(sorted(str(d)[:12] for d in datasets))}); they are not comparable."]
    signatures = [f"- {escape_markdown(r['label'])}: {code_span(r['signature']['text'])}" for r in results]
    lines += ["", "Signatures:", "", *signatures]
    return "\n".join(lines)


def likelihood_section(results: list[dict], published=None) -> ReportSection:
    ordered = sort_by_brier(results)
    data = {r["label"]: {"metrics": r["metrics"], "signature": r["signature"]["text"], "counts": r["counts"]}
            for r in ordered}
    if published is not None:
        data["published"] = {"source": published.citation, "questions": published.questions,
                             "rows": {p.label: p.cells for p in published.rows}}
    return ReportSection("Likelihood scoring (Table 3)", likelihood_markdown(ordered, published), data=data)
