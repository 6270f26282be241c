"""Tables and figures for valence runs, in the style of the paper's Tables 1-3 and Figures 1-3.

- Summary table: per model and group, mean beta and delta with 95% bootstrap intervals over
  sentences, medians, and how many (model, sentence) pairs could not be scored and why.
- Per-sentence tables (Tables 1-3 style): for a sentence, rho and, per model, the top-k
  words with p and sigma, then beta(m, s) and delta(m, s). The report shows one example
  sentence per group (or those given with --examples); RUN/report/sentences.md holds all.
- Figure 1: the distribution of beta per group and model (box or violin plots).
- Figure 2: the same for delta.
- Figure 3: mean beta per group and model with its bootstrap interval, against the
  group's mean rho (which model leans towards which variety in each group).
Everything is also written as CSV (scores.csv per model x sentence, candidates.csv per
prediction, summary.csv per model x group).
"""

from __future__ import annotations

import math
from pathlib import Path

from histbench.core.markdown import escape_markdown
from histbench.core.sheets import sheet_text
from histbench.eval.report import ReportSection, format_ci, format_number, markdown_table

from .metrics import PROBABILITY_MODES
from .scoring import Scores

STATUS_TEXT = {
    "incomplete": "a top-k word is not annotated",
    "no scored word": "no top-k word is a scored whole word",
    "no prediction": "the model gave no prediction",
}


