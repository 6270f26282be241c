"""`histbench export lm-eval BENCHMARK BUILD`: lm-evaluation-harness task folders.

One exporter for every benchmark with a likelihood (multiple-choice) form; each
benchmark's evaluator lists its tasks as `HarnessTask`s and hands them to
`lm_eval_exporter` in its `exporters()`. The folder written (default
`build/lm-eval/<benchmark>-<version>/`, beside the build) holds

    <task>.yaml   one harness task per config: output_type multiple_choice, the build as
                  `dataset_path` (a path relative to this folder, or the Hub id),
                  `custom_dataset: !function utils.load_docs`, dataset_kwargs that never
                  read another build's cached rows, and a `metadata.histbench` block with
                  everything the documents are rendered from (prompt templates verbatim)
    utils.py      histbench.eval.lm_eval_utils, copied verbatim: loads the build, gives
                  ClassLabel columns their names, renders each row as histbench prompts it
    README.md     how to run the tasks, and the histbench command that gives the same numbers

Every task carries the tag `histbench_<benchmark>` (`--tasks histbench_italian` runs them all).

Prompt formats (`--prompt-format`, for tasks whose prompts are chat messages):
`chat` (default) gives the system message as the task's description and the user
message as the document, for `lm_eval --apply_chat_template`; the harness then renders
the model's chat template with the generation prompt, and the answer follows it
directly, as histbench scores it (`histbench eval BENCHMARK --mode likelihood`).
`plain` is for models without a chat template, run without --apply_chat_template: system
message, blank line, user message, blank line, answer (histbench joins the messages of
such a model the same way; with a model that has a template, give histbench
`--model-option chat_template=never`).

Local builds: datasets caches a local folder by its name, so a rebuilt folder could be
served the earlier build's rows; the tasks load it with `download_mode:
force_redownload` (the build is re-read, a second or so for histbench's sizes), and
utils.load_docs refuses a build whose data_sha256 is not the exported one. Hub builds
are loaded at the exact commit the export read (`dataset_revision`), which no later
push can change.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from histbench.core.atomic import atomic_directory
from histbench.core.errors import EvalError, UsageError
from histbench.core.progress import log

PROMPT_FORMATS = ("chat", "plain")
PLAIN_SEPARATOR = "\n\n"
UTILS_SOURCE = Path(__file__).with_name("lm_eval_utils.py")
DEFAULT_ROOT = Path("build") / "lm-eval"


@dataclass(frozen=True)
class HarnessTask:
    """One harness task: a config of the build, rendered by `renderer` (a key of
    lm_eval_utils.RENDERERS) from `params` (JSON-able; written into the YAML).

    chat: the prompts are chat messages (a system message and a user message), so the
    export's prompt format applies; otherwise the document is one plain prompt and the
    answer follows it after `target_delimiter`.
    metrics: the harness's multiple-choice metrics, or those `process_results` returns.
    about: one line for the README; same_as: the histbench command and metric that give
    the same numbers.
    """

    name: str
    config: str
    renderer: str
    params: dict
    about: str
    same_as: str
    split: str = "test"
    chat: bool = True
    target_delimiter: str | None = None
    metrics: tuple[str, ...] = ("acc", "acc_norm")
    process_results: str | None = None
    prompt_sha256: str | None = None
    extra: dict = field(default_factory=dict)


class _FunctionTag(str):
    """A value written as lm-eval's YAML tag `!function utils.NAME`."""


def _yaml_text(body: dict) -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper, value):
        # whitespace-only values (a blank-line delimiter) are clearest double-quoted: "\n\n"
        style = '"' if value and not value.strip() else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    Dumper.add_representer(_FunctionTag, lambda dumper, value: dumper.represent_scalar("!function", str(value)))
    dumped = yaml.dump(body, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)
    return re.sub(r"!function '(utils\.\w+)'", r"!function \1", dumped)  # lm-eval's own spelling


def _hub_revision(built, revision: str | None) -> str | None:
    """The commit a Hub build was read at (its snapshot folder's name), else the revision asked for."""
    if built.path.parent.name == "snapshots":
        return built.path.name
    return revision


