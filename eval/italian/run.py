"""Running a model (through the run store) or a baseline over every task of a build."""

from __future__ import annotations

import json
from pathlib import Path

from histbench.core.atomic import write_text_atomic
from histbench.core.errors import EvalError, UsageError
from histbench.core.progress import log

from .tasks import (
    CUT_OFF,
    LIKELIHOOD_TASKS,
    NER_TOKENS_PER_CHAR,
    TASKS,
    answer_options,
    baseline_predictions,
    load_prompts,
    max_tokens,
    messages,
    orders,
    parser_for,
    prompt_text,
    score_task,
)

MODES = ("generate", "likelihood")
#: the run folder's own files (besides the run format's run.json, results.json, items.jsonl):
#: the metrics per task and the signature, and one file of scored rows per task
OWN_RESULTS = "italian.json"
OWN_ITEMS = "italian-items"
#: their names before the run format (histbench convert-run moves them)
LEGACY_RESULTS = "results.json"
LEGACY_ITEMS = "items"


def own_results_path(out: Path) -> Path:
    return Path(out) / OWN_RESULTS


def _rows(built, task: str, limit: int | None) -> list[dict]:
    rows = built.load(task, "test").to_list()
    return rows[:limit] if limit else rows


def evaluate(built, out: Path, *, backend=None, baseline: str | None = None, tasks=None, limit: int | None = None,
             seed: int = 0, ner_tokens_per_char: float = NER_TOKENS_PER_CHAR, label: str | None = None) -> dict:
    """Score every wanted task of the build; label names the run in reports (default: the
    model spec or baseline:NAME)."""
    from histbench.eval.signature import hash_text, make_signature

    out = Path(out)
    check_mode(out, "generate")
    out.mkdir(parents=True, exist_ok=True)
    wanted = [t for t in (tasks or TASKS) if t in built.configs]
    if not wanted:
        raise EvalError(f"none of the tasks {', '.join(tasks or TASKS)} is in this build (has: {', '.join(built.configs)})", file=built.path)
    prompts = load_prompts()
    decoding = {"temperature": 0.0, "top_p": 1.0, "ner_tokens_per_char": ner_tokens_per_char}
    if backend is not None:
        from histbench.core.backends import GenerateRequest
        from histbench.core.runstore import RunStore

        store = RunStore.open(out, backend=backend, dataset=built, options={"tasks": wanted, "limit": limit})
        identity = backend.identity()
        label = label or backend.spec
    else:
        identity = {"backend": "baseline", "spec": f"baseline:{baseline}", "model": baseline}
        label = label or f"baseline:{baseline}"
    signature = make_signature(dataset=built.identity(), backend=identity, decoding=decoding,
                               prompt_template_hash=hash_text(prompt_text(prompts)) if backend is not None else None)
    results = {"model": label, "mode": "generate", "signature": signature.to_dict(), "tasks": {}}
    items_dir = out / OWN_ITEMS
    items_dir.mkdir(exist_ok=True)
    for task in wanted:
        rows = _rows(built, task, limit)
        if backend is not None:
            requests = [GenerateRequest(messages=messages(task, row, prompts),
                                        max_new_tokens=max_tokens(task, row, ner_tokens_per_char), temperature=0.0)
                        for row in rows]
            parsers = [parser_for(task, row) for row in rows]
            # raw answers are stored; parsing runs here (per row) so a fixed parser rescoring
            # old runs never asks the model again
            records = store.run(requests, parse=None, desc=f"italian {task}")
            predictions, failures = [], []
            for record, parse_one in zip(records, parsers, strict=True):
                if record.response is None:
                    predictions.append(None)
                    failures.append(f"request failed: {record.error}")
                    continue
                if (record.response.get("finish_reason") or "") == "length":
                    predictions.append(None)       # a cut-off answer is a failure (tasks.py module doc)
                    failures.append(CUT_OFF)
                    continue
                try:
                    predictions.append(parse_one(record.result))
                    failures.append(None)
                except (ValueError, TypeError, KeyError) as exc:
                    predictions.append(None)
                    failures.append(f"unparsed: {exc}")
        else:
            predictions = baseline_predictions(baseline, task, rows, seed)
            failures = None
        metrics, items = score_task(task, rows, predictions, failures)
        results["tasks"][task] = metrics
        with (items_dir / f"{task}.jsonl").open("w", encoding="utf-8") as handle:
            for item in items:
                handle.write(json.dumps(item, ensure_ascii=False) + "\n")
        log(f"[italian] {label}: {task}: {_headline(task, metrics)}")   # the run named: the demo prints several
    write_text_atomic(own_results_path(out), json.dumps(results, indent=2, ensure_ascii=False, default=str) + "\n")
    return results


