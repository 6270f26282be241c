"""The dataset writer: records -> parquet per config/split + dataset card + histbench.json.

Everything is written into a hidden temporary sibling of the output folder and moved
into place only once complete, so an interrupted or failed build leaves no output
folder (and an earlier complete build stays untouched until the new one is ready); an
output root (`--out`) the build created is removed again. Ctrl-C and SIGTERM remove the
staging folder (histbench.core.signals); after a kill -9, the next build into the same
folder removes it, and puts the earlier build back if the kill came between the two
renames that swap it for the new one.

A folder that is already at the output path is replaced only when it is a histbench build
of the same benchmark (its histbench.json valid against schemas/build-manifest.json and
naming that benchmark) or an empty folder: anything else (a person's notes, another
benchmark's build, a symbolic link) is refused, naming the folder, before anything is built
or written (`check_replaceable`).

Builds into one output folder take turns: each holds the lock `--out/.NAME.lock` (kept,
empty, beside the build) while it writes, and a second build waits, saying so, so it can
neither remove the first one's staging folder nor interleave with it.
Parquet files are byte-identical for identical records: no timestamps go into them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import yaml

from histbench.core.atomic import make_parents, remove_created, remove_stepped_aside
from histbench.core.dataset import MANIFEST_NAME
from histbench.core.errors import BuildError, HistbenchError, os_error_words
from histbench.core.hashing import sha256_path
from histbench.core.locks import file_lock
from histbench.core.paths import local_paths, names_this_machine, portable_option
from histbench.core.progress import log, progress, quiet_datasets
from histbench.core.resources import Resources
from histbench.core.schema import (
    check_schema_conventions,
    records_to_table,
    schema_to_features,
    to_native,
    validate_records,
)
from histbench.core.secrets import scrub_text
from histbench.core.version import histbench_commit, histbench_version

from .card import LICENCE_FILE, licence_file, render_card
from .manifest import InputFile

SHARD_BYTES = 200 * 1024 * 1024


@dataclass
class BuildOutput:
    """What a benchmark builder returns.

    configs: config -> split -> records (plain dicts matching the config's schema).
    summary: JSON-able counts and exclusions, stored in histbench.json and printed.
    summary_markdown: the same for people (goes into the dataset card and the demo report).
    allow_non_finite: configs whose records may hold NaN/inf (default: none).
    """

    configs: dict[str, dict[str, list[dict]]]
    summary: dict = field(default_factory=dict)
    summary_markdown: str = ""
    allow_non_finite: frozenset[str] = frozenset()


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def shard_name(split: str, index: int, count: int) -> str:
    return f"{split}-{index:05d}-of-{count:05d}.parquet"


def _write_config(dataset, folder: Path, split: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    count = max(1, math.ceil(dataset.data.nbytes / SHARD_BYTES))
    paths = []
    for index in range(count):
        shard = dataset.shard(num_shards=count, index=index, contiguous=True) if count > 1 else dataset
        path = folder / shard_name(split, index, count)
        shard.to_parquet(str(path))
        paths.append(path)
    return paths


def _refuse_local_paths(manifest: dict, tables: list) -> None:
    """A build is made to be published: no file or folder of the building machine may be named in
    histbench.json or in a top-level text column (options naming local files are recorded
    by name and sha256 instead; see `paths.portable_option`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    found = [f"{MANIFEST_NAME} {where}: {value}" for where, value in local_paths(manifest)]
    for label, table in tables:
        for name, column in zip(table.column_names, table.columns, strict=True):
            if not pa.types.is_string(column.type):
                continue
            flagged = pc.or_(pc.starts_with(column, "/"), pc.starts_with(column, "~"))
            for value in pc.unique(column.filter(pc.fill_null(flagged, False))).to_pylist():
                if names_this_machine(value):
                    found.append(f"config {label}, column {name!r}: {value}")
    if found:
        raise BuildError(
            "the build would record local paths of the building machine (name files by name and sha256, "
            "models by a portable name); nothing was written",
            details=found[:20],
        )


def _remove_stale_temporaries(out_dir: Path) -> None:
    """What killed builds left (called holding the folder's lock, so no live build owns any
    of it): staging folders are removed; an earlier build stepped aside (`.tmp-old-*`)
    comes back when the output folder itself is missing."""
    for stale in sorted(out_dir.parent.glob(f".{out_dir.name}.tmp-*")):
        if stale.name.startswith(f".{out_dir.name}.tmp-old-") and not out_dir.exists():
            stale.rename(out_dir)
            log(f"note: put back {out_dir}, which an interrupted build had moved aside")
            continue
        shutil.rmtree(stale, ignore_errors=True)


def check_replaceable(out_dir: Path, benchmark: str) -> None:
    """Refuse (BuildError, nothing written) an output folder that exists and is not a
    histbench build of `benchmark` (an empty folder may be replaced)."""
    from histbench.core.dataset import read_build_manifest

    out_dir = Path(out_dir)
    if not out_dir.exists() and not out_dir.is_symlink():
        return
    advice = "nothing was written; move it away or give another --out"
    if out_dir.is_symlink() or not out_dir.is_dir():
        raise BuildError(f"the output folder exists and is {'a symbolic link' if out_dir.is_symlink() else 'not a folder'}, "
                         f"not a histbench build; {advice}", file=out_dir)
    try:
        if not any(out_dir.iterdir()):
            return
    except OSError as exc:
        raise _os_error(exc, out_dir) from exc
    try:
        manifest = read_build_manifest(out_dir, error=BuildError)
    except BuildError as exc:
        raise BuildError(f"the output folder exists and is not a histbench build ({exc.message}); it is not replaced: "
                         f"{advice}", file=out_dir) from None
    if manifest["benchmark"] != benchmark:
        raise BuildError(f"the output folder holds a {manifest['benchmark']!r} build, not {benchmark!r}; it is not "
                         f"replaced: {advice}", file=out_dir)


def _lock_path(out_dir: Path) -> Path:
    return out_dir.parent / f".{out_dir.name}.lock"


def _os_error(exc: OSError, out_dir: Path, tmp: Path | None = None) -> BuildError:
    """One line: the path (a file of the staging folder named as it would be in place), what
    could not be done, and why."""
    operation, reason = os_error_words(exc)
    path = Path(exc.filename) if exc.filename is not None else out_dir
    if tmp is not None and (path == tmp or tmp in path.parents):
        path = out_dir / path.relative_to(tmp)
    return BuildError(f"could not write the dataset: cannot {operation or 'write'}: {reason}", file=path)


def write_build(
    *,
    benchmark: str,
    version: str,
    output: BuildOutput,
    inputs: dict[str, list[InputFile]],
    options: dict,
    out_dir: Path,
    resources: Resources | None = None,
    started: str | None = None,
    extra_manifest: dict | None = None,
    default_config: str | None = None,
) -> Path:
    """Check every record, write the dataset folder atomically and return its path.

    default_config: the config the card marks `default` (else the first one written)."""
    from datasets import Dataset, DatasetInfo, SplitDict, SplitInfo
    from datasets.table import InMemoryTable

    resources = resources or Resources.default()
    started = started or utc_now()
    quiet_datasets()
    out_dir = Path(out_dir)
    if not output.configs:
        raise BuildError(f"{benchmark}: the builder produced no configs; nothing to write")

    schemas, features = {}, {}
    for config, splits in output.configs.items():
        schema_file = resources.schema_path(benchmark, config)
        schemas[config] = resources.schema(benchmark, config)
        check_schema_conventions(schemas[config], str(schema_file))
        features[config] = schema_to_features(schemas[config])
        for split in list(splits):
            records = splits[split] = list(splits[split])
            validate_records(
                records, schemas[config], config=config, split=split, total=len(records),
                allow_non_finite=config in output.allow_non_finite, make_native=True,
            )

    # `datasets.load_dataset` cannot load a split with no rows, so empty splits (and configs
    # left with none) are not written; they are listed in histbench.json and the log.
    empty = [f"{config}/{split}" for config, splits in output.configs.items()
             for split, records in splits.items() if not records]
    configs = {
        config: {split: records for split, records in splits.items() if records}
        for config, splits in output.configs.items()
    }
    configs = {config: splits for config, splits in configs.items() if splits}
    if not configs:
        raise BuildError(f"{benchmark}: every config is empty ({', '.join(empty)}); nothing to write")
    for label in empty:
        log(f"note: {label} has no rows and is not written (listed under empty_splits in {MANIFEST_NAME})")

    root = out_dir.parent
    if root.exists() and not root.is_dir():
        raise BuildError("the output root (--out) is a file, not a folder; nothing was written", file=root)
    try:
        created = make_parents(root)
    except OSError as exc:
        raise _os_error(exc, out_dir) from exc
    try:
        with file_lock(_lock_path(out_dir), on_wait=lambda: log(
                f"another build is writing {out_dir}: waiting for it to finish")):
            _remove_stale_temporaries(out_dir)
            check_replaceable(out_dir, benchmark)
            tmp = root / f".{out_dir.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            try:
                tmp.mkdir()
            except OSError as exc:
                raise _os_error(exc, out_dir) from exc
            try:
                outputs, infos, data_files, row_counts, tables = [], {}, {}, {}, []
                for config, splits in progress(list(configs.items()), desc="writing configs", unit="config"):
                    split_infos, size = [], 0
                    data_files[config], row_counts[config] = {}, {}
                    for split, records in splits.items():
                        # Arrow straight from the schema-checked records: the same bytes as
                        # Dataset.from_list, several times faster
                        table = records_to_table(records, schemas[config], features[config])
                        tables.append((f"{config}/{split}", table))
                        # a fingerprint of our own: datasets would otherwise hash the whole table for one
                        # (it names cache files, which writing parquet never makes; the files are the same)
                        fingerprint = hashlib.sha256(f"{benchmark}/{config}/{split}".encode()).hexdigest()[:16]
                        dataset = Dataset(InMemoryTable(table), info=DatasetInfo(features=features[config]),
                                          fingerprint=fingerprint)
                        paths = _write_config(dataset, tmp / "data" / config, split)
                        data_files[config][split] = f"data/{config}/{split}-*.parquet"
                        row_counts[config][split] = len(records)
                        split_infos.append(SplitInfo(name=split, num_bytes=dataset.data.nbytes, num_examples=len(records)))
                        size += dataset.data.nbytes
                        for path in paths:
                            outputs.append({
                                "path": path.relative_to(tmp).as_posix(),
                                "config": config,
                                "split": split,
                                "sha256": sha256_path(path),
                                "size": path.stat().st_size,
                            })
                    download = sum(o["size"] for o in outputs if o["config"] == config)
                    infos[config] = DatasetInfo(
                        features=features[config], config_name=config, splits=SplitDict({s.name: s for s in split_infos}),
                        download_size=download, dataset_size=size,
                    )

                input_records = [f.to_json() for files in inputs.values() for f in files]
                card = render_card(
                    resources.card_template(benchmark), benchmark=benchmark, version=version, infos=infos,
                    data_files=data_files, row_counts=row_counts, summary_markdown=output.summary_markdown,
                    inputs=input_records, default_config=default_config,
                )
                (tmp / "README.md").write_text(scrub_text(card), encoding="utf-8")
                if "license_link: LICENSE.md" in card:
                    pretty = yaml.safe_load(card.split("---\n", 2)[1]).get("pretty_name", benchmark)
                    (tmp / LICENCE_FILE).write_text(licence_file(pretty, benchmark, version, input_records), encoding="utf-8")

                data_sha = hashlib.sha256("".join(o["sha256"] for o in outputs).encode()).hexdigest()
                manifest = {
                    "benchmark": benchmark,
                    "version": version,
                    "histbench_version": histbench_version(),
                    "histbench_commit": histbench_commit(),
                    "options": portable_option(to_native(options)),
                    "inputs": input_records,
                    "outputs": outputs,
                    "data_sha256": data_sha,
                    "rows": row_counts,
                    "empty_splits": empty,
                    "schemas": {
                        config: {
                            "id": schemas[config].get("$id", f"{benchmark}.{config}"),
                            "sha256": sha256_path(resources.schema_path(benchmark, config)),
                        }
                        for config in configs
                    },
                    "summary": to_native(output.summary),
                    "build_started_utc": started,
                    "build_finished_utc": utc_now(),
                }
                if extra_manifest:
                    manifest.update(portable_option(to_native(extra_manifest)))
                _refuse_local_paths(manifest, tables)
                # build options may name a chat model and its options: no credential it read is written
                (tmp / MANIFEST_NAME).write_text(scrub_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"),
                                                 encoding="utf-8")

                if out_dir.exists():
                    old = out_dir.parent / f".{out_dir.name}.tmp-old-{uuid.uuid4().hex[:8]}"
                    out_dir.rename(old)
                    tmp.rename(out_dir)
                    remove_stepped_aside(old)
                else:
                    tmp.rename(out_dir)
            except BaseException as exc:
                shutil.rmtree(tmp, ignore_errors=True)
                if isinstance(exc, HistbenchError | KeyboardInterrupt):
                    raise
                if isinstance(exc, OSError):
                    raise _os_error(exc, out_dir, tmp) from exc
                raise
    except BaseException:
        if created:   # a first build that failed leaves no --out folder behind (nor its lock)
            _lock_path(out_dir).unlink(missing_ok=True)
            remove_created(created)
        raise
    log(f"wrote {out_dir} ({sum(sum(s.values()) for s in row_counts.values()):,} rows in {len(row_counts)} configs)")
    return out_dir
