"""The report's figures (Figures 2-4 of the paper): titled with the figure they reproduce,
no text cut, panels not squashed by long system names (issue: the old Figure 2 had long
y-labels squashing the panels and a cut x-label, "paired bootstrap 95")."""

from __future__ import annotations

import numpy as np
import pytest

from histbench.eval.mher import figures as F
from histbench.eval.mher.analysis import System, analyse_models
from histbench.eval.mher.data import Bench, Prediction

LONG_NAMES = ["reference: embedding (/home/user/models/paraphrase-multilingual-mpnet-base-v2)",
              "GPT-5.6 Terra", "Qwen3-8B-Q4_K_M-local-deployment", "reference: lexical logistic", "Gemini 3.7 Flash"]


def _systems(bench: Bench) -> list[System]:
    rng = np.random.default_rng(0)
    systems = []
    for i, name in enumerate(LONG_NAMES):
        accuracy = {"name_only": 0.1 + 0.15 * i, "context_only": 0.85, "source_grounded": 0.95,
                    "shuffled_a": 0.2, "shuffled_b": 0.21, "shuffled_c": 0.3}
        predictions = []
        for condition in (*accuracy, "unresolved"):
            for record in bench.items(condition, "test"):
                if condition == "unresolved":
                    action = "ambiguous"
                elif rng.random() < accuracy[condition]:
                    action = record["label"]
                else:
                    action = "ambiguous" if rng.random() < 0.5 else ("different" if record["label"] == "same"
                                                                      else "same")
                probs = {"same": (0.8, 0.1, 0.1), "different": (0.1, 0.8, 0.1), "ambiguous": (0.1, 0.1, 0.8)}[action]
                predictions.append(Prediction(name, condition, "test", Bench.item_id(condition, record), probs, action))
        systems.append(System(name, name, predictions))
    return systems


@pytest.fixture(scope="module")
def analysis(sample_bench):
    return analyse_models(sample_bench, _systems(sample_bench), resamples=500, thinning=10)


def test_figures_with_long_system_names_keep_every_text_and_their_panels(analysis, tmp_path, monkeypatch):
    layouts = {}
    save = F._save

    def recording(fig, path):
        layouts[path.name] = [ax.get_position().width for ax in fig.axes]
        return save(fig, path)

    monkeypatch.setattr(F, "_save", recording)
    made = F.figures(analysis, tmp_path)
    assert set(made) == {"paired_accuracy", "falsification", "outcome_composition"}
    for name, path in made.items():
        assert path.is_file() and path.stat().st_size > 10_000
        assert min(layouts[path.name]) > 0.3, (name, layouts[path.name])   # no panel squashed by the labels


def test_the_cut_check_catches_a_cut_label():
    """The guard behind every saved figure flags what the old Figure 2 did."""
    plt = F._pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3))
    left.set_yticks([0, 1], [LONG_NAMES[0], "x"])
    right.set_xlabel("Source − Name (pp), paired bootstrap 95% CI")
    fig.tight_layout()
    fig.set_dpi(110)
    assert F.texts_outside(fig) == ["axes 2"]
    plt.close(fig)


def test_long_names_are_wrapped_not_dropped():
    assert F._wrap("GPT-5.6 Terra") == "GPT-5.6 Terra"
    wrapped = F._wrap(LONG_NAMES[0]).split("\n")
    assert len(wrapped) == 3 and wrapped[-1].endswith("…") and all(len(line) <= F.LABEL_WIDTH for line in wrapped)


def test_figure_titles_name_the_paper_figures():
    assert [F.FIGURE_TITLES[k].split(":")[0] for k in ("paired_accuracy", "falsification", "outcome_composition")] \
        == ["Figure 2", "Figure 3", "Figure 4"]
