"""Folders confined (issue 39, class 3) and builds verified before scoring (class 4).

`paths.inside` is the one way a path inside a build or run folder is named: hypothesis
generates relative paths (`..`, absolute, `~`, odd names) and symbolic links (to outside,
chains, loops) and every path it accepts must resolve inside the folder. The same paths
then go through `validate`, `push` and `BuiltDataset` (what `eval` opens), which must
refuse them, read nothing outside and upload nothing.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histbench.builders.machinery.build import run_build
from histbench.builders.machinery.hub import push_build
from histbench.builders.machinery.validate import validate_build
from histbench.core.dataset import BuiltDataset, read_build_manifest
from histbench.core.errors import EvalError, HistbenchError, ValidationError
from histbench.core.paths import files_inside, inside

SECRET = "the-contents-of-a-file-outside-the-folder"

SEGMENTS = st.one_of(
    st.sampled_from(["..", ".", "a", "b", "out", "chain", "in", "loop", "data", "x.parquet", "", "~", "..."]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1, max_size=8),
)
RELATIVE = st.builds(lambda lead, parts: lead + "/".join(parts),
                     st.sampled_from(["", "", "", "/", "~/", "./", "../"]), st.lists(SEGMENTS, min_size=1, max_size=5))


@pytest.fixture
def tree(tmp_path):
    """root/ with a folder, a file, links inside, links out (direct and chained) and a loop;
    outside/ beside it holds a secret."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a").mkdir(parents=True)
    (root / "a" / "x.parquet").write_text("inside")
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    os.symlink(outside / "secret.txt", root / "out")                 # a link out
    os.symlink("chain2", root / "chain")                              # a chain out: chain -> chain2 -> ../outside
    os.symlink("../outside/secret.txt", root / "chain2")
    os.symlink("a/x.parquet", root / "in")                            # a link that stays inside
    os.symlink("loop", root / "loop")                                 # a loop
    os.symlink(outside, root / "a" / "dir")                           # a folder link out
    return root


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(relative=RELATIVE)
def test_inside_never_accepts_a_path_that_leaves(tree, relative):
    real_root = tree.resolve()
    try:
        target = inside(tree, relative)
    except ValidationError as exc:
        assert "\n" not in str(exc) and relative[:0] in str(exc)
        return
    real = target.resolve()
    assert real == real_root or real_root in real.parents, (relative, real)
    assert not Path(relative).is_absolute() and ".." not in Path(relative).parts


@pytest.mark.parametrize("relative, words", [
    ("out", "leads outside the folder"), ("chain", "leads outside the folder"), ("a/dir/secret.txt", "leads outside"),
    ("../outside/secret.txt", "leaves the folder"), ("/etc/passwd", "is absolute"), ("~/x", "is absolute"),
    ("a/../../outside", "leaves the folder"), ("loop", "loop of symbolic links"), ("a\\..\\..\\x", "not a plain"),
    ("C:/x", "is absolute"), ("a\x00b", "not a plain"),
])
def test_inside_refuses_each_way_out_naming_it(tree, relative, words):
    with pytest.raises(ValidationError, match=words):
        inside(tree, relative)
    assert inside(tree, "in").resolve() == (tree / "a" / "x.parquet").resolve()


def test_files_inside_refuses_links_out_and_folder_links(tree):
    bad = {name: os.readlink(tree / name) for name in ("out", "chain", "chain2", "loop", "a/dir")}
    for name in bad:
        (tree / name).unlink()
    for name, words in (("out", "leads outside"), ("chain2", "leads outside"), ("loop", "loop of symbolic links"),
                        ("a/dir", "symbolic link to a folder")):
        os.symlink(bad[name], tree / name)
        with pytest.raises(ValidationError, match=words):
            files_inside(tree)
        (tree / name).unlink()
    assert files_inside(tree) == ["a/x.parquet", "in"]


# -- builds ------------------------------------------------------------------------------

