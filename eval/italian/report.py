"""Tables in the paper's style (one per task, one row per run) and the `make demo` section."""

from __future__ import annotations

from pathlib import Path

from histbench.eval.report import ReportSection, format_ci, markdown_table

from .tasks import MCQ_TASKS, NER_TASKS

TITLES = {
    "wsd": "Word sense disambiguation (LeggoManzoni, 3.1): accuracy",
    "ner_classense": "NER, Canneti-Fiacchi letters (3.2): macro precision / recall / F1",
    "ner_bellini": "NER, Bellini letters (3.2): macro precision / recall / F1",
    "chrono_ranking": "Chronological ranking (Biblioteca Italiana, 3.3): mean Spearman correlation",
    "authorship": "Authorship verification (Biblioteca Italiana, 3.3): accuracy",
    "head": "Head prediction (Cavalcanti, 3.4): accuracy",
    "deprel": "Dependency relation prediction (Cavalcanti, 3.4): accuracy",
    "intertext": "Intertextuality detection (DanteSources, 3.5): accuracy",
}
ORDER = ("wsd", "ner_classense", "ner_bellini", "chrono_ranking", "authorship", "head", "deprel", "intertext")


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
                rows.append({"model": run["model"], "letters": m["letters"],
                             "strict P": m["strict"]["precision"], "strict R": m["strict"]["recall"], "strict F1": m["strict"]["f1"],
                             "fuzzy P": m["fuzzy"]["precision"], "fuzzy R": m["fuzzy"]["recall"], "fuzzy F1": m["fuzzy"]["f1"],
                             "parse failures": m["parse_failures"]})
            else:
                key = "mean_spearman" if task == "chrono_ranking" else "accuracy"
                row = {"model": run["model"], "n": m["n"],
                       ("mean Spearman [95% CI]" if key == "mean_spearman" else "accuracy [95% CI]"): format_ci(m[key], m["ci_low"], m["ci_high"])}
                for genre, value in (m.get("by_genre") or {}).items():
                    row[genre] = value
                row["parse failures"] = m["parse_failures"]
                rows.append(row)
        columns = list(dict.fromkeys(k for r in rows for k in r))
        parts += [f"#### {TITLES[task]}", "", markdown_table(rows, columns), ""]
    return "\n".join(parts)


def demo_section(built, work_dir: Path, report_dir: Path) -> ReportSection:
    """Baselines (random, first option, capitalised-words NER) on the sample build, with a figure."""
    from .run import evaluate

    runs = []
    for baseline in ("random", "first", "capitalised"):
        runs.append(evaluate(built, work_dir / baseline, baseline=baseline))
    text = results_markdown(runs)
    figures = []
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        tasks = [t for t in ORDER if t in runs[0]["tasks"]]
        fig, ax = plt.subplots(figsize=(8, 3.2))
        width = 0.27
        for k, run in enumerate(runs):
            values = []
            for t in tasks:
                m = run["tasks"][t]
                values.append(m["fuzzy"]["f1"] if t in NER_TASKS else m.get("accuracy", m.get("mean_spearman")))
            ax.bar([i + (k - 1) * width for i in range(len(tasks))], values, width, label=run["model"])
        ax.set_xticks(range(len(tasks)), tasks, rotation=30, ha="right")
        ax.set_ylabel("accuracy / Spearman / fuzzy F1")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = Path(report_dir) / "baselines.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        figures.append(path)
        text += f"\n![baselines on the sample build](italian/{path.name})\n"
    except Exception:  # noqa: BLE001 - a figure is never worth failing the demo
        pass
    intro = ("No-model baselines on the sample build (MCQ chance: 1/6 for wsd, 1/4 for authorship, head and deprel, "
             "1/2 for intertext; NER from capitalised words). "
             f"Tasks scored as multiple choice: {', '.join(MCQ_TASKS)}.\n\n")
    return ReportSection("Historical Italian baselines", intro + text, figures, {"runs": runs})
