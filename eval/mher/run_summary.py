"""An MHER run folder in the run format (histbench.core.runfolder): what `histbench eval
mher` wrote (mher_run.json, mher_predictions.jsonl and, for a model, the run store) as one
RunSummary, from which run.json, results.json and items.jsonl are written.

Metrics, per system (a baselines run holds many) on the build the run records:
- per condition and split (config: the condition; the split in the id), the Table 3 /
  section 8.3 numbers of `metrics.binary_metrics`: accuracy with its Wilson 95% interval,
  macro-F1, abstention, selective accuracy, false same merges, missed same pairs, mean
  p(gold), Brier, log loss, mean p(ambiguous), invalid answers; for the expert-unresolved
  questions (no gold) the `unresolved_summary` (section 7.3);
- for model runs and reference systems on TEST (not for Table 2's baselines, which the
  report does not analyse either), what `analysis.analyse_models` gives the system with the
  report's defaults (200,000 resamples, seed 0, 2,000 thinnings, the paper's distinct-items
  cluster bootstrap): Name-only accuracy on the paired subset (Table 4), every paired
  bootstrap difference Source-grounded minus another condition with McNemar's exact p and
  the transitions (Tables 4-5), and the repeated-entity robustness of the Source minus
  Name gain (Table 6: cluster bootstrap, one-pair-per-entity thinning, leave-one-entity-out
  range), and the prominence correlation (8.4). Bonferroni-adjusted p-values depend on the
  family a report names, so they stay in the report.

A zero-width bootstrap interval says whether every resample gave the same value
(`constant`, which the bootstrap functions record). The headline of each system is its
accuracy on the Source-grounded TEST pairs (or on its own condition's TEST pairs), as Tables
2-4 quote it. A partial run (`--limit`) is summarised on the items it answered, each such
cell with a note; its paired analysis is left out (the report refuses a partial run).
"""

from __future__ import annotations

from pathlib import Path

from histbench.core.errors import EvalError
from histbench.core.runfolder import Metric, RunSummary, finite, finite_interval
from histbench.eval.stats import WILSON

from . import metrics as M
from .data import PREDICTIONS_FILE, RUN_FILE, Bench, Run, align, load_bench, read_run
from .viewer import CONDITION_LABELS, run_items

ANALYSIS = {"resamples": M.DEFAULT_BOOTSTRAP, "seed": 0, "thinning": 2000,
            "cluster_estimator": M.DEFAULT_CLUSTER_ESTIMATOR}

#: the numbers of one binary cell: key of binary_metrics -> (the paper's name, unit, higher is better)
BINARY = {
    "accuracy": ("accuracy", "proportion", True),
    "macro_f1": ("macro-F1", "points", True),
    "abstention": ("abstention rate", "proportion", None),
    "selective_accuracy": ("selective accuracy", "proportion", True),
    "false_same": ("false same merges", "count", False),
    "missed_same": ("missed same pairs", "count", False),
    "mean_p_gold": ("mean probability of the gold relation", "points", True),
    "brier": ("Brier score (3-way)", "points", False),
    "log_loss": ("log loss", "points", False),
    "mean_p_ambiguous": ("mean p(ambiguous)", "points", None),
    "invalid": ("invalid answers", "count", False),
}
#: the numbers of the expert-unresolved questions (section 7.3)
UNRESOLVED = {
    "ambiguous": ("answered ambiguous", "count", True),
    "abstention_share": ("abstention share", "proportion", True),
    "over_resolution": ("over-resolution", "proportion", False),
    "mean_p_ambiguous": ("mean p(ambiguous)", "points", True),
}
EXTRAS = {
    RUN_FILE: "what produced the run: kind (model, baselines or reference), label, the build's identity, the "
              "signature, options, each system's fitted settings (thresholds, coefficients), the embedding model",
    PREDICTIONS_FILE: "one line per system x condition x split x item: the probabilities of same / different / "
                      "ambiguous, the action, validity, rationale, attempts and the run-store key of the raw answer "
                      "(read by `histbench report mher`)",
}


