"""The dataset writer: round trip through load_dataset, atomicity, determinism."""

from __future__ import annotations

import hashlib
import json

import pytest
from datasets import load_dataset

from histbench.builders.machinery import writer as writer_module
from histbench.builders.machinery.build import run_build
from histbench.core.errors import BuildError, SchemaError


def _build(toy_builder, toy_sample, toy_resources, out_root, **kwargs):
    return run_build(toy_builder, {"text": [toy_sample]}, out_root=out_root, resources=toy_resources, **kwargs)


def test_round_trip_two_configs_two_splits(toy_builder, toy_sample, toy_resources, tmp_path, make_toy_records):
    from histbench.core.dataset import load_build_config

    folder = _build(toy_builder, toy_sample, toy_resources, tmp_path / "build")
    assert folder.name == "toy-1.0.0"
    lines = [line for line in toy_sample.read_text().splitlines() if line.strip()]
    expected = make_toy_records(lines).configs
    for config in ("items", "pairs"):
        loaded = load_build_config(folder, config)
        assert sorted(loaded) == ["dev", "test"]
        for split in ("dev", "test"):
            assert loaded[split].to_list() == expected[config][split]
    # what a load_dataset user sees: the enum column is a ClassLabel, ids in schema order
    raw = load_dataset(str(folder), "pairs")
    assert raw["dev"].features["relation"].names == ["same_start", "different_start"]
    names = [None if i is None else raw["dev"].features["relation"].int2str(i)
             for split in ("dev", "test") for i in raw[split]["relation"]]
    assert names == [r["relation"] for split in ("dev", "test") for r in expected["pairs"][split]]
    assert None in names and set(names) - {None} == {"same_start", "different_start"}
    # Typed columns come from the schema: an all-null column still has its declared type.
    items = load_dataset(str(folder), "items", split="dev")
    assert str(items.features["score"].dtype) == "float64"
    assert str(items.features["year"].dtype) == "int64"


def test_card_and_manifest(toy_builder, toy_sample, toy_resources, tmp_path):
    folder = _build(toy_builder, toy_sample, toy_resources, tmp_path / "build", seed=7)
    card = (folder / "README.md").read_text()
    assert card.startswith("---\n")
    assert "config_name: items" in card and "path: data/pairs/test-*.parquet" in card
    assert "dataset_info:" in card and "num_examples" in card
    assert "12 lines read." in card and "<!-- summary -->" in card
    manifest = json.loads((folder / "histbench.json").read_text())
    assert manifest["benchmark"] == "toy" and manifest["version"] == "1.0.0"
    assert manifest["options"]["seed"] == 7
    assert manifest["rows"] == {"items": {"dev": 6, "test": 6}, "pairs": {"dev": 5, "test": 6}}
    assert manifest["inputs"][0]["sha256"] == hashlib.sha256(toy_sample.read_bytes()).hexdigest()
    assert manifest["inputs"][0]["name"] == "lines.txt"
    for output in manifest["outputs"]:
        assert hashlib.sha256((folder / output["path"]).read_bytes()).hexdigest() == output["sha256"]
    assert set(manifest["schemas"]) == {"items", "pairs"}
    assert manifest["summary"] == {"lines": 12}
    assert manifest["build_started_utc"] <= manifest["build_finished_utc"]
    assert {o["path"] for o in manifest["outputs"]} == {
        "data/items/dev-00000-of-00001.parquet", "data/items/test-00000-of-00001.parquet",
        "data/pairs/dev-00000-of-00001.parquet", "data/pairs/test-00000-of-00001.parquet",
    }


def test_class_label_ids_out_of_range_are_an_error():
    import pyarrow as pa

    from histbench.core.schema import decode_class_labels

    table = pa.table({"relation": pa.array([0, 2], pa.int64())})
    with pytest.raises(SchemaError, match=r"'relation': class label ids must lie in 0\.\.1"):
        decode_class_labels(table, {"relation": ["same_start", "different_start"]})
    assert decode_class_labels(pa.table({"relation": pa.array([1, None], pa.int64())}),
                               {"relation": ["a", "b"]}).column("relation").to_pylist() == ["b", None]


