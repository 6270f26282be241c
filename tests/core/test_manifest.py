"""Source manifests: existence, format and checksum checks on raw inputs."""

from __future__ import annotations

import hashlib

import pytest

from histbench.builders.machinery.manifest import SourceManifest, resolve_inputs
from histbench.core.errors import SourceError, UsageError


def _manifest(expected=None, kind="file", formats=("sav", "dta", "csv")):
    return SourceManifest.from_dict({
        "benchmark": "demo",
        "inputs": {
            "wvs": {"description": "time series", "kind": kind, "formats": list(formats),
                    "expected_sha256": expected or {}},
            "issp": {"description": "modules", "formats": ["dta"], "multiple": True},
        },
    })


def test_missing_file_is_named(tmp_path):
    missing = tmp_path / "nope.sav"
    with pytest.raises(SourceError) as caught:
        resolve_inputs(_manifest(), {"wvs": str(missing)})
    assert str(missing) in str(caught.value) and "--wvs" in str(caught.value)


def test_unknown_format(tmp_path):
    path = tmp_path / "wvs.xlsx"
    path.write_bytes(b"x")
    with pytest.raises(SourceError, match=r"unknown format for --wvs .*accepted: \.sav, \.dta, \.csv"):
        resolve_inputs(_manifest(), {"wvs": path})


def test_checksum_known_release_and_mismatch(tmp_path):
    path = tmp_path / "wvs.sav"
    path.write_bytes(b"survey bytes")
    digest = hashlib.sha256(b"survey bytes").hexdigest()
    ok = resolve_inputs(_manifest({"WVS_v5.sav": digest}), {"wvs": path})
    assert ok["wvs"][0].sha256 == digest
    assert ok["wvs"][0].checksum == "matches known release WVS_v5.sav"
    with pytest.raises(SourceError, match="matches no known release .*--allow-checksum-mismatch"):
        resolve_inputs(_manifest({"WVS_v5.sav": "0" * 64}), {"wvs": path})
    allowed = resolve_inputs(_manifest({"WVS_v5.sav": "0" * 64}), {"wvs": path}, allow_checksum_mismatch=True)
    assert "accepted with --allow-checksum-mismatch" in allowed["wvs"][0].checksum
    assert allowed["wvs"][0].to_json()["checksum"] == allowed["wvs"][0].checksum


def test_multiple_and_single_paths(tmp_path):
    files = []
    for n in range(2):
        files.append(tmp_path / f"m{n}.dta")
        files[-1].write_bytes(bytes([n]))
    resolved = resolve_inputs(_manifest(), {"issp": files})
    assert [f.path.name for f in resolved["issp"]] == ["m0.dta", "m1.dta"]
    with pytest.raises(UsageError, match="--wvs takes one path"):
        resolve_inputs(_manifest(formats=("dta",)), {"wvs": files})
    with pytest.raises(UsageError, match="give at least 1 input"):
        resolve_inputs(_manifest(), {})


def test_directory_inputs_hash_every_file(tmp_path):
    folder = tmp_path / "letters"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.xml").write_text("<a/>")
    (folder / "sub" / "b.xml").write_text("<b/>")
    manifest = SourceManifest.from_dict({"benchmark": "x", "inputs": {"letters": {"kind": "directory", "formats": ["xml"]}}})
    resolved = resolve_inputs(manifest, {"letters": folder})["letters"][0]
    assert [rel for rel, _ in resolved.files] == ["a.xml", "sub/b.xml"]
    (folder / "a.xml").write_text("<a>changed</a>")
    assert resolve_inputs(manifest, {"letters": folder})["letters"][0].sha256 != resolved.sha256
    with pytest.raises(SourceError, match="expects a directory"):
        resolve_inputs(manifest, {"letters": folder / "a.xml"})
