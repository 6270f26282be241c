"""Figures of the ChronoCulture report (matplotlib, PNG), after the paper's Figures 5-8 and 11-18.

Each function writes one PNG into `out_dir` and returns its path. Every figure's title
names the figure of "ChronoCulture: Evaluating Cultural Awareness Across Time in Large
Language Models" (Saha, Khurana, Huang and Huang) that it reproduces. Error bars are the
bootstrap 95% intervals of the cells plotted. Conventions:

- legends sit outside the axes (below them), never over data;
- a panel with nothing to show (e.g. median ratios when no run ever changes its
  prediction) says so once, in words, instead of drawing empty axes; a figure where no
  panel has anything to show is one such message;
- option labels on the axes are wrapped, never cut.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from histbench.eval.report import slug

from . import metrics as m
from .analysis import Analysis
from .data import Benchmark, Predictions

CATEGORY_SHORT = {"stable": "Stable", "moderate": "Moderate", "strong": "Strong", "very_strong": "Very strong"}
CATEGORY_COLOURS = {"stable": "#8c8c8c", "moderate": "#6baed6", "strong": "#fd8d3c", "very_strong": "#d62728"}
ALIGNMENT_COLOURS = {"separated": "#2ca02c", "older_aligned": "#1f4e9c", "newer_aligned": "#7fb2e5",
                     "reversed": "#d62728", "tie": "#bbbbbb"}
OUTCOME_COLOURS = {"helped": "#2ca02c", "unchanged": "#bbbbbb", "hurt": "#d62728"}
BAND_LABELS = {"stable": "Stable", "moderate": "Moderate", "strong_plus": "Strong+"}
SHIFTED = ("moderate", "strong", "very_strong")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return path


def _message_figure(path: Path, title: str, message: str) -> Path:
    """A figure with nothing to plot: its title and one sentence saying why."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 1.6))
    ax.axis("off")
    ax.text(0.5, 0.45, textwrap.fill(message, 100), ha="center", va="center", fontsize=10, transform=ax.transAxes)
    fig.suptitle(title, fontsize=11)
    return _save(fig, path)


def _empty_panel(ax, message: str) -> None:
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.text(0.5, 0.5, textwrap.fill(message, 34), ha="center", va="center", fontsize=9, transform=ax.transAxes,
            color="#444444")


def _legend_below(fig, axes, ncol: int | None = None) -> None:
    """One legend for the figure, centred below the axes (never over data)."""
    handles, labels = [], []
    for ax in np.atleast_1d(axes).flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if handles:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=ncol or min(len(labels), 4),
                   fontsize=8, frameon=False)


def _wrap(label: str, width: int = 14) -> str:
    return "\n".join(textwrap.wrap(str(label), width)) or str(label)


def _errorbars(cells, scale: float = 1.0):
    est = np.array([c.estimate for c in cells]) * scale
    low = np.array([c.low for c in cells]) * scale
    high = np.array([c.high for c in cells]) * scale
    err = np.vstack([np.nan_to_num(est - low, nan=0.0), np.nan_to_num(high - est, nan=0.0)])
    return est, np.clip(err, 0, None)


def _markers():
    return ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">"]


def _offset(j: int, count: int, step: float = 0.05) -> float:
    return (j - (count - 1) / 2) * step


# ---------------------------------------------------------------------------
# Figures over all runs
# ---------------------------------------------------------------------------

