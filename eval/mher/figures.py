"""The MHER report's figures, each titled with the paper figure it reproduces.

- Figure 2: accuracy on the paired TEST items under Name-only and Source-grounded evidence
  (panel A) and the Source-grounded minus Name-only gain with its paired-bootstrap 95%
  interval (panel B);
- Figure 3: falsification and ablation: per system the range of the three shuffled
  controls (a horizontal bar, A/B/C marked), Context-only and Source-grounded accuracy,
  and Source-grounded minus Context-only written beside each system;
- Figure 4: outcome composition (correct, incorrect, ambiguous) under Name-only and
  Source-grounded evidence.

System names are the short names of the tables, wrapped onto two lines when long; the
layout engine sizes the margins to the labels and every legend sits outside the axes.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

SHUFFLES = ("shuffled_a", "shuffled_b", "shuffled_c")
FIGURE_TITLES = {
    "paired_accuracy": "Figure 2: Name-only vs Source-grounded accuracy on the paired items",
    "falsification": "Figure 3: falsification and ablation on the paired items",
    "outcome_composition": "Figure 4: outcome composition on the paired items",
}
LABEL_WIDTH = 24


def _wrap(label: str) -> str:
    """A system name on at most three lines of LABEL_WIDTH characters (an ellipsis marks a
    cut; the tables carry the full name)."""
    lines = textwrap.wrap(label, LABEL_WIDTH, break_long_words=True) or [label]
    if len(lines) > 3:
        lines = [*lines[:2], lines[2][: LABEL_WIDTH - 1] + "…"]
    return "\n".join(lines)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def texts_outside(fig) -> list[str]:
    """What the saved figure would cut: the parts (each axes with its tick labels, axis
    labels, titles and annotations; the legends; the title) whose drawn extent leaves the
    canvas, named by their title or text."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    parts = [(ax.get_title(loc="left") or ax.get_title() or f"axes {i + 1}", ax.get_tightbbox(renderer))
             for i, ax in enumerate(fig.axes)]
    parts += [("legend", legend.get_window_extent(renderer)) for legend in fig.legends]
    if fig._suptitle is not None:  # noqa: SLF001 - matplotlib keeps the figure title here
        parts.append((fig._suptitle.get_text(), fig._suptitle.get_window_extent(renderer)))  # noqa: SLF001
    return [name for name, box in parts
            if box is not None and (box.x0 < -0.5 or box.y0 < -0.5 or box.x1 > width + 0.5 or box.y1 > height + 0.5)]


def _save(fig, path: Path) -> Path:
    """Save at 110 dpi after checking that no text is cut (a figure with a cut label is a bug)."""
    plt = _pyplot()
    fig.set_dpi(110)
    cut = texts_outside(fig)
    if cut:
        plt.close(fig)
        raise RuntimeError(f"{path.name}: text outside the figure: {cut[:5]}")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _height(n: int) -> float:
    return 1.6 + 0.55 * n


def paired_accuracy(models: dict, path: Path, split: str) -> Path:
    plt = _pyplot()
    labels = list(models)
    y = list(range(len(labels)))[::-1]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, _height(len(labels)) + 0.6), sharey=True, layout="constrained")
    name = [100 * models[m]["paired"]["name_only"]["accuracy"] for m in labels]
    source = [100 * models[m]["paired"]["source_grounded"]["accuracy"] for m in labels]
    for i, yi in enumerate(y):
        ax1.plot([name[i], source[i]], [yi, yi], color="grey", lw=0.8, zorder=0)
    ax1.scatter(name, y, label="Name-only", marker="o", zorder=2)
    ax1.scatter(source, y, label="Source-grounded", marker="s", zorder=2)
    ax1.set_yticks(y, [_wrap(m) for m in labels])
    ax1.set_ylim(min(y) - 0.6, max(y) + 0.6)
    ax1.set_xlabel("accuracy (%)")
    ax1.set_xlim(-3, 103)
    ax1.set_title("A. Paired accuracy", loc="left")
    diffs = [models[m]["bootstrap_difference"]["source_grounded-name_only"] for m in labels]
    est = [100 * d["estimate"] for d in diffs]
    err = [[100 * (d["estimate"] - d["low"]) for d in diffs], [100 * (d["high"] - d["estimate"]) for d in diffs]]
    ax2.errorbar(est, y, xerr=err, fmt="o", capsize=3, color="#333333")
    ax2.axvline(0, color="grey", lw=0.8)
    ax2.set_xlabel("Source − Name (percentage points)")
    ax2.set_title("B. Gain with paired-bootstrap 95% CI", loc="left")
    ax2.tick_params(axis="y", left=False)
    fig.legend(*ax1.get_legend_handles_labels(), loc="outside lower center", ncols=2, frameon=False)
    fig.suptitle(f"{FIGURE_TITLES['paired_accuracy']} ({split.upper()})")
    return _save(fig, path)