def _fmt(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format_number(float(value), digits)


def summary_table(scores: Scores, mode: str) -> str:
    rows = []
    for r in scores.summary:
        rows.append([
            escape_markdown(r["model"]), escape_markdown(r["group"]), r["sentences"], r["scored"], _fmt(r["mean_rho"], 2),
            format_ci(r[f"beta_{mode}_mean"], r[f"beta_{mode}_low"], r[f"beta_{mode}_high"],
                      n=r.get(f"beta_{mode}_n"), constant=r.get(f"beta_{mode}_constant")) or "-",
            _fmt(r[f"beta_{mode}_median"]),
            format_ci(r[f"delta_{mode}_mean"], r[f"delta_{mode}_low"], r[f"delta_{mode}_high"],
                      n=r.get(f"delta_{mode}_n"), constant=r.get(f"delta_{mode}_constant")) or "-",
            _fmt(r[f"delta_{mode}_median"]),
            _fmt(r["mass_scored_mean"]), _fmt(r["mass_subword_mean"]),
        ])
    header = ["model", "group", "sentences", "scored", "mean rho", "beta mean [95% percentile bootstrap]", "beta median",
              "delta mean [95% percentile bootstrap]", "delta median", "scored p mass", "sub-word p mass"]
    return markdown_table(rows, header, "llrrrrrrrrr")


def sentence_table(scores: Scores, sentence: dict) -> str:
    """One paper-style table: rank x model (word, p, sigma), then beta and delta rows."""
    sid = sentence["sentence_id"]
    mode = scores.options.mode
    by_model = {
        m: sorted((c for c in scores.candidates if c["model"] == m and c["sentence_id"] == sid), key=lambda c: c["rank"])
        for m in scores.models
    }
    pair = {p["model"]: p for p in scores.pairs if p["sentence_id"] == sid}
    depth = max((len(v) for v in by_model.values()), default=0)
    header = ["rank"]
    for m in scores.models:
        header += [f"{m}: w", "p", "sigma"]
    rows = []
    for i in range(depth):
        row = [str(i + 1)]
        for m in scores.models:
            cands = by_model[m]
            if i < len(cands):
                c = cands[i]
                word = c["token"] if c["kind"] == "word" else f"{c['token']} ({c['kind']})"
                sigma = {"scored": _fmt(c["sigma"], 2), "skipped": "skip", "unannotated": "?"}.get(c["status"], "n/a")
                if c["conflict"] and c["status"] == "scored":
                    sigma += "*"
                row += [word, _fmt(c["probability"], 4), sigma]
            else:
                row += ["", "", ""]
        rows.append(row)
    for metric in ("beta", "delta"):
        row = [f"{metric}(m, s)"]
        for m in scores.models:
            p = pair.get(m)
            row += ["", "", _fmt(p[f"{metric}_{mode}"]) if p else "-"]
        rows.append(row)
    title = (f"**{sid}** ({sentence['group']}, rho = {sentence['rho']:g}): {sentence['text']}")
    return title + "\n\n" + markdown_table(rows, header, "l" + "lrr" * len(scores.models))


def example_sentences(sentences: list[dict], groups: list[str], chosen: list[str] | None) -> list[dict]:
    if chosen:
        by_id = {s["sentence_id"]: s for s in sentences}
        missing = [c for c in chosen if c not in by_id]
        if missing:
            from histbench.core.errors import UsageError

            raise UsageError(f"--examples: unknown sentence id(s) {', '.join(missing)}")
        return [by_id[c] for c in chosen]
    out = []
    for g in groups:
        first = next((s for s in sentences if s["group"] == g), None)
        if first:
            out.append(first)
    return out


def plot_distributions(scores: Scores, metric: str, path: Path, kind: str = "box", title: str | None = None) -> Path:
    """Figures 1 and 2: beta or delta per group (panels) and model (boxes/violins)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mode = scores.options.mode
    groups = scores.groups
    fig, axes = plt.subplots(1, len(groups), figsize=(3.2 * len(groups) + 1, 3.6), sharey=True, squeeze=False)
    for ax, group in zip(axes[0], groups, strict=True):
        data, labels = [], []
        for m in scores.models:
            values = [p[f"{metric}_{mode}"] for p in scores.pairs if p["model"] == m and p["group"] == group]
            values = [v for v in values if not math.isnan(v)]
            data.append(values)
            labels.append(m)
        positions = list(range(1, len(data) + 1))
        plotted = [(pos, d) for pos, d in zip(positions, data, strict=True) if d]
        if plotted:
            if kind == "violin":
                parts = ax.violinplot([d for _, d in plotted], positions=[p for p, _ in plotted], showmedians=True)
                for body in parts["bodies"]:
                    body.set_alpha(0.5)
            else:
                ax.boxplot([d for _, d in plotted], positions=[p for p, _ in plotted], widths=0.6)
            for pos, d in plotted:
                ax.scatter([pos] * len(d), d, s=8, alpha=0.5, color="black", zorder=3)
        ax.set_xticks(positions)
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        ax.set_title(group)
        if metric == "beta":
            ax.axhline(0, color="grey", linewidth=0.6)
            ax.set_ylim(-1.05, 1.05)
        else:
            ax.set_ylim(-0.02, 1.02)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel(f"{metric} ({mode} probabilities)")
    fig.suptitle(title or f"{metric} per group and model")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_mean_bias(scores: Scores, path: Path, title: str | None = None) -> Path:
    """Figure 3: mean beta with its bootstrap interval per group and model, and the group's mean rho."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mode = scores.options.mode
    groups = scores.groups
    n = max(1, len(scores.models))
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(2.0 * len(groups) + 2.5, 3.9))
    for j, m in enumerate(scores.models):
        xs, ys, lows, highs = [], [], [], []
        for i, g in enumerate(groups):
            row = next((r for r in scores.summary if r["model"] == m and r["group"] == g), None)
            if row is None or math.isnan(row[f"beta_{mode}_mean"]):
                continue
            xs.append(i - 0.4 + width * (j + 0.5))
            ys.append(row[f"beta_{mode}_mean"])
            lows.append(row[f"beta_{mode}_mean"] - row[f"beta_{mode}_low"])
            highs.append(row[f"beta_{mode}_high"] - row[f"beta_{mode}_mean"])
        ax.errorbar(xs, ys, yerr=[lows, highs], fmt="o", capsize=3, label=m)
    for i, g in enumerate(groups):
        row = next((r for r in scores.summary if r["group"] == g), None)
        if row is not None:
            ax.hlines(row["mean_rho"], i - 0.45, i + 0.45, colors="grey", linestyles="dashed", linewidth=1)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.axhline(0, color="grey", linewidth=0.6)
    ax.set_ylim(-1.05, 1.05)
    ax.set_ylabel(f"mean beta ({mode})")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(title or "mean bias per group (dashed: the group's mean rho)")
    # below the axes, never over a point or the dashed mean-rho lines
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=max(1, n), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        Path(path).write_text("", encoding="utf-8")
        return
    columns = list(rows[0].keys())
    cleaned = [{k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows]
    Path(path).write_text(sheet_text(columns, cleaned), encoding="utf-8", newline="")


def build_section(
    scores: Scores,
    sentences: list[dict],
    out_dir: Path,
    *,
    link_prefix: str = "",
    plot: str = "box",
    examples: list[str] | None = None,
    title: str = "Temporal valence",
    preface: str = "",
    model_notes: dict[str, str] | None = None,
    coverage: list[dict] | None = None,
) -> ReportSection:
    """Write figures and CSV/Markdown files into out_dir and return the report section."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    mode = scores.options.mode
    other = next(m for m in PROBABILITY_MODES if m != mode)
    fig1 = plot_distributions(scores, "beta", out_dir / "fig1_beta_by_group.png", plot, "Figure 1: bias beta per group")
    fig2 = plot_distributions(scores, "delta", out_dir / "fig2_delta_by_group.png", plot, "Figure 2: domain adequacy delta per group")
    fig3 = plot_mean_bias(scores, out_dir / "fig3_mean_beta.png", "Figure 3: mean bias per group (dashed: mean rho)")
    write_csv(out_dir / "scores.csv", scores.pairs)
    write_csv(out_dir / "candidates.csv", scores.candidates)
    write_csv(out_dir / "summary.csv", scores.summary)
    all_tables = "\n\n".join(sentence_table(scores, s) for s in sentences)
    (out_dir / "sentences.md").write_text(
        f"# Per-sentence tables ({mode} probabilities)\n\nsigma: `?` not annotated, `skip` skipped, "
        "`n/a` word piece or special token (never scored), `*` annotators disagree (resolved by "
        f"{scores.options.conflicts}).\n\n{all_tables}\n", encoding="utf-8",
    )
    lines = []
    if preface:
        lines += [preface, ""]
    lines += [
        f"beta(m, s) = sum_i p_i sigma(w_i, s) over the top-k whole words; delta(m, s) = 1 - |rho(s) - beta(m, s)| / 2. "
        f"Probabilities: **{mode}** ({'the softmax over the whole vocabulary, as in the paper' if mode == 'raw' else 'renormalised over the scored top-k words'}); "
        f"both variants are in `scores.csv` ({other} as `beta_{other}`). Sigma source: {scores.options.sigma_source}"
        f"{' (automatic: derived from corpus frequencies, not annotated by a person)' if 'automatic' in scores.counts.get('sigma_methods', []) else ''}; "
        f"annotator disagreements resolved by {scores.options.conflicts}. Intervals: 95% percentile bootstrap over sentences "
        f"({scores.options.bootstrap} resamples).",
        "",
    ]
    if model_notes:
        lines += [f"- **{m}**: {note}" for m, note in model_notes.items()] + [""]
    lines += ["### Bias and adequacy per model and group", "", summary_table(scores, mode), ""]
    excluded = [p for p in scores.pairs if p["status"] != "ok"]
    if excluded:
        counts: dict[str, int] = {}
        for p in excluded:
            counts[p["status"]] = counts.get(p["status"], 0) + 1
        lines += [
            "Not scored (no beta): " + "; ".join(f"{n} pairs: {STATUS_TEXT.get(s, s)}" for s, n in counts.items())
            + ". Listed in `scores.csv` (column `status`).",
            "",
        ]
    if coverage:
        from .coverage import coverage_markdown

        lines += [
            "### Vocabulary: which predicted words can each model produce?",
            "",
            "A word that a model's tokenizer splits into pieces can never be one of its fillers. Counted over "
            "the whole words any model of the run predicted; marked = annotated sigma < 0 (early) or > 0 (modern).",
            "",
            coverage_markdown(coverage),
            "",
        ]
    status = scores.counts.get("candidate_status", {})
    lines += [
        "Top-k predictions by status: " + ", ".join(f"{k} {v}" for k, v in sorted(status.items()))
        + " (sub-word pieces and special tokens are reported, never scored).",
        "",
        f"![Figure 1. Distribution of the bias score beta per sentence group and model]({link_prefix}{fig1.name})",
        "",
        f"![Figure 2. Distribution of the domain adequacy delta per sentence group and model]({link_prefix}{fig2.name})",
        "",
        f"![Figure 3. Mean bias beta per sentence group and model]({link_prefix}{fig3.name})",
        "",
        "### Example sentences (Tables 1-3 style)",
        "",
        "sigma: `?` not annotated, `skip` skipped, `n/a` word piece or special token, `*` annotators disagree.",
        "",
    ]
    for s in example_sentences(sentences, scores.groups, examples):
        lines += [sentence_table(scores, s), ""]
    lines += [f"All sentences: [`sentences.md`]({link_prefix}sentences.md); numbers: `scores.csv`, `summary.csv`, `candidates.csv`.", ""]
    data = {
        "options": scores.options.to_json(),
        "counts": scores.counts,
        "summary": scores.summary,
        "pairs": scores.pairs,
        "vocabulary_coverage": coverage or [],
    }
    return ReportSection(title, "\n".join(lines), [fig1, fig2, fig3], data)
