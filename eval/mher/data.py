"""Loading an MHER build, and the predictions files every MHER run folder holds.

A run folder (from `histbench eval mher`) contains

    mher_run.json            what produced it: kind (model | baselines), label, dataset
                             identity, signature, options, per-system notes (thresholds...)
    mher_predictions.jsonl   one line per (system, condition, split, item): probabilities
                             over same/different/ambiguous, the action, validity, the
                             rationale and the run-store key of the raw response
    records.jsonl            (model runs) the run store: every raw response, kept as sent
    run.json, results.json,  the run format (histbench.core.runfolder), written from these
    items.jsonl              files after each evaluation (run_summary.py); a model run's
                             run.json is also its run store's

Gold labels are never written into predictions: the report joins them from the build.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from histbench.core.errors import EvalError
from histbench.core.readers import iter_jsonl_objects, read_json_object

from .metrics import ACTION_CODES, LABEL_CODES
from .protocol import ACTIONS, CONDITIONS

RUN_FILE = "mher_run.json"
PREDICTIONS_FILE = "mher_predictions.jsonl"


@dataclass
class Bench:
    """The records of every config and split of one build (plain dicts)."""

    records: dict[str, dict[str, list[dict]]]
    identity: dict

    def items(self, condition: str, split: str) -> list[dict]:
        try:
            return self.records[condition][split]
        except KeyError as exc:
            raise EvalError(f"the build has no {condition}/{split} records") from exc

    @staticmethod
    def item_id(condition: str, record: dict) -> str:
        return record["question_id"] if condition == "unresolved" else record["pair_id"]


def load_bench(built) -> Bench:
    records: dict[str, dict[str, list[dict]]] = {}
    rows = built.manifest["rows"]
    empty = set(built.manifest.get("empty_splits", []))
    for condition in CONDITIONS:
        splits = ["test"] if condition == "unresolved" else ["dev", "test"]
        records[condition] = {}
        for split in splits:
            if split in rows.get(condition, {}):
                records[condition][split] = built.load(condition, split).to_list()
            elif f"{condition}/{split}" in empty:  # built, but without rows (not written)
                records[condition][split] = []
            else:
                raise EvalError(f"not an MHER build: {condition}/{split} is missing", file=built.path)
    if "entities" in built.configs:
        records["entities"] = {split: built.load("entities", split).to_list() for split in rows["entities"]}
    return Bench(records, built.identity())


@dataclass
class Prediction:
    system: str
    condition: str
    split: str
    item_id: str
    probabilities: tuple[float, float, float]
    action: str
    valid: bool = True
    rationale: str | None = None
    record_key: str | None = None
    attempts: int = 1
    error: str | None = None
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "system": self.system, "condition": self.condition, "split": self.split, "item_id": self.item_id,
            "probabilities": dict(zip(ACTIONS, (float(p) for p in self.probabilities), strict=True)),
            "action": self.action, "valid": self.valid, "rationale": self.rationale, "record_key": self.record_key,
            "attempts": self.attempts, "error": self.error, **({"extra": self.extra} if self.extra else {}),
        }

    @classmethod
    def from_json(cls, data: dict, where: str) -> Prediction:
        try:
            probs = data["probabilities"]
            probabilities = tuple(float(probs[a]) for a in ACTIONS)
            action = data["action"]
            if action not in ACTIONS:
                raise ValueError(f"unknown action {action!r}")
            return cls(data["system"], data["condition"], data["split"], data["item_id"], probabilities, action,
                       bool(data.get("valid", True)), data.get("rationale"), data.get("record_key"),
                       int(data.get("attempts", 1)), data.get("error"), data.get("extra") or {})
        except (KeyError, TypeError, ValueError) as exc:
            raise EvalError(f"not an MHER prediction ({exc})", file=where) from exc


def write_predictions(run_dir: Path, predictions: list[Prediction], run_info: dict) -> None:
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / (PREDICTIONS_FILE + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for prediction in predictions:
            handle.write(json.dumps(prediction.to_json(), ensure_ascii=False) + "\n")
    tmp.replace(run_dir / PREDICTIONS_FILE)
    info_tmp = run_dir / (RUN_FILE + ".tmp")
    info_tmp.write_text(json.dumps(run_info, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    info_tmp.replace(run_dir / RUN_FILE)


@dataclass
class Run:
    path: Path
    info: dict
    predictions: list[Prediction]

    @property
    def label(self) -> str:
        return self.info.get("label") or self.path.name

    @property
    def kind(self) -> str:
        return self.info.get("kind", "model")

    def systems(self) -> list[str]:
        seen: dict[str, None] = {}
        for p in self.predictions:
            seen.setdefault(p.system, None)
        return list(seen)


def read_run(run_dir: Path, info_path: Path | None = None, pred_path: Path | None = None) -> Run:
    """MHER's own files of a run folder (by default RUN_FILE and PREDICTIONS_FILE in it;
    the report passes the paths its run.json names)."""
    run_dir = Path(run_dir)
    info_path = Path(info_path) if info_path else run_dir / RUN_FILE
    pred_path = Path(pred_path) if pred_path else run_dir / PREDICTIONS_FILE
    if not info_path.is_file() or not pred_path.is_file():
        raise EvalError(f"not an MHER run folder (needs {RUN_FILE} and {PREDICTIONS_FILE}; "
                        "run `histbench eval mher` first)", file=run_dir)
    info = read_json_object(info_path, error=EvalError)
    predictions = [
        Prediction.from_json(data, f"{pred_path}:{number}")
        for number, data in iter_jsonl_objects(pred_path, error=EvalError)
    ]
    return Run(run_dir, info, predictions)


@dataclass
class Aligned:
    """One system's predictions on one condition/split, aligned with the build's items."""

    item_ids: list[str]
    gold: np.ndarray | None          # 0 same / 1 different (None for unresolved)
    action: np.ndarray               # 0 / 1 / 2
    probabilities: np.ndarray        # (n, 3)
    valid: np.ndarray
    records: list[dict]
    missing: int = 0

    @property
    def correct(self) -> np.ndarray:
        return (self.action == self.gold) & (self.action != 2)


def align(bench: Bench, predictions: list[Prediction], system: str, condition: str, split: str,
          restrict: set[str] | None = None) -> Aligned | None:
    """The system's predictions in build order; items it has no prediction for are an
    error (a partial run cannot be scored silently) unless it has none at all (None)."""
    records = bench.items(condition, split)
    if restrict is not None:
        records = [r for r in records if Bench.item_id(condition, r) in restrict]
    by_id = {p.item_id: p for p in predictions if p.system == system and p.condition == condition and p.split == split}
    if not by_id:
        return None
    ids = [Bench.item_id(condition, r) for r in records]
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise EvalError(f"system {system!r} has no prediction for {len(missing)} of {len(ids)} {condition}/{split} "
                        f"items (first: {missing[0]}); rerun `histbench eval mher` to complete the run")
    preds = [by_id[i] for i in ids]
    gold = None if condition == "unresolved" else np.array([LABEL_CODES[r["label"]] for r in records], dtype=int)
    return Aligned(
        item_ids=ids, gold=gold,
        action=np.array([ACTION_CODES[p.action] for p in preds], dtype=int),
        probabilities=np.array([p.probabilities for p in preds], dtype=float).reshape(len(preds), 3),
        valid=np.array([p.valid for p in preds], dtype=bool),
        records=records,
    )
