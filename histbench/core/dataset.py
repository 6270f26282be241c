"""Opening a built dataset (a local build folder or a Hub id) the way users do.

Evaluators read benchmarks only through `BuiltDataset`, i.e. through
`datasets.load_dataset(folder_or_id, config)`, so that they score exactly what a user
would load.

A build is verified before anything reads its rows (`verify_build`): histbench.json must
match its schema (schemas/build-manifest.json), every parquet file it lists must lie inside
the folder and hash to the recorded sha256, no other file may lie under data/, the
listed hashes must combine to the recorded data_sha256, and the card's `data_files` must
name exactly those files. Hashes are remembered per file by size, mtime_ns, ctime_ns and
inode (`VERIFIED_CACHE`), so a rerun on an unchanged build re-hashes nothing.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .errors import EvalError, HistbenchError, ValidationError
from .paths import files_inside, inside

#: the build manifest every build folder holds beside its data
MANIFEST_NAME = "histbench.json"
#: the files of a build besides the parquet files its manifest lists (.gitattributes: a Hub repo's own)
BUILD_FILES = (MANIFEST_NAME, "README.md", "LICENSE.md", ".gitattributes")
#: where verified hashes are remembered, under the datasets cache
VERIFIED_CACHE = "histbench-verified"


def _manifest_schema() -> dict:
    from .resources import _package_dir

    return json.loads((_package_dir("histbench.schemas") / "build-manifest.json").read_text(encoding="utf-8"))


def read_build_manifest(folder: str | Path, *, error: type[HistbenchError] = ValidationError, root: Path | None = None) -> dict:
    """histbench.json of a build folder, checked against schemas/build-manifest.json: a
    truncated file, a missing key or a list where an object belongs is one `error` line
    naming the file and the field; every output path must lie inside the folder (`root`,
    when given, is the folder links may lead into: a Hub download's cache folder)."""
    from jsonschema import Draft202012Validator

    from .readers import read_json_object

    folder = Path(folder)
    path = inside(root or folder, (folder / MANIFEST_NAME).relative_to(root or folder).as_posix(), error=error)
    if not path.is_file():
        raise error(f"not a histbench build: {MANIFEST_NAME} is missing", file=folder)
    manifest = read_json_object(path, error=error)
    problems = sorted(Draft202012Validator(_manifest_schema()).iter_errors(manifest), key=lambda e: list(e.absolute_path))
    if problems:
        first = problems[0]
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.absolute_path)
        more = f" ({len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise error(f"damaged build manifest: {first.message}{more}", file=path, field=where)
    for index, output in enumerate(manifest["outputs"]):
        inside(root or folder, (folder / output["path"]).relative_to(root or folder).as_posix(), error=error,
               what=f"outputs[{index}].path")
    return manifest


def combined_sha256(outputs: list[dict]) -> str:
    """The build's data_sha256: the sha256 of its output files' sha256s, in manifest order (writer.py)."""
    return hashlib.sha256("".join(o["sha256"] for o in outputs).encode()).hexdigest()


def _verified_cache_file(folder: Path) -> Path:
    import datasets

    key = hashlib.sha256(os.fsencode(folder.resolve())).hexdigest()[:32]
    return Path(datasets.config.HF_DATASETS_CACHE) / VERIFIED_CACHE / f"{key}.json"


