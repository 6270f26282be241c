"""`histbench validate`: a built folder must match its own histbench.json.

Checks every output file's sha256, every config/split's row count (from the parquet
files themselves) and every row against the schema shipped with this histbench; lists
every mismatch instead of stopping at the first.
"""

from __future__ import annotations

from pathlib import Path

from histbench.core.dataset import MANIFEST_NAME, resolve_dataset_path
from histbench.core.errors import HistbenchError, SchemaError, ValidationError
from histbench.core.hashing import sha256_path
from histbench.core.progress import log
from histbench.core.readers import read_json_object
from histbench.core.resources import Resources
from histbench.core.schema import class_label_names, decode_class_labels, validate_records


def validate_build(path_or_id: str | Path, resources: Resources | None = None, revision: str | None = None) -> dict:
    """Return a summary dict when everything matches; raise ValidationError listing all problems."""
    import pyarrow.parquet as pq

    resources = resources or Resources.default()
    folder = resolve_dataset_path(path_or_id, revision)
    manifest_path = folder / MANIFEST_NAME
    if not manifest_path.is_file():
        raise ValidationError(f"not a histbench build: {MANIFEST_NAME} is missing", file=folder)
    manifest = read_json_object(manifest_path, error=ValidationError)

    problems: list[str] = []
    benchmark = manifest.get("benchmark", "?")
    listed = {o["path"] for o in manifest.get("outputs", [])}
    present = {p.relative_to(folder).as_posix() for p in (folder / "data").rglob("*.parquet")} if (folder / "data").is_dir() else set()
    for extra in sorted(present - listed):
        problems.append(f"{extra}: parquet file not listed in {MANIFEST_NAME}")

    counted: dict[tuple[str, str], int] = {}
    for output in manifest.get("outputs", []):
        path = folder / output["path"]
        if not path.is_file():
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

    if problems:
        raise ValidationError(f"{len(problems)} problem(s) in {folder}", details=problems)
    return {"path": str(folder), "benchmark": benchmark, "version": manifest.get("version"), "rows": manifest.get("rows")}
