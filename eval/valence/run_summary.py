"""A temporal valence run folder in the run format (histbench.core.runfolder).

The evaluation writes valence-run.json (the models, their run stores under models/, the
scale and top-k), sentences.parquet and predictions.parquet, and annotations.parquet once
the predicted words are annotated; `summarise` turns them into results.json (bias beta and
adequacy delta per model and sentence group, raw and renormalised, with their bootstrap
intervals, scored with the report's defaults as `histbench.results` always did) and
items.jsonl (one model x sentence a line). A run whose words are not annotated yet has no
metrics, and its items say why; importing annotations (`histbench valence
import-annotations`, `auto-sigma --import`) writes the three files again.
"""

from __future__ import annotations

from pathlib import Path

from histbench.core.errors import EvalError
from histbench.core.runfolder import RunSummary, interval_metric

from .runfolder import RUN_MANIFEST
from .scoring import PROBABILITY_MODES

METRIC_NAMES = {"beta": "bias beta", "delta": "adequacy delta"}
EXTRAS = {RUN_MANIFEST: "the models (spec, revision, run store), the scale, top-k and case handling, annotation imports",
          "sentences.parquet": "the build's sentences the run scored",
          "predictions.parquet": "every model's top-k fillers per sentence with their probabilities and kinds",
          "annotations.parquet": "the sigma of each sentence x predicted word (manual or automatic, by annotator)",
          "models": "one run store per model (models/<label>/records.jsonl and run.json)",
          "conflicts.csv": "the sentence x word pairs annotators disagree on",
          "auto_sigma.csv": "automatic sigma values (`histbench valence auto-sigma`)"}


def is_own_folder(run_dir: Path) -> bool:
    return (Path(run_dir) / RUN_MANIFEST).is_file()


def summarise(run_dir: Path) -> RunSummary:
    from .results import run_results
    from .runfolder import RunFolder
    from .viewer import view_items

    run_dir = Path(run_dir)
    if not is_own_folder(run_dir):
        raise EvalError(f"not a valence run folder: {RUN_MANIFEST} is missing", file=run_dir)
    run = RunFolder.open(run_dir)
    results = run_results(run_dir)
    viewed = view_items(run_dir, results)   # scored once: the items show the same scores
    metrics = []
    for model, groups in results.metrics.items():
        for group, cell in groups.items():
            for mode in PROBABILITY_MODES:
                for name in ("beta", "delta"):
                    key = f"{name}_{mode}"
                    if f"{key}_mean" not in cell:
                        continue
                    words = f"{METRIC_NAMES[name]}, {'all sentences' if group == 'all' else group}"
                    metrics.append(interval_metric(
                        f"{model}/{group}/{key}", METRIC_NAMES[name] + ("" if mode == "raw" else f" ({mode})"),
                        cell[f"{key}_mean"], cell.get(f"{key}_low"), cell.get(f"{key}_high"), "percentile bootstrap",
                        unit="points", n=cell.get(f"{key}_n", cell.get("scored")), constant=cell.get(f"{key}_constant"),
                        headline=group == "all" and mode == "raw", system=model, config="sentences",
                        label=words if mode == "raw" else f"{words} ({mode})",
                        higher_is_better=True if name == "delta" else None))
    specs = [m["spec"] for m in run.models]
    return RunSummary(
        "valence", viewed.label, run.manifest.get("dataset"), metrics, viewed.items,
        model="; ".join(specs) or None, signature=None,
        options={"top_k": run.top_k, "fold_case": run.fold_case, "limit": run.manifest.get("limit"),
                 **({"scoring": results.info["options"]} if "options" in results.info else {})},
        extras={name: text for name, text in EXTRAS.items() if (run_dir / name).exists()},
        labels=viewed.labels, notes=viewed.notes, option_columns=viewed.option_columns)
