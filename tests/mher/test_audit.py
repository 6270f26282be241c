"""The leakage audit (section 4.4): every rule fires on a crafted violation, passes on the
sample, and a failing audit stops the build with nothing written."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from histbench.builders.core.errors import BuildError
from histbench.builders.mher import audit as A
from histbench.builders.mher.registry import read_registry

from .conftest import SAMPLE


def side(surface, context, sources=("YS",)):
    return {"key": "M0001", "surface": surface, "language": "en", "script": "Latn", "context": context,
            "evidence": [{"evidence_id": "e", "source_id": s, "citation": "c", "locator": None, "kind": "event"}
                         for s in sources]}


def grounded(pair_id, label, a, b, pa="P12", pb="P12"):
    return {"pair_id": pair_id, "a": a, "b": b, "label": label, "person_a": pa, "person_b": pb,
            "prominence_a": "head", "prominence_b": "head",
            "challenge": {"cross_language": False, "cross_script": False, "near_surface": False,
                          "identical_surface": False}}


@pytest.fixture(scope="module")
def registry():
    return read_registry(SAMPLE)


def test_source_independence_fires_on_shared_or_derived_sources(registry):
    ok = grounded("t-1", "same", side("Mangu Chan", "Received the friar.", ["RUBRUCK"]),
                  side("蒙哥", "Died in 1259.", ["YS"]))
    shared = grounded("t-2", "same", side("Mangu Chan", "Received the friar.", ["YS"]),
                      side("蒙哥", "Died in 1259.", ["YS"]))
    derived = grounded("t-3", "same", side("Мөнх хаан", "Sent his brothers out.", ["MUT"]),
                       side("蒙哥", "Died in 1259.", ["YS"]))
    result = A.audit_source_independence([ok, shared, derived], registry)
    assert not result["passed"] and result["n_violations"] == 2
    assert [v["pair_id"] for v in result["violations"]] == ["t-2", "t-3"]
    assert result["violations"][1]["shared_sources"] == ["YS"]
    assert A.audit_source_independence([ok], registry)["passed"]


def test_context_duplication_fires_on_shared_sentence_and_cross_person_copy():
    clean = grounded("t-1", "same", side("x", "Went west. Came back."), side("y", "Ruled long."))
    shared = grounded("t-2", "same", side("x", "Went west in 1235. Came back."), side("y", "Ruled long. Came back."))
    result = A.audit_context_duplication([clean, shared])
    assert not result["passed"] and result["pairs_with_shared_sentence"] == {"same": 1, "different": 0}
    assert result["violations"][0]["shared"] == ["came back."]
    copied = grounded("t-3", "different", side("x", "Kept the seals."), side("z", "Ruled long."), "P01", "P02")
    result = A.audit_context_duplication([clean, copied])
    assert not result["passed"] and result["cross_person_copies"][0]["persons"] == ["P02", "P12"]
    assert A.audit_context_duplication([clean])["passed"]


@pytest.mark.parametrize("text", [
    "This ruler is identified with the khan of the annals.",
    "Qui et Mangu dicitur.",
    "Он же упоминается в летописи.",
    "史載其又名某某。",
    "او همان شخص است.",
    "La même personne apparaît ailleurs.",
])
def test_equivalence_cues_fire_in_every_listed_language(cues, text):
    result = A.audit_equivalence_cues([("source_grounded", "t-1", "a", text)], cues)
    assert not result["passed"] and result["violations"][0]["pair_id"] == "t-1"


def test_equivalence_cues_do_not_fire_on_ordinary_evidence(cues):
    texts = ["Enthroned in the year corresponding to 1251.", "即位於開平。", "Ruled the Ilkhanate from 1295 to 1304."]
    assert A.audit_equivalence_cues([("source_grounded", "t", "a", t) for t in texts], cues)["passed"]


def test_alias_leakage_fires_per_config(registry):
    leak = grounded("t-1", "same", side("Mangu Chan", "The emperor 蒙哥 received envoys."),
                    side("Möngke", "Joined the western campaign."))
    own = grounded("t-2", "same", side("Mangu Chan", "Mangu Chan received envoys."),
                   side("Möngke", "Joined the western campaign."))
    result = A.audit_alias_leakage({"source_grounded": [leak, own]}, registry)
    assert result["n_violations"] == 1 and result["violations"][0] == {
        "config": "source_grounded", "pair_id": "t-1", "side": "a", "names": ["蒙哥"]}
    context_only = [{"pair_id": "t-2", "context_a": "Mangu Chan received envoys.", "context_b": "Joined.",
                     "person_a": "P12", "person_b": "P12"}]
    assert A.audit_alias_leakage({"context_only": context_only}, registry)["n_violations"] == 1
    shuffled = copy.deepcopy(grounded("t-3", "different", side("Cublai", "Took Baghdad."),
                                      side("Mangu Chan", "Son of Tolui Khan, he ruled."), "P13", "P12"))
    shuffled["a"]["context"] = "Brother of Khubilai, he conquered Iran."   # names the item's person P13
    result = A.audit_alias_leakage({"shuffled_a": [shuffled]}, registry)
    assert result["n_violations"] == 1 and result["violations"][0]["side"] == "a"


def _shortcut_records(n, informative: bool):
    rng = np.random.default_rng(0)
    records = []
    for i in range(n):
        label = "same" if i % 2 == 0 else "different"
        if informative:
            words = 30 if label == "same" else 5
        else:
            words = int(rng.integers(5, 30))
        ctx = " ".join(f"w{i}x{k}" for k in range(words))
        records.append(grounded(f"d-{i}", label, side("a", ctx), side("b", f"z{i} q{i}")))
    return records


def test_length_shortcut_fails_when_enforced_and_only_then():
    informative = _shortcut_records(24, True)
    result = A.audit_shortcuts(informative)
    assert result["enforced"] and not result["passed"]
    assert result["signals"]["context_length_total"]["dev_accuracy"] == 1.0
    assert A.audit_shortcuts(informative, min_items=25)["passed"]          # too few DEV items: reported only
    assert A.audit_shortcuts(_shortcut_records(24, False))["passed"]


def test_best_threshold_hand_worked():
    scores = [0.1, 0.2, 0.4, 0.6, 0.8, 0.9]
    same = [False, False, False, True, True, True]
    rule = A.best_threshold(scores, same)
    assert rule.value == pytest.approx(0.5) and rule.accuracy == 1.0 and rule.constant is None
    # two optimal cuts (0.15 and 0.5, both 5/6): the middle of the tied cuts (the first of two)
    rule = A.best_threshold([0.1, 0.2, 0.4, 0.6, 0.8, 0.9], [False, True, False, True, True, True])
    assert rule.accuracy == pytest.approx(5 / 6) and rule.value == pytest.approx(0.15)
    low = A.best_threshold([5.0, 1.0, 4.0, 0.5], [False, True, False, True], "lower")
    assert low.direction == "lower" and low.value == pytest.approx(2.5) and low.accuracy == 1.0
    flat = A.best_threshold([0.0, 0.0, 0.0, 0.0], [True, False, True, False])
    assert flat.constant == "same" and flat.accuracy == 0.5


def test_sample_build_audit_passes_and_is_reported(sample_build):
    import json

    manifest = json.loads((sample_build / "histbench.json").read_text(encoding="utf-8"))
    audit = manifest["summary"]["leakage_audit"]
    assert audit["passed"]
    for check in ("source_independence", "context_duplication", "equivalence_cues", "alias_leakage"):
        assert audit[check]["n_violations"] == 0 and audit[check]["checked"] > 0
    assert "Leakage audit" in (sample_build / "README.md").read_text(encoding="utf-8")


def test_failing_audit_stops_the_build_and_writes_nothing(tmp_path):
    from histbench.builders.cli import main

    out = tmp_path / "out"
    status = main(["build", "mher", "--registry", str(SAMPLE), "--out", str(out),
                   "--shortcut-ceiling", "context_length_total=0.0", "--audit-min-dev-items", "2"])
    assert status == 2
    assert not (out / "mher-1.0.0").exists()


def test_audit_failure_lists_the_failed_checks(registry, cues):
    from histbench.builders.mher import construct as C
    from histbench.builders.mher.builder import build_mher

    with pytest.raises(BuildError) as caught:
        build_mher(registry, cues, C.BuildOptions(), ceilings={"context_length_difference": 0.0}, audit_min_items=2)
    assert any("context_length_difference" in line for line in caught.value.details)
