"""The sample registry built through the real build path (manifest, writer, schemas)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from histbench.builders.machinery.build import run_build
from histbench.builders.machinery.validate import validate_build
from histbench.builders.mher import BUILDER

from .conftest import SAMPLE


def _manifest(folder):
    return json.loads((folder / "histbench.json").read_text(encoding="utf-8"))


def test_configs_splits_and_table1(sample_build, sample_bench):
    manifest = _manifest(sample_build)
    assert set(manifest["rows"]) == {"name_only", "context_only", "source_grounded", "shuffled_a", "shuffled_b",
                                     "shuffled_c", "unresolved", "entities"}
    assert manifest["rows"]["unresolved"] == {"test": 3}
    t1 = manifest["summary"]["table1"]
    assert t1["primary_entities"] == {"dev": 5, "test": 20, "total": 25}
    for split in ("dev", "test"):
        name, grounded = t1["name_only"][split], t1["source_grounded"][split]
        assert name["same"] == name["different"] and grounded["same"] == grounded["different"]
        assert manifest["rows"]["name_only"][split] == name["total"]
        for config in ("context_only", "source_grounded", "shuffled_a", "shuffled_b", "shuffled_c"):
            assert manifest["rows"][config][split] == grounded["total"]
    validate_build(sample_build)


def test_source_grounded_is_a_subset_with_shared_pair_ids(sample_bench):
    for split in ("dev", "test"):
        name = {r["pair_id"]: r for r in sample_bench.items("name_only", split)}
        grounded = sample_bench.items("source_grounded", split)
        assert {r["pair_id"] for r in grounded} == {p for p, r in name.items() if r["in_source_grounded"]}
        for rec in grounded:
            twin = name[rec["pair_id"]]
            assert (rec["a"]["key"], rec["b"]["key"], rec["label"]) == (twin["a"]["key"], twin["b"]["key"], twin["label"])
        for config in ("context_only", "shuffled_a", "shuffled_b", "shuffled_c"):
            assert [r["pair_id"] for r in sample_bench.items(config, split)] == [r["pair_id"] for r in grounded]


def test_entity_disjoint_splits_in_the_build(sample_bench):
    persons = {split: {r[k] for r in sample_bench.items("name_only", split) for k in ("person_a", "person_b")}
               for split in ("dev", "test")}
    assert persons["dev"] and persons["test"] and not persons["dev"] & persons["test"]
    keys = {split: {r["key"] for r in sample_bench.items("entities", split)} for split in ("dev", "test")}
    assert not keys["dev"] & keys["test"]
    unresolved = {r[k] for r in sample_bench.items("unresolved", "test") for k in ("person_a", "person_b")}
    assert not unresolved & persons["dev"]


def test_sample_seed_8_places_the_person_an_unresolved_question_cites_in_test(cues):
    """With seed 8 the seeded draw puts Yelü Dashi (P25) in DEV, but the Prester John
    question UQ1 (TEST-only) cites his Liaoshi mention: he is placed in TEST and reported."""
    from histbench.builders.mher import construct as C
    from histbench.builders.mher.builder import build_mher
    from histbench.builders.mher.registry import read_registry

    registry = read_registry(SAMPLE)
    persons = C.primary_persons(registry)
    assert C.split_entities(C.hard_negative_components(registry, persons), 8, 17 / 84)["P25"] == "dev"
    configs, summary, _ = build_mher(registry, cues, C.BuildOptions(seed=8))
    assert summary["split"]["placed_in_test_for_unresolved"] == {"P25": [{"question_id": "UQ1",
                                                                          "mention_id": "dashi_ls"}]}
    assert "P25" not in summary["split"]["dev_entities"] and len(summary["split"]["dev_entities"]) == 5


def test_shuffled_contexts_are_a_derangement_of_the_pool(sample_bench):
    for split in ("dev", "test"):
        grounded = sample_bench.items("source_grounded", split)
        pool = sorted(r[s]["context"] for r in grounded for s in ("a", "b"))
        own = {(r["pair_id"], s): r[s]["context"] for r in grounded for s in ("a", "b")}
        for config in ("shuffled_a", "shuffled_b", "shuffled_c"):
            records = sample_bench.items(config, split)
            assert sorted(r[s]["context"] for r in records for s in ("a", "b")) == pool
            for r in records:
                for s in ("a", "b"):
                    assert (r[s]["donor"]["pair_id"], r[s]["donor"]["side"]) != (r["pair_id"], s)
                    assert r[s]["donor"]["person"] not in (r["person_a"], r["person_b"])
                    assert r[s]["context"] != own[(r["pair_id"], s)]


def test_curator_notes_never_reach_the_build(sample_build):
    from histbench.builders.mher.registry import read_registry

    notes = [p.curator_notes for p in read_registry(SAMPLE).persons.values() if p.curator_notes]
    assert len(notes) == 27
    texts = [(sample_build / "README.md").read_text(encoding="utf-8"),
             (sample_build / "histbench.json").read_text(encoding="utf-8")]
    for path in sorted((sample_build / "data").rglob("*.parquet")):
        texts.append(json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False))
    blob = "\n".join(texts)
    assert "CURATOR-NOTE" not in blob
    assert not any(note in blob for note in notes)


def test_entities_config_exposes_only_model_visible_fields(sample_bench):
    rows = sample_bench.items("entities", "test")
    assert set(rows[0]) == {"key", "surface", "language", "script", "context"}
    grounded = {r[s]["key"]: r[s]["context"] for r in sample_bench.items("source_grounded", "test") for s in ("a", "b")}
    for row in rows:
        assert row["context"] == grounded.get(row["key"])


def test_challenge_labels_in_the_build(sample_bench):
    records = sample_bench.items("name_only", "test") + sample_bench.items("name_only", "dev")
    identical = [r for r in records if r["challenge"]["identical_surface"]]
    assert {(r["a"]["surface"], r["b"]["surface"]) for r in identical} == {("Oghul Qaimish", "Oghul Qaimish"),
                                                                            ("Arghun", "Arghun")}
    assert all(r["label"] == "different" for r in identical)
    grounded_ids = {r["pair_id"] for s in ("dev", "test") for r in sample_bench.items("source_grounded", s)}
    assert all(r["pair_id"] in grounded_ids for r in identical)   # kept obligatorily
    assert any(r["challenge"]["near_surface"] for r in records)


@pytest.mark.slow
def test_rebuild_is_byte_identical_and_seed_changes_the_split(sample_build, tmp_path):
    again = run_build(BUILDER, {"registry": SAMPLE}, out_root=tmp_path / "again")
    assert _manifest(again)["data_sha256"] == _manifest(sample_build)["data_sha256"]
    other = run_build(BUILDER, {"registry": SAMPLE}, out_root=tmp_path / "seed1", seed=1)
    assert _manifest(other)["summary"]["split"]["dev_entities"] != _manifest(sample_build)["summary"]["split"]["dev_entities"]


def test_exclusions_are_counted(sample_build):
    summary = _manifest(sample_build)["summary"]
    assert summary["exclusions"]["evidence_rows_excluded"] == {
        "alias_leakage": 1, "copied_between_persons": 2, "copied_between_mentions": 2, "equivalence_cue": 1}
    excluded = {e["evidence_id"] for e in summary["evidence_excluded"]}
    assert excluded == {"E025", "E036", "E050", "E062", "E064", "E087"}
    not_independent = sum(summary["pairs"]["source_grounded"][s].get("same_not_independent", 0) for s in ("dev", "test"))
    assert not_independent > 0


def test_cli_build_error_names_file_row_and_field(tmp_path, capsys):
    import shutil

    from histbench.cli import main

    folder = tmp_path / "registry"
    shutil.copytree(SAMPLE, folder)
    text = (folder / "mentions.csv").read_text(encoding="utf-8").replace("chinggis_ys,P01", "chinggis_ys,P99", 1)
    (folder / "mentions.csv").write_text(text, encoding="utf-8")
    assert main(["build", "mher", "--registry", str(folder), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "mentions.csv, row 4, field 'person_id': unknown person_id 'P99'" in err
    assert not (tmp_path / "out" / "mher-1.0.0").exists()
