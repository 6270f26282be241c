"""Publishing a build: computed card metadata, no local paths, private/gated pushes.

The last test builds every benchmark's bundled sample and runs `histbench push --dry-run`
on it through the real CLI, as a user would before publishing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from histbench.builders.machinery.build import run_build
from histbench.builders.machinery.card import check_card, size_category
from histbench.core.errors import BuildError
from histbench.core.paths import local_paths, portable_name, portable_option


def _front_matter(card: str) -> dict:
    return yaml.safe_load(card.split("---\n", 2)[1])


def test_size_category_boundaries():
    assert [size_category(n) for n in (0, 999, 1_000, 9_999, 10_000, 292, 123_456, 2_000_000)] == [
        "n<1K", "n<1K", "1K<n<10K", "1K<n<10K", "10K<n<100K", "n<1K", "100K<n<1M", "1M<n<10M"]


def test_portable_names_never_hold_the_users_directories(tmp_path):
    model = tmp_path / "site-packages" / "some_model" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    registry = tmp_path / "registry.yaml"
    registry.write_text("questions: []\n")
    assert portable_name(str(model)) == "some_model/model"
    assert portable_name("sentence-transformers/all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    described = portable_option({"embedding_model": str(model), "registry": str(registry), "seed": 3, "mode": "tfidf"})
    assert described["embedding_model"]["name"] == "some_model/model"
    assert described["embedding_model"]["fingerprint"].startswith("sha256:")
    assert described["registry"]["name"] == "registry.yaml" and len(described["registry"]["sha256"]) == 64
    assert described["seed"] == 3 and described["mode"] == "tfidf"
    assert list(local_paths(described)) == []
    # text that merely starts with '/' is not a path of this machine
    assert list(local_paths({"note": "/ a verse separator", "path": str(registry)})) == [("$.path", str(registry))]


def test_card_is_computed_from_the_build(toy_builder, toy_sample, toy_resources, tmp_path):
    folder = run_build(toy_builder, {"text": [toy_sample]}, out_root=tmp_path, resources=toy_resources)
    card = (folder / "README.md").read_text()
    meta = _front_matter(card)
    assert meta["size_categories"] == ["n<1K"]
    assert [c["config_name"] for c in meta["configs"] if c.get("default")] == ["items"]
    # the toy manifest says nothing about redistribution: unknown -> gated fields
    assert "extra_gated_prompt" in meta and "text (terms not recorded)" in meta["extra_gated_prompt"]
    assert any(kind == "checkbox" for kind in meta["extra_gated_fields"].values())
    assert "```bibtex\n@misc{toy2026," in card
    assert check_card(card) == []
    manifest = json.loads((folder / "histbench.json").read_text())
    assert manifest["inputs"][0]["redistribution"] == "unknown"


def test_build_refuses_a_local_path_in_a_row(toy_builder, toy_sample, toy_resources, tmp_path, monkeypatch):
    real = toy_builder.build

    def leaky(ctx):
        output = real(ctx)
        output.configs["pairs"]["dev"][0]["left"] = str(toy_sample)
        return output

    monkeypatch.setattr(toy_builder, "build", leaky)
    with pytest.raises(BuildError, match="would record local paths") as caught:
        run_build(toy_builder, {"text": [toy_sample]}, out_root=tmp_path / "out", resources=toy_resources)
    assert caught.value.details == [f"config pairs/dev, column 'left': {toy_sample}"]
    assert not (tmp_path / "out" / "toy-1.0.0").exists()


def test_option_naming_a_local_file_is_recorded_by_name_and_sha256(toy_builder, toy_sample, toy_resources, tmp_path):
    folder = run_build(toy_builder, {"text": [toy_sample]}, out_root=tmp_path, resources=toy_resources,
                       options={"extra_table": str(toy_sample)})
    manifest = json.loads((folder / "histbench.json").read_text())
    assert manifest["options"]["extra_table"]["name"] == "lines.txt"
    assert str(tmp_path) not in (folder / "histbench.json").read_text()


@pytest.fixture(scope="module")
def sample_builds(built_sample) -> dict[str, Path]:
    """Every benchmark's bundled sample as `histbench build NAME --sample` builds it (read-only)."""
    from histbench.builders.machinery.build import discover_builders

    return {name: built_sample(name) for name in discover_builders()}


EXPECTED_GATED = {"chronoculture": True, "chronologic": True, "italian": True, "mher": False, "valence": False}


@pytest.mark.slow
def test_push_dry_run_of_every_benchmark(sample_builds, capsys):
    from histbench.cli import main

    assert set(sample_builds) == set(EXPECTED_GATED)
    for name, folder in sample_builds.items():
        card = (folder / "README.md").read_text(encoding="utf-8")
        assert check_card(card) == [], name
        meta = _front_matter(card)
        assert ("extra_gated_prompt" in meta) is EXPECTED_GATED[name], name
        if meta["license"] == "other":
            assert meta["license_link"] == "LICENSE.md" and (folder / "LICENSE.md").is_file(), name
        rows = json.loads((folder / "histbench.json").read_text())["rows"]
        assert meta["size_categories"] == [size_category(max(sum(s.values()) for s in rows.values()))], name
        assert main(["push", str(folder), "--repo-id", f"org/{name}", "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert f"to dataset repo org/{name} (private)" in out, name
        assert "what the sources' terms say about redistribution:" in out
        if EXPECTED_GATED[name]:
            assert main(["push", str(folder), "--repo-id", f"org/{name}", "--public", "--dry-run"]) == 2
            assert "--confirm-redistribution-rights" in capsys.readouterr().err
        # no file of the build names a directory of this machine
        home = str(Path.home())
        for path in folder.rglob("*"):
            if path.is_file() and path.suffix in (".json", ".md"):
                text = path.read_text(encoding="utf-8")
                assert str(folder.parent) not in text and f"{home}/" not in text, (name, path.name)
                assert sys.prefix not in text, (name, path.name)
