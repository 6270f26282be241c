"""A Historical Italian run folder in the run format (histbench.core.runfolder).

The evaluation writes italian.json (the metrics per task as the tables show them, the
signature) and italian-items/<task>.jsonl (one scored row a line); `summarise` turns them
into the format's results.json (one metric per task and measure) and items.jsonl (the
viewer's items). A folder written before the run format holds the same two things as
results.json and items/: `summarise` first copies results.json to italian.json and renames
items/ to italian-items/, so converting it (`histbench convert-run`) keeps every number.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from histbench.core.errors import EvalError
from histbench.core.readers import read_json_object
from histbench.core.runfolder import Metric, RunSummary, finite, interval_metric

from .run import LEGACY_ITEMS, LEGACY_RESULTS, OWN_ITEMS, OWN_RESULTS
from .tasks import MCQ_TASKS, NER_TASKS
from .viewer import TASK_LABELS, view_items


def _legacy(run_dir: Path) -> bool:
    """A folder from before the run format: its own results in results.json (with tasks)."""
    path = run_dir / LEGACY_RESULTS
    if (run_dir / OWN_RESULTS).is_file() or not path.is_file():
        return False
    try:
        data = read_json_object(path, error=EvalError)
    except EvalError:
        return False
    return isinstance(data.get("tasks"), dict) and "run_format" not in data and "benchmark" not in data


def is_own_folder(run_dir: Path) -> bool:
    run_dir = Path(run_dir)
    return (run_dir / OWN_RESULTS).is_file() or _legacy(run_dir)


def _adopt_legacy(run_dir: Path) -> None:
    if not _legacy(run_dir):
        return
    shutil.copyfile(run_dir / LEGACY_RESULTS, run_dir / OWN_RESULTS)
    if (run_dir / LEGACY_ITEMS).is_dir() and not (run_dir / OWN_ITEMS).exists():
        (run_dir / LEGACY_ITEMS).rename(run_dir / OWN_ITEMS)


def task_metrics(task: str, m: dict) -> list[Metric]:
    """The metrics of one task as the report's tables show them (tasks.score_task and
    metrics.ner_scores computed them; nothing is recomputed here)."""
    name = TASK_LABELS.get(task, task)
    out: list[Metric] = []
    if task in NER_TASKS:
        for mode in ("strict", "fuzzy"):
            scores = m.get(mode) or {}
            for measure in ("f1", "precision", "recall"):
                low, high = (scores.get(f"{measure}_ci") or [None, None])[:2]
                out.append(interval_metric(
                    f"{task}/{mode}_{measure}", f"{mode} macro {measure.upper() if measure == 'f1' else measure}",
                    scores.get(measure), low, high, "percentile bootstrap", unit="proportion", n=m.get("letters"),
                    constant=scores.get(f"{measure}_ci_constant"), higher_is_better=True,
                    headline=(mode, measure) == ("strict", "f1"), config=task,
                    label=f"{name}: {mode} F1" if measure == "f1" else None))
        return out
    key = "mean_spearman" if task == "chrono_ranking" else "accuracy"
    unit = "points" if key == "mean_spearman" else "proportion"
    words = "mean Spearman" if key == "mean_spearman" else "accuracy"
    out.append(interval_metric(f"{task}/{key}", words, m.get(key), m.get("ci_low"), m.get("ci_high"),
                               m.get("ci_method") or "percentile bootstrap", unit=unit, n=m.get("n"),
                               constant=m.get("ci_constant"), higher_is_better=True, headline=True, config=task,
                               label=f"{name}: {words}"))
    if f"{key}_norm" in m:
        out.append(Metric(f"{task}/{key}_norm", f"{words} (likeliest per character)", finite(m[f"{key}_norm"]), unit,
                          n=m.get("n"), higher_is_better=True, config=task))
    for genre, value in (m.get("by_genre") or {}).items():
        out.append(Metric(f"{task}/{key}/{genre}", f"{words}, {genre}", finite(value), unit, higher_is_better=True,
                          config=task, label=f"{name}: {words}, {genre}"))
    return out


def summarise(run_dir: Path) -> RunSummary:
    run_dir = Path(run_dir)
    _adopt_legacy(run_dir)
    path = run_dir / OWN_RESULTS
    if not path.is_file():
        raise EvalError(f"not an italian run folder: {OWN_RESULTS} is missing", file=run_dir)
    data = read_json_object(path, error=EvalError)
    viewed = view_items(run_dir, data, run_dir / OWN_ITEMS)
    signature = data.get("signature") or {}
    backend = signature.get("backend") or {}
    baseline = backend.get("model") if backend.get("backend") == "baseline" else None
    metrics = [metric for task in (data.get("tasks") or {}) for metric in task_metrics(task, data["tasks"][task])]
    extras = {OWN_RESULTS: "the metrics per task as the tables show them (with per-type NER scores) and the signature",
              OWN_ITEMS: "one file of scored rows per task (<task>.jsonl): prediction, gold, score, failure"}
    return RunSummary(
        "italian", str(data.get("model") or run_dir.name), signature.get("dataset"), metrics, viewed.items,
        model=None if baseline else backend.get("spec"), baseline=baseline, signature=signature.get("text"),
        options={"mode": data.get("mode") or "generate", "decoding": signature.get("decoding")},
        extras={name: text for name, text in extras.items() if (run_dir / name).exists()},
        labels=viewed.labels, aliases={"config": {t: [t] for t in MCQ_TASKS}}, notes=viewed.notes,
        option_columns=viewed.option_columns)
