"""The valence run folder: what `histbench eval valence --out RUN` writes and the other
valence commands read and update.

    RUN/
      valence-run.json       dataset identity, scale, groups, top-k, case handling, the models
                             (label, spec, identity, its run store) and every annotation import
      sentences.parquet      the test sentences the run used (schema valence.sentences)
      models/<label>/        one run store per model (records.jsonl with every raw fill-mask
                             answer, run.json): reruns and interrupted runs never ask twice
      predictions.parquet    top-k predictions of every model (schema valence.predictions)
      annotations.parquet    sigma per sentence x token and annotator (schema valence.annotations),
                             after `import-annotations` / `auto-sigma`, or copied from the build
      conflicts.csv          sentence x token pairs on which annotators disagree (after an import)
      report/                `histbench report valence RUN`: index.md/html, figures, scores.csv

The parquet files are checked against the same JSON schemas as the dataset configs, and
`histbench valence package RUN` turns them into a versioned dataset folder (configs
sentences, predictions, annotations) with the project's dataset writer, ready for
`datasets.load_dataset` and `histbench push`. Every file is replaced atomically.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from histbench.core.atomic import atomic_path, write_text_atomic
from histbench.core.errors import EvalError
from histbench.core.readers import read_json_object
from histbench.core.resources import Resources
from histbench.core.schema import (
    class_label_names,
    decode_class_labels,
    records_to_table,
    to_native,
    validate_records,
)

RUN_MANIFEST = "valence-run.json"
FORMAT = 1


def slugify(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.") or "model"


def write_table(path: Path, records: list[dict], config: str, resources: Resources | None = None) -> None:
    """Check records against schemas/valence.<config>.schema.json and write them as parquet
    (stored as a dataset config is: categorical columns as ClassLabel ids)."""
    import pyarrow.parquet as pq

    resources = resources or Resources.default()
    schema = resources.schema("valence", config)
    records = [to_native(r) for r in records]
    validate_records(records, schema, config=config)
    with atomic_path(path) as tmp:
        pq.write_table(records_to_table(records, schema), tmp)


def read_table(path: Path, config: str, resources: Resources | None = None) -> list[dict]:
    """The records `write_table` wrote (categorical columns back as their names)."""
    import pyarrow.parquet as pq

    if not Path(path).is_file():
        return []
    schema = (resources or Resources.default()).schema("valence", config)
    return decode_class_labels(pq.read_table(path), class_label_names(schema)).to_pylist()


class RunFolder:
    """Open a valence run folder (`create=True` for `histbench eval`)."""

    def __init__(self, path: Path, manifest: dict) -> None:
        self.path = Path(path)
        self.manifest = manifest

    # -- opening ---------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path) -> RunFolder:
        path = Path(path).expanduser()
        manifest_path = path / RUN_MANIFEST
        if not manifest_path.is_file():
            raise EvalError(
                f"not a valence run folder ({RUN_MANIFEST} is missing); create one with "
                "`histbench eval valence --model ... --out RUN`", file=path,
            )
        manifest = read_json_object(manifest_path, error=EvalError)
        if manifest.get("benchmark") != "valence":
            raise EvalError(f"{RUN_MANIFEST} is not a valence run", file=manifest_path)
        return cls(path, manifest)

    @classmethod
    def create_or_open(cls, path: str | Path, *, dataset_identity: dict, settings: dict) -> RunFolder:
        """A new run folder, or an existing one made with the same dataset and settings."""
        path = Path(path).expanduser()
        if (path / RUN_MANIFEST).is_file():
            run = cls.open(path)
            theirs = run.manifest.get("dataset", {}).get("data_sha256")
            if theirs and dataset_identity.get("data_sha256") and theirs != dataset_identity["data_sha256"]:
                raise EvalError(
                    f"this run folder was made on another build of the test set (data {theirs[:12]}, "
                    f"now {dataset_identity['data_sha256'][:12]}); use a new --out folder", file=path,
                )
            for name, value in settings.items():
                if name in run.manifest and run.manifest[name] != value:
                    flag = {"top_k": "--top-k", "fold_case": "--case-sensitive-tokens"}.get(name, name)
                    raise EvalError(
                        f"this run folder uses {name} = {run.manifest[name]!r}, not {value!r} ({flag}); "
                        "predictions in one run share their settings: use a new --out folder", file=path,
                    )
            return run
        if path.exists() and any(path.iterdir()):
            raise EvalError(f"the folder exists, is not empty and is not a valence run (no {RUN_MANIFEST})", file=path)
        manifest = {
            "benchmark": "valence",
            "format": FORMAT,
            "dataset": dataset_identity,
            **settings,
            "models": [],
            "annotation_imports": [],
        }
        run = cls(path, manifest)
        path.mkdir(parents=True, exist_ok=True)
        run.save()
        return run

    # -- manifest ------------------------------------------------------------------------

    def save(self) -> None:
        text = json.dumps(to_native(self.manifest), indent=2, ensure_ascii=False) + "\n"
        write_text_atomic(self.path / RUN_MANIFEST, text)

    @property
    def models(self) -> list[dict]:
        return list(self.manifest.get("models", []))

    def model_labels(self) -> list[str]:
        return [m["label"] for m in self.models]

    def upsert_model(self, entry: dict) -> None:
        models = [m for m in self.manifest.get("models", []) if m["label"] != entry["label"]]
        known = {m["label"]: i for i, m in enumerate(self.manifest.get("models", []))}
        position = known.get(entry["label"], len(models))
        models.insert(position, entry)
        self.manifest["models"] = models

    def store_dir(self, label: str) -> Path:
        return self.path / "models" / slugify(label)

    @property
    def fold_case(self) -> bool:
        return bool(self.manifest.get("fold_case", True))

    @property
    def top_k(self) -> int:
        return int(self.manifest["top_k"])

    def scale(self):
        from histbench.builders.valence.scale import Scale

        return Scale.parse(self.manifest.get("scale"))

    # -- tables ----------------------------------------------------------------------------

    @property
    def sentences_path(self) -> Path:
        return self.path / "sentences.parquet"

    @property
    def predictions_path(self) -> Path:
        return self.path / "predictions.parquet"

    @property
    def annotations_path(self) -> Path:
        return self.path / "annotations.parquet"

    def sentences(self) -> list[dict]:
        rows = read_table(self.sentences_path, "sentences")
        if not rows:
            raise EvalError("the run folder holds no sentences.parquet (was the eval interrupted?)", file=self.path)
        return rows

    def predictions(self) -> list[dict]:
        return read_table(self.predictions_path, "predictions")

    def annotations(self) -> list[dict]:
        return read_table(self.annotations_path, "annotations")

    def write_sentences(self, rows: list[dict]) -> None:
        write_table(self.sentences_path, rows, "sentences")

    def write_predictions(self, rows: list[dict]) -> None:
        write_table(self.predictions_path, rows, "predictions")

    def write_annotations(self, rows: list[dict]) -> None:
        write_table(self.annotations_path, rows, "annotations")
