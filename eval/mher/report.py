"""`histbench report mher`: Tables 2-7 and Figures 2-4 of the paper (and the section 7-8
analyses) from runs.

    histbench report mher runs/mher-baselines runs/gptx runs/qwen --out reports/mher

Table 2 comes from `--baseline table2` runs; Tables 3-7 from model runs and reference systems.
The report folder gets index.md / index.html / report.json (every number), the figures,
and `source_grounded_errors.csv` (every Source-grounded error with its rationales, for the
manual coding of Table 7, read back on the next report; coding.py).

Options that change a statistic (each recorded in report.json): `--bonferroni-family` /
`--bonferroni-tests` (the family of the Bonferroni adjustment: by default the generative
models of the report), `--cluster-bootstrap` (Table 6's estimator, by default the paper's
distinct-items one), `--error-codes` (a coded copy of the error listing kept elsewhere).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from histbench.core.dataset import BuiltDataset
from histbench.core.errors import EvalError
from histbench.core.markdown import code_span, escape_markdown
from histbench.core.progress import log
from histbench.eval.plugin import add_report_run_arguments
from histbench.eval.report import ReportSection, markdown_table, write_report

from . import metrics as M
from .analysis import CHALLENGES, SHUFFLES, System, analyse_models, baseline_table
from .coding import ERRORS_CSV, UNCODED, code_errors, coded_counts
from .data import Bench, Run, load_bench, read_run
from .figures import FIGURE_TITLES, figures

CONDITION_NAMES = {"name_only": "Name-only", "context_only": "Context-only", "source_grounded": "Source-grounded",
                   "shuffled_a": "Shuffled A", "shuffled_b": "Shuffled B", "shuffled_c": "Shuffled C",
                   "unresolved": "Unresolved"}


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    add_report_run_arguments(parser, "mher")
    parser.add_argument("--resamples", type=int, default=M.DEFAULT_BOOTSTRAP,
                        help=f"paired and cluster bootstrap resamples (default {M.DEFAULT_BOOTSTRAP:,}, as in 5.6)")
    parser.add_argument("--thinning", type=int, default=2000, help="one-pair-per-entity repetitions (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="resampling seed (default 0)")
    parser.add_argument("--split", choices=["test", "dev"], default="test", help="split to report (default test)")
    parser.add_argument("--bonferroni-family", nargs="+", metavar="SYSTEM",
                        help="systems (report labels) forming the Bonferroni family (default: every generative model "
                             "run; reference systems and baselines are outside it)")
    parser.add_argument("--bonferroni-tests", type=int, metavar="M",
                        help="number of tests in the family when it was fixed in advance and is larger than the runs "
                             "reported (e.g. 5, the paper's five models, when re-running one of them)")
    parser.add_argument("--cluster-bootstrap", choices=M.CLUSTER_ESTIMATORS, default=M.DEFAULT_CLUSTER_ESTIMATOR,
                        help="Table 6 estimator: distinct-items (default, the paper's: each item of a drawn person "
                             "counted once) or draw-weighted (items weighted by their persons' draw counts)")
    parser.add_argument("--error-codes", type=Path, metavar="CSV",
                        help=f"read the Table 7 categories from this coded copy of {ERRORS_CSV} (never written); by "
                             f"default from {ERRORS_CSV} in --out once a person has coded it")


def pct(value, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{100 * value:.{digits}f}"


def bounds(low, high, constant: bool | None = None) -> str:
    """A bootstrap interval '[low, high]' (percentage points); one of no width in words, never
    "[0.00, 0.00]" (issue 43): every resample gave that value (`constant`), or 95% of them did."""
    if low is not None and high is not None and pct(low) == pct(high):   # no width as shown
        return f"({'every resample' if constant else '95% of resamples'} {pct(low)})"
    return f"[{pct(low)}, {pct(high)}]"


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
        elif row["system"] in ("exact", "exact_normalised"):
            rule = "same iff equal (fixed)"
        else:
            rule = "logistic, p(same) >= 0.5"
        label = escape_markdown(row["label"] + (f" ({row['model']})" if row.get("model") else ""))
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
        rows.append({"Model": escape_markdown(label), "Items": m["n"],
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
        rows.append({"Model": escape_markdown(label), "Name": pct(paired["name_only"]["accuracy"]),
                     "Source": pct(paired["source_grounded"]["accuracy"]), "Δ": signed(diff["estimate"]),
                     "95% CI": bounds(diff['low'], diff['high'], diff.get('constant')), "W→C": t["W->C"], "C→W": t["C->W"],
                     "C→C": t["C->C"], "W→W": t["W->W"],
                     "McNemar p": pval(t["mcnemar_p"]), "Bonferroni p": pval(t.get("mcnemar_p_bonferroni"))})
    return markdown_table(rows, ["Model", "Name", "Source", "Δ", "95% CI", "W→C", "C→W", "C→C", "W→W", "McNemar p",
                                 "Bonferroni p"])


def bonferroni_note(analysis: dict) -> str:
    family = analysis.get("bonferroni", {})
    members = family.get("members", [])
    if not members:
        return ("No generative model is in this report, so no Bonferroni adjustment is shown (name a family with "
                "`--bonferroni-family`).")
    m = family.get("size") or len(members)
    who = "the systems named with `--bonferroni-family`" if family.get("named") else "the generative models"
    extra = f", a family fixed at {m} tests" if family.get("size") else ""
    return (f"Bonferroni p: McNemar p × {m} over {who} ({', '.join(members)}{extra}); systems outside the family "
            "have no adjusted p.")


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
            "Model": escape_markdown(label), "Ctx.-only": pct(paired["context_only"]["accuracy"]),
            "Source": pct(paired["source_grounded"]["accuracy"]),
            "Shuffle A/B/C": " / ".join(pct(paired[s]["accuracy"]) for s in SHUFFLES if s in paired),
            "Shuffle range": f"{pct(min(shuffles))}–{pct(max(shuffles))}" if shuffles else "",
            "Δ S−C [95% CI]": f"{signed(sc['estimate'])} {bounds(sc['low'], sc['high'], sc.get('constant'))}" if sc else "",
            "Δ S−Shuf [95% CI]": f"{signed(sshuf['estimate'])} {bounds(sshuf['low'], sshuf['high'], sshuf.get('constant'))}" if sshuf else "",
            "p (S vs C)": pval(t.get("context_only", {}).get("mcnemar_p")),
            "max p (S vs each shuffle)": pval(max(shuffle_p)) if shuffle_p else "",
        })
    return markdown_table(rows, ["Model", "Ctx.-only", "Source", "Shuffle A/B/C", "Shuffle range", "Δ S−C [95% CI]",
                                 "Δ S−Shuf [95% CI]", "p (S vs C)", "max p (S vs each shuffle)"])


def table6(models: dict) -> str:
    rows = []
    for label, res in models.items():
        rob = res.get("entity_robustness")
        if not rob or "cluster_bootstrap" not in rob:
            continue
        cb, th, loo = rob["cluster_bootstrap"], rob["thinning"], rob["leave_one_entity_out"]
        rows.append({"Model": escape_markdown(label), "Pair gain (pp)": signed(rob["pair_gain"]),
                     "Cluster boot. mean [95% CI]": f"{signed(cb['bootstrap_mean'])} {bounds(cb['low'], cb['high'], cb.get('constant'))}",
                     "One pair per entity: mean [95%]": f"{signed(th['mean'])} {bounds(th['low'], th['high'], th.get('constant'))}",
                     "LOO range (pp)": f"{pct(loo['min'])}–{pct(loo['max'])}",
                     "Entities (repeated)": f"{cb['entities']} ({rob['repeated_entities']})"})
    return markdown_table(rows, ["Model", "Pair gain (pp)", "Cluster boot. mean [95% CI]",
                                 "One pair per entity: mean [95%]", "LOO range (pp)", "Entities (repeated)"])


def table7(models: dict) -> str:
    """The automatic part of Table 7: each system's Source-grounded errors by direction,
    name-induced (Context-only was right) or persistent (Context-only was wrong too)."""
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
            rows.append({"Model": escape_markdown(label), "Source-grounded error": title, "Name-induced": row.get("name_induced", ""),
                         "Persistent": row.get("persistent", ""), "Total": row["total"]})
        rows.append({"Model": escape_markdown(label), "Source-grounded error": "**all errors**", "Name-induced": "", "Persistent": "",
                     "Total": err["errors"]})
    return markdown_table(rows, ["Model", "Source-grounded error", "Name-induced", "Persistent", "Total"])


def table7_coded(analysis: dict, coding: dict) -> str:
    """Table 7 as in the paper: the person-coded categories x name-induced / persistent."""
    rows = []
    for label, table in coded_counts(analysis, coding).items():
        for category, cell in table.items():
            rows.append({"Model": escape_markdown(label), "Error category": category, "Name-induced": cell["name_induced"],
                         "Persistent": cell["persistent"], "Total": cell["total"]})
        total = {k: sum(c[k] for c in table.values()) for k in ("name_induced", "persistent", "total")}
        rows.append({"Model": escape_markdown(label), "Error category": "**Total**", "Name-induced": total["name_induced"],
                     "Persistent": total["persistent"], "Total": total["total"]})
    return markdown_table(rows, ["Model", "Error category", "Name-induced", "Persistent", "Total"])


def coding_note(coding: dict) -> str:
    if not coding["errors"]:
        return "No system made a Source-grounded error, so there is nothing to code."
    parts = []
    if coding["codes_file"]:
        parts.append(f"Categories read from {code_span(Path(coding['codes_file']).name)} ({len(coding['codes'])} of "
                     f"{coding['errors']} errors coded).")
    else:
        parts.append(f"No category is coded yet: code the `category` column of `{ERRORS_CSV}` with the Table 7 "
                     "categories (sources/mher/error_categories.yaml) and rerun the report.")
    if coding["listing_was_coded"]:
        parts.append(f"`{ERRORS_CSV}` holds a person's coding and was left as it is.")
    if coding["uncoded"] and coding["codes_file"]:
        parts.append(f"{coding['uncoded']} error(s) of these runs have no code (listed in "
                     "`source_grounded_errors.uncoded.csv`); they count as '" + UNCODED + "'.")
    if coding["stale"]:
        first = coding["stale"][0]
        parts.append(f"{len(coding['stale'])} coded row(s) are not Source-grounded errors of these runs and are left "
                     f"out (first: {first['model']} {first['pair_id']}).")
    return " ".join(parts)


def probability_table(models: dict) -> str:
    rows = []
    for label, res in models.items():
        for condition, m in res.get("paired", {}).items():
            rows.append({"Model": escape_markdown(label), "Condition": CONDITION_NAMES[condition],
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
            rows.append({"Model": escape_markdown(label), "Slice": name.replace("_", "-"),
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

        rows.append({"Model": escape_markdown(label), "Entities": p["entities"], "ρ": dec(p["rho"]), "p": pval(p["p"]),
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
        rows.append({"Model": escape_markdown(label), "Items": u["n"], "Ambiguous": u["ambiguous"],
                     "Abstention share": pct(u["abstention_share"]), "Over-resolution": pct(u["over_resolution"]),
                     "Mean p(ambiguous)": dec(u["mean_p_ambiguous"])})
    return markdown_table(rows, ["Model", "Items", "Ambiguous", "Abstention share", "Over-resolution",
                                 "Mean p(ambiguous)"])


def aggregate_table(aggregate: dict) -> str:
    """Model-item decisions summed over the family (sections 8.1, 7.3, 8.5)."""
    rows = []

    def cell(counts):
        if not counts:
            return ""
        text = f"{counts['correct']}/{counts['n']}"
        others = [f"{counts[k]} {name}" for k, name in (("abstained", "ambiguous"), ("false_same", "false same"),
                                                        ("missed_same", "missed same")) if counts.get(k)]
        return text + (f" ({', '.join(others)})" if others else "")

    for name in CHALLENGES:
        counts = aggregate["slices"].get(name, {})
        rows.append({"Slice (paired items)": name.replace("_", "-"), "Name-only correct": cell(counts.get("name_only")),
                     "Context-only correct": cell(counts.get("context_only")),
                     "Source-grounded correct": cell(counts.get("source_grounded"))})
    table = markdown_table(rows, ["Slice (paired items)", "Name-only correct", "Context-only correct",
                                  "Source-grounded correct"])
    unresolved = aggregate.get("unresolved")
    if unresolved:
        table += (f"\n\nExpert-unresolved questions answered `ambiguous`: {unresolved['ambiguous']}/"
                  f"{unresolved['n']} model-item decisions.")
    return table


def _figure_markdown(name: str, path: Path, link_prefix: str) -> str:
    title = FIGURE_TITLES[name]
    return f"![{title}]({link_prefix}{path.name})"


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


def _published(number: int, names, split: str) -> str:
    """The paper's own Table `number` (TEST) under ours (issue 43): rows of the systems a run names,
    matched only by sources/mher/published/aliases.yaml, first; '' when none ships or off TEST."""
    if split != "test":
        return ""
    from histbench.core.published import published_markdown

    text = published_markdown("mher", number, [n for n in names if isinstance(n, str)])
    return "\n\n" + text if text else ""


def build_sections(bench: Bench, runs: list[Run], out_dir: Path, resamples: int, seed: int, thinning: int,
                   split: str = "test", figure_prefix: str = "", link_prefix: str = "",
                   family: list[str] | None = None, family_size: int | None = None,
                   cluster_estimator: str = M.DEFAULT_CLUSTER_ESTIMATOR,
                   error_codes: Path | None = None) -> tuple[list[ReportSection], dict]:
    """The report's sections and numbers; writes the figures and the Table 7 error listing
    (coding.py) into `out_dir`."""
    baseline_runs, systems = _systems_from_runs(runs)
    sections: list[ReportSection] = []
    data: dict = {"baselines": [], "analysis": {}}
    for run, info in baseline_runs:
        rows = baseline_table(bench, run.predictions, info)
        data["baselines"].append({"run": str(run.path), "rows": rows})
        n_name = len(bench.items("name_only", split))
        n_ctx = len(bench.items("context_only", split))
        embedding = info.get("embedding_model") or {}
        flag = ""
        if isinstance(embedding, dict) and embedding.get("coverage") == "English-only":
            flag = (f" The embedding rows use {embedding['name']}, an English-only model (the paper's embedding "
                    "baseline is multilingual): on names in Mongolian, Persian, Chinese and Latin scripts it is not "
                    "the paper's baseline.")
        sections.append(ReportSection(
            f"Table 2: non-generative baselines ({split.upper()})",
            f"Name-form methods on the full Name-only {split.upper()} set ({n_name} items); context methods on the "
            f"paired Context-only {split.upper()} subset ({n_ctx} items). Every threshold, vocabulary and fit was "
            f"chosen on DEV only.{flag}\n\n" + table2(rows, split) + _published(2, [r["system"] for r in rows], split),
        ))
    analysis = analyse_models(bench, systems, resamples=resamples, seed=seed, thinning=thinning, split=split,
                              family=family, family_size=family_size, cluster_estimator=cluster_estimator)
    data["analysis"] = analysis
    if not analysis:
        return sections, data
    models = analysis["models"]
    run_names = [n for run in runs if run.kind == "model" for n in (run.info.get("model"), run.label, *run.systems())]
    n_full = len(bench.items("name_only", split))
    n_paired = analysis["paired_items"]
    kinds = {res["kind"] for res in models.values()}
    note = ""
    if "reference" in kinds:
        note = ("Reference systems (deterministic logistic models on similarity features, fitted on DEV) stand in "
                "for language models here; they never abstain.\n\n")
    rationales = {(p.system, p.condition, p.item_id): p.rationale for run in runs for p in run.predictions
                  if p.condition in ("source_grounded", "context_only")}
    coding = code_errors(analysis, rationales, out_dir, error_codes)
    data["table7_coding"] = coding
    made = figures(analysis, out_dir, figure_prefix)

    def figure_section(name: str, text: str) -> None:
        if name in made:
            sections.append(ReportSection(FIGURE_TITLES[name] + f" ({split.upper()})",
                                          text + "\n\n" + _figure_markdown(name, made[name], link_prefix),
                                          figures=[made[name]]))

    sections.append(ReportSection(f"Table 3: Name-only behaviour on the full {split.upper()} set",
                                  f"{note}{n_full} items; ambiguous counts as wrong; Wilson 95% intervals.\n\n"
                                  + table3(models) + _published(3, run_names, split)))
    sections.append(ReportSection(
        f"Table 4: primary paired result (the same {n_paired} identity questions)",
        f"Accuracy (%) under Name-only and Source-grounded evidence; Δ with a paired item-bootstrap 95% interval "
        f"({analysis['resamples']:,} resamples); exact two-sided McNemar on the discordant pairs. "
        f"{bonferroni_note(analysis)}\n\n" + table4(models) + _published(4, run_names, split)))
    figure_section("paired_accuracy", "Panel A: accuracy under both conditions; panel B: the paired gain with its "
                                      "bootstrap interval (Table 4).")
    sections.append(ReportSection(
        "Table 5: falsification and ablation",
        "Context-only removes names, languages and scripts; the three shuffles reassign contexts by fixed "
        "derangements (disclosed to the model) and are reported separately; Δ S−Shuf uses their mean.\n\n"
        + table5(models) + _published(5, run_names, split)))
    figure_section("falsification", "Bars: the range of the three shuffled controls (A, B, C marked); triangle: "
                                    "Context-only; square: Source-grounded; beside each system: Source-grounded "
                                    "minus Context-only (pp).")
    estimator = analysis["cluster_estimator"]
    how = ("each item of a drawn person enters once, however often its persons are drawn (the paper's estimator, "
           "docs/mher.md)" if estimator == "distinct-items" else
           "each item weighs the mean draw count of its persons (`--cluster-bootstrap draw-weighted`)")
    sections.append(ReportSection(
        "Table 6: repeated-entity robustness",
        f"Cluster bootstrap resamples canonical persons ({analysis['resamples']:,} resamples): {how}; "
        f"one-pair-per-entity thinning repeated {analysis['thinning_repetitions']:,} times; LOO removes every "
        "item of one person.\n\n" + table6(models) + _published(6, run_names, split)))
    sections.append(ReportSection(
        "Table 7: Source-grounded errors (coded categories and error structure)",
        "Name-induced: Context-only was correct on the item; persistent: Context-only was also wrong. "
        f"{coding_note(coding)}\n\n" + table7_coded(analysis, coding) + "\n\nBy direction of the error:\n\n"
        + table7(models)))
    sections.append(ReportSection("Section 8.3: probabilistic quality and abstention by condition",
                                  "3-way Brier and log loss against the one-hot binary gold.\n\n"
                                  + probability_table(models)))
    figure_section("outcome_composition", "Correct, incorrect and ambiguous shares of the paired items.")
    sections.append(ReportSection("Section 8.1: challenge slices", slice_table(models)))
    aggregate = analysis["aggregate"]
    if aggregate["systems"]:
        sections.append(ReportSection(
            "Sections 8.1 and 7.3: decisions summed over the models",
            f"Model-item decisions of {', '.join(aggregate['systems'])} (the Bonferroni family) on the paired items "
            "(the paper: identical-surface 0/25 under Name-only and 24/25 under Source-grounded, the other an "
            "abstention; near-surface 0/35 under Name-only; 50/50 unresolved answered ambiguous).\n\n"
            + aggregate_table(aggregate)))
    sections.append(ReportSection(
        "Section 8.4: prominence",
        "Same items of the full Name-only set, averaged within person (head / mid / long-tail columns: "
        "entity-macro Name-only accuracy); Spearman ρ between ordinal prominence (long-tail < mid < head) and "
        f"accuracy; {bonferroni_note(analysis)} Last column: Source-grounded same items by stratum.\n\n"
        + prominence_table(models)))
    if split == "test":
        sections.append(ReportSection("Section 7.3: expert-unresolved sanity check", unresolved_table(models)))
    return sections, data


def open_run(path: Path) -> Run:
    """A run folder of the run format (an older one is refused with the command that
    converts it), read through the files its run.json names."""
    from histbench.core.runfolder import RunFolder

    from .data import PREDICTIONS_FILE, RUN_FILE

    folder = RunFolder.open(Path(path), benchmark="mher")
    return read_run(folder.path, folder.extra(RUN_FILE), folder.extra(PREDICTIONS_FILE))


def run_report(args: argparse.Namespace) -> None:
    runs = [open_run(path) for path in args.runs]
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
    sections, data = build_sections(bench, runs, out, args.resamples, args.seed, args.thinning, args.split,
                                    family=args.bonferroni_family, family_size=args.bonferroni_tests,
                                    cluster_estimator=args.cluster_bootstrap, error_codes=args.error_codes)
    # folders by name: the page is shared, their place on this disk is not (report.json has them relative)
    sections.append(ReportSection("Data", f"Dataset {code_span(Path(built.path).name)} (data sha256 `{bench.identity.get('data_sha256')}`); "
                                  f"runs: {', '.join(code_span(Path(r.path).name) for r in runs)}.", data=data))
    index = write_report(sections, out, "MHER report")
    log(f"[mher] report: {index}")
    print(index)
