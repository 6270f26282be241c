"""ChronoCulture's items for the run folder's items.jsonl (and so the per-item viewer).

One item per prompt of predictions.jsonl: config `undated`, `items` (the dated prompts of
the older and newer survey year) or `mcq` (modal-answer prompts, A.5); group: the pair's
human-shift category (default boundaries, 3.3). A model run's prompt is the messages as
asked (rebuilt from the build the run records, or from its --prompts file, as `histbench
eval` built them) with the raw answer from records.jsonl; the parsed distribution or the
parser's reason (B.1). Gold: the survey year's distribution (a dated prompt), both years'
(an undated one), the mode (a modal-answer prompt).

Outcome and score: a dated prompt is `correct` when its Wasserstein distance to that
year's gold is within tau = 0.10 (4.2, RF1's accuracy), `wrong` otherwise; a modal-answer
prompt when it names the year's mode; `invalid` when no distribution could be read; an
undated prompt has no right answer of its own (`unscored`; score: K, its distance to the
nearest survey year, B.2). Baselines were not asked anything: they show no prompt.

`run_items` is called by `run_summary.summarise` (what `histbench eval` and `histbench
convert-run` write into items.jsonl); readers read items.jsonl.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from histbench.core.errors import EvalError, HistbenchError
from histbench.eval.viewer import StoredAnswers, request_messages, response_text

from .data import PREDICTIONS_NAME
from .metrics import CATEGORIES, CATEGORY_LABELS, TAU
from .run import OPTION_PROBABILITIES, OPTION_PROBABILITIES_NOTE

CONFIG_LABELS = {"undated": "undated prompts", "items": "dated prompts", "mcq": "modal-answer prompts"}
ABBREVIATIONS = {"stable": "Stab.", "moderate": "Mod.", "strong": "Str.", "very_strong": "V. str."}
#: how the viewer names facet values, and the report's abbreviated headings for them
LABELS = {"config": CONFIG_LABELS, "group": CATEGORY_LABELS}
ALIASES = {"group": {c: [ABBREVIATIONS[c]] for c in CATEGORIES}}


def _prompts(built, bench, info: dict, rows: np.ndarray, modal: bool) -> tuple[dict, str | None]:
    """{(pair_id, period): messages} as the run asked them, or a note why they cannot be shown."""
    from histbench.builders.chronoculture.prompts import PromptTemplates

    from .run import _prompt_jobs

    prompts = info.get("prompts") or {}
    templates = None
    if prompts.get("source") == "file":
        path = Path(prompts.get("path") or "")
        if not path.is_file():
            return {}, f"the run's prompt file {path} is gone: prompts are not shown"
        templates = PromptTemplates.load(path, sections=("distribution", "mcq") if modal else ("distribution",))
    jobs, _ = _prompt_jobs(built, bench, rows, templates, modal)
    return {(pair_id, period): messages for pair_id, period, messages in jobs}, None


def run_items(run_dir: Path, info: dict, rows: list[dict], built, bench) -> tuple[list[dict], list[str]]:
    """(items, notes) of a run folder whose chronoculture.json and predictions.jsonl are
    `info` and `rows`, made on the build `built` (its arrays: `bench`)."""
    from . import metrics as m

    run_dir = Path(run_dir)
    index = bench.index()
    notes = []
    is_model = info.get("kind", "model") == "model"
    by_probabilities = info.get("mode") == OPTION_PROBABILITIES
    asked = np.array(sorted({index[r["pair_id"]] for r in rows if r.get("pair_id") in index}), dtype=int)
    messages: dict = {}
    stored = StoredAnswers([])
    if is_model:
        try:
            messages, note = _prompts(built, bench, info, asked, bool(info.get("modal")))
        except HistbenchError as exc:
            note = f"the prompts cannot be rebuilt ({exc})"
        if note:
            notes.append(note)
        if by_probabilities:
            notes.insert(0, f"this run was {OPTION_PROBABILITIES_NOTE}; the answer shown is each option's "
                            "log-likelihood")
        else:
            stored = StoredAnswers.open(run_dir)
    else:
        notes.append(f"a reference run ({info.get('baseline') or info.get('model') or 'baseline'}): no model was asked, "
                     "so there is no prompt or raw answer")
    if info.get("sample"):
        sample = info["sample"]
        notes.append(f"a stratified subset: {sample.get('selected')} of {sample.get('available')} pairs "
                     f"(by {sample.get('stratify')}, seed {sample.get('seed')})")
    notes.append(f"dated prompts: correct when the Wasserstein distance to that year's gold is within tau = {TAU:.2f} "
                 "(4.2); undated prompts: unscored, score K = distance to the nearest survey year (B.2)")
    category = bench.categories["default"]
    items = []
    for number, row in enumerate(rows, start=1):
        pair_id, period = row.get("pair_id"), row.get("period")
        i = index.get(pair_id)
        if i is None:
            raise EvalError(f"prediction for pair {pair_id!r}, which this dataset does not have", file=run_dir / PREDICTIONS_NAME,
                            row=number, field="pair_id")
        options = list(bench.options[i])
        k = int(bench.k[i])
        positions = bench.positions[i:i + 1]
        years = {"old": int(bench.year_old[i]), "new": int(bench.year_new[i])}
        config = "undated" if period == "undated" else "mcq" if str(period).startswith("mcq") else "items"
        sent = messages.get((pair_id, period))
        record = stored.generate(sent) if sent is not None and not by_probabilities else None
        details = {"pair": pair_id, "country": str(bench.country[i]), "survey": str(bench.survey[i]),
                   "question": str(bench.question_id[i]), "years": f"{years['old']} -> {years['new']}",
                   "human shift d_h": float(bench.d_h[i]), "parse route": row.get("route")}
        item = {"id": f"{pair_id}:{period}", "config": config, "group": CATEGORIES[int(category[i])], "system": None,
                "kind": "generate" if is_model else None, "messages": request_messages(record, sent) if is_model else None,
                "response": response_text(record), "parse_error": row.get("error"), "details": details}
        if by_probabilities:
            logliks = row.get("logliks") or []
            item["response"] = "; ".join(f"{o}: {float(v):.3f}" for o, v in zip(options, logliks, strict=False)) or None
        if config == "mcq":
            year_key = "old" if period == "mcq_old" else "new"
            j = int(np.flatnonzero(bench.modal.pair_index == i)[0]) if bench.modal is not None else None
            mode = None if j is None else int((bench.modal.mode_old if year_key == "old" else bench.modal.mode_new)[j])
            gold = None if mode is None else options[mode]
            choice = row.get("choice")
            item.update(gold={"year": years[year_key], "mode": gold},
                        parsed=None if choice is None else options[int(choice)],
                        outcome="invalid" if choice is None else ("correct" if int(choice) == mode else "wrong"),
                        score=None)
            items.append(item)
            continue
        p = row.get("probabilities")
        item["parsed"] = None if p is None else dict(zip(options, p, strict=True))
        if period == "undated":
            item["gold"] = {str(years["old"]): dict(zip(options, bench.g_old[i, :k].tolist(), strict=True)),
                            str(years["new"]): dict(zip(options, bench.g_new[i, :k].tolist(), strict=True))}
            if p is None:
                item.update(outcome="invalid", score=None)
            else:
                pred = np.zeros((1, bench.width))
                pred[0, :k] = p
                distances = m.year_distances(pred, bench.golds[i:i + 1], bench.year_mask[i:i + 1], positions)
                item.update(outcome="unscored", score=float(np.nanmin(distances)), score_label="K")
        else:
            gold = bench.g_old[i] if period == "old" else bench.g_new[i]
            item["gold"] = {"year": years[period], "distribution": dict(zip(options, gold[:k].tolist(), strict=True))}
            if p is None:
                item.update(outcome="invalid", score=None)
            else:
                pred = np.zeros((1, bench.width))
                pred[0, :k] = p
                distance = float(m.wasserstein(pred, gold[None, :], positions)[0])
                item.update(outcome="correct" if distance <= TAU else "wrong", score=distance, score_label="W")
        items.append(item)
    return items, notes
