"""`histbench report chronologic RUN [RUN ...]`: tables from run folders.

Each run folder's results.json names its mode; runs are grouped by mode and handed to
that mode's reporter (`REPORTERS` in the package). The likelihood reporter makes Table 3:
models sorted by Brier score (lower is better), accuracy per group, with 95% intervals.
"""

from __future__ import annotations

from pathlib import Path

from histbench.builders.chronologic.taxonomy import GROUP_LABELS, GROUPS, REASONING_TYPES, TYPE_LABELS
from histbench.builders.core.errors import EvalError, UsageError
from histbench.builders.core.readers import read_json_object
from histbench.eval.report import ReportSection, markdown_table

RESULTS_NAME = "results.json"


def load_results(run_dir: Path) -> dict:
    path = Path(run_dir) / RESULTS_NAME if Path(run_dir).is_dir() else Path(run_dir)
    if not path.is_file():
        raise EvalError(f"no {RESULTS_NAME} here (is the run finished? rerun its eval command to complete it)",
                        file=run_dir)
    data = read_json_object(path, error=EvalError)
    if data.get("benchmark") != "chronologic":
        raise EvalError(f"not a chronologic result (benchmark {data.get('benchmark')!r})", file=path)
    return data


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


def _cell(interval: dict | None, scale: float = 1.0, digits: int = 3) -> str:
    if not interval:
        return ""
    return (f"{interval['estimate'] * scale:.{digits}f} "
            f"[{interval['low'] * scale:.{digits}f}, {interval['high'] * scale:.{digits}f}]")


def sort_by_brier(results: list[dict]) -> list[dict]:
    """Table 3 order: lowest (best) Brier first; ties by label."""
    return sorted(results, key=lambda r: (r["metrics"]["brier"]["overall"]["estimate"], r["label"]))


def likelihood_markdown(results: list[dict]) -> str:
    results = sort_by_brier(results)
    main = []
    for r in results:
        m = r["metrics"]
        row = {"Model": r["label"], "Brier": _cell(m["brier"]["overall"], digits=4)}
        for group in GROUPS:
            row[GROUP_LABELS[group]] = _cell(m["acc"].get(f"group:{group}"), 100, 1)
        row["Acc."] = _cell(m["acc"]["overall"], 100, 1)
        row["acc (sum LL)"] = _cell(m["acc_sum"]["overall"], 100, 1)
        row["acc_norm (LL/char)"] = _cell(m["acc_norm"]["overall"], 100, 1)
        row["Brier (graded)"] = _cell(m["brier_graded"]["overall"], digits=4)
        row["n"] = r["counts"]["questions"]
        main.append(row)
    columns = ["Model", "Brier", *(GROUP_LABELS[g] for g in GROUPS), "Acc.", "acc (sum LL)",
               "acc_norm (LL/char)", "Brier (graded)", "n"]
    types = [t for t in REASONING_TYPES if any(f"type:{t}" in r["metrics"]["acc"] for r in results)]
    per_type = []
    for r in results:
        row = {"Model": r["label"]}
        for t in types:
            cell = r["metrics"]["acc"].get(f"type:{t}")
            row[TYPE_LABELS[t]] = "" if cell is None else f"{cell['estimate'] * 100:.1f} (n={cell['n']})"
        per_type.append(row)
    lines = [
        "Models sorted by Brier score (lower is better), as in Table 3 of the paper. Group columns are "
        "accuracy in % (the option with the highest mean per-token log-likelihood is a ground truth); "
        "brackets are percentile bootstrap 95% intervals over questions.",
        "",
        markdown_table(main, columns),
        "",
        "Accuracy (%) per reasoning type:",
        "",
        markdown_table(per_type, ["Model", *(TYPE_LABELS[t] for t in types)]),
        "",
        "Definitions: Brier = mean over questions of (1/n) sum_i (p_i - y_i)^2 over the question's own n "
        "options, p = softmax of mean per-token log-likelihoods, y = 1/k on each of its k ground truths; "
        "Brier (graded) uses y = answer_probabilities normalised. acc (sum LL) and acc_norm (LL/char) are "
        "lm-evaluation-harness's acc and acc_norm. Exact ties score the share of ground truths among the "
        "tied options.",
    ]
    datasets = {r["dataset"].get("data_sha256") for r in results}
    if len(datasets) > 1:
        lines += ["", "**Warning:** these runs were computed on different builds of the dataset "
                  f"({', '.join(sorted(str(d)[:12] for d in datasets))}); they are not comparable."]
    signatures = [f"- {r['label']}: `{r['signature']['text']}`" for r in results]
    lines += ["", "Signatures:", "", *signatures]
    return "\n".join(lines)


def likelihood_section(results: list[dict]) -> ReportSection:
    ordered = sort_by_brier(results)
    return ReportSection(
        "Likelihood scoring (Table 3)",
        likelihood_markdown(ordered),
        data={r["label"]: {"metrics": r["metrics"], "signature": r["signature"]["text"], "counts": r["counts"]}
              for r in ordered},
    )
