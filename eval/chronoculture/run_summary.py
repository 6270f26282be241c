"""A ChronoCulture run folder in the run format (histbench.core.runfolder).

`histbench eval chronoculture` writes its own two files (run.py): chronoculture.json (what
ran, counts) and predictions.jsonl (one line per prompt). `summarise` turns them into the
run format's RunSummary, from which `finish_run` writes run.json, results.json and
items.jsonl (and `histbench convert-run` converts a folder written before the format).

Metrics are every cell of the report's analysis of this one run (`analysis.analyse`, the
report's own code and defaults, `data.analysis_retention`: the knowledge filter keeps 75%
of the question x country cells for a model run, every pair for a reference run and for a
model run on a stratified --sample, as F.3 does; 1,000 bootstrap resamples over temporal
pairs, seed 0). Each metric's id is the cell's dotted key (such as
`rf1.default.tau0.10.all.both`: RF1, default shift boundaries, tau = 0.10, all pairs, both
periods within tau); shares of pairs are proportions with Wilson intervals, means and
medians carry the percentile bootstrap. Beside them: Table 5's modal-answer shares (A.5,
`modal.*`, Wilson), a --mode likelihood run's accuracies (`modal_likelihood.*`, as the
run recorded them), and the analysis' pair counts (`counts.*`). The headline is RF1's
both-periods share at tau = 0.10 over all analysed pairs. What needs several runs (the
uniform and static references scored on a model's pairs, F.2's retention levels, repeats)
is the report's (`histbench report chronoculture`).
"""

from __future__ import annotations

from pathlib import Path

from histbench.core.errors import EvalError
from histbench.core.runfolder import Metric, RunSummary, finite, finite_interval
from histbench.eval import stats

from .data import PREDICTIONS_NAME, RUN_INFO_NAME

RESAMPLES = 1000
SEED = 0
HEADLINE = "rf1.default.tau0.10.all.both"
HEADLINE_LABEL = "RF1: both periods within tau 0.10, % of pairs"
#: the paper's cell of the headline (Table 9, C.2: Llama-3.3-70B, tau 0.10, all pairs, both accurate)
HEADLINE_PUBLISHED = {"table": 9, "column": "both", "row": "tau 0.10 / all"}

EXTRAS = {
    PREDICTIONS_NAME: "one line per prompt: pair_id, period (undated, old, new, mcq_old, mcq_new), the parsed "
                      "distribution (probabilities, option order) or modal-answer choice, parse route and error",
    RUN_INFO_NAME: "ChronoCulture's record of the run: label, kind (model or baseline), model spec and backend identity, "
                   "dataset identity, prompts, decoding, sample, signature, counts of answers, invalid outputs by reason "
                   "and parse routes",
}

CATEGORY_WORDS = {"stable": "stable pairs", "moderate": "moderate-shift pairs", "strong": "strong-shift pairs",
                  "very_strong": "very-strong-shift pairs", "all": "all pairs", "shifted": "shifted pairs"}
RF1 = {"older_accurate": ("older period accurate", True), "newer_accurate": ("newer period accurate", True),
       "both": ("both periods accurate", True), "older_only": ("older period only accurate", None),
       "newer_only": ("newer period only accurate", None), "neither": ("neither period accurate", False),
       "one_only": ("one period only accurate", None)}
ALIGN = {"separated": ("separated", True), "older_aligned": ("older-aligned", False),
         "newer_aligned": ("newer-aligned", False), "reversed": ("reversed", False), "tie": ("tie", None),
         "same_period": ("aligned with one period (older- or newer-aligned)", False)}
RF2 = {"zero_shift": ("zero model shift", "proportion", False),
       "median_ratio": ("median magnitude ratio r = d_m / d_h, pairs with nonzero model shift", "points", None),
       "median_ratio_all": ("median magnitude ratio r = d_m / d_h, all pairs", "points", None),
       "median_cosine": ("median direction cosine, pairs with nonzero model shift", "points", True),
       "right_direction": ("model shift in the human shift's direction (cosine > 0)", "proportion", True)}
STABLE = {"preserves": ("preserves stability", True), "small_drift": ("small false drift", None),
          "large_drift": ("large false drift", False)}
BENEFIT = {"mean": ("mean temporal benefit B = W(undated, gold) - W(dated, gold)", "points", True),
           "helped": ("dating helped", "proportion", True), "unchanged": ("dating changed nothing", "proportion", None),
           "hurt": ("dating hurt", "proportion", False),
           "identical": ("dated answer identical to the undated one", "proportion", None)}
