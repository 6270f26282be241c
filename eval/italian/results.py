"""A Historical Italian run folder as `histbench.Results` (what `histbench.evaluate` returns):
metrics per task from results.json, one record per scored row from items/<task>.jsonl (with
its `task`), and the run's signature."""

from __future__ import annotations

from pathlib import Path

from histbench.core.errors import EvalError
from histbench.core.readers import iter_jsonl_objects, read_json_object
from histbench.core.results import Results


def run_results(run_dir: Path) -> Results:
    run_dir = Path(run_dir)
    path = run_dir / "results.json"
    if not path.is_file():
        raise EvalError("not an italian run folder: results.json is missing", file=run_dir)
    data = read_json_object(path, error=EvalError)
    tasks = data.get("tasks") or {}
    records = []
    for task in tasks:
        items = run_dir / "items" / f"{task}.jsonl"
        if items.is_file():
            records += [{"task": task, **row} for _, row in iter_jsonl_objects(items, error=EvalError)]
    signature = (data.get("signature") or {}).get("text")
    info = {key: value for key, value in data.items() if key not in ("tasks", "signature")}
    return Results("italian", run_dir, data.get("model") or run_dir.name, tasks, records, signature, info)