def is_own_folder(run_dir: Path) -> bool:
    """Whether `histbench eval mher` wrote its files (mher_run.json and mher_predictions.jsonl)
    into `run_dir` (also a folder written before the run format)."""
    return (Path(run_dir) / RUN_FILE).is_file() and (Path(run_dir) / PREDICTIONS_FILE).is_file()


def run_bench(run: Run, dataset: str | None = None, revision: str | None = None) -> Bench:
    """The build a run records (or `dataset`), refused when its data is not the run's."""
    from histbench.core.dataset import BuiltDataset

    dataset = dataset or (run.info.get("dataset") or {}).get("path")
    if not dataset:
        raise EvalError("the run does not record its dataset", file=run.path / RUN_FILE, field="dataset")
    bench = load_bench(BuiltDataset.open(dataset, revision=revision, benchmark="mher"))
    recorded = (run.info.get("dataset") or {}).get("data_sha256")
    if recorded and recorded != bench.identity.get("data_sha256"):
        raise EvalError(f"the run was made on dataset data {recorded[:12]}, not on {dataset} "
                        f"({str(bench.identity.get('data_sha256'))[:12]})", file=run.path / RUN_FILE,
                        field="dataset.data_sha256")
    return bench


def cell_numbers(run: Run, bench: Bench) -> tuple[dict, dict]:
    """({system: {condition: {split: numbers}}}, {(system, condition, split): note}): every
    cell's numbers as `metrics.binary_metrics` / `unresolved_summary` give them; a cell the
    run answered in part is computed on the items it answered, with a note."""
    numbers: dict = {}
    partial: dict = {}
    for system, condition, split in sorted({(p.system, p.condition, p.split) for p in run.predictions}):
        answered = {p.item_id for p in run.predictions if (p.system, p.condition, p.split) == (system, condition, split)}
        ids = [Bench.item_id(condition, r) for r in bench.items(condition, split)]
        restrict = None
        if not set(ids) <= answered:
            restrict = answered
            partial[(system, condition, split)] = (f"a partial run: {len(answered & set(ids))} of {len(ids)} "
                                                   f"{condition}/{split} items answered (--limit), scored on those")
        aligned = align(bench, run.predictions, system, condition, split, restrict=restrict)
        if aligned is None:
            continue
        if aligned.gold is None:
            cell = M.unresolved_summary(aligned.action, aligned.probabilities)
        else:
            cell = M.binary_metrics(aligned.gold, aligned.action, aligned.probabilities, aligned.valid)
        numbers.setdefault(system, {}).setdefault(condition, {})[split] = cell
    return numbers, partial


def headline_condition(conditions) -> str:
    """The condition of a system's headline: Source-grounded, or the first it has."""
    return "source_grounded" if "source_grounded" in conditions else next(iter(conditions))


#: the paper's cell of a system's headline accuracy, by its condition: Table 2 holds the
#: non-generative baselines (Name-only and Context rows), Table 3 the generative systems'
#: Name-only accuracy, Table 4 the Source-grounded accuracy on the 108 paired TEST items
PUBLISHED_HEADLINE = {
    ("baselines", "name_only"): {"table": 2, "column": "accuracy", "row": "name-only"},
    ("baselines", "context_only"): {"table": 2, "column": "accuracy", "row": "context"},
    ("model", "name_only"): {"table": 3, "column": "accuracy", "row": None},
    ("model", "source_grounded"): {"table": 4, "column": "source-grounded accuracy", "row": None},
}


