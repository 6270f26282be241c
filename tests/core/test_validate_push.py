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


@pytest.fixture
def hub(monkeypatch, toy_resources, capsys):
    """A local fake Hub that `histbench push` talks to (see fake_hub.py)."""
    import histbench.builders.machinery.hub as hub_module

    from .fake_hub import FakeHub

    monkeypatch.setattr(hub_module, "validate_build", lambda folder: validate_build(folder, toy_resources))
    with FakeHub() as fake:
        fake.use(monkeypatch)
        yield fake


def _push(built, *flags):
    """`histbench push BUILD --repo-id ...` in this process: (status, stdout, stderr)."""
    import sys

    from histbench.cli import main

    status = main(["push", str(built), *flags])
    sys.stdout.flush()
    return status


def _uploaded(built, repo) -> bool:
    local = {p.relative_to(built).as_posix(): p.read_bytes() for p in built.rglob("*") if p.is_file()}
    return repo.files == local


def test_push_into_an_existing_public_repo_uploads_nothing_and_says_why(built, hub, capsys):
    """The toy build's terms are unknown: an existing public, ungated repo would publish it."""
    repo = hub.add_repo("org/toy", private=False)
    assert _push(built, "--repo-id", "org/toy") == 2
    captured = capsys.readouterr()
    error = [line for line in captured.err.splitlines() if line.startswith("histbench: error: ")]
    assert len(error) == 1, captured.err
    assert "dataset repo org/toy already exists and is public, not gated" in error[0]
    assert "nothing was uploaded" in error[0] and "--confirm-redistribution-rights" in error[0]
    assert "uploaded" not in captured.out
    assert hub.uploads() == 0 and repo.files == {} and not repo.tags and repo.gated is False
    assert ("PUT", "/api/datasets/org/toy/settings") not in hub.calls and ("POST", "/api/repos/create") not in hub.calls
    # --public alone is refused before the Hub is asked (the terms need the confirmation)
    calls = len(hub.calls)
    assert _push(built, "--repo-id", "org/toy", "--public") == 2
    assert "--confirm-redistribution-rights" in capsys.readouterr().err and len(hub.calls) == calls
    # an open build into a public repo also needs --public: private is the default, never a surprise
    gated_repo = hub.add_repo("org/gated", private=False, gated="manual")
    assert _push(built, "--repo-id", "org/gated") == 2
    assert "already exists and is public, gated (manual approval" in capsys.readouterr().err
    assert gated_repo.files == {}


def test_confirmed_public_push_into_an_existing_public_repo_gates_it(built, hub, capsys):
    repo = hub.add_repo("org/toy", private=False)
    assert _push(built, "--repo-id", "org/toy", "--public", "--confirm-redistribution-rights") == 0
    out = capsys.readouterr().out
    assert _uploaded(built, repo) and repo.gated == "manual" and set(repo.tags) == {"v1.0.0"}
    assert "uploaded 6 files" in out and "an existing repo that is now public, gated (manual approval" in out
    assert "set to manual approval of access requests" in out
    assert "uploaded (public, gated (manual approval of access requests)): http://127.0.0.1:" in out


def test_push_into_an_existing_private_repo_says_private(built, hub, capsys):
    repo = hub.add_repo("org/toy", private=True)
    assert _push(built, "--repo-id", "org/toy") == 0
    out = capsys.readouterr().out
    assert _uploaded(built, repo) and repo.private and set(repo.tags) == {"v1.0.0"}
    assert f"uploaded 6 files ({sum(len(v) for v in repo.files.values()):,} bytes) to dataset repo org/toy, " \
           "an existing repo that is now private, and tagged v1.0.0:" in out
    assert f"uploaded (private): {hub.endpoint}/datasets/org/toy/commit/" in out
    assert "would upload" not in out            # the dry run's wording is the dry run's alone
    assert ("POST", "/api/repos/create") not in hub.calls
    # --public does not make an existing private repo public
    assert _push(built, "--repo-id", "org/toy", "--public", "--confirm-redistribution-rights") == 0
    out = capsys.readouterr().out
    assert repo.private and "exists and is private: it stays private" in out and "uploaded (private):" in out


def test_push_into_a_new_repo_creates_it_private(built, hub, capsys):
    assert _push(built, "--repo-id", "org/new") == 0
    out = capsys.readouterr().out
    repo = hub.repos["org/new"]
    assert repo.private and repo.gated is False and _uploaded(built, repo) and repo.tags == {"v1.0.0": repo.commits[-1]}
    assert "to dataset repo org/new, a new repo that is now private, and tagged v1.0.0:" in out
    assert "uploaded (private):" in out
    assert _push(built, "--repo-id", "org/public", "--public", "--confirm-redistribution-rights") == 0
    public = hub.repos["org/public"]
    assert not public.private and public.gated == "manual" and _uploaded(built, public)
    assert "a new repo that is now public, gated (manual approval" in capsys.readouterr().out


def test_a_repo_that_exists_unseen_is_refused(built, hub, capsys):
    repo = hub.add_repo("org/toy", private=False, hidden=True)
    assert _push(built, "--repo-id", "org/toy") == 2
    assert "exists, but this token cannot read its settings: nothing was uploaded" in capsys.readouterr().err
    assert hub.uploads() == 0 and repo.files == {}


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
