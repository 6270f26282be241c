"""Tables 3-7 from predictions with known outcomes (the analysis layer of the report)."""

from __future__ import annotations

import numpy as np
import pytest

from histbench.eval.mher.analysis import System, analyse_models
from histbench.eval.mher.data import Bench, Prediction
from histbench.eval.mher.report import table4, table5, table6, table7


def _predict(bench: Bench, system: str, rule) -> list[Prediction]:
    """rule(condition, record) -> action; probabilities put 0.9 on the action."""
    out = []
    for condition in ("name_only", "context_only", "source_grounded", "shuffled_a", "shuffled_b", "shuffled_c",
                      "unresolved"):
        for record in bench.items(condition, "test"):
            action = rule(condition, record)
            probs = {"same": (0.9, 0.1, 0.0), "different": (0.1, 0.9, 0.0), "ambiguous": (0.05, 0.05, 0.9)}[action]
            out.append(Prediction(system, condition, "test", Bench.item_id(condition, record), probs, action))
    return out


def _flip(label):
    return "different" if label == "same" else "same"


def test_paired_tables_with_known_outcomes(sample_bench):
    def oracle_with_sources(condition, record):
        if condition == "unresolved":
            return "ambiguous"
        if condition == "source_grounded":
            return record["label"]
        if condition == "context_only":
            # wrong on different pairs -> Source-grounded errors are "persistent" nowhere, C->W none
            return record["label"] if record["label"] == "same" else "same"
        return _flip(record["label"])          # always wrong otherwise (names, shuffles)

    def abstainer(condition, record):
        return "ambiguous" if condition in ("name_only", "unresolved") else record["label"]

    systems = [System("oracle", "oracle", _predict(sample_bench, "oracle", oracle_with_sources)),
               System("abstainer", "abstainer", _predict(sample_bench, "abstainer", abstainer))]
    result = analyse_models(sample_bench, systems, resamples=4000, seed=0, thinning=100)
    n = result["paired_items"]
    oracle = result["models"]["oracle"]
    t = oracle["transitions"]["name_only"]
    assert (t["W->C"], t["C->W"]) == (n, 0)
    assert t["mcnemar_p"] == pytest.approx(2 * 0.5 ** n)
    assert t["mcnemar_p_bonferroni"] == pytest.approx(min(1.0, 2 * t["mcnemar_p"])) and t["bonferroni_tests"] == 2
    diff = oracle["bootstrap_difference"]["source_grounded-name_only"]
    assert diff["estimate"] == 1.0 and diff["low"] == diff["high"] == 1.0
    rob = oracle["entity_robustness"]
    assert rob["pair_gain"] == 1.0 and rob["cluster_bootstrap"]["bootstrap_mean"] == pytest.approx(1.0)
    assert rob["leave_one_entity_out"]["min"] == rob["leave_one_entity_out"]["max"] == 1.0
    assert oracle["paired"]["shuffled_a"]["accuracy"] == 0.0
    assert oracle["source_errors"]["errors"] == 0
    assert oracle["unresolved"]["abstention_share"] == 1.0

    abst = result["models"]["abstainer"]
    assert abst["name_only_full"]["abstention"] == 1.0 and np.isnan(abst["name_only_full"]["selective_accuracy"])
    assert abst["paired"]["name_only"]["accuracy"] == 0.0 and abst["paired"]["source_grounded"]["accuracy"] == 1.0

    text4 = table4(result["models"])
    # every resample flips every pair: said in words, not as a zero-width "[100.00, 100.00]" (issue 43)
    assert "| oracle | 0.00 | 100.00 | +100.00 | (every resample 100.00) |" in text4 and "[100.00, 100.00]" not in text4
    text5 = table5(result["models"])
    assert "| oracle |" in text5 and "0.00 / 0.00 / 0.00" in text5
    assert "| abstainer |" in table6(result["models"])
    assert "**all errors**" in table7(result["models"])


def test_name_induced_and_persistent_errors(sample_bench):
    grounded = sample_bench.items("source_grounded", "test")
    different = [r["pair_id"] for r in grounded if r["label"] == "different"]
    induced, persistent = set(different[:3]), set(different[3:5])

    def rule(condition, record):
        if condition == "unresolved":
            return "same"
        pid = record["pair_id"]
        if condition == "source_grounded" and pid in induced | persistent:
            return "same"                      # false merges under Source-grounded
        if condition == "context_only" and pid in persistent:
            return "same"                      # already wrong without names
        return record["label"]

    result = analyse_models(sample_bench, [System("m", "m", _predict(sample_bench, "m", rule))], resamples=500,
                            thinning=50)
    errors = result["models"]["m"]["source_errors"]
    assert errors["false_same_merge"] == {"total": 5, "name_induced": 3, "persistent": 2}
    assert errors["missed_same"]["total"] == 0 and errors["errors"] == 5
    assert result["models"]["m"]["unresolved"]["over_resolution"] == 1.0