def accuracy_figure(analyses: list[Analysis], out_dir: Path, name: str = "fig5_accuracy.png") -> Path:
    """Figure 5: (a) both periods within tau = 0.10, (b) exactly one, by human shift."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharex=True)
    x = np.arange(len(m.CATEGORIES))
    for j, a in enumerate(analyses):
        for ax, metric in zip(axes, ("both", "one_only"), strict=True):
            cells = [a.cell(f"rf1.default.tau0.10.{c}.{metric}") for c in m.CATEGORIES]
            est, err = _errorbars(cells, 100)
            ax.errorbar(x + _offset(j, len(analyses)), est, yerr=err, marker=_markers()[j % 11], capsize=3, label=a.label)
    for ax, title in zip(axes, ("(a) both periods accurate", "(b) one period only"), strict=True):
        ax.set_xticks(x, [CATEGORY_SHORT[c] for c in m.CATEGORIES])
        ax.set_ylabel("% of temporal pairs")
        ax.set_ylim(-3, 103)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    _legend_below(fig, axes)
    fig.suptitle("Figure 5. Accuracy within tau = 0.10 by human shift")
    fig.tight_layout()
    return _save(fig, out_dir / name)


def alignment_figure(analyses: list[Analysis], out_dir: Path, name: str = "fig6_alignment.png") -> Path:
    """Figure 6: which year's gold distribution each prediction is closer to (shifted pairs)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(analyses) + 1.4))
    y = np.arange(len(analyses))
    left = np.zeros(len(analyses))
    for name_ in m.ALIGNMENTS:
        values = np.array([100 * np.nan_to_num(a.cell(f"align.default.shifted.{name_}").estimate) for a in analyses])
        if name_ == "tie" and not values.any():
            continue
        ax.barh(y, values, left=left, color=ALIGNMENT_COLOURS[name_], label=name_.replace("_", "-"))
        for yi, (v, start) in enumerate(zip(values, left, strict=True)):
            if v >= 6:
                ax.text(start + v / 2, yi, f"{v:.0f}", ha="center", va="center", fontsize=8, color="white")
        left += values
    ax.set_yticks(y, [a.label for a in analyses])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of shifted pairs (moderate or larger)")
    ax.legend(ncol=5, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.35 if len(analyses) < 4 else -0.12),
              frameon=False)
    ax.set_title("Figure 6. Temporal alignment of the two predictions")
    return _save(fig, out_dir / name)


def magnitude_direction_figure(analyses: list[Analysis], out_dir: Path, name: str = "fig7_magnitude_direction.png") -> Path:
    """Figure 7: (a) identical predictions, (b) median r = d_m/d_h, (c) median cosine, by human shift.

    Ratio and cosine are defined only on pairs with nonzero model shift: a run without
    any is left out of (b) and (c), and a panel without any run says so.
    """
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    x = np.arange(len(SHIFTED))
    specs = (("zero_shift", 100, "(a) identical predictions (%)"), ("median_ratio", 1, "(b) median ratio r = d_m/d_h"),
             ("median_cosine", 1, "(c) median cosine"))
    for ax, (metric, scale, title) in zip(axes, specs, strict=True):
        ax.set_title(title, fontsize=10)
        plotted = []
        for j, a in enumerate(analyses):
            cells = [a.cell(f"rf2.default.{c}.{metric}") for c in SHIFTED]
            est, err = _errorbars(cells, scale)
            if np.isnan(est).all():
                continue
            plotted.append(a.label)
            ax.errorbar(x + _offset(j, len(analyses)), est, yerr=err, marker=_markers()[j % 11], capsize=3, label=a.label)
        if not plotted:
            _empty_panel(ax, "No run has a shifted pair with nonzero model shift: every run predicts the same "
                             "distribution for both years, so the ratio and the cosine are undefined.")
            continue
        ax.set_xticks(x, [CATEGORY_SHORT[c] for c in SHIFTED])
        ax.grid(alpha=0.3)
        if metric == "median_ratio":
            ax.axhline(1.0, ls="--", color="black", lw=1)
            ax.set_ylim(bottom=-0.05)
        elif metric == "median_cosine":
            ax.axhline(0.0, ls=":", color="black", lw=1)
            ax.set_ylim(-1.05, 1.05)
        else:
            ax.set_ylim(-3, 103)
    _legend_below(fig, axes)
    fig.suptitle("Figure 7. Magnitude and direction of predicted change by human shift (dashed: r = 1)")
    fig.tight_layout()
    return _save(fig, out_dir / name)


