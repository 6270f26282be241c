"""The per-item viewer's items of a temporal valence run (histbench.eval.viewer), which
run_summary.py writes to the run folder's items.jsonl.

One item per model x sentence; config: `sentences`; group: the sentence group (EME,
neutral, ME); system: the model. The prompt is the masked sentence as the fill-mask
request sent it (records.jsonl of the model's run store), the options are the model's
top-k fillers with their probabilities, kinds and the annotated sigma of each word, and
gold is the sentence's expected valence rho. Score: the sentence's bias beta (raw
probabilities, 3.2) with its adequacy delta beside it. A sentence has no right or wrong of
its own (`unscored`); one the run could not score (nothing annotated, nothing predicted)
is `invalid`, with the reason.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from histbench.core.errors import EvalError
from histbench.eval.viewer import StoredAnswers, ViewerRun

OPTION_COLUMNS = (("text", "filler"), ("probability", "probability"), ("kind", "kind"), ("sigma", "sigma"),
                  ("rank", "rank"))
GROUP_LABELS = {"EME": "EME", "neutral": "neutral", "ME": "ME"}


def view_items(run_dir: Path, results) -> ViewerRun:
    """The viewer's items of a run whose scores (results.run_results) are `results`."""
    from .runfolder import RunFolder

    run = RunFolder.open(run_dir)
    notes = []
    if results.info.get("not_scored"):
        notes.append(f"not scored yet: {results.info['not_scored']}")
    sentences = {s["sentence_id"]: s for s in run.sentences()}
    predictions: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for p in run.predictions():
        predictions[(p["model"], p["sentence_id"])].append(p)
    sigma = {}
    for a in run.annotations():
        if not a.get("skipped") and a.get("sigma") is not None:
            sigma[(a["sentence_id"], str(a["token"]).casefold())] = a["sigma"]
    scored = {(r["model"], r["sentence_id"]): r for r in results.records if "status" in r}
    stores = {}
    for model in run.models:
        stores[model["label"]] = StoredAnswers.open(run.path / model["store"]) if model.get("store") else StoredAnswers([])
    items = []
    for model in run.models:
        label = model["label"]
        requests = {}
        for record in stores[label].by_request.values():
            request = record.get("request") or {}
            if request.get("kind") == "fill_mask":
                requests[request.get("text")] = record
        for sentence_id, sentence in sentences.items():
            fillers = sorted(predictions.get((label, sentence_id), []), key=lambda p: p["rank"])
            row = scored.get((label, sentence_id))
            options = [{"text": p["word"] or p["token"], "probability": p["probability"], "kind": p["kind"],
                        "sigma": sigma.get((sentence_id, str(p["word"] or p["token"]).casefold())), "rank": p["rank"]}
                       for p in fillers]
            status = (row or {}).get("status", "not scored")
            ok = row is not None and status == "ok"
            record = None
            for text in (sentence["text"], sentence["text"].replace(sentence.get("mask_spelling") or "[MASK]", "[MASK]")):
                record = record or requests.get(text)
            items.append({
                "id": f"{label}:{sentence_id}", "config": "sentences", "group": sentence["group"], "system": label,
                "outcome": "unscored" if ok else "invalid", "kind": "fill_mask",
                "prompt": (record or {}).get("request", {}).get("text") or sentence["text"],
                "prompt_label": "masked sentence (fill-mask request)", "options": options,
                "gold": {"rho": sentence.get("rho")}, "score": (row or {}).get("beta"), "score_label": "beta",
                "parse_error": None if ok else f"not scored: {status}",
                "details": {"delta (adequacy)": (row or {}).get("delta"), "beta renormalised": (row or {}).get("beta_renormalised"),
                            "annotated share of the top-k mass": (row or {}).get("mass_scored"),
                            "note": sentence.get("notes")},
            })
    if not items:
        raise EvalError("the run folder holds no model x sentence to show", file=run_dir)
    return ViewerRun("valence", " + ".join(run.model_labels()) or run.path.name, run.path, items,
                     {"group": GROUP_LABELS, "config": {"sentences": "sentences"}}, notes, OPTION_COLUMNS)