def _mixed(sample_bench):
    """Two generative models and a reference system: the models flip a few items between
    Name-only and Source-grounded, the reference system is right everywhere."""
    grounded = [r["pair_id"] for r in sample_bench.items("source_grounded", "test")]

    def model(wrong_name_only: int, wrong_source: int):
        bad_name, bad_source = set(grounded[:wrong_name_only]), set(grounded[-wrong_source:] if wrong_source else [])

        def rule(condition, record):
            if condition == "unresolved":
                return "ambiguous"
            pid = record["pair_id"]
            if (condition == "name_only" and pid in bad_name) or (condition == "source_grounded" and pid in bad_source):
                return _flip(record["label"])
            return record["label"]
        return rule

    return [System("model-1", "model-1", _predict(sample_bench, "model-1", model(14, 0))),
            System("model-2", "model-2", _predict(sample_bench, "model-2", model(20, 2))),
            System("reference", "reference", _predict(sample_bench, "reference", model(0, 0)), kind="reference")]


def test_bonferroni_family_is_the_generative_models(sample_bench):
    """Sections 5.6 and 6.3: the Bonferroni adjustment runs across the generative models'
    primary comparisons. With two models and one reference system in the report, p is
    multiplied by 2, not 3 (the old rule gave 3p); the reference system gets no adjusted p."""
    systems = _mixed(sample_bench)
    result = analyse_models(sample_bench, systems, resamples=500, thinning=20)
    models = result["models"]
    assert result["bonferroni"] == {"members": ["model-1", "model-2"], "size": None, "named": False}
    for label in ("model-1", "model-2"):
        t = models[label]["transitions"]["name_only"]
        assert t["mcnemar_p_bonferroni"] == pytest.approx(min(1.0, 2 * t["mcnemar_p"]))
        assert t["bonferroni_tests"] == 2
    assert models["model-1"]["transitions"]["name_only"]["mcnemar_p"] == pytest.approx(2 * 0.5 ** 14)
    assert models["reference"]["transitions"]["name_only"]["mcnemar_p_bonferroni"] is None
    text = table4(models)
    assert "| reference |" in text and text.splitlines()[-1].endswith("| 1.0000 |  |")
    # the prominence correction uses the same family
    assert models["reference"]["prominence"]["p_bonferroni"] is None


def test_bonferroni_family_named_or_fixed_in_advance(sample_bench):
    """A user may name the family, or fix its size: re-running only Qwen3-8B, the paper's
    five-model family gives .0201 x 5 = .100 (section 6.3)."""
    systems = _mixed(sample_bench)
    named = analyse_models(sample_bench, systems, resamples=200, thinning=10,
                           family=["model-1", "model-2", "reference"])
    t = named["models"]["model-1"]["transitions"]["name_only"]
    assert t["mcnemar_p_bonferroni"] == pytest.approx(3 * t["mcnemar_p"]) and t["bonferroni_tests"] == 3
    fixed = analyse_models(sample_bench, systems[:1], resamples=200, thinning=10, family_size=5)
    t = fixed["models"]["model-1"]["transitions"]["name_only"]
    assert t["mcnemar_p_bonferroni"] == pytest.approx(5 * t["mcnemar_p"]) and t["bonferroni_tests"] == 5
    from histbench.core.errors import EvalError

    with pytest.raises(EvalError, match="--bonferroni-family names 'gpt'"):
        analyse_models(sample_bench, systems, resamples=10, thinning=2, family=["gpt"])
    with pytest.raises(EvalError, match="smaller than the family"):
        analyse_models(sample_bench, systems, resamples=10, thinning=2, family_size=1)


