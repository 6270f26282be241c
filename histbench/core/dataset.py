"""Opening a built dataset (a local build folder or a Hub id) the way users do.

Evaluators read benchmarks only through `BuiltDataset`, i.e. through
`datasets.load_dataset(folder_or_id, config)`, so that they score exactly what a user
would load.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .errors import EvalError

#: the build manifest every build folder holds beside its data
MANIFEST_NAME = "histbench.json"


def load_build_config(
    folder: str | Path, config: str, split: str | None = None, data_sha256: str | None = None,
    label_names: bool = True,
):
    """`datasets.load_dataset(folder, config, split=split)` with a cache of this build's own.

    Categorical columns are stored as `ClassLabel` ids (see `schema.class_label_names`);
    with `label_names` (the default, what histbench's evaluators read) they come back as
    their names, as the records were before writing. `label_names=False` gives exactly what
    `load_dataset` gives a user.

    datasets (5.x) keys its cache of a local folder by the folder's name and the config
    only: a rebuilt `build/<benchmark>-<version>`, or another folder of the same name, would
    be served the first one's cached rows. Keying the cache by the build's data_sha256
    (from histbench.json) and its card (which maps configs to files) gives every distinct
    build its own cache.
    """
    import hashlib

    import datasets
    from datasets import load_dataset

    from .progress import quiet_datasets

    folder = Path(folder)
    if data_sha256 is None:
        data_sha256 = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8")).get("data_sha256") or ""
    card = folder / "README.md"
    key = hashlib.sha256(data_sha256.encode() + b"\n" + (card.read_bytes() if card.is_file() else b"")).hexdigest()
    quiet_datasets()
    cache_dir = Path(datasets.config.HF_DATASETS_CACHE) / "histbench-builds" / key[:32]
    loaded = load_dataset(str(folder), config, split=split, cache_dir=str(cache_dir))
    if not label_names:
        return loaded
    if isinstance(loaded, datasets.DatasetDict):
        return datasets.DatasetDict({name: class_labels_to_names(part) for name, part in loaded.items()})
    return class_labels_to_names(loaded)


def class_labels_to_names(dataset):
    """A `datasets.Dataset` whose top-level ClassLabel columns hold their names (strings)."""
    from datasets import ClassLabel, Dataset, DatasetInfo, Value
    from datasets.table import InMemoryTable

    from .schema import decode_class_labels

    labels = {name: feature.names for name, feature in dataset.features.items() if isinstance(feature, ClassLabel)}
    if not labels:
        return dataset
    features = dataset.features.copy()
    for name in labels:
        features[name] = Value("string")
    table = decode_class_labels(dataset.data.table, labels)
    table = table.replace_schema_metadata(features.arrow_schema.metadata)
    return Dataset(InMemoryTable(table), info=DatasetInfo(features=features), split=dataset.split)


def resolve_dataset_path(path_or_id: str | Path, revision: str | None = None) -> Path:
    """A local folder as is; otherwise a Hub dataset id downloaded with huggingface_hub."""
    path = Path(path_or_id).expanduser()
    if path.exists():
        if not path.is_dir():
            raise EvalError("a built dataset is a folder (build/<benchmark>-<version>)", file=path)
        return path
    text = str(path_or_id)
    if text.count("/") != 1 or text.startswith((".", "/", "~")):
        raise EvalError("no such dataset folder, and not a Hub id of the form ORG/NAME", file=text)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        return Path(snapshot_download(repo_id=text, repo_type="dataset", revision=revision))
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as exc:
        raise EvalError(f"could not download dataset from the Hub: {exc}", file=text) from exc


@dataclass
class BuiltDataset:
    path: Path

    @classmethod
    def open(cls, path_or_id: str | Path, revision: str | None = None, benchmark: str | None = None) -> BuiltDataset:
        built = cls(resolve_dataset_path(path_or_id, revision))
        if not (built.path / MANIFEST_NAME).is_file():
            raise EvalError(f"not a histbench build: {MANIFEST_NAME} is missing", file=built.path)
        if benchmark and built.benchmark != benchmark:
            raise EvalError(f"this is a {built.benchmark!r} build, not {benchmark!r}", file=built.path)
        return built

    @cached_property
    def manifest(self) -> dict:
        with (self.path / MANIFEST_NAME).open(encoding="utf-8") as handle:
            return json.load(handle)

    @property
    def benchmark(self) -> str:
        return self.manifest["benchmark"]

    @property
    def version(self) -> str:
        return self.manifest["version"]

    @property
    def configs(self) -> list[str]:
        return list(self.manifest["rows"])

    def identity(self) -> dict:
        """What a result records about the data it was computed on."""
        return {
            "benchmark": self.benchmark,
            "version": self.version,
            "data_sha256": self.manifest.get("data_sha256"),
            "path": str(self.path),
        }

    def load(self, config: str, split: str | None = None):
        """`datasets.load_dataset(folder, config)` (a DatasetDict, or one split); see
        `load_build_config` for its cache."""
        if config not in self.manifest["rows"]:
            raise EvalError(
                f"config {config!r} is not in this build (has: {', '.join(self.configs)})", file=self.path
            )
        if split is not None and split not in self.manifest["rows"][config]:
            raise EvalError(f"config {config!r} has no split {split!r}", file=self.path)
        return load_build_config(self.path, config, split, self.manifest.get("data_sha256"))