@pytest.fixture
def built(toy_builder, toy_sample, toy_resources, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr("datasets.config.HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    return run_build(toy_builder, {"text": [toy_sample]}, out_root=tmp_path / "build", resources=toy_resources)


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "private" / "notes.parquet"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def _rewrite(built: Path, change) -> None:
    manifest = json.loads((built / "histbench.json").read_text())
    change(manifest)
    (built / "histbench.json").write_text(json.dumps(manifest))


def test_validate_names_every_unlisted_file(built, toy_resources):
    (built / "notes.txt").write_text("a person's notes")
    (built / "data" / "items" / "extra").mkdir()
    (built / "data" / "items" / "extra" / "x.bin").write_bytes(b"\0")
    with pytest.raises(ValidationError) as caught:
        validate_build(built, toy_resources)
    text = "\n".join(caught.value.details)
    assert "notes.txt: file not listed in histbench.json" in text
    assert "data/items/extra/x.bin: file not listed in histbench.json" in text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=st.sampled_from(["", "/", "../", "data/../../", "./"]),
       name=st.text(alphabet="abc./", min_size=1, max_size=12))
def test_validate_eval_and_push_refuse_a_manifest_path_that_leaves(built, toy_resources, secret, prefix, name):
    original = (built / "histbench.json").read_text()
    escaping = str(secret) if prefix == "/" else prefix + name
    try:
        _rewrite(built, lambda m: m["outputs"][0].update(path=escaping))
        for call in (lambda: validate_build(built, toy_resources), lambda: BuiltDataset.open(built),
                     lambda: push_build(built, "org/toy", dry_run=True)):
            with pytest.raises(HistbenchError) as caught:
                call()
            assert SECRET not in str(caught.value) and "\n" not in str(caught.value)
    finally:
        (built / "histbench.json").write_text(original)


def test_a_data_file_linked_outside_is_refused_everywhere(built, toy_resources, secret, monkeypatch):
    import histbench.core.hashing as hashing

    shutil.copy(built / "data/items/dev-00000-of-00001.parquet", secret)
    (built / "data/items/dev-00000-of-00001.parquet").unlink()
    os.symlink(secret, built / "data/items/dev-00000-of-00001.parquet")
    read = []
    original = hashing.sha256_path
    monkeypatch.setattr(hashing, "sha256_path", lambda p, **k: read.append(Path(p).resolve()) or original(p, **k))
    with pytest.raises(ValidationError) as caught:
        validate_build(built, toy_resources)
    said = "\n".join([str(caught.value), *caught.value.details])
    assert "dev-00000-of-00001.parquet" in said and "leads outside the folder" in said
    with pytest.raises(EvalError, match="leads outside the folder"):
        BuiltDataset.open(built)
    with pytest.raises(ValidationError):
        push_build(built, "org/toy", dry_run=True)
    assert secret.resolve() not in read


def test_push_uploads_exactly_the_listed_files(built, toy_resources, monkeypatch, capsys):
    import histbench.builders.machinery.hub as hub_module

    from .fake_hub import FakeHub

    monkeypatch.setattr(hub_module, "validate_build", lambda folder: validate_build(folder, toy_resources))
    manifest = read_build_manifest(built)
    with FakeHub() as hub:
        hub.use(monkeypatch)
        plan = push_build(built, "org/toy")
        files = hub.repos["org/toy"].files
        own = {name for name in ("README.md", "histbench.json", "LICENSE.md") if (built / name).is_file()}
        assert set(files) == {o["path"] for o in manifest["outputs"]} | own
        assert all(files[name] == (built / name).read_bytes() for name in files)
        assert plan.url
        # an unlisted file: nothing uploaded, the file named
        (built / "notes.txt").write_text("not for the Hub")
        with pytest.raises(ValidationError) as caught:
            push_build(built, "org/other")
        assert "notes.txt: file not listed" in "\n".join(caught.value.details)
        assert "org/other" not in hub.repos


def test_push_rehashes_what_it_uploads(built, toy_resources, monkeypatch):
    """A data file changed after validation (between the check and the upload) is refused."""
    import histbench.builders.machinery.hub as hub_module

    from .fake_hub import FakeHub

    checked = hub_module._local_paths_in_upload

    def check_then_change(folder, files):   # the last look before the upload: then the file changes
        found = checked(folder, files)
        _edit_parquet(built / "data/items/dev-00000-of-00001.parquet")
        return found

    monkeypatch.setattr(hub_module, "validate_build", lambda folder: validate_build(folder, toy_resources))
    monkeypatch.setattr(hub_module, "_local_paths_in_upload", check_then_change)
    with FakeHub() as hub:
        hub.use(monkeypatch)
        with pytest.raises(hub_module.PushError, match="dev-00000-of-00001.parquet: sha256 .* nothing was uploaded"):
            push_build(built, "org/toy")
        assert hub.uploads() == 0 and "org/toy" not in hub.repos


def test_a_hub_400_says_what_the_hub_said(built, toy_resources, monkeypatch, capsys):
    import histbench.builders.machinery.hub as hub_module
    from histbench.cli import main

    from .fake_hub import FakeHub

    monkeypatch.setattr(hub_module, "validate_build", lambda folder: validate_build(folder, toy_resources))
    with FakeHub() as hub:
        hub.use(monkeypatch)
        hub.refusals = [("POST", "/commit/", 400, "Invalid metadata in README.md: license is not a string")]
        assert main(["push", str(built), "--repo-id", "org/toy"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "Bad request" in err[0] and "Invalid metadata in README.md: license is not a string" in err[0]


# -- builds verified before scoring ---------------------------------------------------------

def _edit_parquet(path: Path) -> None:
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0] = {**rows[0], "item_id": rows[0]["item_id"] + "-edited"}
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)


def test_eval_refuses_an_edited_parquet_and_names_it(built):
    first = BuiltDataset.open(built)
    assert first.identity()["data_sha256"] == read_build_manifest(built)["data_sha256"]
    before = first.load("items", "dev").to_list()
    path = built / "data/items/dev-00000-of-00001.parquet"
    _edit_parquet(path)
    with pytest.raises(EvalError, match="dev-00000-of-00001.parquet: sha256 .* changed after it was written"):
        BuiltDataset.open(built)
    # the datasets cache of the first load does not serve the old rows either
    with pytest.raises(EvalError, match="changed after it was written"):
        first.load("items", "dev")
    assert before


def test_eval_refuses_a_card_pointed_at_another_file(built):
    card = built / "README.md"
    shutil.copy(built / "data/items/test-00000-of-00001.parquet", built / "data/items/dev-x.parquet")
    with pytest.raises(EvalError, match="does not list; refused"):
        BuiltDataset.open(built)
    (built / "data/items/dev-x.parquet").unlink()
    card.write_text(card.read_text().replace("data/items/dev-*.parquet", "data/items/test-*.parquet", 1))
    with pytest.raises(EvalError, match="README.md: the card's data_files of items/dev .* not the files histbench.json"):
        BuiltDataset.open(built)
    card.write_text(card.read_text().replace("data/items/test-*.parquet", "/tmp/elsewhere/*.parquet", 1))
    with pytest.raises(EvalError, match="point outside the build"):
        BuiltDataset.open(built)


def test_eval_refuses_a_manifest_whose_data_sha256_was_rewritten(built):
    _rewrite(built, lambda m: m.update(data_sha256="0" * 64))
    with pytest.raises(EvalError, match="histbench.json, field 'data_sha256'"):
        BuiltDataset.open(built)


def test_a_rebuilt_folder_is_served_its_own_rows(built, toy_builder, toy_resources, tmp_path):
    """A consistent rebuild (files and manifest both new) gets its own cache: never the old rows."""
    rows = BuiltDataset.open(built).load("items", "dev").to_list()
    other = tmp_path / "other.txt"
    other.write_text("\n".join(f"omega psi {i}" for i in range(12)) + "\n")
    run_build(toy_builder, {"text": [other]}, out_root=built.parent, resources=toy_resources)
    again = BuiltDataset.open(built).load("items", "dev").to_list()
    assert again != rows


def test_a_config_is_loaded_once_per_process_while_its_files_and_card_stay(built, monkeypatch):
    """Issue 44: the demo, its reports and viewers load one build many times (232
    load_dataset calls in one demo); the same files and card give the same loaded config
    back, verified each time, and any change loads again."""
    import datasets

    calls = []
    original = datasets.load_dataset
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: calls.append(a) or original(*a, **k))
    first = BuiltDataset.open(built).load("items", "dev")
    assert BuiltDataset.open(built).load("items", "dev") is first and len(calls) == 1
    assert BuiltDataset.open(built).load("items", "test") is not first and len(calls) == 2   # another split
    card = built / "README.md"
    card.write_text(card.read_text(encoding="utf-8") + "\nA note.\n", encoding="utf-8")
    again = BuiltDataset.open(built).load("items", "dev")   # a changed card: loaded again
    assert again is not first and again.to_list() == first.to_list() and len(calls) == 3
    path = built / "data/items/dev-00000-of-00001.parquet"
    path.write_bytes(path.read_bytes() + b"x")   # a changed file is refused, never served from memory
    with pytest.raises(EvalError, match="differs from"):
        BuiltDataset.open(built).load("items", "dev")


