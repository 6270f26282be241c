"""The `utils.py` of every task folder that `histbench export lm-eval` writes.

This file is copied verbatim into the folder (re-export rather than edit a copy).
lm-evaluation-harness imports it by path from the task YAMLs; it needs `datasets`, not
histbench, so a task folder runs wherever the harness runs.

`load_docs` is every task's `custom_dataset`. It reads the task's `metadata.histbench`
block (written by the export) and

1. opens the build: `dataset_path` is a folder relative to the task folder (a local
   build) or a Hugging Face Hub id, loaded at `revision`;
2. checks that a local build is still the one exported (`data_sha256` of its
   histbench.json), so a rebuilt or replaced folder is an error, not other rows;
3. loads `dataset_name` with `datasets.load_dataset`, passing the task's dataset_kwargs
   (`download_mode: force_redownload` for local builds: datasets caches a local folder by
   its name, so a rebuilt folder would otherwise be served the earlier build's rows);
4. gives categorical (`ClassLabel`) columns their names back, as histbench's evaluators
   read them (a build stores their ids);
5. renders every row the way histbench's evaluator prompts it, into four columns that the
   YAML points at: `histbench_description` (the system message; in the plain prompt
   format followed by a blank line, as histbench joins messages for a model without a
   chat template), `histbench_text` (the user message, or the whole prompt),
   `histbench_choices` (every answer option, written as the prompt asks for it, e.g.
   {"answer": "B"}) and `histbench_target` (the index of the correct option; a list
   where several options are correct).

`process_results_order` scores the chronological-ranking task: the likeliest order's
Spearman correlation with the true order.
"""

from __future__ import annotations

import itertools
import json
import string
from pathlib import Path

HERE = Path(__file__).resolve().parent
LETTERS = string.ascii_uppercase
MANIFEST = "histbench.json"
PLAIN_SEPARATOR = "\n\n"


class HistbenchTaskError(RuntimeError):
    """The task folder and its build do not fit together (one line, naming what to do)."""


# --------------------------------------------------------------------------- loading


def load_docs(histbench=None, download_mode=None, dataset_revision=None, **_ignored):
    """The task's documents as a DatasetDict {split: Dataset} (module doc, steps 1-5).

    lm-evaluation-harness calls it with the task's metadata and dataset_kwargs as keyword
    arguments; metadata it does not need (the model's arguments, the version) is ignored."""
    import datasets

    if not isinstance(histbench, dict):
        raise HistbenchTaskError("this task's metadata has no 'histbench' block: re-export it with histbench")
    spec = histbench
    source = spec["dataset_path"]
    local = HERE / source
    kwargs = {}
    if download_mode:
        kwargs["download_mode"] = download_mode
    if spec.get("local"):
        if not (local / MANIFEST).is_file():
            raise HistbenchTaskError(
                f"{local}: no histbench build here (the task folder expects it at {source!r}, relative to "
                f"{HERE}); move the two folders together or re-export")
        found = json.loads((local / MANIFEST).read_text(encoding="utf-8")).get("data_sha256")
        if found != spec["data_sha256"]:
            raise HistbenchTaskError(
                f"{local}: this build's data_sha256 is {str(found)[:12]}..., the task was exported from "
                f"{spec['data_sha256'][:12]}...; re-run `histbench export lm-eval` for this build")
        path = str(local)
    else:
        path = source
        revision = dataset_revision or spec.get("revision")
        if revision:
            kwargs["revision"] = revision
    loaded = datasets.load_dataset(path, spec["dataset_name"], split=spec["split"], **kwargs)
    rows = [dict(row) for row in class_label_names(loaded)]
    render = RENDERERS[spec["renderer"]]
    docs = []
    for number, row in enumerate(rows):
        for doc in render(row, spec["params"]):
            doc["histbench_row"] = number
            docs.append(finish_doc(doc, spec.get("prompt_format", "plain")))
    return datasets.DatasetDict({spec["split"]: datasets.Dataset.from_list(docs)})


def class_label_names(dataset):
    """Rows of a datasets.Dataset with every top-level ClassLabel id replaced by its name."""
    from datasets import ClassLabel

    labels = {name: feature for name, feature in dataset.features.items() if isinstance(feature, ClassLabel)}
    for row in dataset:
        for name, feature in labels.items():
            if row[name] is not None and row[name] >= 0:
                row[name] = feature.int2str(row[name])
        yield row


def finish_doc(doc: dict, prompt_format: str) -> dict:
    """The four histbench_* columns from a rendered doc {row, system, user, choices, target}:
    with a system message, the chat format gives it as the description (lm_eval's
    --apply_chat_template makes it the system turn); the plain format ends it with a
    blank line, as histbench joins the messages of a model without a chat template."""
    system = doc.pop("system", None)
    row = doc.pop("row")
    if system is None:
        description = ""
    elif prompt_format == "chat":
        description = system
    else:
        description = system + PLAIN_SEPARATOR
    return {**row, "histbench_description": description, "histbench_text": doc["user"],
            "histbench_choices": list(doc["choices"]), "histbench_target": doc["target"],
            **{key: value for key, value in doc.items() if key not in ("user", "choices", "target")}}


def answer_json(key: str, value) -> str:
    """An answer written as the prompts ask for it: {"answer": "B"}, {"order": ["B", "A"]}."""
    return json.dumps({key: value}, ensure_ascii=False)


# --------------------------------------------------------------------------- Chronologic-EN


