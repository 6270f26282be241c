"""The results figure and tables: metrics kept apart, intervals on every bar, the legend
off the data, and every title naming the paper's section."""

import matplotlib
import pytest
from matplotlib.container import ErrorbarContainer

from histbench.core.dataset import BuiltDataset
from histbench.eval.italian.report import TITLES, draw_results, results_figure, results_markdown
from histbench.eval.italian.run import evaluate

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def baseline_runs(sample_build, tmp_path_factory):
    work = tmp_path_factory.mktemp("italian-runs")
    built = BuiltDataset.open(sample_build)
    return [evaluate(built, work / name, baseline=name) for name in ("random", "capitalised")]


def test_figure_has_one_panel_per_metric_with_intervals_and_the_legend_below(baseline_runs, tmp_path):
    fig = draw_results(baseline_runs)
    axes = fig.axes
    assert [ax.get_ylabel() for ax in axes] == ["accuracy", "Spearman's rho", "macro F1"]
    assert all(any(s in ax.get_title() for s in ("3.1", "3.2", "3.3")) for ax in axes)
    assert axes[1].get_ylim() == (-1.0, 1.0)
    for ax in axes:
        bars = [c for c in ax.containers if not isinstance(c, ErrorbarContainer)]
        assert len(bars) == len(baseline_runs)                                  # one bar group per run
        assert all(c.errorbar is not None for c in bars)                         # every bar has its interval
    (legend,) = fig.legends
    renderer = fig.canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    for ax in axes:
        assert box.y1 <= ax.get_window_extent(renderer).y0                       # below every panel, never over bars
    names = [t.get_text() for t in legend.get_texts()]
    assert {"baseline:random", "baseline:capitalised", "chance", "ceiling (perfect answer)"} <= set(names)
    assert "3.1-3.5" in fig._suptitle.get_text()
    path = results_figure(baseline_runs, tmp_path / "results.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tables_name_the_papers_sections_and_show_failures(baseline_runs):
    text = results_markdown(baseline_runs)
    assert all(f"paper section 3.{k}" in title for k, title in zip([1, 2, 2, 3, 3, 4, 4, 5], TITLES.values(), strict=True))
    assert text.count("#### ") == 8 and "cut off" in text and "ceiling strict / fuzzy" in text and "[95% interval]" in text
    # issue 43: accuracy (a proportion) by Wilson, F1 and Spearman by a bootstrap, each named with its n;
    # the random baseline's 0 of 5 WSD answers is [0.000, 0.434] (Wilson), not the bootstrap's [0.000, 0.000]
    assert "(Wilson, n=" in text and "(percentile bootstrap, n=" in text
    assert "0.000 [0.000, 0.434] (Wilson, n=5)" in text and "[0.000, 0.000]" not in text


@pytest.mark.slow
def test_demo_scores_smollm2_by_likelihood_and_the_viewer_shows_its_options(sample_build, tmp_path, smollm2_path):
    """`make demo`'s Italian part (issue 20: a real model on every benchmark that scores
    models): the offline SmolLM2 by likelihood on the first 3 rows of each multiple-choice
    task, and its viewer items: every option's log-likelihood, the gold one, and the chosen
    one, which is the likeliest."""
    import json

    from histbench.eval.italian import EVALUATOR, report
    from histbench.eval.italian.tasks import MCQ_TASKS

    work = tmp_path / "work"
    section = report.demo_section(BuiltDataset.open(sample_build), work, tmp_path / "report")
    assert section.runs == [work / n for n in ("random", "first", "capitalised", "smollm2-likelihood")]
    assert report.DEMO_LABEL in section.markdown and "was not scored" not in section.markdown
    assert "the first 3 rows of each multiple-choice task" in section.markdown
    results = json.loads((work / "smollm2-likelihood" / "italian.json").read_text())
    assert results["mode"] == "likelihood" and results["model"] == report.DEMO_LABEL
    assert set(results["tasks"]) == {t for t in MCQ_TASKS} | {"chrono_ranking"}
    assert all(m["n"] == 3 for m in results["tasks"].values())

    EVALUATOR.finish_run(work / "smollm2-likelihood")     # as `histbench demo` does after the section
    viewed = EVALUATOR.view_items(work / "smollm2-likelihood")
    assert len(viewed.items) == 3 * len(results["tasks"])
    for item in viewed.items:
        assert item["kind"] == "loglikelihood" and item["response"] is None
        assert item["messages"][0]["role"] == "system"            # the messages the options are scored after
        options = item["options"]
        assert len(options) == 24 if item["config"] == "chrono_ranking" else len(options) >= 2   # 4 snippets: 24 orders
        chosen = [o for o in options if o["chosen"]]
        assert len(chosen) == 1 and chosen[0]["loglik"] == max(o["loglik"] for o in options)
        assert sum(o["gold"] for o in options) == 1
        assert all(o["mean_loglik"] == pytest.approx(o["loglik"] / o["tokens"]) for o in options)
        if item["config"] != "chrono_ranking":
            assert item["outcome"] == ("correct" if next(o for o in options if o["gold"])["chosen"] else "wrong")
