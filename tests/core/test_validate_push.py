"""`histbench validate` and `histbench push --dry-run`."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from histbench.builders.machinery.build import run_build
from histbench.builders.machinery.hub import push_build
from histbench.builders.machinery.validate import validate_build
from histbench.core.errors import UsageError, ValidationError


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


def _no_upload(monkeypatch, toy_resources):
    import histbench.builders.machinery.hub as hub

    monkeypatch.setattr(hub, "validate_build", lambda folder: validate_build(folder, toy_resources))

    def no_network(plan):
        raise AssertionError("a dry run must not upload")

    monkeypatch.setattr(hub, "upload", no_network)


def test_push_dry_run_is_private_by_default_and_lists_every_file(built, monkeypatch, toy_resources):
    _no_upload(monkeypatch, toy_resources)
    plan = push_build(built, "my-org/toy", dry_run=True)
    names = [name for name, _ in plan.files]
    assert names == sorted(names)
    assert {"README.md", "histbench.json", "data/items/dev-00000-of-00001.parquet"} <= set(names)
    assert len(names) == 6
    text = plan.describe()
    assert plan.private and "to dataset repo my-org/toy (private) and tag v1.0.0" in text
    assert "data/pairs/test-00000-of-00001.parquet" in text
    # the toy manifest says nothing about redistribution: unknown, so the card is gated
    assert "text (lines.txt): terms not recorded -> unknown" in text
    assert "a public upload needs --confirm-redistribution-rights" in text


def test_public_push_of_a_restricted_build_needs_confirmation(built, monkeypatch, toy_resources):
    _no_upload(monkeypatch, toy_resources)
    with pytest.raises(UsageError, match="terms of text \\(unknown\\) do not allow redistribution"):
        push_build(built, "my-org/toy", public=True, dry_run=True)
    plan = push_build(built, "my-org/toy", public=True, confirm_redistribution=True, dry_run=True)
    assert not plan.private and plan.gated
    assert "(public, gated (users request access; you approve each))" in plan.describe()


def test_upload_creates_private_repo_or_gates_a_public_one(built, monkeypatch, toy_resources):
    import huggingface_hub

    import histbench.builders.machinery.hub as hub

    monkeypatch.setattr(hub, "validate_build", lambda folder: validate_build(folder, toy_resources))
    calls = []

    class RecordingApi:
        def __getattr__(self, name):
            def record(*args, **kwargs):
                calls.append((name, args, kwargs))
                return type("Commit", (), {"oid": "abc", "commit_url": "https://hub/commit/abc"})()
            return record

    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingApi)
    assert push_build(built, "org/toy").url == "https://hub/commit/abc"
    assert calls[0][0] == "create_repo" and calls[0][2]["private"] is True
    assert [c[0] for c in calls] == ["create_repo", "upload_folder", "create_tag"]
    assert calls[2][2]["tag"] == "v1.0.0"
    calls.clear()
    push_build(built, "org/toy", public=True, confirm_redistribution=True)
    assert [c[0] for c in calls] == ["create_repo", "update_repo_settings", "upload_folder", "create_tag"]
    assert calls[0][2]["private"] is False and calls[1][2]["gated"] == "manual"


def test_push_refuses_local_paths_and_incomplete_cards(built, monkeypatch, toy_resources, tmp_path):
    _no_upload(monkeypatch, toy_resources)
    manifest = built / "histbench.json"
    data = json.loads(manifest.read_text())
    data["options"]["registry"] = str(tmp_path)
    manifest.write_text(json.dumps(data))
    card = built / "README.md"
    card.write_text(card.read_text().replace("## Uses", "## Usage"))
    with pytest.raises(ValidationError, match="not ready to publish: nothing was uploaded") as caught:
        push_build(built, "org/toy", dry_run=True)
    assert f"histbench.json $.options.registry: {tmp_path}" in caught.value.details
    assert "README.md: card body has no section 'Uses'" in caught.value.details