def falsification(models: dict, path: Path, split: str) -> Path:
    plt = _pyplot()
    labels = list(models)
    y = list(range(len(labels)))[::-1]
    fig, ax = plt.subplots(figsize=(9, _height(len(labels)) + 0.6), layout="constrained")
    for m, yi in zip(labels, y, strict=True):
        paired = models[m]["paired"]
        shuffles = [100 * paired[s]["accuracy"] for s in SHUFFLES]
        ax.plot([min(shuffles), max(shuffles)], [yi, yi], color="#bbbbbb", lw=7, solid_capstyle="butt", zorder=1,
                label="Shuffled A–C (range)" if yi == y[0] else None)
        at: dict[float, str] = {}
        for s, letter in zip(shuffles, "ABC", strict=True):   # letters above the bar; equal values share one
            at[round(s, 2)] = at.get(round(s, 2), "") + letter
        previous, level = None, 0
        for s, letters in sorted(at.items()):              # letters closer than 3 pp are stacked
            level = level + 1 if previous is not None and s - previous < 3 else 0
            previous = s
            ax.annotate("=".join(letters), xy=(s, yi), xytext=(0, 6 + 9 * level), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, color="#555555")
        context, source = 100 * paired["context_only"]["accuracy"], 100 * paired["source_grounded"]["accuracy"]
        ax.scatter([context], [yi], marker="^", s=55, color="#1f77b4", zorder=3,
                   label="Context-only" if yi == y[0] else None)
        ax.scatter([source], [yi], marker="s", s=50, color="#d62728", zorder=3,
                   label="Source-grounded" if yi == y[0] else None)
        ax.annotate(f"S−C {source - context:+.2f}", xy=(1.0, yi), xycoords=("axes fraction", "data"),
                    xytext=(6, 0), textcoords="offset points", va="center", fontsize=9)
    ax.set_yticks(y, [_wrap(m) for m in labels])
    ax.set_xlim(-3, 103)
    ax.set_ylim(min(y) - 0.6, max(y) + 0.6)
    ax.set_xlabel("accuracy (%)")
    fig.legend(loc="outside lower center", ncols=3, frameon=False)
    fig.suptitle(f"{FIGURE_TITLES['falsification']} ({split.upper()})")
    return _save(fig, path)


def outcome_composition(models: dict, path: Path, split: str) -> Path:
    plt = _pyplot()
    labels = list(models)
    y = list(range(len(labels)))[::-1]
    fig, axes = plt.subplots(1, 2, figsize=(10, _height(len(labels)) + 0.6), sharey=True, layout="constrained")
    for ax, condition, title in zip(axes, ("name_only", "source_grounded"), ("Name-only", "Source-grounded"),
                                    strict=True):
        correct, wrong, abstain = [], [], []
        for m in labels:
            met = models[m]["paired"][condition]
            correct.append(100 * met["accuracy"])
            abstain.append(100 * met["abstention"])
            wrong.append(100 - correct[-1] - abstain[-1])
        ax.barh(y, correct, color="#4c9a5b", label="correct")
        ax.barh(y, wrong, left=correct, color="#c8553d", label="incorrect")
        ax.barh(y, abstain, left=[c + w for c, w in zip(correct, wrong, strict=True)], color="#bbbbbb",
                label="ambiguous")
        ax.set_xlim(0, 100)
        ax.set_xlabel("% of paired items")
        ax.set_title(title, loc="left")
    axes[0].set_yticks(y, [_wrap(m) for m in labels])
    axes[1].tick_params(axis="y", left=False)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=3, frameon=False)
    fig.suptitle(f"{FIGURE_TITLES['outcome_composition']} ({split.upper()})")
    return _save(fig, path)


def figures(analysis: dict, out_dir: Path, prefix: str = "") -> dict[str, Path]:
    """Figure name -> PNG path for the figures the analysis can fill (systems with both
    Name-only and Source-grounded runs; Figure 3 also needs Context-only and the shuffles)."""
    split = analysis.get("split", "test")
    models = {k: v for k, v in analysis.get("models", {}).items()
              if "source_grounded-name_only" in v.get("bootstrap_difference", {})}
    if not models:
        return {}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    made = {
        "paired_accuracy": paired_accuracy(models, out_dir / f"{prefix}paired_accuracy.png", split),
        "outcome_composition": outcome_composition(models, out_dir / f"{prefix}outcome_composition.png", split),
    }
    complete = {k: v for k, v in models.items()
                if all(c in v.get("paired", {}) for c in ("context_only", "source_grounded", *SHUFFLES))}
    if complete:
        made["falsification"] = falsification(complete, out_dir / f"{prefix}falsification.png", split)
    return made
