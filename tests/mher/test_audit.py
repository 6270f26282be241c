"""The leakage audit (section 4.4): every rule fires on a crafted violation, passes on the
sample, and a failing audit stops the build with nothing written."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

from histbench.builders.mher import audit as A
from histbench.builders.mher.registry import read_registry
from histbench.core.errors import BuildError

from .conftest import SAMPLE


def side(surface, context, sources=("YS",), key="M0001", evidence_ids=None):
    evidence_ids = evidence_ids or [f"e-{key}-{i}" for i in range(len(sources))]
    return {"key": key, "surface": surface, "language": "en", "script": "Latn", "context": context,
            "evidence": [{"evidence_id": e, "source_id": s, "citation": "c", "locator": None, "kind": "event"}
                         for e, s in zip(evidence_ids, sources, strict=True)]}


def grounded(pair_id, label, a, b, pa="P12", pb="P12"):
    return {"pair_id": pair_id, "a": a, "b": b, "label": label, "person_a": pa, "person_b": pb,
            "prominence_a": "head", "prominence_b": "head",
            "challenge": {"cross_language": False, "cross_script": False, "near_surface": False,
                          "identical_surface": False}}


def origins(records, registry=None, keys=None):
    return A.Origins({"test": records}, registry, keys)


@pytest.fixture(scope="module")
def registry():
    return read_registry(SAMPLE)


def test_source_independence_fires_on_shared_or_derived_sources(registry):
    ok = grounded("t-1", "same", side("Mangu Chan", "Received the friar.", ["RUBRUCK"]),
                  side("蒙哥", "Died in 1259.", ["YS"]))
    shared = grounded("t-2", "same", side("Mangu Chan", "Received the friar.", ["YS"]),
                      side("蒙哥", "Died in 1259.", ["YS"]))
    derived = grounded("t-3", "same", side("Мөнх хаан", "Sent his brothers out.", ["MUT"], key="M0007",
                                           evidence_ids=["E044"]),
                       side("蒙哥", "Died in 1259.", ["YS"], key="M0008", evidence_ids=["E045"]))
    records = [ok, shared, derived]
    result = A.audit_source_independence({"test": records}, registry,
                                         origins(records, keys={"M0007": "mongke_mut", "M0008": "mongke_ys"}))
    assert not result["passed"] and result["n_violations"] == 2
    assert [v["pair_id"] for v in result["violations"]] == ["t-2", "t-3"]
    assert result["violations"][1]["shared_sources"] == ["YS"]
    # the message names the mentions (registry ids), evidence rows and sources of both sides
    assert result["violations"][1]["message"] == (
        "TEST pair t-3 (same): mention mongke_mut (evidence E044 from source MUT) and mention mongke_ys "
        "(evidence E045 from source YS) share source ancestry YS")
    assert A.audit_source_independence({"test": [ok]}, registry, origins([ok]))["passed"]


def test_duplication_fails_only_where_it_predicts_the_gold_relation():
    """Section 4.4: "no exact context duplication that predicts the gold relation". A
    sentence shared by the two sides of a same pair marks it as same (the shortcut of the
    preliminary construction): a violation. On a different pair it points against the gold
    relation: counted and listed, the audit passes."""
    clean = grounded("t-1", "same", side("x", "Went west. Came back."), side("y", "Ruled long."))
    on_same = grounded("t-2", "same", side("x", "Went west in 1235. Came back.", key="M0003"),
                       side("y", "Ruled long. Came back.", key="M0004"))
    records = [clean, on_same]
    result = A.audit_context_duplication({"test": records}, origins(records))
    assert not result["passed"] and result["pairs_with_shared_sentence"] == {"same": 1, "different": 0}
    assert result["violations"][0]["shared"] == ["came back."]
    assert result["violations"][0]["message"] == (
        "TEST pair t-2 (same): mention M0003 (evidence e-M0003-0 from source YS) and mention M0004 "
        "(evidence e-M0004-0 from source YS) share the sentence 'came back.'")
    on_different = grounded("t-3", "different", side("x", "Attended the quriltai of 1251.", key="M0005"),
                            side("z", "Attended the quriltai of 1251. Ruled long.", key="M0006"), "P01", "P02")
    records = [clean, on_different]
    result = A.audit_context_duplication({"test": records}, origins(records))
    assert result["passed"] and result["n_violations"] == 0
    assert result["pairs_with_shared_sentence"] == {"same": 0, "different": 1}
    assert [v["pair_id"] for v in result["shared_sentence_on_different_pairs"]] == ["t-3"]
    copied = grounded("t-4", "different", side("x", "Kept the seals."), side("z", "Ruled long."), "P01", "P02")
    records = [clean, copied]
    result = A.audit_context_duplication({"test": records}, origins(records))
    assert result["passed"] and result["cross_person_copies"][0]["persons"] == ["P02", "P12"]


def test_duplication_message_names_the_evidence_row_holding_the_sentence(registry):
    """With the registry's evidence texts, the message points at the row that holds the
    shared sentence, not at every row of the context."""
    e1, e2 = registry.evidence[0], registry.evidence[1]
    shared_text = e2.text
    a = side("x", f"{e1.text} {shared_text}", ["SHM", "SHM"], key="M0010", evidence_ids=[e1.evidence_id, e2.evidence_id])
    b = side("y", shared_text, ["YS"], key="M0011", evidence_ids=["E999"])
    records = [grounded("t-9", "same", a, b, "P01", "P01")]
    result = A.audit_context_duplication({"test": records}, origins(records, registry,
                                                                    {"M0010": "m_a", "M0011": "m_b"}))
    message = result["violations"][0]["message"]
    assert f"mention m_a (evidence {e2.evidence_id} from source SHM)" in message
    assert e1.evidence_id not in message and "mention m_b (evidence E999 from source YS)" in message


@pytest.mark.parametrize("text", [
    "This ruler is identified with the khan of the annals.",
    "Qui et Mangu dicitur.",
    "Он же упоминается в летописи.",
    "史載其又名某某。",
    "او همان شخص است.",
    "La même personne apparaît ailleurs.",
])
def test_equivalence_cues_fire_in_every_listed_language(cues, text):
    records = [grounded("t-1", "same", side("x", text, key="M0001"), side("y", "Ruled long.", key="M0002"))]
    configs = {"source_grounded": {"test": records}}
    result = A.audit_equivalence_cues(configs, cues, origins(records))
    assert not result["passed"] and result["violations"][0]["pair_id"] == "t-1"
    assert result["violations"][0]["message"].startswith(
        "source_grounded TEST pair t-1 side a: mention M0001 (evidence e-M0001-0 from source YS) contains the cue")


def test_equivalence_cues_do_not_fire_on_ordinary_evidence(cues):
    texts = ["Enthroned in the year corresponding to 1251.", "即位於開平。", "Ruled the Ilkhanate from 1295 to 1304."]
    records = [grounded(f"t-{i}", "same", side("x", t), side("y", "Ruled long.")) for i, t in enumerate(texts)]
    assert A.audit_equivalence_cues({"source_grounded": {"test": records}}, cues, origins(records))["passed"]


def test_alias_leakage_fires_per_config(registry):
    leak = grounded("t-1", "same", side("Mangu Chan", "The emperor 蒙哥 received envoys.", key="M0001"),
                    side("Möngke", "Joined the western campaign.", key="M0002"))
    own = grounded("t-2", "same", side("Mangu Chan", "Mangu Chan received envoys."),
                   side("Möngke", "Joined the western campaign."))
    records = [leak, own]
    result = A.audit_alias_leakage({"source_grounded": {"test": records}}, registry, origins(records))
    assert result["n_violations"] == 1
    violation = result["violations"][0]
    assert (violation["config"], violation["pair_id"], violation["side"], violation["names"]) == (
        "source_grounded", "t-1", "a", ["蒙哥"])
    assert violation["message"] == ("source_grounded TEST pair t-1 side a: mention M0001 (evidence e-M0001-0 from "
                                    "source YS) names 蒙哥 (registered for P12)")
    context_only = [{"pair_id": "t-2", "context_a": "Mangu Chan received envoys.", "context_b": "Joined.",
                     "person_a": "P12", "person_b": "P12"}]
    result = A.audit_alias_leakage({"context_only": {"test": context_only}}, registry, origins(records))
    assert result["n_violations"] == 1
    # a donated context is traced to its donor's mention and evidence
    donor = grounded("t-4", "different", side("Abaga", "Brother of Khubilai, he conquered Iran.", ["RAD"],
                                              key="M0014", evidence_ids=["E070"]),
                     side("Batu", "Ruled the west."), "P14", "P15")
    shuffled = copy.deepcopy(grounded("t-3", "different", side("Cublai", "Took Baghdad."),
                                      side("Mangu Chan", "Son of Tolui Khan, he ruled."), "P13", "P12"))
    shuffled["a"]["context"] = donor["a"]["context"]   # names the item's person P13 (Khubilai)
    shuffled["a"]["donor"] = {"pair_id": "t-4", "side": "a", "person": "P14"}
    shuffled["b"]["donor"] = {"pair_id": "t-4", "side": "b", "person": "P15"}
    result = A.audit_alias_leakage({"shuffled_a": {"test": [shuffled]}}, registry,
                                   origins([donor], keys={"M0014": "hulegu_rad"}))
    assert result["n_violations"] == 1 and result["violations"][0]["side"] == "a"
    assert "mention hulegu_rad (evidence E070 from source RAD) names khubilai" in result["violations"][0]["message"]


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
    from histbench.cli import main

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


def test_build_failure_names_the_mentions_evidence_and_sources(write_registry, cues):
    """Section 4.4 / issue: a curator must be able to find the rows behind a violation. Two
    mentions of one person whose evidence texts share a sentence (different texts, so the
    construction keeps both) fail the duplication audit; the error names the mentions, the
    evidence rows and the sources instead of only counting violations."""
    from .conftest import synthetic_registry

    tables = synthetic_registry(24)
    tables["evidence"][0]["text"] = "Raised the tents at the river. Led the right wing."
    tables["evidence"][1]["text"] = "Guarded the treasury. Led the right wing."
    from histbench.builders.mher import construct as C
    from histbench.builders.mher.builder import build_mher

    with pytest.raises(BuildError) as caught:
        build_mher(read_registry(write_registry(tables)), cues, C.BuildOptions())
    lines = [d for d in caught.value.details if d.startswith("context_duplication:")]
    assert len(lines) == 1
    assert re.fullmatch(
        r"context_duplication: (DEV|TEST) pair (dev|test)-\d{4} \(same\): mention m_X00_[01] \(evidence E00[01] from "
        r"source S00[01]\) and mention m_X00_[01] \(evidence E00[01] from source S00[01]\) share the sentence "
        r"'led the right wing\.'", lines[0]), lines[0]
    assert "m_X00_0" in lines[0] and "m_X00_1" in lines[0]