def cell_metrics(numbers: dict, partial: dict, kind: str = "model") -> list[Metric]:
    """Every cell's metrics; kind: baselines (Table 2's systems) or model (a generative or
    reference system), which says which of the paper's tables a headline reproduces."""
    out = []
    for system, conditions in numbers.items():
        headline = headline_condition(conditions)
        for condition, splits in conditions.items():
            for split, cell in splits.items():
                note = partial.get((system, condition, split))
                table = UNRESOLVED if condition == "unresolved" else BINARY
                for key, (name, unit, higher) in table.items():
                    if key not in cell:
                        continue
                    top = key == "accuracy" and condition == headline and split == "test"
                    interval = finite_interval(cell["accuracy_low"], cell["accuracy_high"]) if key == "accuracy" else None
                    out.append(Metric(
                        f"{system}/{condition}/{split}/{key}", name, finite(cell[key]), unit,
                        interval=interval, method=WILSON if interval else None, n=cell["n"], higher_is_better=higher,
                        headline=top, system=system, config=condition,
                        label=f"accuracy, {CONDITION_LABELS.get(condition, condition)} TEST" if top else None,
                        note=note,
                        published=PUBLISHED_HEADLINE.get(("baselines" if kind == "baselines" else "model", condition))
                        if top else None))
    return out


def _bootstrap_method(what: str, resamples: int) -> str:
    return f"{what}, percentile 95%, {resamples:,} resamples"


def analysis_metrics(run: Run, bench: Bench) -> list[Metric]:
    """The Table 4-6 and section 8.4 numbers of each system of a model or reference run,
    as `analysis.analyse_models` computes them for the report (its defaults)."""
    from .analysis import System, analyse_models

    systems = [System(name, name, run.predictions, run.kind) for name in run.systems()]
    analysis = analyse_models(bench, systems, resamples=ANALYSIS["resamples"], seed=ANALYSIS["seed"],
                              thinning=ANALYSIS["thinning"], split="test",
                              cluster_estimator=ANALYSIS["cluster_estimator"])
    if not analysis:
        return []
    resamples, paired_n = analysis["resamples"], analysis["paired_items"]
    names = {**CONDITION_LABELS, "shuffle_mean": "mean of the shuffles"}
    out = []
    for system, result in analysis["models"].items():
        base = f"{system}/paired/test"
        name_only = result.get("paired", {}).get("name_only")
        if name_only:
            out.append(Metric(f"{base}/name_only/accuracy", "accuracy", finite(name_only["accuracy"]), "proportion",
                              interval=finite_interval(name_only["accuracy_low"], name_only["accuracy_high"]),
                              method=WILSON, n=name_only["n"], higher_is_better=True, system=system,
                              config="name_only", note="Name-only on the paired subset (Table 4)"))
        for key, diff in result.get("bootstrap_difference", {}).items():
            before = key.split("-", 1)[1]
            out.append(Metric(
                f"{base}/difference/{key}", f"accuracy difference, Source-grounded minus {names[before]}",
                finite(diff["estimate"]), "proportion", interval=finite_interval(diff["low"], diff["high"]),
                method=_bootstrap_method("paired item bootstrap", resamples), n=paired_n, higher_is_better=None,
                system=system, config="source_grounded", constant=bool(diff.get("constant"))))
        for before, t in result.get("transitions", {}).items():
            out.append(Metric(f"{base}/mcnemar/{before}", f"exact McNemar p, Source-grounded vs {names[before]}",
                              finite(t["mcnemar_p"]), "points", n=paired_n, system=system, config="source_grounded",
                              note="two-sided, not adjusted (the report adds Bonferroni over its family)"))
            for arrow in ("W->C", "C->W", "C->C", "W->W"):
                out.append(Metric(f"{base}/transitions/{before}/{arrow}",
                                  f"{arrow.replace('->', '→')} transitions, {names[before]} to Source-grounded",
                                  t[arrow], "count", n=paired_n, system=system, config="source_grounded"))
        rob = result.get("entity_robustness")
        if rob:
            gain = f"{base}/entity_robustness"
            cb, th, loo = rob.get("cluster_bootstrap"), rob["thinning"], rob["leave_one_entity_out"]
            out.append(Metric(f"{gain}/pair_gain", "pair gain (Source-grounded minus Name-only)",
                              finite(rob["pair_gain"]), "proportion", n=paired_n, system=system,
                              config="source_grounded"))
            if cb:
                out.append(Metric(
                    f"{gain}/cluster_bootstrap", "cluster bootstrap mean gain", finite(cb["bootstrap_mean"]),
                    "proportion", interval=finite_interval(cb["low"], cb["high"]),
                    method=_bootstrap_method(f"entity-cluster bootstrap ({cb['estimator']})", resamples),
                    n=cb["entities"], system=system, config="source_grounded", constant=bool(cb.get("constant")),
                    note=f"n: canonical persons resampled ({rob['repeated_entities']} in more than one item)"))
            out.append(Metric(
                f"{gain}/one_pair_per_entity", "one-pair-per-entity mean gain", finite(th["mean"]), "proportion",
                interval=finite_interval(th["low"], th["high"]),
                method=f"one-pair-per-entity thinning, percentile 95%, {th.get('repetitions', 0):,} repetitions",
                n=paired_n, system=system, config="source_grounded", constant=bool(th.get("constant"))))
            for end in ("min", "max"):
                out.append(Metric(f"{gain}/leave_one_entity_out/{end}", f"leave-one-entity-out gain, {end}imum",
                                  finite(loo[end]), "proportion", n=paired_n, system=system,
                                  config="source_grounded"))
        prominence = result.get("prominence")
        if prominence:
            out.append(Metric(f"{system}/name_only/test/prominence/rho",
                              "Spearman ρ, prominence vs Name-only accuracy (entity-macro)",
                              finite(prominence["rho"]), "points", n=prominence["entities"], system=system,
                              config="name_only"))
            out.append(Metric(f"{system}/name_only/test/prominence/p", "Spearman p, prominence",
                              finite(prominence["p"]), "points", n=prominence["entities"], system=system,
                              config="name_only", note="not adjusted (the report adds Bonferroni over its family)"))
    return out


