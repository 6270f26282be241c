"""A ChronoCulture run folder as `histbench.Results` (what `histbench.evaluate` returns).

Metrics are every cell of the report's analysis of this one run (`analysis.analyse`, with
the report's defaults, `data.analysis_retention`: the knowledge filter keeps 75% of the
question x country cells for a model run, every pair for a reference run and for a model
run on a stratified --sample (as F.3 does); 1,000 bootstrap resamples over temporal pairs,
seed 0): dotted keys such as `rf1.default.tau0.10.all.both` -> estimate, 95% interval and pairs,
plus `counts` (every exclusion). Records are predictions.jsonl, one line per prompt. The
references a report adds under each model (uniform, static) and comparisons across runs
are the report's: `histbench.report("chronoculture", [...])`.
"""

from __future__ import annotations

from pathlib import Path

from histbench.core.dataset import BuiltDataset
from histbench.core.errors import EvalError
from histbench.core.results import Results

RESAMPLES = 1000


def run_results(run_dir: Path) -> Results:
    from .analysis import analyse
    from .data import analysis_retention, load_benchmark, load_predictions, read_run

    info, rows = read_run(run_dir)
    dataset = (info.get("dataset") or {}).get("path")
    if not dataset:
        raise EvalError("the run does not record its dataset", file=run_dir)
    built = BuiltDataset.open(dataset, benchmark="chronoculture")
    recorded = (info.get("dataset") or {}).get("data_sha256")
    if recorded and recorded != built.identity().get("data_sha256"):
        raise EvalError(f"the run was made on dataset data {recorded[:12]}, not on {dataset}", file=run_dir)
    bench = load_benchmark(built)
    preds = load_predictions(bench, run_dir)
    retention = analysis_retention(preds.kind, info)
    analysis = analyse(bench, preds, retention=retention, resamples=RESAMPLES, seed=0).to_json()
    metrics = {**analysis["cells"], "counts": analysis["counts"]}
    if analysis.get("modal"):
        metrics["modal"] = analysis["modal"]
    extra = {key: value for key, value in info.items() if key != "signature"}
    extra.update(retention=retention, resamples=RESAMPLES)
    return Results("chronoculture", Path(run_dir), preds.label, metrics, rows, info.get("signature"), extra)
