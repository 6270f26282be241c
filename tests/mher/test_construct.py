"""Construction rules of section 4: split, pairs, challenge labels, evidence rules, the
source-grounded selection and the derangements."""

from __future__ import annotations

import copy
from collections import Counter

import pytest

from histbench.builders.mher import construct as C
from histbench.builders.mher.registry import Mention, read_registry
from histbench.builders.mher.text import normalise

from .conftest import SAMPLE, synthetic_registry


def _registry(write_registry, tables, name="registry"):
    return read_registry(write_registry(tables, name=name))


def test_paper_split_ratio_17_of_84():
    """Section 4.2: 17 of 84 primary entities go to DEV, 67 to TEST."""
    components = [[f"P{i}"] for i in range(84)]
    split = C.split_entities(components, seed=0, dev_fraction=17 / 84)
    assert Counter(split.values()) == {"dev": 17, "test": 67}
    assert C.split_entities(components, 0, 17 / 84) == split
    assert C.split_entities(components, 1, 17 / 84) != split


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_split_is_entity_disjoint_and_keeps_hard_negative_components(seed):
    registry = read_registry(SAMPLE)
    persons = C.primary_persons(registry)
    components = C.hard_negative_components(registry, persons)
    assert sorted(c for c in components if len(c) > 1) == [["P09", "P10"], ["P17", "P18"]]
    split = C.split_entities(components, seed, 17 / 84)
    assert set(split) == set(persons)
    assert split["P09"] == split["P10"] and split["P17"] == split["P18"]
    for s in C.SPLITS:
        pairs = C.select_name_only(registry, split, s, C.BuildOptions(seed=seed)).pairs
        assert all(split[p.a.person_id] == s and split[p.b.person_id] == s for p in pairs)


def test_name_only_pairs_balanced_capped_and_without_duplicate_surfaces(write_registry):
    tables = synthetic_registry(10, mentions_per_person=5)
    # one person with two identical surfaces (after NFKC + casefold): that same pair is dropped
    tables["mentions"][1]["surface"] = tables["mentions"][0]["surface"].upper()
    registry = _registry(write_registry, tables)
    split = {p: "test" for p in registry.persons}
    options = C.BuildOptions(seed=0, max_pairs_per_entity_pair=2)
    selection = C.select_name_only(registry, split, "test", options)
    labels = Counter(p.label for p in selection.pairs)
    assert labels["same"] == labels["different"] == 20
    per_entity_pair = Counter(p.entity_pair for p in selection.pairs)
    assert max(per_entity_pair.values()) <= 2
    assert selection.counts["same_identical_surface_dropped"] == 1
    assert selection.counts["same_over_cap"] == 10 * 10 - 1 - 20
    assert not any(p.label == "same" and normalise(p.a.surface) == normalise(p.b.surface) for p in selection.pairs)


def test_challenge_labels_follow_the_documented_rules():
    def m(mid, pid, surface, lang="en", script="Latn"):
        return Mention(mid, pid, surface, lang, script, None, "S")

    # identical after NFKC + casefold: fullwidth letters and case differ in the raw strings
    pair = C.make_pair("test", m("a", "P1", "ＯＧＨＵＬ Qaimish"), m("b", "P2", "oghul qaimish"), 85.0)
    assert pair.challenge == {"cross_language": False, "cross_script": False, "near_surface": False,
                              "identical_surface": True}
    near = C.make_pair("test", m("a", "P1", "Oghul Qaimish"), m("b", "P2", "Oghul-Qaimish"), 85.0)
    assert near.challenge["near_surface"] and not near.challenge["identical_surface"] and near.similarity >= 85
    far = C.make_pair("test", m("a", "P1", "Arghun"), m("b", "P2", "Arghun Aqa"), 85.0)
    assert far.similarity == 75.0 and not far.challenge["near_surface"]
    same = C.make_pair("test", m("a", "P1", "Oghul Qaimish"), m("b", "P1", "Oghul-Qaimish", "fa", "Arab"), 85.0)
    assert same.challenge == {"cross_language": True, "cross_script": True, "near_surface": False,
                              "identical_surface": False}