def test_rebuild_is_byte_identical(toy_builder, toy_sample, toy_resources, tmp_path):
    first = _build(toy_builder, toy_sample, toy_resources, tmp_path / "a")
    second = _build(toy_builder, toy_sample, toy_resources, tmp_path / "b")
    files = sorted(p.relative_to(first) for p in first.rglob("*.parquet"))
    assert len(files) == 4
    for rel in files:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), rel
    assert json.loads((first / "histbench.json").read_text())["data_sha256"] == \
        json.loads((second / "histbench.json").read_text())["data_sha256"]


def test_failure_mid_write_leaves_no_output(toy_builder, toy_sample, toy_resources, tmp_path, monkeypatch):
    real = writer_module._write_config
    calls = []

    def failing(dataset, folder, split):
        calls.append(split)
        if len(calls) == 3:
            raise OSError("disk full (injected)")
        return real(dataset, folder, split)

    monkeypatch.setattr(writer_module, "_write_config", failing)
    out_root = tmp_path / "build"
    with pytest.raises(BuildError, match="disk full"):
        _build(toy_builder, toy_sample, toy_resources, out_root)
    assert len(calls) == 3
    assert not out_root.exists()   # the build made it; a failed first build removes it again (lock file included)


def test_failed_rebuild_keeps_previous_build(toy_builder, toy_sample, toy_resources, tmp_path, monkeypatch):
    out_root = tmp_path / "build"
    folder = _build(toy_builder, toy_sample, toy_resources, out_root)
    before = (folder / "histbench.json").read_text()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(writer_module, "render_card", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _build(toy_builder, toy_sample, toy_resources, out_root)
    # no staging left; the empty lock file that builds into this folder take turns on stays
    assert sorted(p.name for p in out_root.iterdir()) == [".toy-1.0.0.lock", "toy-1.0.0"]
    assert (folder / "histbench.json").read_text() == before


def test_schema_failure_lists_records_and_writes_nothing(
    toy_builder, toy_sample, toy_resources, tmp_path, monkeypatch, make_toy_records
):
    def broken(self, ctx):
        output = make_toy_records([f"word{n} x" for n in range(30)])
        for n, record in enumerate(output.configs["items"]["test"]):
            record["year"] = 1700 + n          # below the schema's minimum of 1800
        output.configs["items"]["dev"][1]["score"] = "high"   # wrong type
        output.configs["items"]["dev"][2]["extra"] = 1        # unknown column
        return output

    monkeypatch.setattr(type(toy_builder), "build", broken)
    out_root = tmp_path / "build"
    with pytest.raises(SchemaError) as caught:
        _build(toy_builder, toy_sample, toy_resources, out_root)
    assert not out_root.exists() or list(out_root.iterdir()) == []
    dev_error = caught.value
    assert "2 of 15 records in config 'items/dev'" in str(dev_error)
    assert dev_error.details[0] == "config items/dev, row 1, $.score: 'high' is not of type 'number', 'null'"
    assert dev_error.details[1].startswith("config items/dev, row 2, $: Additional properties are not allowed ('extra'")


def test_schema_failure_caps_listing_at_20(toy_resources):
    from histbench.core.schema import validate_records

    schema = toy_resources.schema("toy", "pairs")
    records = [{"pair_id": "x", "left": "a", "right": "b", "same": True, "relation": None} for _ in range(25)]
    with pytest.raises(SchemaError) as caught:
        validate_records(records, schema, config="pairs", split="test")
    assert "25 of 25 records in config 'pairs/test'" in str(caught.value)
    assert "first 20 listed" in str(caught.value)
    assert len(caught.value.details) == 20
    assert caught.value.details[19] == "config pairs/test, row 19, $.pair_id: 'x' is not of type 'integer'"


def test_nan_is_rejected_with_its_path(toy_resources):
    from histbench.core.schema import validate_records

    schema = toy_resources.schema("toy", "items")
    record = {"item_id": "a", "year": 1900, "score": float("nan"), "options": [], "gold": {"index": 0, "weight": 1.0}}
    with pytest.raises(SchemaError) as caught:
        validate_records([record], schema, config="items")
    assert caught.value.details == ["config items, row 0, $.score: NaN or infinity is not allowed"]
    assert validate_records([record], schema, config="items", allow_non_finite=True) == 1


def test_schema_conventions_are_enforced(tmp_path):
    from histbench.core.schema import check_schema_conventions

    loose = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    with pytest.raises(SchemaError, match="additionalProperties: false"):
        check_schema_conventions(loose, "x.json")
    optional = {"type": "object", "properties": {"a": {"type": "string"}}, "required": [], "additionalProperties": False}
    with pytest.raises(SchemaError, match="every property must be required"):
        check_schema_conventions(optional, "x.json")
    freeform = {
        "type": "object", "additionalProperties": False, "required": ["m"],
        "properties": {"m": {"type": "object"}},
    }
    with pytest.raises(SchemaError, match="free-form maps as JSON text"):
        check_schema_conventions(freeform, "x.json")


def test_large_configs_are_sharded(toy_builder, toy_sample, toy_resources, tmp_path, monkeypatch):
    monkeypatch.setattr(writer_module, "SHARD_BYTES", 200)
    folder = _build(toy_builder, toy_sample, toy_resources, tmp_path / "build")
    shards = sorted(p.name for p in (folder / "data" / "items").glob("dev-*.parquet"))
    assert len(shards) > 1 and shards[0] == f"dev-00000-of-{len(shards):05d}.parquet"
    loaded = load_dataset(str(folder), "items", split="dev")
    assert [r["item_id"] for r in loaded] == [f"i{n}" for n in range(6)]


def test_empty_splits_are_listed_not_written(toy_builder, toy_sample, toy_resources, tmp_path, monkeypatch, make_toy_records):
    """load_dataset cannot load a split without rows, so the writer leaves it out and says so."""
    def sparse(self, ctx):
        output = make_toy_records(["alpha one", "beta two", "gamma three", "delta four"])
        output.configs["pairs"]["dev"] = []
        output.configs["items"] = {"dev": [], "test": []}
        return output

    monkeypatch.setattr(type(toy_builder), "build", sparse)
    folder = _build(toy_builder, toy_sample, toy_resources, tmp_path / "build")
    manifest = json.loads((folder / "histbench.json").read_text())
    assert manifest["empty_splits"] == ["items/dev", "items/test", "pairs/dev"]
    assert manifest["rows"] == {"pairs": {"test": 2}}
    assert not (folder / "data" / "items").exists()
    assert load_dataset(str(folder), "pairs", split="test").num_rows == 2
    assert "config_name: items" not in (folder / "README.md").read_text()


def test_all_configs_empty_is_an_error(toy_builder, toy_sample, toy_resources, tmp_path, monkeypatch, make_toy_records):
    def nothing(self, ctx):
        return make_toy_records([])

    monkeypatch.setattr(type(toy_builder), "build", nothing)
    with pytest.raises(BuildError, match="every config is empty"):
        _build(toy_builder, toy_sample, toy_resources, tmp_path / "build")
    assert not (tmp_path / "build" / "toy-1.0.0").exists()


def test_numpy_values_are_written_as_plain_values(toy_builder, toy_sample, toy_resources, tmp_path, monkeypatch, make_toy_records):
    import numpy as np

    def with_numpy(self, ctx):
        output = make_toy_records(["alpha one", "beta two", "gamma three", "delta four"])
        record = output.configs["items"]["dev"][0]
        record.update(year=np.int64(1901), score=np.float32(0.5), options=np.array(["a", "b"]),
                      gold={"index": np.int32(1), "weight": np.float64(0.25)})
        output.configs["pairs"]["test"] = tuple(output.configs["pairs"]["test"])
        return output

    monkeypatch.setattr(type(toy_builder), "build", with_numpy)
    folder = _build(toy_builder, toy_sample, toy_resources, tmp_path / "build")
    row = load_dataset(str(folder), "items", split="dev")[0]
    assert row == {"item_id": "i0", "year": 1901, "score": 0.5, "options": ["a", "b"], "gold": {"index": 1, "weight": 0.25}}
    assert load_dataset(str(folder), "pairs", split="test").num_rows == 2


def test_a_second_folder_of_the_same_name_loads_its_own_rows(toy_builder, toy_sample, toy_resources, tmp_path):
    """datasets (5.x) caches a local folder by its name: two builds named toy-1.0.0 whose cards
    are identical (same sizes) would share one cache. histbench's loader keeps them apart."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from histbench.core.dataset import BuiltDataset

    first = _build(toy_builder, toy_sample, toy_resources, tmp_path / "a")
    original = BuiltDataset.open(first).load("pairs", "test")["left"]
    second = tmp_path / "b" / first.name
    shutil.copytree(first, second)
    shard = second / "data" / "pairs" / "test-00000-of-00001.parquet"
    table = pq.read_table(shard)
    rows = table.to_pylist()
    rows[0]["left"] = rows[0]["left"].replace("a", "o")  # same length: the card stays identical
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), shard)
    manifest = json.loads((second / "histbench.json").read_text())
    # what a real rebuild with other rows records (a build is verified against its files before it is read)
    from histbench.core.dataset import combined_sha256
    from histbench.core.hashing import sha256_path

    for output in manifest["outputs"]:
        output["sha256"] = sha256_path(second / output["path"])
    manifest["data_sha256"] = combined_sha256(manifest["outputs"])
    (second / "histbench.json").write_text(json.dumps(manifest))

    assert (first / "README.md").read_bytes() == (second / "README.md").read_bytes()
    assert BuiltDataset.open(second).load("pairs", "test")["left"] == [rows[0]["left"], *original[1:]]
    assert BuiltDataset.open(first).load("pairs", "test")["left"] == original


def test_a_build_killed_between_its_two_renames_is_put_back(toy_builder, toy_sample, toy_resources, tmp_path,
                                                              monkeypatch):
    """kill -9 after the earlier build stepped aside (.NAME.tmp-old-*) and before the new one
    took its place: the next build, even a failing one, puts the earlier build back first."""
    out_root = tmp_path / "build"
    folder = _build(toy_builder, toy_sample, toy_resources, out_root)
    before = (folder / "histbench.json").read_text()
    folder.rename(out_root / ".toy-1.0.0.tmp-old-0badc0de")
    (out_root / ".toy-1.0.0.tmp-4242-deadbeef").mkdir()     # the killed build's staging

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(writer_module, "render_card", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _build(toy_builder, toy_sample, toy_resources, out_root)
    assert sorted(p.name for p in out_root.iterdir()) == [".toy-1.0.0.lock", "toy-1.0.0"]
    assert (folder / "histbench.json").read_text() == before


def test_a_build_collects_cycles_less_often_and_restores_the_thresholds(toy_builder, toy_sample, toy_resources,
                                                                          tmp_path, monkeypatch):
    """builders/machinery/build.py BUILD_GC_THRESHOLDS: raised while the builder runs (never lowered),
    the caller's thresholds back afterwards, also when the build fails."""
    import gc

    from histbench.builders.machinery.build import BUILD_GC_THRESHOLDS

    seen = []
    original = type(toy_builder).build

    def spying(self, ctx):
        seen.append(gc.get_threshold())
        return original(self, ctx)

    monkeypatch.setattr(type(toy_builder), "build", spying)
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 500)  # a caller's own third threshold above the build's is kept
        _build(toy_builder, toy_sample, toy_resources, tmp_path / "build")
        assert seen == [(BUILD_GC_THRESHOLDS[0], BUILD_GC_THRESHOLDS[1], 500)]
        assert gc.get_threshold() == (700, 10, 500)

        def failing(self, ctx):
            seen.append(gc.get_threshold())
            raise BuildError("the builder stopped")

        monkeypatch.setattr(type(toy_builder), "build", failing)
        with pytest.raises(BuildError, match="the builder stopped"):
            _build(toy_builder, toy_sample, toy_resources, tmp_path / "again")
        assert seen[-1][0] == BUILD_GC_THRESHOLDS[0] and gc.get_threshold() == (700, 10, 500)
    finally:
        gc.set_threshold(*before)


def test_builds_at_once_in_threads_give_back_the_thresholds_from_before_the_first():
    """Two builds overlapping in threads: the first ends while the second runs (the thresholds stay
    raised), the second ends last and the ones from before the first come back."""
    import gc
    import threading

    from histbench.builders.machinery.build import BUILD_GC_THRESHOLDS, fewer_collections

    before = gc.get_threshold()
    inside, release = threading.Event(), threading.Event()

    def second_build():
        with fewer_collections():
            inside.set()
            release.wait(10)

    try:
        gc.set_threshold(700, 10, 10)
        worker = threading.Thread(target=second_build)
        with fewer_collections():
            worker.start()
            assert inside.wait(10)
        assert gc.get_threshold() == BUILD_GC_THRESHOLDS  # the second build is still running
        release.set()
        worker.join(10)
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        release.set()
        gc.set_threshold(*before)
