"""The per-item viewer's items of a Historical Italian run (histbench.eval.viewer), which
run_summary.py writes to the run folder's items.jsonl.

One item per scored row of italian-items/<task>.jsonl; config: the task; group: the snippet genre
where the task has one (chronological ranking). A model run's prompt is the system and
user messages as sent (rebuilt from the build the run's signature records and looked up in
records.jsonl), with the raw answer; the parsed answer or why it failed (a parse error, a
cut-off answer, a failed request). Outcome: multiple-choice tasks `correct` / `wrong`;
ranking and NER rows have no right or wrong of their own (`unscored`; score: the row's
Spearman correlation, the number of predicted entities); a failure is `invalid`.

A `--mode likelihood` run (histbench.eval.choices) shows the messages every option is
scored after (the backend renders them with the model's chat template) and, per option
(each letter; each of the 24 orders of a ranking row), its log-likelihood, token count and
mean per token, the gold one and the chosen (likeliest) one; the likeliest per character
is in the item's details.
"""

from __future__ import annotations

from pathlib import Path

from histbench.core.errors import EvalError, HistbenchError
from histbench.core.readers import iter_jsonl_objects
from histbench.eval.viewer import StoredAnswers, ViewerRun, request_messages, response_text

from .tasks import LETTERS, MCQ_TASKS, NER_TASKS, TASKS, gold_choice, load_prompts, messages, orders

TASK_LABELS = {
    "wsd": "Word sense disambiguation", "ner_classense": "NER, Canneti-Fiacchi letters", "ner_bellini": "NER, Bellini letters",
    "chrono_ranking": "Chronological ranking", "authorship": "Authorship verification", "head": "Head prediction",
    "deprel": "Dependency relation prediction", "intertext": "Intertextuality detection",
}


def _build_rows(data: dict) -> tuple[dict[str, dict[str, dict]], str | None]:
    from histbench.core.dataset import BuiltDataset

    dataset = ((data.get("signature") or {}).get("dataset") or {})
    if not dataset.get("path"):
        return {}, "the run does not record its build: prompts and option texts are not shown"
    try:
        built = BuiltDataset.open(dataset["path"], benchmark="italian")
    except HistbenchError as exc:
        return {}, f"the build {dataset['path']} cannot be opened ({exc}): prompts and option texts are not shown"
    if dataset.get("data_sha256") and dataset["data_sha256"] != built.identity().get("data_sha256"):
        return {}, f"the build at {dataset['path']} is not the one this run scored: prompts are not shown"
    rows = {}
    for task in data.get("tasks") or {}:
        if task in built.configs:
            rows[task] = {r["id"]: r for r in built.load(task, "test").to_list()}
    return rows, None


def _options(task: str, row: dict) -> list[str]:
    if task == "wsd":
        return list(row["candidates"])
    if task == "head":
        return [o["form"] for o in row["options"]]
    if task == "deprel":
        return list(row["options"])
    if task == "intertext":
        return ["A", "B"]
    if task == "authorship":
        return [s["text"][:120] for s in row["snippets"]]
    return []


def _choice(options: list[str], index) -> str | None:
    if index is None:
        return None
    index = int(index)
    text = options[index] if 0 <= index < len(options) else ""
    return f"{LETTERS[index]}. {text}" if text and text != LETTERS[index] else LETTERS[index]


