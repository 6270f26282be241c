"""The bundled sample and the valence part of `make demo`."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def sample_build(tmp_path_factory):
    from histbench.builders.machinery.build import run_build
    from histbench.builders.valence import BUILDER

    out = tmp_path_factory.mktemp("sample")
    return run_build(BUILDER, BUILDER.manifest().sample_paths(), options=BUILDER.demo_options(), out_root=out)


def test_sample_has_ten_sentences_per_group_and_annotations(sample_build):
    manifest = json.loads((sample_build / "histbench.json").read_text())
    stats = manifest["summary"]["sentences"]
    assert stats["group_counts"] == {"EME": 10, "neutral": 10, "ME": 10}
    assert set(stats["mask_spellings"]) == {"[MASK]", "<mask>"}
    assert stats["rho_counts"]["EME"]["-1"] + stats["rho_counts"]["EME"]["-0.5"] == 10
    annotations = manifest["summary"]["annotations"]
    assert annotations["sentences_covered"] == 30 and annotations["methods"] == ["manual"]
    assert manifest["rows"]["annotations"]["test"] == annotations["rows"] > 1000


@pytest.mark.slow
def test_demo_scores_the_toys_with_the_bundled_annotations(sample_build, tmp_path):
    """The known-answer check of the demo: every top-10 word of both toys is annotated, and the
    toy trained on early text has the lower bias on EME sentences, the modern toy the higher
    bias on ME sentences."""
    pytest.importorskip("torch")
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.valence import EVALUATOR

    report_dir = tmp_path / "report" / "valence"
    report_dir.mkdir(parents=True)
    section = EVALUATOR.demo(BuiltDataset.open(sample_build), tmp_path / "work", report_dir)
    assert section.data["counts"]["candidate_status"].get("unannotated", 0) == 0
    summary = {(r["model"], r["group"]): r for r in section.data["summary"]}
    assert summary[("toy-early", "EME")]["beta_raw_mean"] < summary[("toy-modern", "EME")]["beta_raw_mean"]
    assert summary[("toy-modern", "ME")]["beta_raw_mean"] > summary[("toy-early", "ME")]["beta_raw_mean"]
    assert summary[("toy-early", "EME")]["delta_raw_mean"] > summary[("toy-modern", "EME")]["delta_raw_mean"]
    assert "Toy models, not a real result" in section.markdown and "](valence/fig1_beta_by_group.png)" in section.markdown
    assert (report_dir / "fig3_mean_beta.png").is_file() and (report_dir / "sentences.md").is_file()
    assert "Automatic sigma from the toy corpora (labelled automatic)" in section.markdown
