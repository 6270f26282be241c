"""Registry reading: CSV and JSON tables, and errors that name the file, row and field."""

from __future__ import annotations

import copy

import pytest

from histbench.builders.mher.registry import read_registry
from histbench.core.errors import SourceError

from .conftest import SAMPLE, synthetic_registry


def test_sample_registry_reads_completely():
    registry = read_registry(SAMPLE)
    assert len(registry.persons) == 27 and len(registry.evidence) == 100 and len(registry.unresolved) == 3
    assert {p.status for p in registry.persons.values()} == {"confirmed", "unresolved"}
    assert registry.source_ancestry("MUT") == {"MUT", "SHM", "YS", "RAD", "JUV"}
    assert "Temüjin" in registry.registered_names("P01") and "Činggis Qa'an" in registry.registered_names("P01")
    scripts = {m.script for m in registry.mentions.values()}
    assert {"Latn", "Cyrl", "Hani", "Arab"} <= scripts


def test_csv_and_json_tables_read_the_same(write_registry):
    tables = synthetic_registry(4)
    from_csv = read_registry(write_registry(tables, "csv", "csv"))
    from_json = read_registry(write_registry(tables, "json", "json"))
    assert from_csv.persons == from_json.persons
    assert from_csv.mentions == from_json.mentions
    assert [(e.evidence_id, e.text) for e in from_csv.evidence] == [(e.evidence_id, e.text) for e in from_json.evidence]


def _broken(tables, table, index, field, value):
    tables = copy.deepcopy(tables)
    tables[table][index][field] = value
    return tables


@pytest.mark.parametrize(
    ("table", "index", "field", "value", "message", "row"),
    [
        ("mentions", 2, "person_id", "NOBODY", "unknown person_id 'NOBODY'", "4"),
        ("persons", 1, "prominence", "famous", "'famous' is not one of head, mid, long-tail", "3"),
        ("persons", 0, "status", "maybe", "not one of confirmed, unresolved", "2"),
        ("evidence", 0, "kind", "gossip", "'gossip' is not one of", "2"),
        ("evidence", 3, "source_id", "S99", "unknown source_id 'S99'", "5"),
        ("mentions", 0, "surface", "", "required value is empty", "2"),
        ("sources", 1, "derived_from", "S000;NOPE", "derives from unknown source 'NOPE'", "3"),
    ],
)
def test_bad_values_name_file_row_and_field(write_registry, table, index, field, value, message, row):
    folder = write_registry(_broken(synthetic_registry(4), table, index, field, value))
    with pytest.raises(SourceError) as caught:
        read_registry(folder)
    error = caught.value
    assert message in error.message
    assert error.file.endswith(f"{table}.csv") and error.row == row and error.field == field


def test_json_rows_are_numbered_from_one(write_registry):
    folder = write_registry(_broken(synthetic_registry(3), "mentions", 1, "person_id", "NOBODY"), fmt="json")
    with pytest.raises(SourceError) as caught:
        read_registry(folder)
    assert caught.value.file.endswith("mentions.json") and caught.value.row == "2"


def test_duplicate_ids_and_confirmed_person_without_stratum(write_registry):
    tables = synthetic_registry(3)
    tables["mentions"].append(dict(tables["mentions"][0]))
    with pytest.raises(SourceError, match="duplicate mention_id"):
        read_registry(write_registry(tables, name="dup"))
    tables = _broken(synthetic_registry(3), "persons", 0, "prominence", None)
    with pytest.raises(SourceError, match="confirmed person needs a prominence"):
        read_registry(write_registry(tables, name="nostratum"))


def test_table_layout_errors(write_registry, tmp_path):
    folder = write_registry(synthetic_registry(3))
    (folder / "evidence.json").write_text("[]", encoding="utf-8")
    with pytest.raises(SourceError, match="given twice"):
        read_registry(folder)
    (folder / "evidence.json").unlink()
    (folder / "persons_old.csv").write_text("x\n", encoding="utf-8")
    with pytest.raises(SourceError, match="unexpected file"):
        read_registry(folder)
    (folder / "persons_old.csv").unlink()
    (folder / "NOTES.md").write_text("curators' notes are ignored\n", encoding="utf-8")
    (folder / "unresolved.csv").unlink()
    with pytest.raises(SourceError, match="missing table 'unresolved'"):
        read_registry(folder)


def test_unknown_and_missing_columns(write_registry):
    folder = write_registry(synthetic_registry(3))
    text = (folder / "persons.csv").read_text(encoding="utf-8").replace("curator_notes", "birth_year", 1)
    (folder / "persons.csv").write_text(text, encoding="utf-8")
    with pytest.raises(SourceError, match="unknown column\\(s\\) 'birth_year'"):
        read_registry(folder)
    lines = (folder / "sources.csv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    keep = [i for i, c in enumerate(header) if c != "citation"]
    (folder / "sources.csv").write_text("\n".join(",".join(row.split(",")[i] for i in keep) for row in lines) + "\n",
                                        encoding="utf-8")
    (folder / "persons.csv").write_text(text.replace("birth_year", "curator_notes"), encoding="utf-8")
    with pytest.raises(SourceError, match="missing column\\(s\\) 'citation'"):
        read_registry(folder)


def test_unresolved_question_needs_two_known_mentions(write_registry):
    tables = synthetic_registry(3)
    tables["unresolved"] = [{"question_id": "Q1", "mention_a": "m_X00_0", "mention_b": "m_X00_0", "note": "n"}]
    with pytest.raises(SourceError, match="two different mentions"):
        read_registry(write_registry(tables, name="same"))
    tables["unresolved"] = [{"question_id": "Q1", "mention_a": "m_X00_0", "mention_b": "ghost", "note": "n"}]
    with pytest.raises(SourceError) as caught:
        read_registry(write_registry(tables, name="ghost"))
    assert caught.value.field == "mention_b"


def test_derived_from_cycle_is_an_error_naming_the_cycle(write_registry):
    """Source independence (section 4.3) follows `derived_from` transitively; a cycle would
    make every source of the loop an ancestor of itself, so it is refused."""
    tables = synthetic_registry(4)
    sources = tables["sources"]
    sources[1]["derived_from"] = "S002"       # S001 <- S002 <- S010 <- S001
    sources[2]["derived_from"] = "S010"
    sources[3]["derived_from"] = "S001"
    with pytest.raises(SourceError) as caught:
        read_registry(write_registry(tables))
    error = caught.value
    assert "derived_from forms a cycle: S001 -> S002 -> S010 -> S001" in error.message
    assert error.file.endswith("sources.csv") and error.row == "3" and error.field == "derived_from"
    sources[3]["derived_from"] = "S000"        # the same chain without the loop reads
    assert read_registry(write_registry(tables, name="acyclic")).source_ancestry("S001") == {"S001", "S002", "S010",
                                                                                            "S000"}