def test_evidence_rules_exclude_and_count(write_registry, cues):
    tables = synthetic_registry(4)
    ev = tables["evidence"]
    tables["aliases"] = [{"person_id": "X01", "alias": "Great Bolad"}]
    ev[0]["text"] = "The chronicle says he is the same person as the envoy."           # cue (en)
    ev[1]["text"] = "Idem qui in annalibus nominatur."                                  # cue (la)
    ev[3]["text"] = "Known at court as Great Bolad, he served the khan."   # alias around the own form "Bolad"
    ev[4]["text"] = "Болад served the khan in 1250."                        # the own (Cyrillic) form: allowed
    ev[5]["text"] = "Bolad the scribe kept the seals."                     # another mention's form: leakage
    ev[6]["text"] = ev[9]["text"] = "Served as a scribe at the summer camp."            # copied X02 / X03
    ev[7]["text"] = ev[8]["text"] = "Collected taxes in the eastern districts."         # copied within X02
    registry = _registry(write_registry, tables)
    result = C.build_contexts(registry, cues)
    rules = {e["evidence_id"]: e["rule"] for e in result.excluded}
    assert rules == {"E000": "equivalence_cue", "E001": "equivalence_cue", "E010": "alias_leakage",
                     "E012": "alias_leakage", "E020": "copied_between_persons", "E030": "copied_between_persons",
                     "E021": "copied_between_mentions", "E022": "copied_between_mentions"}
    assert result.contexts["m_X01_1"].text == "Болад served the khan in 1250."
    assert "m_X00_0" not in result.contexts


def test_evidence_language_without_cue_list_stops_the_build(write_registry, cues):
    from histbench.builders.core.errors import SourceError

    tables = synthetic_registry(3)
    tables["evidence"][2]["language"] = "xx"
    with pytest.raises(SourceError, match="no equivalence-cue list for evidence language"):
        C.build_contexts(_registry(write_registry, tables), cues)


def test_source_independence_is_transitive(write_registry, cues):
    tables = synthetic_registry(3)
    # m_X00_1's source derives from a compilation that derives from m_X00_0's source
    tables["sources"].append({"source_id": "COMP", "citation": "A compilation", "tradition": "en",
                              "locator": None, "derived_from": "S000"})
    tables["sources"][1]["derived_from"] = "COMP"
    registry = _registry(write_registry, tables)
    contexts = C.build_contexts(registry, cues).contexts
    assert not C.independent(registry, contexts["m_X00_0"], contexts["m_X00_1"])
    assert C.independent(registry, contexts["m_X00_0"], contexts["m_X00_2"])


def test_source_grounded_keeps_identical_surfaces_and_ranks_by_context_similarity(write_registry, cues):
    tables = synthetic_registry(6)
    tables["mentions"][3]["surface"] = tables["mentions"][6]["surface"] = "Same Name"   # X01 / X02
    registry = _registry(write_registry, tables)
    split = {p: "test" for p in registry.persons}
    pairs = C.assign_pair_ids(C.select_name_only(registry, split, "test", C.BuildOptions()).pairs, "test", 0)
    contexts = C.build_contexts(registry, cues).contexts
    chosen = C.select_source_grounded(registry, pairs, contexts, "test", 0)
    labels = Counter(p.label for p in chosen.pairs)
    assert labels["same"] == labels["different"]
    obligatory = [p for p in chosen.pairs if p.selection == "identical_surface_obligatory"]
    assert len(obligatory) == 1 and obligatory[0].challenge["identical_surface"]
    eligible = [p for p in pairs if p.label == "different" and not p.challenge["identical_surface"]]
    kept = {p.pair_id for p in chosen.pairs if p.selection == "context_confusable"}
    worst_kept = min(p.context_similarity for p in eligible if p.pair_id in kept)
    best_left = max((p.context_similarity for p in eligible if p.pair_id not in kept), default=-1)
    assert worst_kept >= best_left


def _grounded_sample():
    registry = read_registry(SAMPLE)
    from histbench.builders.mher.text import CueList

    from .conftest import CUES

    cues = CueList.load(CUES)
    persons = C.primary_persons(registry)
    split = C.split_entities(C.hard_negative_components(registry, persons), 0, 17 / 84)
    pairs = C.assign_pair_ids(C.select_name_only(registry, split, "test", C.BuildOptions()).pairs, "test", 0)
    contexts = C.build_contexts(registry, cues).contexts
    grounded = C.select_source_grounded(registry, pairs, contexts, "test", 0).pairs
    return registry, grounded, contexts