SURVEY_WORDS = {"all": "WVS and ISSP", "WVS": "WVS", "ISSP": "ISSP"}
COVERAGE_WORDS = {"all": "all combinations", "two": "combinations with two survey years",
                  "three_plus": "combinations with three or more survey years"}
PERIOD_WORDS = {"old": "older period", "new": "newer period"}


def is_own_folder(run_dir: Path) -> bool:
    """Whether `histbench eval chronoculture` wrote its files into `run_dir` (chronoculture.json)."""
    return (Path(run_dir) / RUN_INFO_NAME).is_file()


def describe(key: str) -> tuple[str, str, bool | None]:
    """(the measure's name as the paper's tables give it, with the subset it covers; unit;
    higher_is_better) of an analysis cell key."""
    parts = key.split(".")
    head = parts[0]
    try:
        if head == "rf1":   # rf1.BOUNDS.tauT.TT.CATEGORY.OUTCOME: the tolerance holds a dot
            _, bounds, whole, decimals, category, outcome = parts
            name, better = RF1[outcome]
            return (f"RF1 period accuracy: {name} (within tau = {whole.removeprefix('tau')}.{decimals}), "
                    f"{CATEGORY_WORDS[category]}, {bounds} shift boundaries"), "proportion", better
        if head == "align":
            _, bounds, category, outcome = parts
            name, better = ALIGN[outcome]
            return (f"temporal alignment: {name}, {CATEGORY_WORDS[category]}, {bounds} shift boundaries",
                    "proportion", better)
        if head == "rf2":
            _, bounds, category, measure = parts
            name, unit, better = RF2[measure]
            return f"RF2 model shift: {name}, {CATEGORY_WORDS[category]}, {bounds} shift boundaries", unit, better
        if head == "stable":
            _, bounds, survey, behaviour = parts
            name, better = STABLE[behaviour]
            return (f"RF2 stable pairs: {name}, {SURVEY_WORDS[survey]}, {bounds} shift boundaries", "proportion",
                    better)
        if head == "rf3" and parts[1] in ("default_period", "equal_choice"):
            _, kind, coverage, period = parts
            what = ("default survey year of the undated prediction" if kind == "default_period"
                    else "equal-choice baseline of the default survey year")
            return f"RF3 {what}: the {period} year, {COVERAGE_WORDS[coverage]}", "proportion", None
        if head == "rf3" and parts[1] == "benefit":
            _, _, period, category, measure = parts
            name, unit, better = BENEFIT[measure]
            return f"RF3 {name}, {PERIOD_WORDS[period]}, {CATEGORY_WORDS[category]}", unit, better
    except (KeyError, ValueError):
        pass
    raise EvalError(f"an analysis cell the run format cannot name: {key!r}", field=key)


def _method(method: str) -> str:
    level = f"{round(100 * stats.DEFAULT_LEVEL)}%"
    if method == stats.WILSON:
        return f"{stats.WILSON} {level}"
    return f"{method} {level} over temporal pairs, {RESAMPLES:,} resamples (seed {SEED})"




def cell_metric(key: str, cell) -> Metric:
    """The Metric of one analysis cell (analysis.Cell)."""
    name, unit, better = describe(key)
    interval = finite_interval(cell.low, cell.high)
    bootstrap = cell.method != stats.WILSON
    note = None
    if interval is not None and interval[0] == interval[1] and not (bootstrap and cell.constant):
        note = ("95% of the bootstrap resamples gave this value, not every one" if bootstrap
                else "a zero-width Wilson interval")
    return Metric(id=key, metric=name, estimate=finite(cell.estimate), unit=unit, interval=interval,
                  method=_method(cell.method) if interval is not None else None, n=int(cell.n),
                  higher_is_better=better, headline=key == HEADLINE,
                  label=HEADLINE_LABEL if key == HEADLINE else None, note=note,
                  constant=bool(cell.constant) if bootstrap and interval is not None else None,
                  published=HEADLINE_PUBLISHED if key == HEADLINE else None)


def _share_metric(id_: str, name: str, share: dict, better: bool | None) -> Metric:
    """A Wilson share as analysis.modal_analysis records it ({estimate, low, high, n, method})."""
    interval = finite_interval(share.get("low"), share.get("high"))
    return Metric(id=id_, metric=name, estimate=finite(share.get("estimate")), unit="proportion", interval=interval,
                  method=_method(share.get("method") or stats.WILSON) if interval is not None else None,
                  n=share.get("n"), higher_is_better=better,
                  note="a zero-width Wilson interval" if interval is not None and interval[0] == interval[1] else None)