def task_body(task: HarnessTask, built, *, dataset_path: str, local: bool, revision: str | None,
              prompt_format: str) -> dict:
    """The YAML mapping of one task."""
    from histbench.core.version import histbench_version

    delimiter = task.target_delimiter if task.target_delimiter is not None else (PLAIN_SEPARATOR if task.chat else "")
    body: dict = {
        "task": task.name,
        "tag": [f"histbench_{built.benchmark}"],
        "dataset_path": dataset_path,
        "dataset_name": task.config,
        "dataset_kwargs": {"download_mode": "force_redownload"} if local else (
            {"dataset_revision": revision} if revision else {}),
        "custom_dataset": _FunctionTag("utils.load_docs"),
        "test_split": task.split,
        "output_type": "multiple_choice",
    }
    if task.chat:
        body["description"] = "histbench_description"
    body.update({"doc_to_text": "histbench_text", "doc_to_choice": "histbench_choices",
                 "doc_to_target": "histbench_target", "target_delimiter": delimiter})
    if task.process_results:
        body["process_results"] = _FunctionTag(f"utils.{task.process_results}")
    body["metric_list"] = [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in task.metrics]
    body["metadata"] = {
        "version": 1.0,
        "histbench": {
            "benchmark": built.benchmark, "build_version": built.version, "data_sha256": built.manifest.get("data_sha256"),
            "exported_with": f"histbench {histbench_version()}",
            "dataset_path": dataset_path, "dataset_name": task.config, "split": task.split, "local": local,
            "renderer": task.renderer, "prompt_format": prompt_format if task.chat else "plain",
            **({"prompt_sha256": task.prompt_sha256} if task.prompt_sha256 else {}),
            "params": task.params, **task.extra,
        },
    }
    return body


def _readme(built, tasks: list[HarnessTask], out: Path, dataset_path: str, prompt_format: str, skipped: list[str]) -> str:
    chat = any(t.chat for t in tasks)
    flag = " --apply_chat_template" if chat and prompt_format == "chat" else ""
    names = ",".join(t.name for t in tasks)
    lines = [
        f"# lm-evaluation-harness tasks: {built.benchmark} {built.version}",
        "",
        f"Written by `histbench export lm-eval {built.benchmark}` from `{dataset_path}` (data sha256 "
        f"`{str(built.manifest.get('data_sha256'))[:16]}`). Re-export after a rebuild: the tasks refuse another build.",
        "",
        "```bash",
        f"lm_eval --model hf --model_args pretrained=MODEL{flag} --include_path {out} --tasks {names}",
        f"# or every task of this folder: --tasks histbench_{built.benchmark}",
        "```",
        "",
    ]
    if chat:
        lines += [
            f"Prompt format: **{prompt_format}**. " + (
                "The system message is each task's description and the user message its document: run with "
                "`--apply_chat_template`, as histbench scores chat models (the answer follows the chat template's "
                "generation prompt)." if prompt_format == "chat" else
                "System message, blank line, user message, blank line, answer: for models without a chat "
                "template, run without `--apply_chat_template` (histbench: `--model-option chat_template=never`)."),
            "",
        ]
    lines += ["| task | what | the same numbers from histbench |", "| --- | --- | --- |"]
    lines += [f"| `{t.name}` | {t.about} | {t.same_as} |" for t in tasks]
    if skipped:
        lines += ["", "Not in this build (not exported): " + ", ".join(skipped) + "."]
    lines += [
        "",
        "The build is read from `dataset_path` (relative to this folder, or a Hub id at the commit exported); "
        "`utils.py` (histbench's lm_eval_utils, verbatim) renders every row as histbench prompts it.",
        "",
    ]
    return "\n".join(lines)