def benefit_figure(analyses: list[Analysis], out_dir: Path, name: str = "fig8_benefit.png") -> Path:
    """Figure 8: mean benefit of naming (a) the older and (b) the newer year (x 100), by human shift."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    x = np.arange(len(m.CATEGORIES))
    width = 0.8 / max(len(analyses), 1)
    for j, a in enumerate(analyses):
        for ax, period in zip(axes, ("old", "new"), strict=True):
            cells = [a.cell(f"rf3.benefit.{period}.{c}.mean") for c in m.CATEGORIES]
            est, err = _errorbars(cells, 100)
            ax.bar(x - 0.4 + width * (j + 0.5), est, width, yerr=err, capsize=2, label=a.label)  # NaN: no bar
    for ax, title in zip(axes, ("(a) naming the older year", "(b) naming the newer year"), strict=True):
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(x, [CATEGORY_SHORT[c] for c in m.CATEGORIES])
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_ylabel("mean benefit (reduction in W, x 100)")
    _legend_below(fig, axes)
    fig.suptitle("Figure 8. Mean benefit of naming a year by human shift (positive: closer to that year's gold)")
    fig.tight_layout()
    return _save(fig, out_dir / name)


def shift_scatter_figure(analyses: list[Analysis], out_dir: Path, name: str = "fig15_human_vs_model_shift.png") -> Path:
    """Figure 15: human shift d_h against model shift d_m per pair, coloured by category."""
    plt = _plt()
    title = "Figure 15. Human shift d_h and model shift d_m per temporal pair (dashed: d_m = d_h)"
    if not analyses:
        return _message_figure(out_dir / name, title, "No model run to plot.")
    cols = min(3, len(analyses))
    rows = int(np.ceil(len(analyses) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 4 * rows), squeeze=False)
    for ax, a in zip(axes.flat, analyses, strict=False):
        v = a.per_pair
        cat = v["categories"]["default"]
        top = max(float(np.nanmax(v["d_h"], initial=0)), float(np.nanmax(v["d_m"], initial=0)), 0.05) * 1.05
        for code, c in enumerate(m.CATEGORIES):
            sel = cat == code
            ax.scatter(v["d_h"][sel], v["d_m"][sel], s=10, alpha=0.6, color=CATEGORY_COLOURS[c], label=CATEGORY_SHORT[c])
        ax.plot([0, top], [0, top], ls="--", color="black", lw=1)
        ax.set_xlim(-0.02 * top, top)   # a margin, so that points at 0 are not hidden by the axes
        ax.set_ylim(-0.02 * top, top)
        ax.set_xlabel("human shift d_h")
        ax.set_ylabel("model shift d_m")
        ax.set_title(a.label, fontsize=10)
    for ax in list(axes.flat)[len(analyses):]:
        ax.axis("off")
    _legend_below(fig, axes)
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, out_dir / name)


def heatmap_figure(summary: dict, dimension: str, out_dir: Path) -> Path:
    """Figures 13 (topic) and 14 (region): both-period accuracy per group and shift band.

    One panel per survey; cells show the mean % across runs with the range (lowest to
    highest run) below, blank (grey) where a run set has fewer than the minimum pairs.
    """
    plt = _plt()
    number = 13 if dimension == "topic" else 14
    title = (f"Figure {number}. Both-period accuracy (tau = 0.10) by {dimension}: mean % across runs "
             f"[range]; blank: fewer than {summary['min_pairs']} pairs")
    path = out_dir / f"fig{number}_{dimension}_heatmap.png"
    bands = list(BAND_LABELS)
    panels = []
    for survey in ("WVS", "ISSP"):
        table = summary["groups"][dimension][survey]
        groups = [g for g in table if any(table[g][b]["both_accurate"] is not None for b in bands)]
        panels.append((survey, table, groups))
    if not any(groups for _, _, groups in panels):
        return _message_figure(path, title, f"No {dimension} has {summary['min_pairs']} or more analysed pairs in any "
                                            "shift band, so every cell would be blank.")
    heights = [max(len(groups), 1) for _, _, groups in panels]
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.55 * max(heights) + 1.8), squeeze=False)
    cmap = plt.get_cmap("viridis")
    for ax, (survey, table, groups) in zip(axes.flat, panels, strict=True):
        ax.set_title(survey, fontsize=10)
        if not groups:
            _empty_panel(ax, f"No {survey} {dimension} has {summary['min_pairs']} or more analysed pairs in any band.")
            continue
        values = np.full((len(groups), len(bands)), np.nan)
        for r, group in enumerate(groups):
            for c, band in enumerate(bands):
                cell = table[group][band]["both_accurate"]
                if cell is not None:
                    values[r, c] = 100 * cell["mean"]
        ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=0, vmax=100, aspect="auto")
        ax.set_facecolor("#eeeeee")
        for r, group in enumerate(groups):
            for c, band in enumerate(bands):
                cell = table[group][band]["both_accurate"]
                if cell is None:
                    continue
                text = f"{100 * cell['mean']:.0f}"
                if cell["models"] > 1:
                    text += f"\n[{100 * cell['min']:.0f}-{100 * cell['max']:.0f}]"
                ax.text(c, r, text, ha="center", va="center", fontsize=8,
                        color="white" if values[r, c] < 60 else "black")
        ax.set_xticks(range(len(bands)), [BAND_LABELS[b] for b in bands])
        ax.set_yticks(range(len(groups)), [_wrap(g, 32) for g in groups], fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


# ---------------------------------------------------------------------------
# Figures of one run
# ---------------------------------------------------------------------------

def knowledge_figure(a: Analysis, out_dir: Path) -> Path:
    """Figure 11: the nearest-survey distance K, retained and excluded combinations."""
    plt = _plt()
    title = f"Figure 11. Knowledge filter (nearest-survey distance K): {a.label}"
    path = out_dir / f"fig11_knowledge_{slug(a.label)}.png"
    k = a.k_score
    scored = ~np.isnan(k)
    if not scored.any():
        return _message_figure(path, title, "No valid undated answer: K is undefined for every combination.")
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    bins = np.linspace(0, max(0.5, float(np.nanmax(k))), 40)
    ax.hist(k[scored & a.retained], bins=bins, color="#6a3d9a", label=f"retained ({int((scored & a.retained).sum()):,})")
    ax.hist(k[scored & ~a.retained], bins=bins, color="#bbbbbb", label=f"excluded ({int((scored & ~a.retained).sum()):,})")
    if a.retention < 1.0:
        ax.axvline(np.quantile(k[scored], a.retention), ls="--", color="black", lw=1,
                   label=f"pooled {a.retention:.0%} quantile (selection is per group)")
    ax.set_xlabel("K = min over years of W(P_undated, G_t)")
    ax.set_ylabel("question x country")
    ax.set_title(title, fontsize=10)
    _legend_below(fig, ax, ncol=3)
    return _save(fig, path)


def period_error_figure(a: Analysis, out_dir: Path) -> Path:
    """Figure 12: (a) distances of each prediction to its gold, tau = 0.10 marked; (b) d_old vs d_new per pair."""
    plt = _plt()
    title = f"Figure 12. Per-period prediction errors: {a.label}"
    path = out_dir / f"fig12_period_errors_{slug(a.label)}.png"
    v = a.per_pair
    if v["d_old"].size == 0:
        return _message_figure(path, title, "No analysed pair (no retained pair with valid answers for both years).")
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4))
    top = max(float(np.nanmax(v["d_old"])), float(np.nanmax(v["d_new"])), m.TAU) * 1.05
    bins = np.linspace(0, top, 30)
    axes[0].hist(v["d_old"], bins=bins, histtype="step", lw=2, color="#1f4e9c", label="older year: d_old")
    axes[0].hist(v["d_new"], bins=bins, histtype="step", lw=2, color="#fd8d3c", label="newer year: d_new")
    axes[0].axvline(m.TAU, ls="--", color="black", lw=1, label="tau = 0.10")
    axes[0].set_xlabel("W(P_t, G_t)")
    axes[0].set_ylabel("predictions")
    axes[0].set_title("(a) distances to gold", fontsize=10)
    cat = v["categories"]["default"]
    for code, c in enumerate(m.CATEGORIES):
        sel = cat == code
        axes[1].scatter(v["d_old"][sel], v["d_new"][sel], s=10, alpha=0.6, color=CATEGORY_COLOURS[c],
                        label=CATEGORY_SHORT[c])
    axes[1].plot([0, top], [0, top], ls="--", color="black", lw=1)
    axes[1].axvline(m.TAU, ls=":", color="grey", lw=1)
    axes[1].axhline(m.TAU, ls=":", color="grey", lw=1)
    axes[1].set_xlim(-0.02 * top, top)
    axes[1].set_ylim(-0.02 * top, top)
    axes[1].set_xlabel("d_old")
    axes[1].set_ylabel("d_new")
    axes[1].set_title("(b) d_old vs d_new per pair (dotted: tau)", fontsize=10)
    _legend_below(fig, axes, ncol=7)
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, path)


def naming_outcomes_figure(a: Analysis, out_dir: Path) -> Path:
    """Figure 18: share of items helped, unchanged and hurt by naming each year, by human shift."""
    plt = _plt()
    title = f"Figure 18. Naming outcomes by human shift: {a.label}"
    path = out_dir / f"fig18_naming_outcomes_{slug(a.label)}.png"
    rows = [(c, p) for c in m.CATEGORIES for p in ("old", "new")]
    shares = np.array([[a.cell(f"rf3.benefit.{p}.{c}.{o}").estimate for o in m.BENEFIT_OUTCOMES] for c, p in rows])
    if np.isnan(shares).all():
        return _message_figure(path, title, "No analysed pair: nothing to count.")
    fig, ax = plt.subplots(figsize=(8.5, 0.42 * len(rows) + 1.4))
    y = np.arange(len(rows))
    left = np.zeros(len(rows))
    for j, outcome in enumerate(m.BENEFIT_OUTCOMES):
        values = 100 * np.nan_to_num(shares[:, j])
        ax.barh(y, values, left=left, color=OUTCOME_COLOURS[outcome], label=outcome)
        for yi, (value, start) in enumerate(zip(values, left, strict=True)):
            if value >= 7:
                ax.text(start + value / 2, yi, f"{value:.0f}", ha="center", va="center", fontsize=8, color="white")
        left += values
    labels = []
    for c, p in rows:
        n = a.cell(f"rf3.benefit.{p}.{c}.mean").n
        labels.append(f"{CATEGORY_SHORT[c]}, {'older' if p == 'old' else 'newer'} year (n={n:,})")
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of items")
    ax.set_title(title, fontsize=10)
    _legend_below(fig, ax, ncol=3)
    return _save(fig, path)


def _mean_response(p: np.ndarray, positions: np.ndarray) -> float:
    return float(np.sum(p * positions))


PATTERNS = (
    ("underestimated", "same direction, smaller change"),
    ("no_change", "no predicted change"),
    ("reversed", "opposite direction"),
    ("overestimated", "same direction, larger change"),
)


def pattern_examples(a: Analysis) -> dict[str, int | None]:
    """One pair (benchmark row) per pattern of D.6, preferring strong+ shifts, largest d_h first."""
    v = a.per_pair
    cat = v["categories"]["default"]
    cos, ratio = v["cosine"], v["ratio"]
    with np.errstate(invalid="ignore"):
        masks = {
            "underestimated": (cos > 0) & (ratio < 1) & ~v["zero_shift"],
            "no_change": v["zero_shift"].copy(),
            "reversed": cos < 0,
            "overestimated": (cos > 0) & (ratio > 1),
        }
    out = {}
    for name, mask in masks.items():
        mask = mask & (cat >= m.MODERATE)
        strong = mask & (cat >= m.STRONG)
        pick = strong if strong.any() else mask
        if pick.any():
            local = np.flatnonzero(pick)
            out[name] = int(v["index"][local[np.argmax(v["d_h"][local])]])
        else:
            out[name] = None
    return out


def _pair_title(bench: Benchmark, i: int, width: int = 48) -> str:
    head = f"{bench.country[i]}, {bench.year_old[i]}-{bench.year_new[i]}: "
    return _wrap(head + str(bench.question_text[i]), width)


def patterns_figure(bench: Benchmark, preds: Predictions, a: Analysis, out_dir: Path) -> Path:
    """Figure 16: change in mean response, human vs model, for each pattern of predicted change
    that some analysed pair shows (the others are named in the figure, once)."""
    plt = _plt()
    title = f"Figure 16. Patterns of predicted change (mean response, older -> newer year): {a.label}"
    path = out_dir / f"fig16_patterns_{slug(a.label)}.png"
    examples = pattern_examples(a)
    present = [(key, label) for key, label in PATTERNS if examples[key] is not None]
    absent = [label for key, label in PATTERNS if examples[key] is None]
    if not present:
        return _message_figure(path, title, "No analysed pair with a moderate or larger human shift: no pattern to show.")
    cols = 2 if len(present) > 1 else 1
    rows = int(np.ceil(len(present) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5.4 * cols, 2.9 * rows + 0.6), squeeze=False)
    for ax, (key, label) in zip(axes.flat, present, strict=False):
        i = examples[key]
        k = int(bench.k[i])
        pos = bench.positions[i, :k]
        human = (_mean_response(bench.g_old[i, :k], pos), _mean_response(bench.g_new[i, :k], pos))
        model = (_mean_response(preds.p_old[i, :k], pos), _mean_response(preds.p_new[i, :k], pos))
        for y, (start, end), colour in ((1, human, "black"), (0, model, "#d62728")):
            ax.annotate("", xy=(end, y), xytext=(start, y), arrowprops={"arrowstyle": "->", "color": colour, "lw": 2})
            ax.plot([start], [y], "o", color=colour)
        ax.set_yticks([0, 1], ["model", "survey"])
        ax.set_ylim(-0.6, 1.6)
        ax.set_xlim(pos[0] - 0.3, pos[-1] + 0.3)
        ticks = pos if k <= 5 else pos[[0, -1]]
        names = bench.options[i] if k <= 5 else [bench.options[i][0], bench.options[i][-1]]
        ax.set_xticks(ticks, [_wrap(o, 12) for o in names], fontsize=7)
        local = int(np.flatnonzero(a.per_pair["index"] == i)[0])
        ax.set_title(f"{label}\n{_pair_title(bench, i, 60)}\nd_h {bench.d_h[i]:.3f}, d_m {a.per_pair['d_m'][local]:.3f}",
                     fontsize=8)
    for ax in list(axes.flat)[len(present):]:
        ax.axis("off")
    suptitle = title
    if absent:
        suptitle += "\nno analysed pair shows: " + "; ".join(absent)
    fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def limited_change_examples(a: Analysis, count: int = 4) -> list[int]:
    """Strong+ pairs with the smallest magnitude ratio (identical predictions first), larger d_h first."""
    v = a.per_pair
    cat = v["categories"]["default"]
    local = np.flatnonzero(cat >= m.STRONG)
    if local.size == 0:
        local = np.flatnonzero(cat >= m.MODERATE)
    order = np.lexsort((-v["d_h"][local], np.nan_to_num(v["ratio"][local], nan=np.inf)))
    return [int(v["index"][j]) for j in local[order][:count]]


def limited_change_figure(bench: Benchmark, preds: Predictions, a: Analysis, out_dir: Path) -> Path:
    """Figure 17: cumulative distributions of gold and predictions for pairs with little model change."""
    plt = _plt()
    title = f"Figure 17. Limited model change despite human shift (cumulative distributions): {a.label}"
    path = out_dir / f"fig17_limited_change_{slug(a.label)}.png"
    examples = limited_change_examples(a)
    if not examples:
        return _message_figure(path, title, "No analysed pair with a moderate or larger human shift.")
    cols = 2 if len(examples) > 1 else 1
    rows = int(np.ceil(len(examples) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols, 3.9 * rows + 0.4), squeeze=False)
    styles = (("survey, older year", "-", "#1f4e9c", "o"), ("survey, newer year", "-", "#fd8d3c", "o"),
              ("model, older year", "--", "#1f4e9c", "x"), ("model, newer year", ":", "#fd8d3c", "x"))
    for ax, i in zip(axes.flat, examples, strict=False):
        k = int(bench.k[i])
        pos = bench.positions[i, :k]
        for p, (label, style, colour, marker) in zip((bench.g_old[i], bench.g_new[i], preds.p_old[i], preds.p_new[i]),
                                                     styles, strict=True):
            ax.plot(pos, np.cumsum(p[:k]), ls=style, lw=2, color=colour, marker=marker, label=label)
        local = int(np.flatnonzero(a.per_pair["index"] == i)[0])
        d_m = a.per_pair["d_m"][local]
        ax.set_title(f"{_pair_title(bench, i, 56)}\nd_h {bench.d_h[i]:.3f}, d_m {d_m:.3f}, "
                     f"d_m/d_h {100 * d_m / bench.d_h[i]:.0f}% ({bench.year_old[i]} vs {bench.year_new[i]})", fontsize=8)
        ticks = pos if k <= 6 else pos[[0, k // 2, -1]]
        names = bench.options[i] if k <= 6 else [bench.options[i][0], bench.options[i][k // 2], bench.options[i][-1]]
        ax.set_xticks(ticks, [_wrap(o, 13) for o in names], fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("cumulative proportion")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(examples):]:
        ax.axis("off")
    _legend_below(fig, axes)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)
