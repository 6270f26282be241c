"""Figures of the ChronoCulture report (matplotlib, PNG), after the paper's Figures 5-8, 11, 15-17.

Each function writes one PNG into `out_dir` and returns its path. Error bars are the
bootstrap 95% intervals of the cells plotted.
"""

from __future__ import annotations

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


def _errorbars(cells, scale: float = 1.0):
    est = np.array([c.estimate for c in cells]) * scale
    low = np.array([c.low for c in cells]) * scale
    high = np.array([c.high for c in cells]) * scale
    err = np.vstack([np.nan_to_num(est - low, nan=0.0), np.nan_to_num(high - est, nan=0.0)])
    return est, np.clip(err, 0, None)


def _markers():
    return ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">"]


def accuracy_figure(analyses: list[Analysis], out_dir: Path, name: str = "fig5_accuracy.png") -> Path:
    """Figure 5: (a) both periods within tau = 0.10, (b) exactly one, by human shift."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharex=True)
    x = np.arange(len(m.CATEGORIES))
    for j, a in enumerate(analyses):
        for ax, metric in zip(axes, ("both", "one_only"), strict=True):
            cells = [a.cell(f"rf1.default.tau0.10.{c}.{metric}") for c in m.CATEGORIES]
            est, err = _errorbars(cells, 100)
            ax.errorbar(x + (j - len(analyses) / 2) * 0.04, est, yerr=err, marker=_markers()[j % 11], capsize=3, label=a.label)
    for ax, title in zip(axes, ("(a) both periods accurate", "(b) one period only"), strict=True):
        ax.set_xticks(x, [CATEGORY_SHORT[c] for c in m.CATEGORIES])
        ax.set_ylabel("% of temporal pairs")
        ax.set_ylim(0, 100)
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8, loc="best")
    fig.suptitle("Accuracy within tau = 0.10 by human shift")
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
    ax.legend(ncol=5, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.25))
    ax.set_title("Temporal alignment of the two predictions")
    return _save(fig, out_dir / name)


def magnitude_direction_figure(analyses: list[Analysis], out_dir: Path, name: str = "fig7_magnitude_direction.png") -> Path:
    """Figure 7: (a) identical predictions, (b) median r = d_m/d_h, (c) median cosine, by human shift."""
    plt = _plt()
    shifted = ("moderate", "strong", "very_strong")
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    x = np.arange(len(shifted))
    specs = (("zero_shift", 100, "(a) identical predictions (%)"), ("median_ratio", 1, "(b) median ratio r"),
             ("median_cosine", 1, "(c) median cosine"))
    for j, a in enumerate(analyses):
        for ax, (metric, scale, _) in zip(axes, specs, strict=True):
            cells = [a.cell(f"rf2.default.{c}.{metric}") for c in shifted]
            est, err = _errorbars(cells, scale)
            ax.errorbar(x + (j - len(analyses) / 2) * 0.04, est, yerr=err, marker=_markers()[j % 11], capsize=3, label=a.label)
    for ax, (_, _, title) in zip(axes, specs, strict=True):
        ax.set_xticks(x, [CATEGORY_SHORT[c] for c in shifted])
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[1].axhline(1.0, ls="--", color="black", lw=1)
    axes[2].axhline(0.0, ls=":", color="black", lw=1)
    axes[0].legend(fontsize=8)
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
            ax.bar(x - 0.4 + width * (j + 0.5), est, width, yerr=err, capsize=2, label=a.label)
    for ax, title in zip(axes, ("(a) naming the older year", "(b) naming the newer year"), strict=True):
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(x, [CATEGORY_SHORT[c] for c in m.CATEGORIES])
        ax.set_title(title)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_ylabel("mean benefit (reduction in W, x 100)")
    axes[1].legend(fontsize=8)
    return _save(fig, out_dir / name)


def knowledge_figure(a: Analysis, out_dir: Path) -> Path:
    """Figure 11: the nearest-survey distance K, retained and excluded combinations."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    k = a.k_score
    scored = ~np.isnan(k)
    bins = np.linspace(0, max(0.5, float(np.nanmax(k)) if scored.any() else 0.5), 40)
    ax.hist(k[scored & a.retained], bins=bins, color="#6a3d9a", label="retained")
    ax.hist(k[scored & ~a.retained], bins=bins, color="#bbbbbb", label="excluded")
    if scored.any():
        ax.axvline(np.quantile(k[scored], a.retention), ls="--", color="black", lw=1, label=f"pooled {a.retention:.0%} quantile")
    ax.set_xlabel("K = min over years of W(P_undated, G_t)")
    ax.set_ylabel("question x country")
    ax.set_title(f"Knowledge filter: {a.label}")
    ax.legend(fontsize=8)
    return _save(fig, out_dir / f"fig11_knowledge_{slug(a.label)}.png")