def modal_metrics(modal: dict | None) -> list[Metric]:
    """Table 5 (A.5): both modes right by category over the kept pairs, and the shifted pairs
    with the right modes but under half the human shift captured."""
    if not modal:
        return []
    out = [_share_metric(f"modal.{category}.both_correct",
                         f"A.5 modal answers: both periods' modes correct, {CATEGORY_WORDS[category]} kept "
                         "(at least one period correct)", entry["both_correct"], True)
           for category, entry in modal["by_category"].items()]
    out.append(_share_metric("modal.shifted.correct_mode_under_half_shift",
                             "A.5 modal answers: both modes correct while the distributions capture under half the "
                             "human shift (r < 0.5), strong and very strong pairs kept",
                             modal["shifted"]["correct_mode_under_half_shift"], None))
    return out


def likelihood_metrics(summary: dict | None) -> list[Metric]:
    """A --mode likelihood run's accuracies per modal-answer prompt, as chronoculture.json records them."""
    if not summary:
        return []
    out = []
    for scope, entry in (("all", summary), *summary.get("by_period", {}).items()):
        where = "all modal-answer prompts" if scope == "all" else f"the {PERIOD_WORDS[scope]}'s modal-answer prompts"
        for key, how in (("accuracy", "summed log-likelihood"), ("accuracy_norm", "log-likelihood per character")):
            out.append(Metric(id=f"modal_likelihood.{scope}.{key}",
                              metric=f"modal-answer accuracy (likeliest option by {how}), {where}",
                              estimate=finite(entry.get(key)), unit="proportion", n=entry.get("prompts"),
                              higher_is_better=True))
    return out


def count_metrics(counts: dict) -> list[Metric]:
    """The analysis' pair counts (every exclusion), the numbers under the report's runs table."""
    return [Metric(id=f"counts.{name}", metric=f"temporal pairs: {name.replace('_', ' ')}", estimate=value,
                   unit="count")
            for name, value in counts.items() if isinstance(value, int) and not isinstance(value, bool)]


def _options(info: dict, retention: float) -> dict:
    options = {key: info[key] for key in ("mode", "modal", "decoding", "sample", "prompts") if key in info}
    options["analysis"] = {"retention": retention, "resamples": RESAMPLES, "seed": SEED}
    return options


def summarise(run_dir: Path) -> RunSummary:
    """The RunSummary of a ChronoCulture run folder (see the module docstring)."""
    from histbench.core.dataset import BuiltDataset

    from .analysis import analyse
    from .data import analysis_retention, load_benchmark, predictions_from_info, read_run
    from .viewer import ALIASES, LABELS, run_items

    run_dir = Path(run_dir)
    info, rows = read_run(run_dir)
    recorded = info.get("dataset") or {}
    if not recorded.get("path"):
        raise EvalError("the run does not record its dataset", file=run_dir / RUN_INFO_NAME, field="dataset")
    built = BuiltDataset.open(recorded["path"], revision=recorded.get("revision"), benchmark="chronoculture")
    if recorded.get("data_sha256") and recorded["data_sha256"] != built.identity().get("data_sha256"):
        raise EvalError(f"the run was made on dataset data {recorded['data_sha256'][:12]}, not on {recorded['path']}",
                        file=run_dir / RUN_INFO_NAME, field="dataset")
    bench = load_benchmark(built)
    preds = predictions_from_info(bench, run_dir, info, rows)
    retention = analysis_retention(preds.kind, info)
    analysis = analyse(bench, preds, retention=retention, resamples=RESAMPLES, seed=SEED)
    metrics = [cell_metric(key, cell) for key, cell in sorted(analysis.cells.items())]
    metrics += modal_metrics(analysis.modal)
    metrics += likelihood_metrics(info.get("modal_likelihood"))
    metrics += count_metrics(analysis.counts)
    items, notes = run_items(run_dir, info, rows, built, bench)
    notes.append(f"numbers: the report's analysis of this run alone (knowledge-filter retention {retention:.0%}, "
                 f"{RESAMPLES:,} bootstrap resamples, seed {SEED}); `histbench report chronoculture` adds the "
                 "references and comparisons across runs")
    is_model = info.get("kind", "model") == "model"
    return RunSummary(
        benchmark="chronoculture", label=preds.label, dataset=recorded, metrics=metrics, items=items,
        model=info.get("model") if is_model else None, baseline=None if is_model else info.get("baseline"),
        signature=info.get("signature"), options=_options(info, retention),
        extras={name: what for name, what in EXTRAS.items() if (run_dir / name).exists()},
        labels=LABELS, aliases=ALIASES, notes=notes,
    )
