"""An MHER run folder as `histbench.Results` (what `histbench.evaluate` returns).

Metrics: per system, condition and split, the Table 3 / section 8.3 numbers of
`metrics.binary_metrics` (accuracy with its Wilson interval, macro-F1, abstention,
selective accuracy, false merges; Brier and log loss where the system gives probabilities),
computed on the build the run records; for expert-unresolved items (no gold) the
`unresolved_summary`. The paired statistics across conditions and models (McNemar,
bootstraps) are the report's: `histbench.report("mher", [...])`. Records are the run's
predictions, one per system x condition x split x item, with the gold label joined.
"""

from __future__ import annotations

from pathlib import Path

from histbench.core.dataset import BuiltDataset
from histbench.core.errors import EvalError
from histbench.core.results import Results


def run_results(run_dir: Path) -> Results:
    from . import metrics as M
    from .data import Bench, align, load_bench, read_run

    run = read_run(run_dir)
    dataset = (run.info.get("dataset") or {}).get("path")
    if not dataset:
        raise EvalError("the run does not record its dataset", file=run.path)
    bench = load_bench(BuiltDataset.open(dataset, benchmark="mher"))
    recorded = (run.info.get("dataset") or {}).get("data_sha256")
    if recorded and recorded != bench.identity.get("data_sha256"):
        raise EvalError(f"the run was made on dataset data {recorded[:12]}, not on {dataset} "
                        f"({str(bench.identity.get('data_sha256'))[:12]})", file=run.path)
    metrics: dict = {}
    gold: dict[tuple[str, str, str], str | None] = {}
    cells = sorted({(p.system, p.condition, p.split) for p in run.predictions})
    for system, condition, split in cells:
        aligned = align(bench, run.predictions, system, condition, split)
        for record in bench.items(condition, split):
            gold[(condition, split, Bench.item_id(condition, record))] = record.get("label")
        if aligned.gold is None:
            numbers = M.unresolved_summary(aligned.action, aligned.probabilities)
        else:
            numbers = M.binary_metrics(aligned.gold, aligned.action, aligned.probabilities, aligned.valid)
        metrics.setdefault(system, {}).setdefault(condition, {})[split] = numbers
    records = [{**p.to_json(), "gold": gold.get((p.condition, p.split, p.item_id))} for p in run.predictions]
    signature = (run.info.get("signature") or {}).get("text")
    info = {key: value for key, value in run.info.items() if key != "signature"}
    return Results("mher", run.path, run.label, metrics, records, signature, info)
