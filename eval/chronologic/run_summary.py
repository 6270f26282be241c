"""A Chronologic-EN run folder in the run format (histbench.core.runfolder).

`summarise(run_dir)` reads what chronologic's modes wrote and gives the RunSummary from
which run.json, results.json and items.jsonl are written (after every `histbench eval
chronologic` and by `histbench convert-run`):

- likelihood runs (`--mode likelihood`, `--baseline random`): chronologic.json and
  questions.jsonl. Metrics: every metric of chronologic.json (Table 3's calibrated Brier
  and accuracy, and the secondary ones) overall, per group and per reasoning type, id
  `<metric>/<scope>` (e.g. `brier/overall`, `acc/group:cloze`, `acc/type:knowledge`), with
  the bootstrap's 95% percentile interval. Table 3's two (brier, acc) are the bootstrap
  medians, as Table 3 quotes them (their full-sample value in the note); the others are
  full-sample values, as the report's secondary tables show them. Headlines: Brier and
  accuracy overall. Items: one per question (viewer.py).
- free-generation runs (`--mode generate`): chronologic.json; after `--mode judge`, each
  judged-<judge>/ folder's substantive scores (Tables 4 and 7: per group, channel, overall
  and reasoning type, 0-100, with the three-layer bootstrap's interval), system = that
  folder; after `--mode style`, the newest style-<key>/ folder's date fidelity, error in
  years and human authenticity (the ones the report shows). Headline: the answer count
  (the scores come from the judges). Items: one per question (viewer.py).
- an anchors folder (`--mode anchors`): anchors.json. Metrics: the judges' pooled
  reliability (alpha, beta) and the calibration's intercept and slope; no items.

A folder written before the run format holds chronologic.json's content as results.json:
it is read there, and copied to chronologic.json before the run format's results.json
replaces it (so converting loses nothing).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from histbench.builders.chronologic.taxonomy import GROUP_LABELS, TYPE_LABELS
from histbench.core.errors import EvalError
from histbench.core.readers import read_json_object
from histbench.core.runfolder import Metric, RunSummary, finite, finite_interval

from .files import OLD_NAME, OWN_NAME, own_path
from .viewer import GROUP_NAMES, OPTION_COLUMNS, generation_items, likelihood_items

ANCHORS_NAME = "anchors.json"     # anchors.py (not imported here: it needs the judges' libraries)
SUBSTANTIVE_NAME = "substantive.json"  # substantive.py
STYLE_NAME = "style.json"         # style/scoring.py
LEDGER_NAME = "questions.jsonl"   # likelihood.py
SELF_REJECTION_DIR = "self-rejection"  # analyses.py

#: chronologic.json's metric -> (the name the paper or the report gives it, unit, higher is better)
LIKELIHOOD_METRICS = {
    "brier": ("Brier score (calibrated, Table 3)", "points", False),
    "acc": ("accuracy (Table 3 rule)", "proportion", True),
    "acc_any": ("accuracy, any ground truth", "proportion", True),
    "acc_sum": ("accuracy by summed log-likelihood (lm-evaluation-harness acc)", "proportion", True),
    "acc_norm": ("accuracy by log-likelihood per character (lm-evaluation-harness acc_norm)", "proportion", True),
    "brier_softmax": ("Brier score (softmax)", "points", False),
    "brier_softmax_graded": ("Brier score (softmax, graded)", "points", False),
    "brier_softmax_sum": ("Brier score (softmax, summed over options)", "points", False),
    "p_truth": ("probability on the ground truths", "proportion", True),
}
#: Table 3's metrics: quoted as bootstrap medians (metrics.TABLE3_METRICS)
TABLE3 = ("brier", "acc")
#: the old index card's names of the two headlines
HEADLINE_LABELS = {"brier": "calibrated Brier (Table 3, lower is better)", "acc": "accuracy % (Table 3 rule)"}
STYLE_METRICS = {"date_fidelity": ("date fidelity", True), "error_years": ("error in years (signed)", None),
                 "human_authenticity": ("human authenticity", True)}
LABELS = {"group": GROUP_NAMES, "config": {"questions": "questions"}}
ALIASES = {"group": {g: [GROUP_LABELS[g]] for g in GROUP_LABELS}}
BOOTSTRAP = "percentile bootstrap 95%"


def is_own_folder(run_dir: Path) -> bool:
    """Whether chronologic's own files of a run are here: chronologic.json (or, in a folder
    written before the run format, results.json of benchmark chronologic), or an anchors
    folder's anchors.json."""
    run_dir = Path(run_dir)
    return own_path(run_dir) is not None or (run_dir / ANCHORS_NAME).is_file()


