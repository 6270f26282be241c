"""The items of an MHER run folder (items.jsonl, what the per-item viewer shows).

One item per prediction of mher_predictions.jsonl (system x condition x split x pair);
config: the condition; group: the split (DEV / TEST); system: the baseline, reference
system or model (a baselines run holds many). A model's prompt is the messages as sent and
its raw answer (records.jsonl, by the prediction's record key); the parsed decision with
its three probabilities, or why the answer was invalid (the JSON protocol, 6.2). A
baseline or reference system was not prompted: the item shows the two attestations it
compared instead. Outcome: `abstained` when the decision is "ambiguous" (8.3), `invalid`
when the answer broke the protocol, otherwise `correct` / `wrong` against the gold label;
expert-unresolved questions have no gold (`unscored`). Score: the probability given to
the gold label.
"""

from __future__ import annotations

from histbench.eval.viewer import StoredAnswers, request_messages, response_text

from .data import Bench, Run

CONDITION_LABELS = {"name_only": "Name-only", "context_only": "Context-only", "source_grounded": "Source-grounded",
                    "shuffled_a": "Shuffled A", "shuffled_b": "Shuffled B", "shuffled_c": "Shuffled C",
                    "unresolved": "Expert-unresolved"}
SPLIT_LABELS = {"dev": "DEV", "test": "TEST"}
AMBIGUOUS = "ambiguous"


def system_labels(systems: dict) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(label, other words) of each system of a run: Table 2's method text (the baseline's
    label and its embedding model); where two systems share it (the Name and Context
    embedding baselines, one name in the paper's Table 2) their condition tells them apart,
    and Table 2's text stays an alias (the report links its rows by it)."""
    table: dict[str, str] = {}
    for name, spec in systems.items():
        label = spec.get("label") if isinstance(spec.get("label"), str) else None
        model = spec.get("model") if isinstance(spec.get("model"), str) else None
        table[name] = (label or name) + (f" ({model})" if label and model else "")
    shared = {text for text in table.values() if list(table.values()).count(text) > 1}
    labels, aliases = {}, {}
    for name, text in table.items():
        spec = systems[name]
        if text in shared and spec.get("condition") in CONDITION_LABELS:
            model = f" ({spec['model']})" if isinstance(spec.get("model"), str) else ""
            labels[name] = f"{spec.get('label') or name}, {CONDITION_LABELS[spec['condition']]}{model}"
            aliases[name] = [text]
        else:
            labels[name] = text
    return labels, aliases


def _attestation(side: dict | None) -> str:
    if not isinstance(side, dict):
        return ""
    text = f"{side.get('surface', '')} ({side.get('language', '?')}, {side.get('script', '?')})"
    if side.get("context"):
        text += f"\n  context: {side['context']}"
    return text


def run_items(run: Run, bench: Bench) -> tuple[list[dict], dict, dict, list[str]]:
    """(items, labels, aliases, notes) of a run: one item per prediction, in the run's
    order, and how the viewer names its conditions, splits and systems."""
    records: dict[tuple[str, str, str], dict] = {}
    for condition, splits in bench.records.items():
        if condition == "entities":
            continue
        for split, rows in splits.items():
            for row in rows:
                records[(condition, split, Bench.item_id(condition, row))] = row
    stored = StoredAnswers.open(run.path)
    systems = run.info.get("systems") or {}
    notes = []
    if run.kind != "model":
        notes.append("baselines and reference systems are not prompted: each item shows the two attestations compared")
    items = []
    for p in run.predictions:
        row = records.get((p.condition, p.split, p.item_id)) or {}
        gold = row.get("label")
        record = stored.by_key.get(p.record_key or "")
        probabilities = dict(zip(("same", "different", "ambiguous"), p.probabilities, strict=True))
        if not p.valid:
            outcome = "invalid"
        elif p.action == AMBIGUOUS:
            outcome = "abstained"
        elif gold is None:
            outcome = "unscored"
        else:
            outcome = "correct" if p.action == gold else "wrong"
        item = {
            "id": f"{p.system}:{p.condition}:{p.split}:{p.item_id}", "config": p.condition, "group": p.split,
            "system": p.system, "outcome": outcome, "kind": "generate" if record is not None else None,
            "messages": request_messages(record), "response": response_text(record),
            "parsed": {"decision": p.action, "probabilities": probabilities, **({"rationale": p.rationale} if p.rationale else {})}
            if p.valid else None,
            "parse_error": None if p.valid else (p.error or "the answer does not follow the JSON protocol"),
            "gold": gold, "score": probabilities.get(gold) if gold in probabilities else None,
            "score_label": "p(gold)" if gold in probabilities else None,
            "details": {"pair": p.item_id, "attempts": p.attempts},
        }
        if record is None:
            item["prompt"] = "A: " + _attestation(row.get("a")) + "\nB: " + _attestation(row.get("b"))
            item["prompt_label"] = "the two attestations"
        if row.get("challenge"):
            item["details"]["challenge slices"] = ", ".join(k for k, v in row["challenge"].items() if v) or "none"
        if row.get("scholarly_note"):
            item["details"]["scholarly note"] = row["scholarly_note"]
        items.append(item)
    names, system_aliases = system_labels(systems)
    labels = {"config": CONDITION_LABELS, "group": SPLIT_LABELS, "system": names}
    # the words of the tables' column headings (Table 4: "Name", "Source")
    aliases = {"config": {"name_only": ["Name"], "context_only": ["Context"], "source_grounded": ["Source"]},
               "system": system_aliases}
    return items, labels, aliases, notes
