"""`histbench validate`: a built folder must match its own histbench.json.

Checks histbench.json against its schema (schemas/build-manifest.json), every output
file's sha256, every config/split's row count (from the parquet files themselves) and every
row against the schema shipped with this histbench, and that the card's data_files name
exactly the listed files; names every file the manifest does not list, and refuses an
absolute or escaping path in the manifest and any symbolic link that leads out of the
folder (histbench.core.paths.inside). Lists every mismatch instead of stopping at the first.
"""

from __future__ import annotations

import os
from pathlib import Path

from histbench.core.dataset import (
    BUILD_FILES,
    MANIFEST_NAME,
    _hub_cache_root,
    combined_sha256,
    read_build_manifest,
    resolve_dataset_path,
    verify_build,
)
from histbench.core.errors import HistbenchError, SchemaError, ValidationError
from histbench.core.hashing import sha256_path
from histbench.core.paths import inside
from histbench.core.progress import log
from histbench.core.resources import Resources
from histbench.core.schema import class_label_names, decode_class_labels, validate_records


def _present_files(folder: Path, root: Path, problems: list[str]) -> set[str]:
    """The files of the build (relative paths); a symbolic link leading outside it, a link to
    a folder, or anything that is not a regular file is a problem, and is not read."""
    present = set()
    for directory, folders, names in os.walk(folder, followlinks=False):
        here = Path(directory)
        for name in list(folders):
            if (here / name).is_symlink():
                folders.remove(name)
                problems.append(f"{(here / name).relative_to(folder).as_posix()}: a symbolic link to a folder; refused")
        for name in names:
            path = here / name
            relative = path.relative_to(folder).as_posix()
            try:
                inside(root, path.relative_to(root).as_posix(), error=ValidationError, what="file")
            except ValidationError as exc:
                problems.append(f"{relative}: {exc.message}")
                continue
            if not path.is_file():
                problems.append(f"{relative}: not a regular file (a broken link, a pipe, a device)")
                continue
            present.add(relative)
    return present


def validate_build(path_or_id: str | Path, resources: Resources | None = None, revision: str | None = None) -> dict:
    """Return a summary dict when everything matches; raise ValidationError listing all problems."""
    import pyarrow.parquet as pq

    resources = resources or Resources.default()
    local = Path(path_or_id).expanduser().exists()
    folder = resolve_dataset_path(path_or_id, revision)
    root = None if local else _hub_cache_root(folder)
    manifest = read_build_manifest(folder, error=ValidationError, root=root)

    problems: list[str] = []
    benchmark = manifest.get("benchmark", "?")
    listed = {o["path"] for o in manifest.get("outputs", [])}
    present = _present_files(folder, root or folder, problems)
    for extra in sorted(present - listed - set(BUILD_FILES)):
        kind = "parquet file" if extra.endswith(".parquet") else "file"
        problems.append(f"{extra}: {kind} not listed in {MANIFEST_NAME} (a build holds only the parquet files it lists, "
                        f"{', '.join(BUILD_FILES[:3])})")

    counted: dict[tuple[str, str], int] = {}
    for output in manifest.get("outputs", []):
        path = folder / output["path"]
        if output["path"] not in present:
            if not (path.exists() or path.is_symlink()):   # a link that leaves is named above already
                problems.append(f"{output['path']}: listed in {MANIFEST_NAME} but missing")
            continue
        digest = sha256_path(path)
        if digest != output["sha256"]:
            problems.append(f"{output['path']}: sha256 {digest[:12]}... differs from the recorded {output['sha256'][:12]}...")
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for corrupt files
            problems.append(f"{output['path']}: unreadable parquet ({exc})")
            continue
        key = (output["config"], output["split"])
        counted[key] = counted.get(key, 0) + table.num_rows
        try:
            schema = resources.schema(benchmark, output["config"])
        except HistbenchError as exc:
            problems.append(f"{output['path']}: {exc}")
            continue
        recorded_schema = manifest.get("schemas", {}).get(output["config"], {}).get("sha256")
        if recorded_schema and recorded_schema != sha256_path(resources.schema_path(benchmark, output["config"])):
            log(f"note: the schema of {output['config']!r} changed since this build; checking against the current one")
        try:
            table = decode_class_labels(table, class_label_names(schema))
            validate_records(table.to_pylist(), schema, config=output["config"], split=output["split"],
                             total=table.num_rows, allow_non_finite=True)
        except SchemaError as exc:
            problems.append(f"{output['path']}: {exc}")
            problems.extend("  " + d for d in exc.details)

    for config, splits in manifest.get("rows", {}).items():
        for split, expected in splits.items():
            found = counted.get((config, split))
            if found is not None and found != expected:
                problems.append(f"config {config}/{split}: {found} rows in parquet, {expected} in {MANIFEST_NAME}")

    if not problems:   # every file matched: the combined data_sha256 and the card's data_files
        try:
            verify_build(folder, manifest, error=ValidationError, root=root)
        except ValidationError as exc:
            problems.append(str(exc))
    elif combined_sha256(manifest["outputs"]) != manifest["data_sha256"]:
        problems.append(f"{MANIFEST_NAME}: data_sha256 is not the combined sha256 of the listed files")
    if problems:
        raise ValidationError(f"{len(problems)} problem(s) in {folder}", details=problems)
    return {"path": str(folder), "benchmark": benchmark, "version": manifest.get("version"), "rows": manifest.get("rows")}