def summarise(run_dir: Path) -> RunSummary:
    run_dir = Path(run_dir)
    path = own_path(run_dir)
    if path is None:
        if (run_dir / ANCHORS_NAME).is_file():
            return _anchors(run_dir)
        raise EvalError(f"not a Chronologic-EN run folder: it has no {OWN_NAME} (nor, written before the run format, "
                        f"a {OLD_NAME} of benchmark chronologic) and no {ANCHORS_NAME}", file=run_dir)
    results = read_json_object(path, error=EvalError)
    if path.name == OLD_NAME:
        # the run format's results.json will replace it: keep its content under the new name first
        shutil.copyfile(path, run_dir / OWN_NAME)
    mode = results.get("mode")
    if mode == "likelihood":
        return _likelihood(run_dir, results)
    if mode == "generate":
        return _generation(run_dir, results)
    raise EvalError(f"a run of mode {mode!r}: chronologic run folders hold likelihood or generate runs",
                    file=path, field="mode")


def _common(run_dir: Path, results: dict, metrics: list[Metric], items: list[dict], notes, extras: dict,
            option_columns=None) -> RunSummary:
    model = results.get("model") or {}
    baseline = model.get("baseline")
    return RunSummary(
        benchmark="chronologic", label=results.get("label") or run_dir.name, dataset=results.get("dataset"),
        metrics=metrics, items=items, model=None if baseline else model.get("spec"), baseline=baseline,
        signature=(results.get("signature") or {}).get("text"), options=results.get("options") or {},
        extras=extras, labels=_labels(run_dir), aliases=ALIASES, notes=list(notes), option_columns=option_columns)


def _interval_fields(cell: dict, method: str) -> dict:
    """interval, method and constant (or the note a zero-width interval needs) of a cell
    {low, high[, constant]}."""
    interval = finite_interval(cell.get("low"), cell.get("high"))
    if interval is None:
        return {"interval": None, "method": None, "constant": None, "note": None}
    out = {"interval": interval, "method": method, "constant": True if cell.get("constant") else None, "note": None}
    if interval[0] == interval[1] and not cell.get("constant"):
        out["note"] = ("the 95% interval has no width: at least 95% of the resamples gave this value, "
                       "though not every one")
    return out


def likelihood_metrics(results: dict) -> list[Metric]:
    """Every cell of chronologic.json's `metrics` (metric -> scope -> cell) as a Metric."""
    out = []
    for name, scopes in (results.get("metrics") or {}).items():
        title, unit, higher = LIKELIHOOD_METRICS.get(name, (name, "points", None))
        for scope, cell in scopes.items():
            fields = _interval_fields(cell, f"{BOOTSTRAP} over questions")
            note = fields.pop("note")
            if name in TABLE3:
                estimate = cell.get("median")
                quoted = "bootstrap median, as Table 3 quotes it"
                if finite(cell.get("estimate")) is not None:
                    quoted += f"; the full-sample value is {cell['estimate']:.6g}"
                note = quoted + (f"; {note}" if note else "")
            else:
                estimate = cell.get("estimate")
            headline = scope == "overall" and name in TABLE3
            out.append(Metric(
                id=f"{name}/{scope}", metric=title, estimate=estimate, unit=unit, n=cell.get("n"),
                higher_is_better=higher, headline=headline, config="questions",
                label=HEADLINE_LABELS[name] if headline else f"{title}, {_scope_words(scope)}", note=note, **fields))
    return out