def _baseline(run: Run) -> str | None:
    if run.kind == "model":
        return None
    spec = ((run.info.get("signature") or {}).get("backend") or {}).get("spec")
    if run.kind == "baselines":
        return str(spec).split(":", 1)[1] if isinstance(spec, str) and spec.startswith("baseline:") else "table2"
    return spec if isinstance(spec, str) else "+".join(run.systems()) or "reference"


def summarise(run_dir: Path) -> RunSummary:
    """The RunSummary of an MHER run folder, from mher_run.json, mher_predictions.jsonl, the
    run store (model runs) and the build the run records."""
    run = read_run(run_dir)
    bench = run_bench(run)
    items, labels, aliases, notes = run_items(run, bench)
    numbers, partial = cell_numbers(run, bench)
    metrics = cell_metrics(numbers, partial, run.kind)
    if run.kind != "baselines" and not partial:
        metrics += analysis_metrics(run, bench)
    backend = run.info.get("backend") or {}
    model = backend.get("spec") if run.kind == "model" else None
    options = dict(run.info.get("options") or {})
    if run.kind != "model":
        options = {"seed": (run.info.get("signature") or {}).get("seed"),
                   **({"conditions": run.info["conditions"]} if run.info.get("conditions") else {}),
                   "embedding_model": (run.info.get("embedding_model") or {}).get("name")
                   if isinstance(run.info.get("embedding_model"), dict) else None}
    extras = {name: text for name, text in EXTRAS.items() if (run.path / name).exists()}
    return RunSummary(
        benchmark="mher", label=run.label, dataset=run.info.get("dataset"), metrics=metrics, items=items,
        model=model, baseline=_baseline(run), signature=(run.info.get("signature") or {}).get("text"),
        options=options, extras=extras, labels=labels, aliases=aliases, notes=notes)