def shift_scatter_figure(analyses: list[Analysis], out_dir: Path, name: str = "fig15_human_vs_model_shift.png") -> Path:
    """Figure 15: human shift d_h against model shift d_m per pair, coloured by category."""
    plt = _plt()
    cols = min(3, len(analyses))
    rows = int(np.ceil(len(analyses) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 4 * rows), squeeze=False)
    for ax, a in zip(axes.flat, analyses, strict=False):
        v = a.per_pair
        cat = v["categories"]["default"]
        top = max(float(np.nanmax(v["d_h"], initial=0)), float(np.nanmax(v["d_m"], initial=0)), 0.05) * 1.05
        for code, c in enumerate(m.CATEGORIES):
            sel = cat == code
            ax.scatter(v["d_h"][sel], v["d_m"][sel], s=8, alpha=0.6, color=CATEGORY_COLOURS[c], label=CATEGORY_SHORT[c])
        ax.plot([0, top], [0, top], ls="--", color="black", lw=1)
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_xlabel("human shift d_h")
        ax.set_ylabel("model shift d_m")
        ax.set_title(a.label, fontsize=10)
    for ax in list(axes.flat)[len(analyses):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7, markerscale=2)
    return _save(fig, out_dir / name)


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


def _pair_title(bench: Benchmark, i: int) -> str:
    return f"{bench.country[i]}, {bench.question_id[i]} ({bench.year_old[i]}-{bench.year_new[i]})"


def patterns_figure(bench: Benchmark, preds: Predictions, a: Analysis, out_dir: Path) -> Path:
    """Figure 16: change in mean response, human vs model, for the four patterns of predicted change."""
    plt = _plt()
    examples = pattern_examples(a)
    fig, axes = plt.subplots(2, 2, figsize=(10, 5.2))
    for ax, (key, title) in zip(axes.flat, PATTERNS, strict=True):
        i = examples[key]
        ax.set_title(title, fontsize=10)
        if i is None:
            ax.text(0.5, 0.5, "no analysed pair shows this pattern", ha="center", va="center", transform=ax.transAxes)
            ax.axis("off")
            continue
        k = int(bench.k[i])
        pos = bench.positions[i, :k]
        human = (_mean_response(bench.g_old[i, :k], pos), _mean_response(bench.g_new[i, :k], pos))
        model = (_mean_response(preds.p_old[i, :k], pos), _mean_response(preds.p_new[i, :k], pos))
        for y, (start, end), colour in ((1, human, "black"), (0, model, "#d62728")):
            ax.annotate("", xy=(end, y), xytext=(start, y), arrowprops={"arrowstyle": "->", "color": colour, "lw": 2})
            ax.plot([start], [y], "o", color=colour)
        ax.set_yticks([0, 1], ["model", "survey"])
        ax.set_ylim(-0.6, 1.6)
        ax.set_xlim(pos[0] - 0.2, pos[-1] + 0.2)
        ax.set_xticks(pos, [o[:14] for o in bench.options[i]], fontsize=7, rotation=20)
        local = int(np.flatnonzero(a.per_pair["index"] == i)[0])
        ax.set_xlabel(f"{_pair_title(bench, i)}: d_h {bench.d_h[i]:.3f}, d_m {a.per_pair['d_m'][local]:.3f}", fontsize=8)
    fig.suptitle(f"Patterns of predicted change (mean response, older -> newer): {a.label}")
    fig.tight_layout()
    return _save(fig, out_dir / f"fig16_patterns_{slug(a.label)}.png")


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
    examples = limited_change_examples(a)
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for ax, i in zip(axes.flat, examples + [None] * (4 - len(examples)), strict=True):
        if i is None:
            ax.axis("off")
            continue
        k = int(bench.k[i])
        pos = bench.positions[i, :k]
        for p, label, style in ((bench.g_old[i], f"survey {bench.year_old[i]}", "-"),
                                (bench.g_new[i], f"survey {bench.year_new[i]}", "-"),
                                (preds.p_old[i], f"model {bench.year_old[i]}", "--"),
                                (preds.p_new[i], f"model {bench.year_new[i]}", ":")):
            ax.step(pos, np.cumsum(p[:k]), where="post", ls=style, lw=2, label=label)
        local = int(np.flatnonzero(a.per_pair["index"] == i)[0])
        d_m = a.per_pair["d_m"][local]
        ax.set_title(_pair_title(bench, i), fontsize=9)
        ax.text(0.02, 0.97, f"d_h {bench.d_h[i]:.3f}\nd_m {d_m:.3f}\nd_m/d_h {100 * d_m / bench.d_h[i]:.0f}%",
                transform=ax.transAxes, va="top", fontsize=8)
        ax.set_xticks(pos, [o[:14] for o in bench.options[i]], fontsize=7, rotation=20)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("cumulative proportion")
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"Limited model change despite human shift: {a.label}")
    fig.tight_layout()
    return _save(fig, out_dir / f"fig17_limited_change_{slug(a.label)}.png")
