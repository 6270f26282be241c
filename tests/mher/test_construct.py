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

    # identical after NFKC + casefold: fullwidth letters and case differ in the raw strings. An
    # identical-surface pair is near-surface too: in the paper the slices overlap (8.1: Sol
    # abstains on one near-surface and on one identical-surface item; 8.3: Sol abstains on
    # one of the 108 paired items and is right on the other 107, so it is the same item)
    pair = C.make_pair("test", m("a", "P1", "ＯＧＨＵＬ Qaimish"), m("b", "P2", "oghul qaimish"), 85.0)
    assert pair.challenge == {"cross_language": False, "cross_script": False, "near_surface": True,
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
    from histbench.core.errors import SourceError

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
    chosen = C.select_source_grounded(registry, pairs, contexts, "test", C.BuildOptions())
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
    grounded = C.select_source_grounded(registry, pairs, contexts, "test", C.BuildOptions()).pairs
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
    from histbench.core.errors import BuildError

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
    from histbench.core.errors import BuildError

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


# ---------------------------------------------------------------------------- balance (Table 1)

FIVE_TEMURS = [
    ("TEM1", "Temür Öljeitü", "鐵穆耳", "lzh", "Hani", "Succeeded Khubilai on the Yuan throne in 1294."),
    ("TEM2", "Timur", "تیمور گورکان", "fa", "Arab", "Built his capital at Samarqand in the 1370s."),
    ("TEM3", "Temür Qutlugh", "Temür Qutlugh", "en", "Latn", "Khan of the Golden Horde around 1398."),
    ("TEM4", "Temürtash", "Temürtash", "en", "Latn", "Son of the amir Chupan, governor of Anatolia in the 1320s."),
    ("TEM5", "Toghon Temür", "妥懽帖睦爾", "lzh", "Hani", "The last Yuan emperor, who left Daidu in 1368."),
]


def _five_temurs(n_filler: int = 20, mentions_per_person: int = 2):
    """Five different persons all attested as plain "Temür" (ten identical-surface
    different pairs among them), each with one other, distinct form."""
    from .conftest import add_person

    tables = synthetic_registry(n_filler, mentions_per_person=mentions_per_person)
    for pid, name, other, lang, script, text in FIVE_TEMURS:
        add_person(tables, pid, name, [
            (f"{pid.lower()}_plain", "Temür", "en", "Latn", f"{text.split(' ')[0]} the record of {pid} in a chronicle."),
            (f"{pid.lower()}_other", other, lang, script, text),
        ])
    return tables


def test_more_identical_surface_negatives_than_same_pairs_keeps_balance(write_registry):
    """Table 1: every pair set is balanced. Five Temürs give ten identical-surface different
    pairs; a split holding them and one other person has six same pairs: six identical-surface
    pairs are kept (spread over the person pairs, seeded) and four are dropped and counted."""
    registry = _registry(write_registry, _five_temurs())
    split = {p: ("test" if p.startswith("TEM") or p == "X00" else "dev") for p in registry.persons}
    selection = C.select_name_only(registry, split, "test", C.BuildOptions())
    labels = Counter(p.label for p in selection.pairs)
    assert labels == {"same": 6, "different": 6}
    identical = [p for p in selection.pairs if p.challenge["identical_surface"]]
    assert len(identical) == 6 and len({p.entity_pair for p in identical}) == 6
    assert selection.counts["different_identical_surface_dropped_for_balance"] == 4
    assert C.select_name_only(registry, split, "test", C.BuildOptions()).pairs == selection.pairs  # deterministic
    other_seed = C.select_name_only(registry, split, "test", C.BuildOptions(seed=3))
    assert {p.mention_ids for p in other_seed.pairs} != {p.mention_ids for p in selection.pairs}

    from histbench.core.errors import BuildError

    with pytest.raises(BuildError, match="10 identical-surface different pairs but only 6 same pairs"):
        C.select_name_only(registry, split, "test", C.BuildOptions(identical_surface_overflow="fail"))


def test_source_grounded_balance_when_identical_negatives_outnumber_eligible_same_pairs(write_registry, cues):
    """4.3 keeps every eligible same pair and every identical-surface negative; when the
    identical-surface negatives are more, balance wins by the same documented rule."""
    from histbench.core.errors import BuildError

    tables = _five_temurs()
    # the "other" form of three Temürs shares its source with the plain form: not independent
    for mention in tables["mentions"]:
        if mention["mention_id"] in ("tem1_other", "tem2_other", "tem3_other"):
            mention["source_id"] = f"SRC_{mention['mention_id'].split('_')[0]}_plain"
    for row in tables["evidence"]:
        if row["mention_id"] in ("tem1_other", "tem2_other", "tem3_other"):
            row["source_id"] = f"SRC_{row['mention_id'].split('_')[0]}_plain"
    registry = _registry(write_registry, tables)
    split = {p: ("test" if p.startswith("TEM") or p == "X00" else "dev") for p in registry.persons}
    options = C.BuildOptions()
    pairs = C.assign_pair_ids(C.select_name_only(registry, split, "test", options).pairs, "test", 0)
    contexts = C.build_contexts(registry, cues).contexts
    chosen = C.select_source_grounded(registry, pairs, contexts, "test", options)
    assert chosen.counts["same_not_independent"] == 3
    assert Counter(p.label for p in chosen.pairs) == {"same": 3, "different": 3}
    assert sum(p.selection == "identical_surface_obligatory" for p in chosen.pairs) == 3
    assert chosen.counts["different_identical_surface_dropped_for_balance"] == 3
    with pytest.raises(BuildError, match="source-grounded: 6 identical-surface different pairs but only 3 same"):
        C.select_source_grounded(registry, pairs, contexts, "test", C.BuildOptions(identical_surface_overflow="fail"))


def test_five_temurs_build_is_balanced_in_every_split(write_registry, cues):
    """The whole build on a five-Temür registry (ten filler persons with a single form, so
    TEST has nine same pairs for the ten identical-surface negatives: the old build wrote
    9 same / 10 different): every split of name_only and source_grounded is balanced, the
    five stay in one split, and the dropped negative is counted in the summary."""
    from histbench.builders.mher.builder import build_mher

    tables = _five_temurs(n_filler=16, mentions_per_person=2)
    single = {f"m_X{i:02d}_1" for i in range(6, 16)}
    tables["mentions"] = [m for m in tables["mentions"] if m["mention_id"] not in single]
    tables["evidence"] = [e for e in tables["evidence"] if e["mention_id"] not in single]
    registry = _registry(write_registry, tables)
    configs, summary, markdown = build_mher(registry, cues, C.BuildOptions(seed=2))
    dev = set(summary["split"]["dev_entities"])
    assert not dev & {"TEM1", "TEM2", "TEM3", "TEM4", "TEM5"}
    for config in ("name_only", "source_grounded"):
        for split in C.SPLITS:
            labels = Counter(r["label"] for r in configs[config][split])
            assert labels["same"] == labels["different"] > 0, (config, split, labels)
    assert summary["table1"]["name_only"]["test"] == {"total": 18, "same": 9, "different": 9}
    assert summary["pairs"]["name_only"]["test"]["different_identical_surface_dropped_for_balance"] == 1
    assert "| identical-surface different pairs dropped to balance name-only (more than same pairs) | 1 |" in markdown


# ---------------------------------------------------------------------------- entity disjointness (4.2)


def _with_unresolved_question_on_a_dev_person():
    tables = synthetic_registry(24)
    from .conftest import add_person

    add_person(tables, "U1", "Prester John", [("prester", "Presbyter Iohannes", "la", "Latn", "A priest-king.")],
               status="unresolved")
    return tables


def test_unresolved_question_citing_a_dev_person_places_it_in_test(write_registry, cues):
    """Expert-unresolved questions are TEST-only (Table 1); a confirmed person they cite
    must not be in DEV. The seeded split would put X.. in DEV; the rule places it (and its
    component) in TEST and reports it; the finished configs are entity-disjoint."""
    from histbench.builders.mher.builder import build_mher

    tables = _with_unresolved_question_on_a_dev_person()
    registry = _registry(write_registry, tables, "probe")
    persons = C.primary_persons(registry)
    free = C.split_entities(C.hard_negative_components(registry, persons), 0, 17 / 84)
    dev_person = sorted(p for p, s in free.items() if s == "dev")[0]
    mention = f"m_{dev_person}_1"
    tables["unresolved"] = [{"question_id": "UQ1", "mention_a": "prester", "mention_b": mention,
                             "note": "Scholars disagree whether the report means this ruler."}]
    registry = _registry(write_registry, tables)
    configs, summary, markdown = build_mher(registry, cues, C.BuildOptions())
    assert dev_person not in summary["split"]["dev_entities"]
    assert len(summary["split"]["dev_entities"]) == sum(1 for s in free.values() if s == "dev")   # DEV refilled
    assert summary["split"]["placed_in_test_for_unresolved"] == {
        dev_person: [{"question_id": "UQ1", "mention_id": mention}]}
    assert "| persons placed in TEST because an expert-unresolved question cites them | 1 |" in markdown
    dev_persons = {r[k] for r in configs["name_only"]["dev"] for k in ("person_a", "person_b")}
    assert dev_person not in dev_persons
    assert configs["unresolved"]["test"][0]["person_b"] == dev_person

    from histbench.core.errors import BuildError

    with pytest.raises(BuildError) as caught:
        build_mher(registry, cues, C.BuildOptions(unresolved_placement="refuse"))
    assert "DEV person(s) are cited by expert-unresolved questions" in caught.value.message
    assert caught.value.details == [f"person {dev_person}: question UQ1 cites mention {mention}"]


def test_entity_disjointness_is_checked_across_every_config():
    """A person in DEV name_only and in TEST unresolved (what the old builder produced for a
    question citing a DEV person), in a donated TEST context, or behind a TEST entity row is
    refused, naming the person and where it occurs."""
    from histbench.core.errors import BuildError

    def pair(pair_id, a, b):
        return {"pair_id": pair_id, "person_a": a, "person_b": b}

    configs = {
        "name_only": {"dev": [pair("dev-0001", "P1", "P2")], "test": [pair("test-0001", "P3", "P4")]},
        "unresolved": {"test": [{"question_id": "UQ1", "person_a": "U1", "person_b": "P1"}]},
    }
    with pytest.raises(BuildError) as caught:
        C.check_entity_disjointness(configs, {})
    assert caught.value.details == ["person P1: DEV in name_only dev-0001; TEST in unresolved UQ1"]
    shuffled = {"pair_id": "test-0001", "person_a": "P3", "person_b": "P4",
                "a": {"donor": {"pair_id": "test-0002", "side": "b", "person": "P2"}},
                "b": {"donor": {"pair_id": "test-0003", "side": "a", "person": "P4"}}}
    with pytest.raises(BuildError, match="1 person"):
        C.check_entity_disjointness({"name_only": configs["name_only"], "shuffled_a": {"test": [shuffled]}}, {})
    with pytest.raises(BuildError) as caught:
        C.check_entity_disjointness({"name_only": configs["name_only"],
                                     "entities": {"test": [{"key": "M0009"}]}}, {"M0009": "P2"})
    assert caught.value.details == ["person P2: DEV in name_only dev-0001; TEST in entities M0009"]
    C.check_entity_disjointness({"name_only": configs["name_only"]}, {})


# ---------------------------------------------------------------------------- empty subset (4.3)


def test_empty_source_grounded_subset_is_an_error_naming_the_rule(write_registry, cues):
    """If the evidence rules leave no Source-grounded pair in a split, the build stops and
    says which rule removed it (not a build whose `eval` later fails with "no DEV items")."""
    from histbench.builders.mher.builder import build_mher
    from histbench.core.errors import BuildError

    tables = synthetic_registry(24)
    for row in tables["evidence"]:
        row["text"] = row["text"] + " He is the same person as the envoy of the annals."
    with pytest.raises(BuildError) as caught:
        build_mher(_registry(write_registry, tables), cues, C.BuildOptions())
    message = caught.value.message
    assert message.startswith("DEV has no Source-grounded pairs: of its ")
    assert "lost the context of a side (evidence rule that removed it, pairs: equivalence_cue: " in message
    assert caught.value.details and all("excluded by equivalence_cue" in d for d in caught.value.details)


def test_unindependent_sources_emptying_the_subset_are_named(write_registry, cues):
    from histbench.builders.mher.builder import build_mher
    from histbench.core.errors import BuildError

    tables = synthetic_registry(24)
    for mention in tables["mentions"]:
        mention["source_id"] = "S000"
    for row in tables["evidence"]:
        row["source_id"] = "S000"
    with pytest.raises(BuildError, match=r"are not independently sourced \(source independence, derived_from\)"):
        build_mher(_registry(write_registry, tables), cues, C.BuildOptions())
