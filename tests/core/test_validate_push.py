"""`histbench validate` and `histbench push --dry-run`."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from histbench.builders.core.build import run_build
from histbench.builders.core.errors import ValidationError
from histbench.builders.core.hub import push_build
from histbench.builders.core.validate import validate_build


@pytest.fixture
def built(toy_builder, toy_sample, toy_resources, tmp_path):
    return run_build(toy_builder, {"text": [toy_sample]}, out_root=tmp_path / "build", resources=toy_resources)


def test_validate_accepts_a_fresh_build(built, toy_resources):
    result = validate_build(built, toy_resources)
    assert result["rows"]["items"] == {"dev": 6, "test": 6}


def test_validate_detects_tampered_parquet(built, toy_resources):
    path = built / "data" / "items" / "test-00000-of-00001.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0]["year"] = 1700          # breaks the schema's minimum
    rows = rows[:-1]                # and the row count
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    with pytest.raises(ValidationError) as caught:
        validate_build(built, toy_resources)
    text = "\n".join(caught.value.details)
    assert "data/items/test-00000-of-00001.parquet: sha256" in text
    assert "config items/test: 5 rows in parquet, 6 in histbench.json" in text
    assert "row 0, $.year: 1700 is less than the minimum of 1800" in text


def test_validate_detects_missing_and_unlisted_files(built, toy_resources):
    (built / "data" / "pairs" / "dev-00000-of-00001.parquet").rename(built / "data" / "pairs" / "dev-extra.parquet")
    with pytest.raises(ValidationError) as caught:
        validate_build(built, toy_resources)
    text = "\n".join(caught.value.details)
    assert "data/pairs/dev-00000-of-00001.parquet: listed in histbench.json but missing" in text
    assert "data/pairs/dev-extra.parquet: parquet file not listed in histbench.json" in text


def test_push_dry_run_lists_every_file(built, monkeypatch, toy_resources):
    import histbench.builders.core.hub as hub

    monkeypatch.setattr(hub, "validate_build", lambda folder: validate_build(folder, toy_resources))

    def no_network(plan):
        raise AssertionError("a dry run must not upload")

    monkeypatch.setattr(hub, "upload", no_network)
    plan = push_build(built, "my-org/toy", private=True, dry_run=True)
    names = [name for name, _ in plan.files]
    assert names == sorted(names)
    assert {"README.md", "histbench.json", "data/items/dev-00000-of-00001.parquet"} <= set(names)
    assert len(names) == 6
    text = plan.describe()
    assert "to dataset repo my-org/toy (private) and tag v1.0.0" in text
    assert "data/pairs/test-00000-of-00001.parquet" in text


def test_push_real_path_calls_upload(built, monkeypatch, toy_resources):
    import histbench.builders.core.hub as hub

    monkeypatch.setattr(hub, "validate_build", lambda folder: validate_build(folder, toy_resources))
    seen = []
    monkeypatch.setattr(hub, "upload", lambda plan: seen.append(plan) or "https://hub/commit/1")
    assert push_build(built, "org/toy") == "https://hub/commit/1"
    assert seen[0].repo_id == "org/toy" and seen[0].tag == "v1.0.0" and not seen[0].private
