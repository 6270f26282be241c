"""`histbench report mher`: Tables 2-7 of the paper (and the section 7-8 analyses) from runs.

    histbench report mher runs/mher-baselines runs/gptx runs/qwen --out reports/mher

Table 2 comes from `--baseline table2` runs; Tables 3-7 from model runs and reference systems.
The report folder gets index.md / index.html / report.json (every number), the figures,
and `source_grounded_errors.csv` (every Source-grounded error with its rationale, for the
manual coding of Table 7).
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

from histbench.builders.core.dataset import BuiltDataset
from histbench.builders.core.errors import EvalError
from histbench.builders.core.progress import log
from histbench.eval.report import ReportSection, markdown_table, write_report

from . import metrics as M
from .analysis import SHUFFLES, System, analyse_models, baseline_table
from .data import Bench, Run, load_bench, read_run

DEFAULT_REPORT_DIR = Path("reports/mher")
CONDITION_NAMES = {"name_only": "Name-only", "context_only": "Context-only", "source_grounded": "Source-grounded",
                   "shuffled_a": "Shuffled A", "shuffled_b": "Shuffled B", "shuffled_c": "Shuffled C",
                   "unresolved": "Unresolved"}


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="run folders of `histbench eval mher`")
    parser.add_argument("--out", type=Path, default=DEFAULT_REPORT_DIR, help=f"report folder (default {DEFAULT_REPORT_DIR})")
    parser.add_argument("--dataset", help="the build the runs were made on (default: the one recorded in the first run)")
    parser.add_argument("--revision", help="Hub revision when --dataset is a Hub id")
    parser.add_argument("--resamples", type=int, default=M.DEFAULT_BOOTSTRAP,
                        help=f"paired and cluster bootstrap resamples (default {M.DEFAULT_BOOTSTRAP:,}, as in 5.6)")
    parser.add_argument("--thinning", type=int, default=2000, help="one-pair-per-entity repetitions (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="resampling seed (default 0)")
    parser.add_argument("--split", choices=["test", "dev"], default="test", help="split to report (default test)")


def pct(value, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{100 * value:.{digits}f}"


def signed(value, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{100 * value:+.{digits}f}"


def dec(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("0.") else text


def pval(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.2e}" if value < 1e-3 else f"{value:.4f}"


def table2(rows: list[dict], split: str = "test") -> str:
    out = []
    for row in rows:
        metrics = row.get(split)
        if not metrics:
            continue
        threshold = row.get("threshold")
        if threshold:
            rule = threshold["rule"]
        elif row["system"] in ("exact", "nfkc_casefold"):
            rule = "same iff equal (fixed)"
        else:
            rule = "logistic, p(same) >= 0.5"
        label = row["label"] + (f" ({row['model']})" if row.get("model") else "")
        out.append({"Evidence": "Name" if row["condition"] == "name_only" else "Context", "Method": label,
                    "Items": metrics["n"], "Accuracy": pct(metrics["accuracy"]), "Macro-F1": dec(metrics["macro_f1"]),
                    "DEV accuracy": pct(row.get("dev_fit_accuracy")), "Decision rule (DEV)": rule})
    return markdown_table(out, ["Evidence", "Method", "Items", "Accuracy", "Macro-F1", "DEV accuracy",
                                "Decision rule (DEV)"], "llrrrrl")


def table3(models: dict) -> str:
    rows = []
    for label, res in models.items():
        m = res.get("name_only_full")
        if not m:
            continue
        rows.append({"Model": label, "Items": m["n"],
                     "Acc. [Wilson 95%]": f"{pct(m['accuracy'])} [{pct(m['accuracy_low'])}, {pct(m['accuracy_high'])}]",
                     "Macro-F1": dec(m["macro_f1"]), "Abst.": pct(m["abstention"]),
                     "Sel. Acc.": pct(m["selective_accuracy"]), "Invalid": m.get("invalid", 0)})
    return markdown_table(rows, ["Model", "Items", "Acc. [Wilson 95%]", "Macro-F1", "Abst.", "Sel. Acc.", "Invalid"])


def table4(models: dict) -> str:
    rows = []
    for label, res in models.items():
        paired, t = res.get("paired", {}), res.get("transitions", {}).get("name_only")
        diff = res.get("bootstrap_difference", {}).get("source_grounded-name_only")
        if not t or not diff:
            continue
        rows.append({"Model": label, "Name": pct(paired["name_only"]["accuracy"]),
                     "Source": pct(paired["source_grounded"]["accuracy"]), "Δ": signed(diff["estimate"]),
                     "95% CI": f"[{pct(diff['low'])}, {pct(diff['high'])}]", "W→C": t["W->C"], "C→W": t["C->W"],
                     "C→C": t["C->C"], "W→W": t["W->W"],
                     "McNemar p": pval(t["mcnemar_p"]), "Bonferroni p": pval(t.get("mcnemar_p_bonferroni"))})
    return markdown_table(rows, ["Model", "Name", "Source", "Δ", "95% CI", "W→C", "C→W", "C→C", "W→W", "McNemar p",
                                 "Bonferroni p"])


def table5(models: dict) -> str:
    rows = []
    for label, res in models.items():
        paired = res.get("paired", {})
        if "source_grounded" not in paired or "context_only" not in paired:
            continue
        shuffles = [paired[s]["accuracy"] for s in SHUFFLES if s in paired]
        diffs = res.get("bootstrap_difference", {})
        sc, sshuf = diffs.get("source_grounded-context_only"), diffs.get("source_grounded-shuffle_mean")
        t = res.get("transitions", {})
        shuffle_p = [t[s]["mcnemar_p"] for s in SHUFFLES if s in t]
        rows.append({
            "Model": label, "Ctx.-only": pct(paired["context_only"]["accuracy"]),
            "Source": pct(paired["source_grounded"]["accuracy"]),
            "Shuffle A/B/C": " / ".join(pct(paired[s]["accuracy"]) for s in SHUFFLES if s in paired),
            "Shuffle range": f"{pct(min(shuffles))}–{pct(max(shuffles))}" if shuffles else "",
            "Δ S−C [95% CI]": f"{signed(sc['estimate'])} [{pct(sc['low'])}, {pct(sc['high'])}]" if sc else "",
            "Δ S−Shuf [95% CI]": f"{signed(sshuf['estimate'])} [{pct(sshuf['low'])}, {pct(sshuf['high'])}]" if sshuf else "",
            "p (S vs C)": pval(t.get("context_only", {}).get("mcnemar_p")),
            "max p (S vs each shuffle)": pval(max(shuffle_p)) if shuffle_p else "",
        })
    return markdown_table(rows, ["Model", "Ctx.-only", "Source", "Shuffle A/B/C", "Shuffle range", "Δ S−C [95% CI]",
                                 "Δ S−Shuf [95% CI]", "p (S vs C)", "max p (S vs each shuffle)"])


def table6(models: dict) -> str:
    rows = []
    for label, res in models.items():
        rob = res.get("entity_robustness")
        if not rob:
            continue
        cb, th, loo = rob["cluster_bootstrap"], rob["thinning"], rob["leave_one_entity_out"]
        rows.append({"Model": label, "Pair gain (pp)": signed(rob["pair_gain"]),
                     "Cluster boot. mean [95% CI]": f"{signed(cb['bootstrap_mean'])} [{pct(cb['low'])}, {pct(cb['high'])}]",
                     "One pair per entity: mean [95%]": f"{signed(th['mean'])} [{pct(th['low'])}, {pct(th['high'])}]",
                     "LOO range (pp)": f"{pct(loo['min'])}–{pct(loo['max'])}",
                     "Entities (repeated)": f"{cb['entities']} ({rob['repeated_entities']})"})
    return markdown_table(rows, ["Model", "Pair gain (pp)", "Cluster boot. mean [95% CI]",
                                 "One pair per entity: mean [95%]", "LOO range (pp)", "Entities (repeated)"])


def table7(models: dict) -> str:
    rows = []
    names = {"false_same_merge": "False same merge", "missed_same": "Missed same", "abstention": "Abstention"}
    for label, res in models.items():
        err = res.get("source_errors")
        if not err:
            continue
        for key, title in names.items():
            row = err[key]
            if not row["total"]:
                continue
            rows.append({"Model": label, "Source-grounded error": title, "Name-induced": row.get("name_induced", ""),
                         "Persistent": row.get("persistent", ""), "Total": row["total"]})
        rows.append({"Model": label, "Source-grounded error": "**all errors**", "Name-induced": "", "Persistent": "",
                     "Total": err["errors"]})
    return markdown_table(rows, ["Model", "Source-grounded error", "Name-induced", "Persistent", "Total"])


def probability_table(models: dict) -> str:
    rows = []
    for label, res in models.items():
        for condition, m in res.get("paired", {}).items():
            rows.append({"Model": label, "Condition": CONDITION_NAMES[condition],
                         "Acc. [Wilson 95%]": f"{pct(m['accuracy'])} [{pct(m['accuracy_low'])}, {pct(m['accuracy_high'])}]",
                         "Abst.": pct(m["abstention"]), "Sel. Acc.": pct(m["selective_accuracy"]),
                         "Mean p(gold)": dec(m.get("mean_p_gold")), "Brier": dec(m.get("brier")),
                         "Log loss": dec(m.get("log_loss")), "Mean p(ambiguous)": dec(m.get("mean_p_ambiguous")),
                         "Invalid": m.get("invalid", 0)})
    return markdown_table(rows, ["Model", "Condition", "Acc. [Wilson 95%]", "Abst.", "Sel. Acc.", "Mean p(gold)", "Brier",
                                 "Log loss", "Mean p(ambiguous)", "Invalid"])


def slice_table(models: dict) -> str:
    rows = []
    slices = ("cross_language", "cross_script", "near_surface", "identical_surface")
    for label, res in models.items():
        full = res.get("slices_name_only_full", {})
        paired = res.get("slices_paired", {})
        for name in slices:
            def cell(d):
                return f"{d['correct']}/{d['n']}" if d and d["n"] else "0/0"
            rows.append({"Model": label, "Slice": name.replace("_", "-"),
                         "Name-only (all)": cell(full.get(name)),
                         "Name-only (paired)": cell(paired.get("name_only", {}).get(name)),
                         "Context-only": cell(paired.get("context_only", {}).get(name)),
                         "Source-grounded": cell(paired.get("source_grounded", {}).get(name))})
    return markdown_table(rows, ["Model", "Slice", "Name-only (all)", "Name-only (paired)", "Context-only",
                                 "Source-grounded"])


def prominence_table(models: dict) -> str:
    rows = []
    for label, res in models.items():
        p = res.get("prominence")
        if not p:
            continue
        strata = p.get("by_stratum", {})
        grounded = res.get("slices_paired", {}).get("source_grounded", {})

        def cell(stratum, grounded=grounded):
            d = grounded.get(f"same_{stratum}")
            return f"{d['correct']}/{d['n']}" if d else ""

        rows.append({"Model": label, "Entities": p["entities"], "ρ": dec(p["rho"]), "p": pval(p["p"]),
                     "p (Bonferroni)": pval(p.get("p_bonferroni")), "head": pct(strata.get("head")),
                     "mid": pct(strata.get("mid")), "long-tail": pct(strata.get("long-tail")),
                     "Source-grounded same: head / mid / long-tail": " / ".join(cell(s) for s in ("head", "mid", "long-tail"))})
    return markdown_table(rows, ["Model", "Entities", "ρ", "p", "p (Bonferroni)", "head", "mid", "long-tail",
                                 "Source-grounded same: head / mid / long-tail"])


def unresolved_table(models: dict) -> str:
    rows = []
    for label, res in models.items():
        u = res.get("unresolved")
        if not u:
            continue
        rows.append({"Model": label, "Items": u["n"], "Ambiguous": u["ambiguous"],
                     "Abstention share": pct(u["abstention_share"]), "Over-resolution": pct(u["over_resolution"]),
                     "Mean p(ambiguous)": dec(u["mean_p_ambiguous"])})
    return markdown_table(rows, ["Model", "Items", "Ambiguous", "Abstention share", "Over-resolution",
                                 "Mean p(ambiguous)"])


def figures(analysis: dict, out_dir: Path, prefix: str = "") -> list[Path]:
    """Figure 2 (paired accuracies and gains) and Figure 4 (outcome composition)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = {k: v for k, v in analysis.get("models", {}).items() if "source_grounded-name_only" in
              v.get("bootstrap_difference", {})}
    if not models:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    labels = list(models)
    paths = []
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 0.6 * len(labels) + 2.2))
    y = range(len(labels))
    name = [100 * models[m]["paired"]["name_only"]["accuracy"] for m in labels]
    source = [100 * models[m]["paired"]["source_grounded"]["accuracy"] for m in labels]
    ax1.scatter(name, y, label="Name-only", marker="o")
    ax1.scatter(source, y, label="Source-grounded", marker="s")
    for i in y:
        ax1.plot([name[i], source[i]], [i, i], color="grey", lw=0.8, zorder=0)
    ax1.set_yticks(list(y), labels)
    ax1.set_xlabel("accuracy (%)")
    ax1.set_xlim(-2, 102)
    ax1.legend(loc="lower right", fontsize=8)
    ax1.set_title("A. Paired accuracy")
    diffs = [models[m]["bootstrap_difference"]["source_grounded-name_only"] for m in labels]
    est = [100 * d["estimate"] for d in diffs]
    err = [[100 * (d["estimate"] - d["low"]) for d in diffs], [100 * (d["high"] - d["estimate"]) for d in diffs]]
    ax2.errorbar(est, list(y), xerr=err, fmt="o", capsize=3)
    ax2.axvline(0, color="grey", lw=0.8)
    ax2.set_yticks(list(y), [""] * len(labels))
    ax2.set_xlabel("Source − Name (pp), paired bootstrap 95% CI")
    ax2.set_title("B. Paired gain")
    fig.tight_layout()
    path = out_dir / f"{prefix}paired_accuracy.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)

    fig, axes = plt.subplots(1, 2, figsize=(10, 0.6 * len(labels) + 2.2), sharey=True)
    for ax, condition, title in zip(axes, ("name_only", "source_grounded"), ("Name-only", "Source-grounded"),
                                    strict=True):
        correct, wrong, abstain = [], [], []
        for m in labels:
            met = models[m]["paired"][condition]
            correct.append(100 * met["accuracy"])
            abstain.append(100 * met["abstention"])
            wrong.append(100 - correct[-1] - abstain[-1])
        ax.barh(list(y), correct, color="#4c9a5b", label="correct")
        ax.barh(list(y), wrong, left=correct, color="#c8553d", label="incorrect")
        ax.barh(list(y), abstain, left=[c + w for c, w in zip(correct, wrong, strict=True)], color="#bbbbbb",
                label="ambiguous")
        ax.set_yticks(list(y), labels)
        ax.set_xlim(0, 100)
        ax.set_xlabel("% of paired items")
        ax.set_title(title)
    axes[1].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path = out_dir / f"{prefix}outcome_composition.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)
    return paths


