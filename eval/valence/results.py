"""A valence run folder as `histbench.Results` (what `histbench.evaluate` returns).

Metrics are beta and delta per model and group (and over all sentences, group "all"), with
bootstrap intervals, scored with the report's defaults (manual sigma, conflicting
annotators averaged, raw probabilities and renormalised ones side by side); records are one
row per model x sentence. A run whose predicted words are not annotated yet cannot be
scored: its metrics are empty, `info["not_scored"]` holds the report's message (what to
do next), and its records are the raw top-k predictions. Valence runs have no signature:
`info["models"]` identifies each model (spec, revision, run store).
"""

from __future__ import annotations

from pathlib import Path

from histbench.core.errors import EvalError
from histbench.core.results import Results


def run_results(run_dir: Path) -> Results:
    from . import score_folder
    from .runfolder import RunFolder
    from .scoring import ScoreOptions

    run = RunFolder.open(run_dir)
    label = " + ".join(run.model_labels()) or run.path.name
    info = {"dataset": run.manifest.get("dataset"), "models": run.models, "top_k": run.top_k}
    try:
        scores = score_folder(run, ScoreOptions(fold_case=run.fold_case))
    except EvalError as exc:  # nothing, or not everything, annotated yet: what `report` would say
        info["not_scored"] = str(exc)
        return Results("valence", run.path, label, {}, run.predictions(), None, info)
    metrics: dict = {}
    for row in scores.summary:
        metrics.setdefault(row["model"], {})[row["group"]] = {k: v for k, v in row.items() if k not in ("model", "group")}
    info.update(counts=scores.counts, options=scores.options.to_json())
    return Results("valence", run.path, label, metrics, scores.pairs, None, info)