def test_derangements_have_no_fixed_points_self_donation_or_alias_leakage():
    from histbench.builders.mher.text import find_names

    registry, grounded, contexts = _grounded_sample()
    slots = C.derangement_slots(grounded, contexts)
    results = C.derangements(registry, grounded, contexts, "test", seed=0)
    assert len(results) == 3
    for mapping in results:
        assert sorted(mapping) == sorted(mapping.values()) == list(range(len(slots)))   # the pool is preserved
        for r, d in mapping.items():
            recipient, donor = slots[r], slots[d]
            assert r != d                                                                # no fixed point
            persons = set(grounded[recipient.pair_index].persons)
            assert donor.person_id not in persons                                        # no self-donation
            names = set().union(*(registry.registered_names(p) for p in persons))
            assert not find_names(donor.text, names)                                     # no alias leakage
    assert results[0] != results[1] != results[2] and results[0] != results[2]
    again = C.derangements(registry, grounded, contexts, "test", seed=0)
    assert again == results                                                              # deterministic


def test_derangement_that_cannot_exist_is_an_error(write_registry, cues):
    from histbench.builders.core.errors import BuildError

    tables = synthetic_registry(2)
    registry = _registry(write_registry, tables)
    split = {p: "test" for p in registry.persons}
    pairs = C.assign_pair_ids(C.select_name_only(registry, split, "test", C.BuildOptions()).pairs, "test", 0)
    contexts = C.build_contexts(registry, cues).contexts
    grounded = [p for p in pairs if p.label == "different"][:1]
    with pytest.raises(BuildError, match="no derangement A"):
        C.derangements(registry, grounded, contexts, "test", seed=0)


def test_mention_keys_and_pair_ids_are_opaque_and_deterministic():
    registry = read_registry(SAMPLE)
    keys = C.mention_keys(list(registry.mentions), 0)
    assert keys == C.mention_keys(list(reversed(list(registry.mentions))), 0)
    assert all(k.startswith("M") and k[1:].isdigit() for k in keys.values())
    assert len(set(keys.values())) == len(keys)
    ordered = sorted(registry.mentions)
    assert [keys[m] for m in ordered] != sorted(keys[m] for m in ordered)  # not in registry order


def test_pair_order_carries_no_label_pattern():
    registry, grounded, _ = _grounded_sample()
    labels = [p.label for p in sorted(grounded, key=lambda p: p.pair_id)]
    first_half = labels[: len(labels) // 2]
    assert 0 < first_half.count("same") < len(first_half)


def test_mask_own_surface_in_context_only():
    text, count = C.mask_own_surface("Batu rode west; BATU returned. Batukhan stayed.", "Batu")
    assert count == 2 and text == "[name withheld] rode west; [name withheld] returned. Batukhan stayed."
    assert C.mask_own_surface("nothing here", "Batu") == ("nothing here", 0)


def test_cap_must_be_positive(write_registry):
    from histbench.builders.core.errors import BuildError

    registry = _registry(write_registry, copy.deepcopy(synthetic_registry(3)))
    with pytest.raises(BuildError, match="at least 1"):
        C.select_name_only(registry, {p: "test" for p in registry.persons}, "test",
                           C.BuildOptions(max_pairs_per_entity_pair=0))


def test_extra_cue_file_extends_the_shipped_list(write_registry, tmp_path):
    from histbench.builders.mher.text import CueList

    from .conftest import CUES

    extra = tmp_path / "cues.yaml"
    extra.write_text("languages:\n  en: [served as the same]\n  kk: [бір адам]\n", encoding="utf-8")
    cues = CueList.load(CUES, extra)
    assert "kk" in cues.languages and "la" in cues.languages
    tables = synthetic_registry(3)
    tables["evidence"][0]["text"] = "He served as the same envoy twice."
    result = C.build_contexts(_registry(write_registry, tables), cues)
    assert [(e["evidence_id"], e["detail"]) for e in result.excluded] == [("E000", "en: served as the same")]


def test_language_aliases_declare_coverage(write_registry, cues):
    assert {"lzh", "xng", "fro"} <= cues.languages
    tables = synthetic_registry(3)
    tables["evidence"][1]["language"] = "lzh"
    tables["evidence"][1]["text"] = "史稱其又名某。"
    result = C.build_contexts(_registry(write_registry, tables), cues)
    assert [(e["evidence_id"], e["rule"]) for e in result.excluded] == [("E001", "equivalence_cue")]