def chronologic_likelihood(row: dict, params: dict):
    """The authors' likelihood prompt (histbench's likelihood_prompt.yaml): the template's
    lines joined by newlines, the reminder line only for the questions that get it."""
    reminder = params.get("reminder")
    gets = False
    if reminder is not None:
        gets = row.get("reasoning_type") in reminder["reasoning_types"] or any(
            needle in answer.lower() for answer in row.get("answer_strings") or () if isinstance(answer, str)
            for needle in reminder["answer_contains"])
    parts = []
    for line in params["lines"]:
        if line == params["reminder_line"]:
            if gets:
                parts.append(reminder["text"])
            continue
        parts.append(string.Template(line).substitute(metadata_frame=row["metadata_frame"],
                                                      main_question=row["main_question"]))
    yield {"row": row, "user": "\n".join(parts), "choices": list(row["answer_strings"]),
           "target": list(row["ground_truth_indices"])}


# --------------------------------------------------------------------------- ChronoCulture


def chronoculture_mcq(row: dict, params: dict):
    """Both modal-answer prompts of an mcq row (the build's own messages): one doc per
    period, the option letters as answers, the gold distribution's mode as the target."""
    for period in ("old", "new"):
        messages = row[f"messages_{period}"]
        system = next((m["content"] for m in messages if m["role"] == "system"), None)
        user = "\n\n".join(m["content"] for m in messages if m["role"] != "system")
        yield {"row": row, "system": system, "user": user,
               "choices": [answer_json("answer", letter) for letter in row["option_letters"]],
               "target": int(row[f"mode_{period}"]), "histbench_period": period}


# --------------------------------------------------------------------------- Historical Italian


def _options(texts) -> str:
    return "\n".join(f"{LETTERS[i]}. {t}" for i, t in enumerate(texts))


def _where(word: dict) -> str:
    if word["occurrences"] > 1:
        return f" (occurrence {word['occurrence']} of {word['occurrences']})"
    return ""


def _snippets(row: dict, separator: str) -> str:
    return separator.join(f"{LETTERS[i]}.\n{s['text']}" for i, s in enumerate(row["snippets"]))


def italian_values(task: str, row: dict) -> dict:
    """The template fields of one row of an Italian multiple-choice task."""
    if task == "wsd":
        return {"context": row["context"], "target_phrase": row["target_phrase"], "options": _options(row["candidates"])}
    if task == "chrono_ranking":
        return {"n": len(row["snippets"]), "options": _snippets(row, "\n\n")}
    if task == "authorship":
        return {"options": _snippets(row, "\n\n")}
    if task == "head":
        return {"text": row["text"], "token": row["token"]["form"], "token_where": _where(row["token"]),
                "options": _options([o["form"] + _where(o) for o in row["options"]])}
    if task == "deprel":
        return {"text": row["text"], "token": row["token"]["form"], "token_where": _where(row["token"]),
                "head": row["head"]["form"], "head_where": _where(row["head"]), "options": _options(row["options"])}
    if task == "intertext":
        return {"dante_text": row["dante_text"], "text_a": row["text_a"], "text_b": row["text_b"]}
    raise HistbenchTaskError(f"no multiple-choice form for the Italian task {task!r}")


def italian_shown_options(task: str, row: dict) -> int:
    """How many options the prompt shows (each is one answer letter)."""
    shown = {"wsd": "candidates", "authorship": "snippets", "head": "options", "deprel": "options"}
    return 2 if task == "intertext" else len(row[shown[task]])


def italian_orders(n: int) -> list[tuple[int, ...]]:
    """Every order of n snippets, in lexicographic order (the ranking task's options)."""
    return list(itertools.permutations(range(n)))


def italian_mcq(row: dict, params: dict):
    task = params["task"]
    values = italian_values(task, row)
    if task == "chrono_ranking":
        orders = italian_orders(len(row["snippets"]))
        choices = [answer_json("order", [LETTERS[i] for i in order]) for order in orders]
        target = orders.index(tuple(row["gold_order"]))
    else:
        choices = [answer_json("answer", LETTERS[i]) for i in range(italian_shown_options(task, row))]
        target = (0 if row["gold"] == "A" else 1) if task == "intertext" else int(row["gold_index"])
    yield {"row": row, "system": params["system"].format(**values), "user": params["user"].format(**values),
           "choices": choices, "target": target}


def spearman(predicted_order, gold_order) -> float:
    """1 - 6 sum d^2 / (n (n^2 - 1)) between two orders of the same items."""
    n = len(gold_order)
    pred_rank = {item: r for r, item in enumerate(predicted_order)}
    gold_rank = {item: r for r, item in enumerate(gold_order)}
    d2 = sum((pred_rank[i] - gold_rank[i]) ** 2 for i in gold_order)
    return 1.0 - 6.0 * d2 / (n * (n * n - 1))


def process_results_order(doc, results):
    """The ranking task's metric: Spearman correlation of the likeliest order (the first of
    equally likely ones) with the true order."""
    lls = [float(result[0]) for result in results]
    best = max(range(len(lls)), key=lambda i: (lls[i], -i))
    orders = italian_orders(len(doc["snippets"]))
    return {"mean_spearman": spearman(orders[best], doc["gold_order"])}


RENDERERS = {
    "chronologic.likelihood": chronologic_likelihood,
    "chronoculture.mcq": chronoculture_mcq,
    "italian.mcq": italian_mcq,
}