def check_mode(out: Path, mode: str) -> None:
    """One run folder holds one mode's results (a folder from before modes were recorded is a generate run)."""
    path = own_results_path(out)
    if path.is_file():
        from histbench.core.readers import read_json_object

        found = read_json_object(path, error=EvalError).get("mode") or "generate"
        if found != mode:
            raise UsageError(f"this folder holds a --mode {found} run; give the --mode {mode} run its own --out",
                             file=out, field="--out")


def evaluate_likelihood(built, out: Path, *, backend, tasks=None, limit: int | None = None,
                        label: str | None = None) -> dict:
    """`--mode likelihood`: the multiple-choice form of every wanted task scored by
    likelihood (histbench.eval.choices: the prompt histbench generates from, every option
    written as the prompt asks for it), the same metrics as a generate run from the
    likeliest option (`accuracy`, `mean_spearman`) and from the likeliest per character
    (`accuracy_norm`, `mean_spearman_norm`): the numbers `histbench export lm-eval
    italian` tasks give as acc / acc_norm / mean_spearman. The NER tasks have no
    multiple-choice form and are listed under `not_scored`."""
    from histbench.core.runstore import RunStore
    from histbench.eval.choices import ChoiceItem, check_backend, score_items
    from histbench.eval.signature import hash_text, make_signature

    check_backend(backend)
    out = Path(out)
    check_mode(out, "likelihood")
    present = [t for t in (tasks or TASKS) if t in built.configs]
    wanted = [t for t in present if t in LIKELIHOOD_TASKS]
    if not wanted:
        raise EvalError(f"none of the tasks {', '.join(tasks or TASKS)} has a likelihood form in this build "
                        f"(tasks with one: {', '.join(LIKELIHOOD_TASKS)})", file=built.path)
    prompts = load_prompts()
    store = RunStore.open(out, backend=backend, dataset=built, options={"mode": "likelihood", "tasks": wanted, "limit": limit})
    signature = make_signature(dataset=built.identity(), backend=backend.identity(),
                               decoding={"method": "loglikelihood", "tokenisation": "harness"},
                               prompt_template_hash=hash_text(prompt_text(prompts)), mode="likelihood")
    results = {"model": label or f"{backend.spec} (likelihood)", "mode": "likelihood", "signature": signature.to_dict(),
               "tasks": {}, "not_scored": {t: "no multiple-choice form (entities are free text)"
                                           for t in present if t not in LIKELIHOOD_TASKS}}
    items_dir = out / OWN_ITEMS
    for task in wanted:
        rows = _rows(built, task, limit)
        items = [ChoiceItem(tuple(messages(task, row, prompts)), tuple(answer_options(task, row))) for row in rows]
        scores = score_items(items, backend, store, desc=f"italian {task} (likelihood)")
        if task == "chrono_ranking":
            shown = [orders(len(row["snippets"])) for row in rows]
            choice = [list(o[s.choice]) for o, s in zip(shown, scores, strict=True)]
            choice_norm = [list(o[s.choice_norm]) for o, s in zip(shown, scores, strict=True)]
        else:
            choice = [s.choice for s in scores]
            choice_norm = [s.choice_norm for s in scores]
        metrics, scored = score_task(task, rows, choice, [None] * len(rows))
        by_char, _ = score_task(task, rows, choice_norm, [None] * len(rows))
        key = "mean_spearman" if task == "chrono_ranking" else "accuracy"
        metrics[f"{key}_norm"] = by_char[key]
        metrics["contexts_truncated"] = sum(s.truncated > 0 for s in scores)
        results["tasks"][task] = metrics
        items_dir.mkdir(parents=True, exist_ok=True)
        with (items_dir / f"{task}.jsonl").open("w", encoding="utf-8") as handle:
            for item, score in zip(scored, scores, strict=True):
                handle.write(json.dumps({**item, **score.to_json()}, ensure_ascii=False) + "\n")
        log(f"[italian] {results['model']}: {task} (likelihood): {key} {metrics[key]:.3f}, per character {metrics[key + '_norm']:.3f} "
            f"(n={metrics['n']})")
    write_text_atomic(own_results_path(out), json.dumps(results, indent=2, ensure_ascii=False, default=str) + "\n")
    return results


def _headline(task: str, metrics: dict) -> str:
    if "strict" in metrics:
        return (f"strict F1 {metrics['strict']['f1']:.3f}, fuzzy F1 {metrics['fuzzy']['f1']:.3f} "
                f"(ceiling {metrics['ceiling']['strict_f1']:.3f} / {metrics['ceiling']['fuzzy_f1']:.3f}; "
                f"parse failures {metrics['parse_failures']}, cut off {metrics['cut_off']}, "
                f"invented-type predictions {metrics['invented_predictions']})")
    key = "mean_spearman" if "mean_spearman" in metrics else "accuracy"
    return f"{key} {metrics[key]:.3f} (n={metrics['n']}, parse failures {metrics['parse_failures']}, cut off {metrics['cut_off']})"