def test_verification_is_cached_by_stat(built, monkeypatch):
    import histbench.core.hashing as hashing

    BuiltDataset.open(built)
    calls = []
    original = hashing.sha256_path
    monkeypatch.setattr(hashing, "sha256_path", lambda p, **k: calls.append(p) or original(p, **k))
    BuiltDataset.open(built)
    assert calls == []          # unchanged files: nothing re-read
    path = built / "data/items/dev-00000-of-00001.parquet"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1))
    BuiltDataset.open(built)    # a touched file is read again (and still matches)
    assert [Path(p).name for p in calls] == ["dev-00000-of-00001.parquet"]


# -- build --out replaces only a build ---------------------------------------------------

@pytest.mark.parametrize("what", ["notes", "other-benchmark", "damaged-manifest", "link", "file"])
def test_build_out_replaces_only_a_build_of_that_benchmark(toy_builder, toy_sample, toy_resources, tmp_path, what):
    from histbench.core.errors import BuildError

    out = tmp_path / "build" / "toy-1.0.0"
    out.parent.mkdir()
    if what == "file":
        out.write_text("a person's file")
    elif what == "link":
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "notes.md").write_text("kept")
        os.symlink(tmp_path / "elsewhere", out)
    else:
        out.mkdir()
        (out / "notes.md").write_text("a person's notes")
        if what == "other-benchmark":
            built = run_build(toy_builder, {"text": [toy_sample]}, out_root=tmp_path / "b2", resources=toy_resources)
            manifest = json.loads((built / "histbench.json").read_text())
            (out / "histbench.json").write_text(json.dumps({**manifest, "benchmark": "valence"}))
        elif what == "damaged-manifest":
            (out / "histbench.json").write_text('{"benchmark": "toy", "outputs": [')
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()}
    with pytest.raises(BuildError) as caught:
        run_build(toy_builder, {"text": [toy_sample]}, out_root=tmp_path / "build", resources=toy_resources)
    assert str(out) in str(caught.value) and "nothing was written" in str(caught.value)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()} == before
    assert not [p for p in out.parent.iterdir() if ".tmp" in p.name]