def test_cross_model_aggregate_counts(sample_bench):
    """Section 8.1: identical-surface decisions summed over the models (the paper: 0/25 under
    Name-only, 24/25 under Source-grounded with the remaining one an abstention); 7.3: the
    unresolved set's abstentions (50/50). Five systems, wrong under names alone on every
    identical-surface item; under Source-grounded evidence one of them abstains."""
    from histbench.eval.mher.report import aggregate_table

    def rule_for(index):
        def rule(condition, record):
            if condition == "unresolved":
                return "ambiguous"
            identical = record["challenge"]["identical_surface"]
            if identical and condition == "name_only":
                return "same"
            if identical and condition == "source_grounded" and index == 2:
                return "ambiguous"
            return record["label"]
        return rule

    systems = [System(f"m{i}", f"m{i}", _predict(sample_bench, f"m{i}", rule_for(i))) for i in range(5)]
    result = analyse_models(sample_bench, systems, resamples=200, thinning=5)
    n = sum(r["challenge"]["identical_surface"] for r in sample_bench.items("source_grounded", "test"))
    assert n >= 1
    slices = result["aggregate"]["slices"]["identical_surface"]
    assert slices["name_only"] == {"n": 5 * n, "correct": 0, "abstained": 0, "false_same": 5 * n, "missed_same": 0}
    assert slices["source_grounded"] == {"n": 5 * n, "correct": 5 * n - n, "abstained": n, "false_same": 0,
                                         "missed_same": 0}
    # identical surfaces are near-surface too (section 8.1, see construct.challenge_labels)
    assert result["aggregate"]["slices"]["near_surface"]["name_only"]["n"] >= 5 * n
    n_unresolved = len(sample_bench.items("unresolved", "test"))
    assert result["aggregate"]["unresolved"] == {"n": 5 * n_unresolved, "ambiguous": 5 * n_unresolved}
    text = aggregate_table(result["aggregate"])
    assert f"| identical-surface | 0/{5 * n} ({5 * n} false same) |" in text
    assert f"{5 * n - n}/{5 * n} ({n} ambiguous) |" in text
    assert f"answered `ambiguous`: {5 * n_unresolved}/{5 * n_unresolved}" in text


def test_report_cli_options_reach_the_numbers(sample_build, tmp_path, capsys):
    """--cluster-bootstrap and --bonferroni-family / --bonferroni-tests are recorded with the
    numbers they change."""
    import json

    from histbench.cli import main

    run = tmp_path / "lexical"
    assert main(["eval", "mher", "--reference", "lexical", "--dataset", str(sample_build), "--out", str(run)]) == 0
    report = tmp_path / "report"
    assert main(["report", "mher", str(run), "--out", str(report), "--resamples", "300", "--thinning", "10",
                 "--cluster-bootstrap", "draw-weighted", "--bonferroni-family", "reference: lexical logistic",
                 "--bonferroni-tests", "5"]) == 0
    analysis = json.loads((report / "report.json").read_text(encoding="utf-8"))["Data"]["analysis"]
    assert analysis["cluster_estimator"] == "draw-weighted"
    assert analysis["bonferroni"] == {"members": ["reference: lexical logistic"], "size": 5, "named": True}
    model = analysis["models"]["reference: lexical logistic"]
    assert model["entity_robustness"]["cluster_bootstrap"]["estimator"] == "draw-weighted"
    t = model["transitions"]["name_only"]
    assert t["mcnemar_p_bonferroni"] == pytest.approx(min(1.0, 5 * t["mcnemar_p"]))
    text = (report / "index.md").read_text(encoding="utf-8")
    assert "McNemar p × 5 over the systems named with `--bonferroni-family` (reference: lexical logistic, a family " \
           "fixed at 5 tests)" in text
    assert main(["report", "mher", str(run), "--out", str(tmp_path / "r2"), "--resamples", "50",
                 "--bonferroni-family", "gpt-x"]) == 2
    assert "--bonferroni-family names 'gpt-x'" in capsys.readouterr().err


def test_the_papers_rows_follow_a_named_model_and_only_on_test():
    """Issue 43, item 3: a run of Qwen3-8B (as a Hub id) gets the paper's Qwen3-8B row first."""
    from histbench.eval.mher.report import _published

    text = _published(3, ["hf:Qwen/Qwen3-8B", None, {"not": "a name"}], "test")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert rows[0] == "| paper; your run hf:Qwen/Qwen3-8B | Qwen3-8B | 67.09 | 0.671 | 0.0 | 67.09 |"
    assert [r.split(" | ")[1] for r in rows[1:]] == ["GPT-5.6 Terra", "GPT-5.6 Luna", "GPT-5.6 Sol", "Gemini 3.7 Flash"]
    assert _published(4, ["hf:Qwen/Qwen3-8B"], "dev") == ""    # the paper's numbers are TEST numbers
