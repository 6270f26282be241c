"""Running a model (through the run store) or a baseline over every task of a build."""

from __future__ import annotations

import json
from pathlib import Path

from histbench.builders.core.errors import EvalError
from histbench.builders.core.progress import log

from .tasks import (
    CUT_OFF,
    NER_TOKENS_PER_CHAR,
    TASKS,
    baseline_predictions,
    load_prompts,
    max_tokens,
    messages,
    parser_for,
    prompt_text,
    score_task,
)


def _rows(built, task: str, limit: int | None) -> list[dict]:
    rows = built.load(task, "test").to_list()
    return rows[:limit] if limit else rows


def evaluate(built, out: Path, *, backend=None, baseline: str | None = None, tasks=None, limit: int | None = None,
             seed: int = 0, ner_tokens_per_char: float = NER_TOKENS_PER_CHAR, label: str | None = None) -> dict:
    """Score every wanted task of the build; label names the run in reports (default: the
    model spec or baseline:NAME)."""
    from histbench.eval.signature import hash_text, make_signature

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    wanted = [t for t in (tasks or TASKS) if t in built.configs]
    if not wanted:
        raise EvalError(f"none of the tasks {', '.join(tasks or TASKS)} is in this build (has: {', '.join(built.configs)})", file=built.path)
    prompts = load_prompts()
    decoding = {"temperature": 0.0, "top_p": 1.0, "ner_tokens_per_char": ner_tokens_per_char}
    if backend is not None:
        from histbench.eval.backends import GenerateRequest
        from histbench.eval.runstore import RunStore

        store = RunStore.open(out, backend=backend, dataset=built, options={"tasks": wanted, "limit": limit})
        identity = backend.identity()
        label = label or backend.spec
    else:
        identity = {"backend": "baseline", "spec": f"baseline:{baseline}", "model": baseline}
        label = label or f"baseline:{baseline}"
    signature = make_signature(dataset=built.identity(), backend=identity, decoding=decoding,
                               prompt_template_hash=hash_text(prompt_text(prompts)) if backend is not None else None)
    results = {"model": label, "signature": signature.to_dict(), "tasks": {}}
    items_dir = out / "items"
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
        log(f"[italian] {task}: {_headline(task, metrics)}")
    (out / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return results


def _headline(task: str, metrics: dict) -> str:
    if "strict" in metrics:
        return (f"strict F1 {metrics['strict']['f1']:.3f}, fuzzy F1 {metrics['fuzzy']['f1']:.3f} "
                f"(ceiling {metrics['ceiling']['strict_f1']:.3f} / {metrics['ceiling']['fuzzy_f1']:.3f}; "
                f"parse failures {metrics['parse_failures']}, cut off {metrics['cut_off']}, "
                f"invented-type predictions {metrics['invented_predictions']})")
    key = "mean_spearman" if "mean_spearman" in metrics else "accuracy"
    return f"{key} {metrics[key]:.3f} (n={metrics['n']}, parse failures {metrics['parse_failures']}, cut off {metrics['cut_off']})"
