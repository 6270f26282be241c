"""`histbench export lm-eval chronologic BUILD`: an lm-evaluation-harness task folder for
the likelihood part of Chronologic-EN, so harness users can score it in their own pipeline.

The folder holds

    chronologic_en.yaml  the task: dataset_path = the built dataset (load_dataset(BUILD,
                         "questions"), split test), output_type multiple_choice, the
                         ground-truth indices as targets (a list: with two ground truths,
                         choosing either counts), metrics acc and acc_norm
    utils.py             doc_to_text / doc_to_choice / doc_to_target, rendering the same
                         prompt template histbench scores with (its sha256 is recorded)
    README.md            how to run it

Run it with `lm_eval --model hf --model_args pretrained=MODEL --tasks TASK --include_path
FOLDER`. The harness's `acc` (argmax of summed log-likelihood) and `acc_norm` (summed
log-likelihood per character) equal histbench's `acc_sum` and `acc_norm` on the same model
(the test suite checks this on a tiny model); the paper's own choice rule (mean
per-token log-likelihood) and the Brier score stay with `histbench eval chronologic`.
"""

from __future__ import annotations

from pathlib import Path
from string import Template

from histbench.builders.core.atomic import atomic_directory
from histbench.builders.core.errors import EvalError, UsageError
from histbench.builders.core.progress import log

DEFAULT_TASK = "chronologic_en_likelihood"

_UTILS = '''"""Written by `histbench export lm-eval chronologic` (do not edit: re-export instead).

Prompt template sha256: $sha256 (histbench's likelihood template, $path: the Chronologic
authors' own prompt)."""

from string import Template

LINES = $lines
REMINDER_LINE = "$$abstention_reminder"
REMINDER = $reminder
REMINDER_TYPES = $reminder_types
REMINDER_ANSWER_CONTAINS = $reminder_contains


def _gets_reminder(doc):
    if REMINDER is None:
        return False
    if doc.get("reasoning_type") in REMINDER_TYPES:
        return True
    return any(needle in answer.lower() for answer in doc.get("answer_strings") or ()
               if isinstance(answer, str) for needle in REMINDER_ANSWER_CONTAINS)


def doc_to_text(doc):
    reminder = _gets_reminder(doc)
    parts = []
    for line in LINES:
        if line == REMINDER_LINE:
            if reminder:
                parts.append(REMINDER)
            continue
        parts.append(Template(line).substitute(metadata_frame=doc["metadata_frame"], main_question=doc["main_question"]))
    return "\\n".join(parts)


def doc_to_choice(doc):
    return list(doc["answer_strings"])


def doc_to_target(doc):
    # every ground truth (answer_probabilities == 1.0); a list makes the harness count a
    # choice of any of them as correct
    return list(doc["ground_truth_indices"])
'''

_README = """# lm-evaluation-harness task: Chronologic-EN likelihood ($task)

Written by `histbench export lm-eval chronologic` from `$dataset` (Chronologic-EN $version,
data sha256 `$data_sha`). Prompt template sha256 `$sha256`.

```bash
lm_eval --model hf --model_args pretrained=MODEL --tasks $task --include_path $folder
```

- `acc`: the option with the highest summed log-likelihood is a ground truth
  (histbench's `acc_sum`); `acc_norm`: the same per character (histbench's `acc_norm`).
- The paper's choice rule (highest mean per-token log-likelihood), its Brier score over
  each question's own options, the per-group breakdown of Table 3 and bootstrap intervals
  come from `histbench eval chronologic --mode likelihood`.
"""


def add_export_arguments(parser) -> None:
    parser.add_argument("dataset", help="built dataset folder (build/chronologic-<version>) or Hub id")
    parser.add_argument("--revision", help="Hub revision when DATASET is a Hub id")
    parser.add_argument("--out", type=Path, help="task folder to write (default: build/lm-eval/chronologic-<version>)")
    parser.add_argument("--task-name", default=DEFAULT_TASK, help=f"harness task name (default: {DEFAULT_TASK})")
    parser.add_argument("--prompt-template", type=Path, metavar="YAML",
                        help="another likelihood prompt template (default: the one histbench scores with)")


def _delimiter(continuation: str) -> str:
    """The harness puts target_delimiter before each choice and nothing after it."""
    if not continuation.endswith("$answer") or continuation.count("$") != 1:
        raise UsageError(
            "the harness can only express a continuation of the form '<delimiter>$answer'; "
            f"this template has {continuation!r}", field="continuation",
        )
    return continuation[: -len("$answer")]


def _yaml_text(task: str, dataset_path: str, revision: str | None, delimiter: str, meta: dict) -> str:
    import yaml

    body = {
        "task": task,
        "dataset_path": dataset_path,
        "dataset_name": "questions",
        **({"dataset_kwargs": {"revision": revision}} if revision else {}),
        "test_split": "test",
        "output_type": "multiple_choice",
        "target_delimiter": delimiter,
        "metric_list": [
            {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
            {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True},
        ],
        "metadata": meta,
    }
    text = yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
    # lm-eval's own YAML tag for Python functions in the task folder's utils.py
    functions = ("doc_to_text: !function utils.doc_to_text\n"
                 "doc_to_choice: !function utils.doc_to_choice\n"
                 "doc_to_target: !function utils.doc_to_target\n")
    return text.replace("output_type: multiple_choice\n", "output_type: multiple_choice\n" + functions)


def export(dataset: str, out: Path | None = None, *, revision: str | None = None, task: str = DEFAULT_TASK,
           template_path: Path | None = None) -> Path:
    """Write the task folder atomically; returns it."""
    from histbench.builders.core.dataset import BuiltDataset

    from .data import PromptTemplate

    built = BuiltDataset.open(dataset, revision=revision, benchmark="chronologic")
    if "questions" not in built.configs:
        raise EvalError("this build has no 'questions' config", file=built.path)
    template = PromptTemplate.load(template_path)
    delimiter = _delimiter(template.continuation)
    local = Path(dataset).expanduser().exists()
    dataset_path = str(built.path.resolve()) if local else dataset
    out = Path(out) if out else Path("build") / "lm-eval" / f"chronologic-{built.version}"
    meta = {
        "version": 1.0,
        "histbench_dataset": f"chronologic {built.version}",
        "data_sha256": built.manifest.get("data_sha256"),
        "prompt_template_sha256": template.sha256,
    }
    with atomic_directory(out) as tmp:
        (tmp / "chronologic_en.yaml").write_text(
            _yaml_text(task, dataset_path, None if local else revision, delimiter, meta), encoding="utf-8")
        reminder = template.reminder
        (tmp / "utils.py").write_text(Template(_UTILS).substitute(
            sha256=template.sha256, path=Path(template.path).name, lines=repr(list(template.lines)),
            reminder=repr(reminder.text if reminder else None),
            reminder_types=repr(list(reminder.reasoning_types) if reminder else []),
            reminder_contains=repr(list(reminder.answer_contains) if reminder else [])), encoding="utf-8")
        (tmp / "README.md").write_text(Template(_README).substitute(
            task=task, dataset=dataset_path, version=built.version, data_sha=str(meta["data_sha256"])[:16],
            sha256=template.sha256, folder=str(out)), encoding="utf-8")
    return out


def run_export(args) -> None:
    out = export(args.dataset, args.out, revision=args.revision, task=args.task_name,
                 template_path=args.prompt_template)
    log(f"lm-evaluation-harness task {args.task_name!r} written; run it with "
        f"lm_eval --model hf --model_args pretrained=MODEL --tasks {args.task_name} --include_path {out}")
    print(out)