def _stat_key(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def hash_with_cache(folder: Path, relatives: list[str], root: Path | None = None) -> dict[str, str]:
    """sha256 of each file (relative to `folder`); a file whose size, mtime_ns, ctime_ns,
    inode and device are those recorded when it was last hashed is not read again."""
    from .atomic import write_text_atomic
    from .hashing import sha256_path

    cache_file = _verified_cache_file(folder)
    try:
        cache = json.loads(cache_file.read_text(encoding="utf-8"))
        cache = cache if isinstance(cache, dict) else {}
    except (OSError, ValueError):
        cache = {}
    digests, changed = {}, False
    for relative in relatives:
        path = inside(root or folder, (folder / relative).relative_to(root or folder).as_posix(), error=ValidationError)
        real = path.resolve()
        key = _stat_key(real)
        known = cache.get(relative)
        if isinstance(known, dict) and known.get("stat") == key and isinstance(known.get("sha256"), str):
            digests[relative] = known["sha256"]
            continue
        digests[relative] = sha256_path(real)
        if _stat_key(real) == key:   # not changed while it was read
            cache[relative] = {"stat": key, "sha256": digests[relative]}
            changed = True
    if changed:
        try:
            write_text_atomic(cache_file, json.dumps(cache, sort_keys=True))
        except OSError:
            pass   # a read-only cache only costs the next run a re-hash
    return digests


def _card_data_files(card: Path, error: type[HistbenchError]) -> dict[tuple[str, str], list[str]]:
    """(config, split) -> the path patterns the card's `configs` give `load_dataset`."""
    import yaml

    text = card.read_text(encoding="utf-8") if card.is_file() else ""
    if not text.startswith("---\n") or "\n---" not in text[4:]:
        raise error("the dataset card has no metadata block (configs and data_files)", file=card)
    try:
        # libyaml's parser where PyYAML has it: the card's metadata (every config's features)
        # is read at every load, and the pure-Python parser took most of a demo's viewer time
        data = yaml.load(text[4:].split("\n---", 1)[0], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    except yaml.YAMLError as exc:
        raise error(f"the dataset card's metadata is not YAML ({exc})", file=card) from exc
    configs = data.get("configs") if isinstance(data, dict) else None
    if not isinstance(configs, list):
        raise error("the dataset card's metadata has no configs list", file=card)
    found: dict[tuple[str, str], list[str]] = {}
    for entry in configs:
        files = entry.get("data_files") if isinstance(entry, dict) else None
        if not isinstance(files, list):
            raise error(f"the card's config {entry!r:.80} has no data_files list", file=card)
        for item in files:
            if not isinstance(item, dict) or not isinstance(item.get("path"), str | list):
                raise error(f"the card's data_files entry {item!r:.80} has no path", file=card, field=str(entry.get("config_name")))
            paths = [item["path"]] if isinstance(item["path"], str) else item["path"]
            found.setdefault((str(entry.get("config_name")), str(item.get("split", "train"))), []).extend(map(str, paths))
    return found


def verify_build(folder: str | Path, manifest: dict | None = None, *, error: type[HistbenchError] = EvalError,
                 root: Path | None = None) -> str:
    """Refuse (`error`, naming the file) a build whose parquet files are not those its
    histbench.json records, or whose card sends `load_dataset` to other files; returns the
    data_sha256 verified (combined from the hashes just checked)."""
    folder = Path(folder)
    manifest = manifest if manifest is not None else read_build_manifest(folder, error=error, root=root)
    outputs = manifest["outputs"]
    listed = [o["path"] for o in outputs]
    present = [p for p in files_inside(folder, error=error, links_within=root) if p.startswith("data/")]
    for extra in sorted(set(present) - set(listed)):
        raise error(f"a file under data/ that {MANIFEST_NAME} does not list; refused (a tampered build?)", file=folder / extra)
    try:
        digests = hash_with_cache(folder, listed, root)
    except ValidationError as exc:
        raise error(exc.message, file=exc.file) from exc
    except FileNotFoundError as exc:
        raise error(f"listed in {MANIFEST_NAME} but missing", file=exc.filename) from exc
    for output in outputs:
        if digests[output["path"]] != output["sha256"]:
            raise error(f"sha256 {digests[output['path']][:12]}... differs from the {output['sha256'][:12]}... recorded in "
                        f"{MANIFEST_NAME}: this build was changed after it was written; refused", file=folder / output["path"])
    data_sha = combined_sha256(outputs)
    if data_sha != manifest["data_sha256"]:
        raise error(f"data_sha256 {manifest['data_sha256'][:12]}... is not the combined sha256 of the listed files "
                    f"({data_sha[:12]}...); refused", file=folder / MANIFEST_NAME, field="data_sha256")
    expected: dict[tuple[str, str], set[str]] = {}
    for output in outputs:
        expected.setdefault((output["config"], output["split"]), set()).add(output["path"])
    card = folder / "README.md"
    named = _card_data_files(card, error)
    for config, split in sorted(set(expected) - set(named)):
        raise error(f"the card's data_files name no file for {config}/{split}, which {MANIFEST_NAME} lists; refused",
                    file=card)
    for (config, split), patterns in named.items():
        matched = set()
        for pattern in patterns:
            if pattern.startswith("/") or ".." in Path(pattern).parts or "://" in pattern:
                raise error(f"the card's data_files of {config}/{split} point outside the build ({pattern!r}); refused",
                            file=card)
            matched |= {p for p in present if fnmatch.fnmatchcase(p, pattern)}
        if matched != expected.get((config, split), set()):
            raise error(f"the card's data_files of {config}/{split} ({', '.join(patterns)}) name "
                        f"{', '.join(sorted(matched)) or 'no file'}, not the files {MANIFEST_NAME} lists "
                        f"({', '.join(sorted(expected.get((config, split), ()))) or 'none'}); refused", file=card)
    return data_sha


def load_build_config(
    folder: str | Path, config: str, split: str | None = None, data_sha256: str | None = None,
    label_names: bool = True, root: Path | None = None,
):
    """`datasets.load_dataset(folder, config, split=split)` with a cache of this build's own,
    after `verify_build` (a build whose files are not those its manifest records is refused).

    Categorical columns are stored as `ClassLabel` ids (see `schema.class_label_names`);
    with `label_names` (the default, what histbench's evaluators read) they come back as
    their names, as the records were before writing. `label_names=False` gives exactly what
    `load_dataset` gives a user.

    datasets (5.x) keys its cache of a local folder by the folder's name and the config
    only: a rebuilt `build/<benchmark>-<version>`, or another folder of the same name, would
    be served the first one's cached rows. Keying the cache by the data_sha256 just verified
    against the files' current content, and the card (which maps configs to files), gives
    every distinct build its own cache, and never serves rows of files that changed since.
    `data_sha256`, when given, must be what the files are now.

    Within one process a config is loaded once: a later call that verifies the same files
    and card gets the same `Dataset` object back (`LOADED_KEPT` kept, least recently used
    dropped first), so treat it as read-only (`set_format` on it would be seen by the next
    caller).
    """
    import datasets
    from datasets import load_dataset

    from .progress import quiet_datasets

    folder = Path(folder)
    verified = verify_build(folder, root=root)
    if data_sha256 is not None and data_sha256 != verified:
        raise EvalError(f"the build's data_sha256 is {verified[:12]}..., not the {data_sha256[:12]}... expected; refused",
                        file=folder)
    card = folder / "README.md"
    key = hashlib.sha256(verified.encode() + b"\n" + card.read_bytes()).hexdigest()
    # the same rows were loaded in this process already (a demo, a report and its viewers
    # read one build many times): verified just now to be the same files and card
    remembered = (str(folder.resolve()), str(root), config, split, bool(label_names), key)
    if remembered in _LOADED:
        _LOADED.move_to_end(remembered)
        return _LOADED[remembered]
    quiet_datasets()
    cache_dir = Path(datasets.config.HF_DATASETS_CACHE) / "histbench-builds" / key[:32]
    loaded = load_dataset(str(folder), config, split=split, cache_dir=str(cache_dir))
    if label_names:
        if isinstance(loaded, datasets.DatasetDict):
            loaded = datasets.DatasetDict({name: class_labels_to_names(part) for name, part in loaded.items()})
        else:
            loaded = class_labels_to_names(loaded)
    _LOADED[remembered] = loaded
    while len(_LOADED) > LOADED_KEPT:
        _LOADED.popitem(last=False)
    return loaded


#: configs loaded in this process, by folder, config, split, label names and the key of the
#: verified files and card (`load_build_config`); the least recently used go first
LOADED_KEPT = 64
_LOADED: OrderedDict = OrderedDict()


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


def looks_like_path(text: str | Path) -> bool:
    """Whether a build argument names a folder of this disk rather than a Hub dataset id ORG/NAME.

    A path: a `Path`; text that starts with `.`, `/` or `~`, holds a backslash (or this
    system's separator other than `/`), more than one `/` or a trailing one; or whose first
    part is `build` (where `histbench build` writes) or a folder that exists here (`runs/x`
    when `runs/` does). Only what is left (exactly `ORG/NAME`) may be a Hub id.
    """
    import os

    if isinstance(text, Path):
        return True
    text = str(text)
    if text.startswith((".", "/", "~")) or "\\" in text or (os.sep != "/" and os.sep in text):
        return True
    if text.count("/") != 1 or text.endswith("/"):
        return True
    first = text.split("/", 1)[0]
    return first == "build" or Path(first).is_dir()


def _build_hint(text: str, benchmark: str | None) -> str:
    """`histbench build BENCHMARK`, the benchmark named by `benchmark` or by the folder's
    name (`chronologic-1.0.0`: the name before its version), else the word BENCHMARK."""
    if benchmark is None:
        found = re.fullmatch(r"([a-z][a-z0-9_]*)-\d+\.\d+\.\d+", Path(text).name)
        benchmark = found.group(1) if found else None
    return f"`histbench build {benchmark or 'BENCHMARK'}`"


def missing_build(path: str | Path, benchmark: str | None = None) -> EvalError:
    """The one line for a build folder that does not exist: how to build it."""
    text = str(path)
    return EvalError(f"no build folder {text}: build it with {_build_hint(text, benchmark)}")


def resolve_dataset_path(path_or_id: str | Path, revision: str | None = None, benchmark: str | None = None) -> Path:
    """A local folder as is; otherwise a Hub dataset id downloaded with huggingface_hub.

    An argument that looks like a path (`looks_like_path`) and does not exist is refused
    in one line saying how to build it: it is never looked up on the Hub.
    """
    path = Path(path_or_id).expanduser()
    if path.exists():
        if not path.is_dir():
            raise EvalError("a built dataset is a folder (build/<benchmark>-<version>)", file=path)
        return path
    text = str(path_or_id)
    if looks_like_path(path_or_id):
        raise missing_build(path_or_id, benchmark)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        return Path(snapshot_download(repo_id=text, repo_type="dataset", revision=revision))
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as exc:
        raise EvalError(f"no folder {text} here, and could not download it from the Hub as a dataset id: {exc}",
                        file=text) from exc


def _hub_cache_root(path: Path) -> Path:
    """The cache folder of a downloaded Hub repository (`datasets--ORG--NAME`), inside which
    its snapshot's links point at the blobs."""
    if path.parent.name == "snapshots" and path.parents[1].name.startswith("datasets--"):
        return path.parents[1]
    return path


@dataclass
class BuiltDataset:
    path: Path
    root: Path | None = None   # the folder links may lead into (a Hub download's cache folder)
    verified_sha256: str | None = None

    @classmethod
    def open(cls, path_or_id: str | Path, revision: str | None = None, benchmark: str | None = None) -> BuiltDataset:
        """The build, verified (`verify_build`): a damaged manifest, a tampered file or a card
        pointing elsewhere is an EvalError naming the file, before anything is scored."""
        local = Path(path_or_id).expanduser().exists()
        if not local and looks_like_path(path_or_id):
            raise missing_build(path_or_id, benchmark)
        built = cls(resolve_dataset_path(path_or_id, revision))
        built.root = None if local else _hub_cache_root(built.path)
        if not (built.path / MANIFEST_NAME).is_file():
            raise EvalError(f"not a histbench build: {MANIFEST_NAME} is missing", file=built.path)
        if benchmark and built.benchmark != benchmark:
            raise EvalError(f"this is a {built.benchmark!r} build, not {benchmark!r}", file=built.path)
        built.verified_sha256 = verify_build(built.path, built.manifest, root=built.root)
        return built

    @cached_property
    def manifest(self) -> dict:
        return read_build_manifest(self.path, error=EvalError, root=self.root)

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
            # what was verified against the files, not merely what histbench.json says
            "data_sha256": self.verified_sha256 or verify_build(self.path, self.manifest, root=self.root),
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
        return load_build_config(self.path, config, split, self.verified_sha256, root=self.root)
