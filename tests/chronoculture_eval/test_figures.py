"""What the report's figures show (the matplotlib figures are inspected before they are saved)."""

from __future__ import annotations

import numpy as np
import pytest

from histbench.eval.chronoculture import figures as fig
from histbench.eval.chronoculture.analysis import analyse
from histbench.eval.chronoculture.breakdowns import across_models
from histbench.eval.chronoculture.data import Predictions, frozen_gold_predictions, uniform_predictions


@pytest.fixture
def captured(monkeypatch):
    """Every figure the figure functions save, as a matplotlib Figure (still open)."""
    figures = []

    def keep(figure, path):
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.canvas.draw()
        figures.append(figure)
        path.write_bytes(b"png")
        return path

    monkeypatch.setattr(fig, "_save", keep)
    yield figures
    import matplotlib.pyplot as plt

    plt.close("all")


def _texts(figure) -> str:
    parts = [t.get_text() for t in figure.texts]          # includes the suptitle
    for ax in figure.axes:
        parts += [ax.get_title(), *[t.get_text() for t in ax.texts]]
    return "\n".join(parts)


def _visible_axes(figure):
    return [ax for ax in figure.axes if ax.axison and (ax.lines or ax.collections or ax.patches or ax.images)]


def _model(benchmark, seed=0, still=()):
    """Noisy gold predictions; pairs in `still` get the same prediction for both years."""
    rng = np.random.default_rng(seed)
    options = np.arange(benchmark.width)[None, :] < benchmark.k[:, None]

    def noisy(g):
        p = np.where(options, np.clip(g + rng.normal(0, 0.08, g.shape), 0, None) + 1e-3, 0.0)
        return p / p.sum(axis=1, keepdims=True)

    old, new = noisy(benchmark.g_old), noisy(benchmark.g_new)
    new[list(still)] = old[list(still)]
    return Predictions(f"model {seed}", "model", old, new, noisy(benchmark.g_old))


def test_fig7_says_once_that_ratio_and_cosine_are_undefined(benchmark, captured, tmp_path):
    """Issue: with runs that never change their prediction, Fig. 7(b)/(c) were empty axes with one
    dashed line. Now each such panel holds one sentence and no reference line."""
    runs = [analyse(benchmark, uniform_predictions(benchmark), retention=1.0, resamples=0),
            analyse(benchmark, frozen_gold_predictions(benchmark, "oldest"), retention=1.0, resamples=0)]
    fig.magnitude_direction_figure(runs, tmp_path)
    (figure,) = captured
    a, b, c = figure.axes[:3]
    assert len(a.lines) > 0
    for ax in (b, c):
        assert not ax.lines and len(ax.texts) == 1 and "undefined" in ax.texts[0].get_text()
    assert figure._suptitle.get_text().startswith("Figure 7.")
    # with a real model the panels are drawn, with r = 1 dashed, and the legend is below the axes
    captured.clear()
    model = analyse(benchmark, _model(benchmark), retention=1.0, resamples=0)
    fig.magnitude_direction_figure([model, runs[0]], tmp_path)
    (figure,) = captured
    assert any(line.get_linestyle() == "--" and set(line.get_ydata()) == {1.0} for line in figure.axes[1].lines)
    assert all(ax.get_legend() is None for ax in figure.axes) and len(figure.legends) == 1
    legend_top = figure.legends[0].get_window_extent().y1
    assert all(legend_top <= ax.get_window_extent().y0 for ax in figure.axes)   # legends never cover data


def test_fig16_draws_only_the_patterns_that_occur(benchmark, captured, tmp_path):
    """Issue: Fig. 16 was mostly 'no analysed pair shows this pattern' panels. A run that never
    changes its prediction shows one panel (no change), and names the absent patterns once."""
    preds = frozen_gold_predictions(benchmark, "oldest")
    a = analyse(benchmark, preds, retention=1.0, resamples=0)
    fig.patterns_figure(benchmark, preds, a, tmp_path)
    (figure,) = captured
    assert len(_visible_axes(figure)) == 1
    text = _texts(figure)
    assert "no predicted change" in text and text.count("no analysed pair shows") == 1
    assert "opposite direction" in text and "Figure 16." in text


def test_fig17_tick_labels_are_whole(benchmark, captured, tmp_path):
    """Issue: Fig. 17's tick labels were cut ('Most people ca'). They are wrapped, never cut."""
    preds = _model(benchmark, still=range(benchmark.n))
    a = analyse(benchmark, preds, retention=1.0, resamples=0)
    fig.limited_change_figure(benchmark, preds, a, tmp_path)
    (figure,) = captured
    examples = fig.limited_change_examples(a)
    assert examples
    for ax, i in zip(_visible_axes(figure), examples, strict=True):
        labels = [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()]
        assert set(labels) <= set(benchmark.options[i]) and labels[0] == benchmark.options[i][0]
        assert labels[-1] == benchmark.options[i][-1]
        assert ax.get_legend() is None
    assert len(figure.legends) == 1 and "Figure 17." in _texts(figure)


def test_fig12_fig18_and_heatmaps(benchmark, captured, tmp_path):
    a = analyse(benchmark, _model(benchmark), retention=1.0, resamples=0)
    fig.period_error_figure(a, tmp_path)
    fig.naming_outcomes_figure(a, tmp_path)
    twelve, eighteen = captured
    assert "Figure 12." in _texts(twelve)
    (a_panel, b_panel) = twelve.axes
    assert any(set(line.get_xdata()) == {0.1} for line in a_panel.lines)                       # tau marked
    assert len(b_panel.collections[0].get_offsets()) + sum(len(c.get_offsets()) for c in b_panel.collections[1:]) \
        == a.counts["analysed"]                                                              # one point per pair
    assert "Figure 18." in _texts(eighteen)
    widths = [p.get_width() for p in eighteen.axes[0].patches]
    assert sum(widths) == pytest.approx(100 * 8)                                             # 8 rows of 100%

    captured.clear()
    summary = across_models(benchmark, [a], min_pairs=3)
    fig.heatmap_figure(summary, "region", tmp_path)
    (heat,) = captured
    assert "Figure 14." in _texts(heat) and len(heat.axes[0].images) == 1
    summary = across_models(benchmark, [a], min_pairs=1000)
    captured.clear()
    fig.heatmap_figure(summary, "topic", tmp_path)
    (empty,) = captured
    assert not _visible_axes(empty) and "Figure 13." in _texts(empty) and "every cell would be blank" in _texts(empty)


def test_every_figure_names_the_papers_figure(benchmark, captured, tmp_path):
    preds = _model(benchmark)
    a = analyse(benchmark, preds, retention=0.75, resamples=0)
    calls = {5: lambda: fig.accuracy_figure([a], tmp_path), 6: lambda: fig.alignment_figure([a], tmp_path),
             7: lambda: fig.magnitude_direction_figure([a], tmp_path), 8: lambda: fig.benefit_figure([a], tmp_path),
             11: lambda: fig.knowledge_figure(a, tmp_path), 12: lambda: fig.period_error_figure(a, tmp_path),
             15: lambda: fig.shift_scatter_figure([a], tmp_path),
             16: lambda: fig.patterns_figure(benchmark, preds, a, tmp_path),
             17: lambda: fig.limited_change_figure(benchmark, preds, a, tmp_path),
             18: lambda: fig.naming_outcomes_figure(a, tmp_path)}
    for number, call in calls.items():
        captured.clear()
        call()
        assert f"Figure {number}." in _texts(captured[0]), number