def export(dataset: str, tasks_for: Callable, *, benchmark: str, out: Path | None = None, revision: str | None = None,
           prompt_format: str = "chat", only: list[str] | None = None, options: argparse.Namespace | None = None) -> Path:
    """Write the task folder of `benchmark`'s build `dataset` atomically; returns it.

    tasks_for(built, options) -> list[HarnessTask] (the benchmark's tasks); `only`: task
    names or configs to keep."""
    from histbench.core.dataset import BuiltDataset

    if prompt_format not in PROMPT_FORMATS:
        raise UsageError(f"--prompt-format must be one of {', '.join(PROMPT_FORMATS)}", field="--prompt-format")
    built = BuiltDataset.open(dataset, revision=revision, benchmark=benchmark)
    tasks = tasks_for(built, options or argparse.Namespace())
    if only:
        unknown = sorted(set(only) - {t.name for t in tasks} - {t.config for t in tasks})
        if unknown:
            raise UsageError(f"no such task: {', '.join(unknown)} (tasks: {', '.join(t.name for t in tasks)})",
                             field="--tasks")
        tasks = [t for t in tasks if t.name in only or t.config in only]
    skipped = [t.name for t in tasks if t.config not in built.configs]
    tasks = [t for t in tasks if t.config in built.configs]
    if not tasks:
        raise EvalError(f"this build has none of the configs with a multiple-choice form ({', '.join(skipped)})",
                        file=built.path)
    local = Path(dataset).expanduser().exists()
    out = Path(out) if out else DEFAULT_ROOT / f"{benchmark}-{built.version}"
    if local:
        dataset_path = Path(os.path.relpath(built.path.resolve(), out.expanduser().resolve())).as_posix()
    else:
        dataset_path = str(dataset)
    hub_revision = None if local else _hub_revision(built, revision)
    with atomic_directory(out) as tmp:
        for task in tasks:
            body = task_body(task, built, dataset_path=dataset_path, local=local, revision=hub_revision,
                             prompt_format=prompt_format)
            (tmp / f"{task.name}.yaml").write_text(_yaml_text(body), encoding="utf-8")
        (tmp / "utils.py").write_text(UTILS_SOURCE.read_text(encoding="utf-8"), encoding="utf-8")
        (tmp / "README.md").write_text(_readme(built, tasks, out, dataset_path, prompt_format, skipped), encoding="utf-8")
    for name in skipped:
        log(f"[lm-eval] {name}: its config is not in this build, not exported")
    return out


def lm_eval_exporter(benchmark: str, tasks_for: Callable, *, help: str, chat: bool = True,
                     add_arguments: Callable | None = None) -> dict:
    """The {"help", "add_arguments", "run"} entry of `BenchmarkEvaluator.exporters()` for
    `histbench export lm-eval BENCHMARK`."""

    def add(parser) -> None:
        parser.add_argument("dataset", help=f"the build: a folder (build/{benchmark}-<version>) or a Hub id ORG/NAME")
        parser.add_argument("--revision", help="with a Hub id: the tag, branch or commit to export")
        parser.add_argument("--out", type=Path,
                            help=f"task folder to write (default: {DEFAULT_ROOT}/{benchmark}-<version>, beside the build)")
        parser.add_argument("--tasks", nargs="+", metavar="TASK", help="only these tasks (names or configs)")
        if chat:
            parser.add_argument("--prompt-format", choices=PROMPT_FORMATS, default="chat",
                                help="chat (default): system message as description, for lm_eval --apply_chat_template; "
                                     "plain: system, blank line, user, for models without a chat template")
        if add_arguments is not None:
            add_arguments(parser)

    def run(args) -> None:
        out = export(args.dataset, tasks_for, benchmark=benchmark, out=args.out, revision=args.revision,
                     prompt_format=getattr(args, "prompt_format", "chat"), only=args.tasks, options=args)
        flag = " --apply_chat_template" if chat and getattr(args, "prompt_format", "chat") == "chat" else ""
        log(f"lm-evaluation-harness tasks written; run them with lm_eval --model hf --model_args pretrained=MODEL{flag} "
            f"--include_path {out} --tasks histbench_{benchmark}")
        print(out)

    return {"help": help, "add_arguments": add, "run": run}