def _scope_words(scope: str) -> str:
    if scope == "overall":
        return "overall"
    kind, _, value = scope.partition(":")
    if kind == "group":
        return LABELS["group"].get(value, value)
    return f"reasoning type {TYPE_LABELS.get(value, value)}"


def _likelihood(run_dir: Path, results: dict) -> RunSummary:
    items, notes = likelihood_items(run_dir, results)
    extras = {OWN_NAME: "chronologic's own results: every metric overall, per group and per reasoning type with its "
                        "bootstrap summary (estimate, median, 95% interval, n), the definitions, counts, signature, "
                        "prompt template and frame permutation (what `histbench report chronologic` tabulates)",
              LEDGER_NAME: "one line per question: each option's log-likelihood, token count, mean per-token "
                           "log-likelihood and softmax probability, the choices and the per-question metrics"}
    extras.update(_analysis_extras(run_dir))
    return _common(run_dir, results, likelihood_metrics(results), items, notes, extras, OPTION_COLUMNS)


def _judged(run_dir: Path) -> list[tuple[str, dict]]:
    out = []
    for path in sorted(run_dir.glob(f"judged-*/{SUBSTANTIVE_NAME}")):
        out.append((path.parent.name, read_json_object(path, error=EvalError)))
    return out


def _newest_style(run_dir: Path) -> tuple[str, dict] | None:
    styles = sorted(run_dir.glob(f"style-*/{STYLE_NAME}"), key=lambda p: p.stat().st_mtime)
    return (styles[-1].parent.name, read_json_object(styles[-1], error=EvalError)) if styles else None


def generation_metrics(run_dir: Path, results: dict) -> list[Metric]:
    """The answer count (the headline), every judge's substantive scores and the newest
    style scores of a free-generation run folder."""
    counts = results.get("counts") or {}
    questions = counts.get("questions", 0)
    out = [Metric(id="answers", metric="answers", estimate=questions - counts.get("empty_answers", 0), unit="count",
                  n=questions, headline=True, config="questions", label="answers (free generation; judged separately)",
                  note=f"{counts.get('empty_answers', 0):,} of {questions:,} answers empty or refused (they score 0 "
                       "on the substantive channel)")]
    for folder, judged in _judged(run_dir):
        scores = judged.get("scores") or {}
        layers = ",".join((scores.get("bootstrap") or {}).get("layers") or [])
        method = f"{BOOTSTRAP}, three-layer bootstrap ({layers}) as Table 7"
        scopes = [("overall", "substantive score, overall", scores.get("overall"))]
        scopes += [(f"group:{g}", f"substantive score, {LABELS['group'].get(g, g)}", cell)
                   for g, cell in (scores.get("groups") or {}).items()]
        scopes += [(f"channel:{c}", f"substantive score, {c.replace('_', '/')} channel", cell)
                   for c, cell in (scores.get("channels") or {}).items()]
        scopes += [(f"type:{t}", f"substantive score, reasoning type {TYPE_LABELS.get(t, t)}", cell)
                   for t, cell in (scores.get("reasoning_types") or {}).items()]
        for scope, title, cell in scopes:
            if cell is None:
                continue
            fields = _interval_fields(cell, method)
            note = fields.pop("note")
            if cell.get("unscored"):
                note = (note + "; " if note else "") + f"{cell['unscored']} question(s) left unscored"
            out.append(Metric(id=f"substantive/{folder}/{scope}", metric="substantive score", estimate=cell.get("estimate"),
                              unit="points", n=cell.get("n"), higher_is_better=True, system=folder, config="questions",
                              label=title, note=note, **fields))
    style = _newest_style(run_dir)
    if style is not None:
        folder, styled = style
        for key, (title, higher) in STYLE_METRICS.items():
            cell = (styled.get("scores") or {}).get(key)
            if cell is None:
                continue
            fields = _interval_fields(cell, f"{BOOTSTRAP} over answers (W0 and mu0 held at their point values)")
            note = fields.pop("note")
            out.append(Metric(id=f"style/{key}", metric=title, estimate=cell.get("estimate"), unit="points",
                              n=cell.get("n"), higher_is_better=higher, config="questions", label=f"{title} ({folder})",
                              note=note, **fields))
    return out


