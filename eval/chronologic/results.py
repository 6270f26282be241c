"""A Chronologic-EN run folder as `histbench.Results` (what `histbench.evaluate` returns).

- likelihood runs (`--mode likelihood`, and `--baseline random`): metrics are results.json's
  `metrics` (overall, per group and per reasoning type, with bootstrap intervals); records
  are questions.jsonl, one line per question;
- free-generation runs (`--mode generate`): records are the candidate's answers; metrics
  hold, once the run has been judged, the scores of every judge (`--mode judge`, in
  judged-<judge>/substantive.json) and style scoring (`--mode style`, in
  style-<key>/style.json), keyed by that folder's name; before that, the answer counts;
- an anchors folder (`--mode anchors`): metrics are the judge reliability and calibration.
"""

from __future__ import annotations

from pathlib import Path

from histbench.core.errors import EvalError
from histbench.core.readers import iter_jsonl_objects, read_json_object
from histbench.core.results import Results

from .likelihood import LEDGER_NAME, RESULTS_NAME

# Written by --mode judge, --mode style and --mode anchors (anchors.py, substantive.py,
# style/scoring.py; not imported here, since they need the judges' libraries).
SUBSTANTIVE_NAME = "substantive.json"
STYLE_NAME = "style.json"
ANCHORS_NAME = "anchors.json"
_KEPT = ("mode", "dataset", "model", "options", "counts", "definitions", "frame_permutation", "prompt_template",
         "prompt_hash")


def run_results(run_dir: Path) -> Results:
    run_dir = Path(run_dir)
    results_path = run_dir / RESULTS_NAME
    if not results_path.is_file():
        if (run_dir / ANCHORS_NAME).is_file():
            return _anchors(run_dir)
        raise EvalError(f"not a Chronologic-EN run folder: {RESULTS_NAME} is missing", file=run_dir)
    data = read_json_object(results_path, error=EvalError)
    info = {key: data[key] for key in _KEPT if key in data}
    signature = (data.get("signature") or {}).get("text")
    label = data.get("label") or run_dir.name
    if data.get("mode") == "likelihood":
        ledger = run_dir / LEDGER_NAME
        records = [row for _, row in iter_jsonl_objects(ledger, error=EvalError)] if ledger.is_file() else []
        return Results("chronologic", run_dir, label, data.get("metrics") or {}, records, signature, info)
    metrics: dict = {}
    for folder in sorted(run_dir.glob("judged-*")):
        if (folder / SUBSTANTIVE_NAME).is_file():
            judged = read_json_object(folder / SUBSTANTIVE_NAME, error=EvalError)
            metrics.setdefault("substantive", {})[folder.name] = judged.get("scores") or {}
    for folder in sorted(run_dir.glob("style-*")):
        if (folder / STYLE_NAME).is_file():
            styled = read_json_object(folder / STYLE_NAME, error=EvalError)
            metrics.setdefault("style", {})[folder.name] = styled.get("scores") or {}
    if not metrics:
        metrics = {"counts": data.get("counts") or {}}
    return Results("chronologic", run_dir, label, metrics, list(data.get("answers") or []), signature, info)


def _anchors(folder: Path) -> Results:
    data = read_json_object(folder / ANCHORS_NAME, error=EvalError)
    metrics = {"reliability": (data.get("reliability") or {}).get("pooled"), "calibration": data.get("calibration")}
    info = {key: value for key, value in data.items() if key not in ("reliability", "anchors")}
    return Results("chronologic", folder, "anchors", metrics, [], None, info)