def test_build_out_replaces_an_earlier_build_and_an_empty_folder(toy_builder, toy_sample, toy_resources, tmp_path):
    out = tmp_path / "build" / "toy-1.0.0"
    out.mkdir(parents=True)
    run_build(toy_builder, {"text": [toy_sample]}, out_root=tmp_path / "build", resources=toy_resources)
    first = (out / "histbench.json").read_text()
    run_build(toy_builder, {"text": [toy_sample]}, out_root=tmp_path / "build", resources=toy_resources)
    assert json.loads((out / "histbench.json").read_text())["data_sha256"] == json.loads(first)["data_sha256"]


# -- nothing left beside a replaced folder -------------------------------------------------

@pytest.mark.parametrize("kind", ["folder", "link-to-folder", "file"])
def test_a_replaced_folder_leaves_no_staging_beside_it(tmp_path, kind):
    """atomic_directory (the viewer, report sites): the earlier target is removed after a
    successful write, a link to a folder elsewhere as a link (it was left behind as
    `.NAME.PID-X.old`, since rmtree refuses links), and what it pointed at is untouched."""
    from histbench.core.atomic import atomic_directory

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "index.html").write_text("a colleague's page")
    target = tmp_path / "site" / "viewer"
    target.parent.mkdir()
    if kind == "folder":
        target.mkdir()
        (target / "old.html").write_text("old")
    elif kind == "link-to-folder":
        os.symlink(elsewhere, target)
    else:
        target.write_text("a file")
    with atomic_directory(target) as tmp:
        (tmp / "index.html").write_text("new")
    assert sorted(p.name for p in target.parent.iterdir()) == ["viewer"]
    assert not target.is_symlink() and (target / "index.html").read_text() == "new"
    assert (elsewhere / "index.html").read_text() == "a colleague's page"