def _systems_from_runs(runs: list[Run]) -> tuple[list[tuple[Run, dict]], list[System]]:
    baseline_runs, systems = [], []
    seen: set[str] = set()
    for run in runs:
        if run.kind == "baselines":
            baseline_runs.append((run, run.info))
            continue
        names = run.systems()
        for name in names:
            label = name if len(names) > 1 or run.kind == "reference" else run.label
            if label in seen:
                raise EvalError(f"two runs are both labelled {label!r}; rerun one with --label", file=run.path)
            seen.add(label)
            systems.append(System(label, name, run.predictions, run.kind))
    return baseline_runs, systems


def build_sections(bench: Bench, runs: list[Run], out_dir: Path, resamples: int, seed: int, thinning: int,
                   split: str = "test", figure_prefix: str = "", link_prefix: str = "") -> tuple[list[ReportSection], dict]:
    baseline_runs, systems = _systems_from_runs(runs)
    sections: list[ReportSection] = []
    data: dict = {"baselines": [], "analysis": {}}
    for run, info in baseline_runs:
        rows = baseline_table(bench, run.predictions, info)
        data["baselines"].append({"run": str(run.path), "rows": rows})
        n_name = len(bench.items("name_only", split))
        n_ctx = len(bench.items("context_only", split))
        sections.append(ReportSection(
            f"Table 2: non-generative baselines ({split.upper()})",
            f"Name-form methods on the full Name-only {split.upper()} set ({n_name} items); context methods on the "
            f"paired Context-only {split.upper()} subset ({n_ctx} items). Every threshold, vocabulary and fit was "
            "chosen on DEV only.\n\n" + table2(rows, split),
        ))
    analysis = analyse_models(bench, systems, resamples=resamples, seed=seed, thinning=thinning, split=split)
    data["analysis"] = analysis
    if analysis:
        models = analysis["models"]
        n_full = len(bench.items("name_only", split))
        n_paired = analysis["paired_items"]
        kinds = {res["kind"] for res in models.values()}
        note = ""
        if "reference" in kinds:
            note = ("Reference systems (deterministic logistic models on similarity features, fitted on DEV) stand in "
                    "for language models here; they never abstain.\n\n")
        sections.append(ReportSection(f"Table 3: Name-only behaviour on the full {split.upper()} set",
                                      f"{note}{n_full} items; ambiguous counts as wrong; Wilson 95% intervals.\n\n"
                                      + table3(models)))
        figs = figures(analysis, out_dir, figure_prefix)
        fig_md = "".join(f"\n\n![{p.stem}]({link_prefix}{p.name})" for p in figs)
        sections.append(ReportSection(
            f"Table 4: primary paired result (the same {n_paired} identity questions)",
            f"Accuracy (%) under Name-only and Source-grounded evidence; Δ with a paired item-bootstrap 95% interval "
            f"({analysis['resamples']:,} resamples); exact two-sided McNemar on the discordant pairs, Bonferroni over "
            "the models compared.\n\n" + table4(models) + fig_md, figures=figs))
        sections.append(ReportSection(
            "Table 5: falsification and ablation",
            "Context-only removes names, languages and scripts; the three shuffles reassign contexts by fixed "
            "derangements (disclosed to the model) and are reported separately; Δ S−Shuf uses their mean.\n\n"
            + table5(models)))
        sections.append(ReportSection(
            "Table 6: repeated-entity robustness",
            "Cluster bootstrap resamples canonical persons (an item weighs the mean draw count of its persons); "
            f"one-pair-per-entity thinning repeated {analysis['thinning_repetitions']:,} times; LOO removes every "
            "item of one person.\n\n" + table6(models)))
        sections.append(ReportSection(
            "Table 7: structure of the Source-grounded errors",
            "Name-induced: Context-only was correct on the item; persistent: Context-only was also wrong. The "
            "qualitative categories of the paper are coded by hand from `source_grounded_errors.csv`.\n\n"
            + table7(models)))
        sections.append(ReportSection("Probabilistic quality and abstention by condition (section 8.3)",
                                      "3-way Brier and log loss against the one-hot binary gold.\n\n"
                                      + probability_table(models)))
        sections.append(ReportSection("Challenge slices (section 8.1)", slice_table(models)))
        sections.append(ReportSection(
            "Prominence (section 8.4)",
            "Same items of the full Name-only set, averaged within person (head / mid / long-tail columns: "
            "entity-macro Name-only accuracy); Spearman ρ between ordinal prominence (long-tail < mid < head) and "
            "accuracy, Bonferroni over models; last column: Source-grounded same items by stratum.\n\n" + prominence_table(models)))
        if split == "test":
            sections.append(ReportSection("Expert-unresolved sanity check (section 7.3)", unresolved_table(models)))
    return sections, data