def _generation(run_dir: Path, results: dict) -> RunSummary:
    items, notes = generation_items(run_dir, results)
    extras = {OWN_NAME: "chronologic's own results of the free-generation run: every question's answer (raw and "
                        "cleaned, finish reason, token budget), counts, signature and frame permutation (what the "
                        "judges and the style scorer read)"}
    for folder, judged in _judged(run_dir):
        spec = ((judged.get("judges") or {}).get("pass_fail") or {}).get("spec", "?")
        extras[folder] = (f"substantive scoring by the judge {spec} (--mode judge): substantive.json (scores with the "
                          "three-layer bootstrap, the ledger), ledger.csv, delta_draws.npz and the judges' run stores")
    for path in sorted(run_dir.glob(f"style-*/{STYLE_NAME}")):
        extras[path.parent.name] = ("style scoring (--mode style): style.json (date fidelity, error in years, human "
                                    "authenticity with bootstrap intervals) and style_answers.csv")
    extras.update(_analysis_extras(run_dir))
    return _common(run_dir, results, generation_metrics(run_dir, results), items, notes, extras)


def _analysis_extras(run_dir: Path) -> dict:
    if (run_dir / SELF_REJECTION_DIR).is_dir():
        return {SELF_REJECTION_DIR: "self-rejection (--mode self-rejection): self_rejection.json (the forced choices "
                                    "and the binomial test) and the model's run store"}
    return {}


def _labels(run_dir: Path) -> dict:
    systems = {}
    for folder, judged in _judged(run_dir):
        spec = ((judged.get("judges") or {}).get("pass_fail") or {}).get("spec")
        systems[folder] = f"judge {spec}" if spec else folder
    return {**LABELS, **({"system": systems} if systems else {})}


def _anchors(folder: Path) -> RunSummary:
    data = read_json_object(folder / ANCHORS_NAME, error=EvalError)
    pooled = (data.get("reliability") or {}).get("pooled") or {}
    metrics = [
        Metric(id="reliability/alpha", metric="judge reliability alpha (pooled)", estimate=pooled.get("alpha_pooled"),
               unit="proportion", n=pooled.get("alpha_trials"), higher_is_better=False, label="alpha (pooled)"),
        Metric(id="reliability/beta", metric="judge reliability beta (pooled)", estimate=pooled.get("beta"),
               unit="proportion", n=pooled.get("beta_trials"), higher_is_better=False, label="beta (pooled)"),
    ]
    calibration = data.get("calibration") or {}
    for key in ("intercept", "slope"):
        if calibration.get(key) is not None:
            metrics.append(Metric(id=f"calibration/{key}", metric=f"calibration {key}", estimate=calibration[key],
                                  unit="points", label=f"calibration {key} (p_fit = sigmoid(intercept + slope * delta))",
                                  note=calibration.get("source")))
    judge = ((data.get("judges") or {}).get("pass_fail") or {}).get("spec")
    extras = {ANCHORS_NAME: "the frozen instruments: judge reliability per question and pooled, the Bradley-Terry "
                            "tournaments, the calibration and its bootstrap draws, with the build's identity"}
    for name, what in (("reliability.csv", "judge reliability per question"),
                       ("anchors.csv", "the anchors' Bradley-Terry strengths per option"),
                       ("calibration.csv", "the calibration's observations"),
                       ("judge-pass-fail", "the pass/fail judge's run store"),
                       ("judge-partial", "the partial-credit judge's run store")):
        if (folder / name).exists():
            extras[name] = what
    return RunSummary(benchmark="chronologic", label="anchors", dataset=data.get("dataset"), metrics=metrics, items=[],
                      model=judge, signature=None, options=data.get("options") or {}, extras=extras,
                      notes=["judge reliability and calibration (--mode anchors): no per-item answers"])