def _likelihood_options(task: str, row: dict | None, scored: dict) -> tuple[list[dict], dict]:
    """The options of one likelihood-scored row (see the module docstring) and its details."""
    logliks, tokens = scored["logliks"], scored["n_tokens"]
    if task == "chrono_ranking":
        shown = orders(len(scored["gold_order"])) if scored.get("gold_order") else []
        if len(shown) != len(logliks):   # the orders cannot be told apart: show their scores only
            shown = [None] * len(logliks)
        texts = [" > ".join(LETTERS[i] for i in order) if order else None for order in shown]
        gold = [order is not None and list(order) == list(scored["gold_order"]) for order in shown]
        chosen = [order is not None and list(order) == list(scored.get("predicted_order") or []) for order in shown]
    else:
        labels = _options(task, row) if row is not None else []
        texts = [_choice(labels, k) if labels else LETTERS[k] for k in range(len(logliks))]
        gold_index = gold_choice(task, row) if row is not None else scored.get("gold")
        gold = [k == gold_index for k in range(len(logliks))]
        chosen = [k == scored.get("choice") for k in range(len(logliks))]
    options = [{"text": texts[k], "loglik": logliks[k], "tokens": tokens[k],
                "mean_loglik": logliks[k] / tokens[k] if tokens[k] else None, "gold": gold[k], "chosen": chosen[k]}
               for k in range(len(logliks))]
    norm = scored.get("choice_norm")
    details = {"likeliest per character": texts[norm] if isinstance(norm, int) and 0 <= norm < len(texts) else norm,
               "context cut to fit the model": bool(scored.get("truncated"))}
    return options, details


def view_items(run_dir: Path, data: dict, items_dir: Path) -> ViewerRun:
    """The viewer's items of a run whose own results (italian.json) are `data` and whose
    scored rows are in `items_dir` (one <task>.jsonl per task)."""
    run_dir = Path(run_dir)
    backend = (data.get("signature") or {}).get("backend") or {}
    is_model = backend.get("backend") != "baseline"
    rows, note = _build_rows(data)
    notes = [note] if note else []
    if not is_model:
        notes.append(f"baseline {backend.get('model')}: no model was asked, so there is no prompt or raw answer")
    likelihood = data.get("mode") == "likelihood"
    if likelihood:
        notes.append("likelihood run: every option is scored after the messages shown, as the model's chat template "
                     "renders them; the chosen option is the likeliest (the NER tasks have no options and are not scored)")
    prompts = load_prompts() if is_model else None
    stored = StoredAnswers.open(run_dir) if is_model else StoredAnswers([])
    items = []
    for task in [t for t in TASKS if t in (data.get("tasks") or {})]:
        path = items_dir / f"{task}.jsonl"
        if not path.is_file():
            notes.append(f"{task}: {items_dir.name}/{task}.jsonl is missing")
            continue
        for _, scored in iter_jsonl_objects(path, error=EvalError):
            row = rows.get(task, {}).get(scored["id"])
            sent = messages(task, row, prompts) if (row is not None and is_model) else None
            record = stored.generate(sent) if sent is not None and not likelihood else None
            failure = scored.get("failure")
            item = {"id": f"{task}:{scored['id']}", "config": task, "group": (row or {}).get("genre"), "system": None,
                    "kind": ("loglikelihood" if likelihood else "generate") if is_model else None,
                    "messages": request_messages(record, sent), "response": None if likelihood else response_text(record),
                    "parse_error": failure, "details": {}}
            if likelihood and "logliks" in scored:
                item["options"], item["details"] = _likelihood_options(task, row, scored)
            if task in NER_TASKS:
                predicted = scored.get("predicted") or []
                item.update(parsed=predicted if scored.get("parsed") else None, gold=(row or {}).get("entities"),
                            outcome="invalid" if failure else "unscored", score=len(predicted), score_label="entities")
                item["details"]["predicted entities not found in the letter"] = scored.get("not_found")
            elif task == "chrono_ranking":
                item.update(parsed=scored.get("predicted_order"), gold=scored.get("gold_order"),
                            outcome="invalid" if failure else "unscored", score=scored.get("spearman"),
                            score_label="Spearman")
            else:
                options = _options(task, row) if row is not None else []
                gold = gold_choice(task, row) if row is not None else scored.get("gold")
                item.update(parsed=_choice(options, scored.get("predicted")), gold=_choice(options, gold),
                            outcome="invalid" if failure else ("correct" if scored.get("correct") else "wrong"),
                            score=1.0 if scored.get("correct") else 0.0, score_label="accuracy")
            items.append(item)
    labels = {"config": TASK_LABELS}
    aliases = {"config": {t: [t] for t in MCQ_TASKS}}
    return ViewerRun("italian", data.get("model") or run_dir.name, run_dir, items, labels, notes, aliases=aliases)