def write_errors_csv(bench: Bench, runs: list[Run], analysis: dict, path: Path) -> None:
    rationale = {}
    for run in runs:
        for p in run.predictions:
            if p.condition in ("source_grounded", "context_only"):
                rationale[(p.system, p.condition, p.item_id)] = p.rationale
    _, systems = _systems_from_runs(runs)
    by_label = {s.label: s for s in systems}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model", "pair_id", "gold", "source_grounded_action", "context_only_correct",
                         "source_grounded_rationale", "context_only_rationale", "category"])
        for label, res in analysis.get("models", {}).items():
            system = by_label[label].system
            for item in res.get("source_errors", {}).get("items", []):
                writer.writerow([label, item["pair_id"], item["gold"], item["action"], item["context_only_correct"],
                                 rationale.get((system, "source_grounded", item["pair_id"])) or "",
                                 rationale.get((system, "context_only", item["pair_id"])) or "", ""])


def run_report(args: argparse.Namespace) -> None:
    runs = [read_run(path) for path in args.runs]
    dataset = args.dataset or (runs[0].info.get("dataset") or {}).get("path")
    if not dataset:
        raise EvalError("the run does not record its dataset; pass --dataset")
    built = BuiltDataset.open(dataset, revision=args.revision, benchmark="mher")
    bench = load_bench(built)
    for run in runs:
        recorded = (run.info.get("dataset") or {}).get("data_sha256")
        if recorded and recorded != bench.identity.get("data_sha256"):
            raise EvalError(f"run {run.path} was made on dataset data {recorded[:12]}, not on {built.path} "
                            f"({str(bench.identity.get('data_sha256'))[:12]})", file=run.path)
    out = Path(args.out)
    sections, data = build_sections(bench, runs, out, args.resamples, args.seed, args.thinning, args.split)
    if data["analysis"]:
        write_errors_csv(bench, runs, data["analysis"], out / "source_grounded_errors.csv")
    sections.append(ReportSection("Data", f"Dataset `{built.path}` (data sha256 `{bench.identity.get('data_sha256')}`); "
                                  f"runs: {', '.join(f'`{r.path}`' for r in runs)}.", data=data))
    index = write_report(sections, out, "MHER report")
    log(f"[mher] report: {index}")
    print(index)
