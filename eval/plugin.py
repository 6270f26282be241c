"""The evaluator interface every benchmark implements.

A benchmark's evaluator lives in `eval/<name>` (module or package) and exposes
`EVALUATOR`, an instance of a `BenchmarkEvaluator` subclass. The CLI wires it into
`histbench eval <name> ...` and `histbench report <name> ...`; `histbench demo` calls
its `demo` method on the sample build; `add_commands` may add extra top-level commands
(e.g. `histbench valence export-vocabulary`).
"""

from __future__ import annotations

import argparse
import importlib
import re
from abc import ABC
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from histbench.core.errors import UsageError

if TYPE_CHECKING:
    from histbench.core.dataset import BuiltDataset
    from histbench.core.results import Results
    from histbench.eval.report import Headline, ReportSection
    from histbench.eval.viewer import ViewerRun


class BenchmarkEvaluator(ABC):
    name: ClassVar[str]

    def add_eval_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Options of `histbench eval <name>`."""

    def run_eval(self, args: argparse.Namespace) -> None:
        raise UsageError(f"{self.name} has no `histbench eval` command")

    def run_folder(self, args: argparse.Namespace) -> Path | None:
        """The run folder `run_eval(args)` writes, which `results` reads (default: --out)."""
        out = getattr(args, "out", None)
        return Path(out) if out else None

    # -- run folders --------------------------------------------------------------------
    # A benchmark converts what its evaluation wrote into the one run format
    # (histbench.core.runfolder) in `summarise_run`; everything else reads that format.

    # The module (dotted name) whose function summarise(run_dir) -> RunSummary reads the
    # benchmark's own files of a run folder, and is_own_folder(run_dir) recognises them.
    run_module: ClassVar[str | None] = None

    def _run_module(self):
        if not self.run_module:
            raise UsageError(f"{self.name} run folders cannot be read as results yet")
        return importlib.import_module(self.run_module)

    def summarise_run(self, run_dir: Path):
        """The RunSummary of a run folder, from the files the benchmark's evaluation wrote
        (what `finish_run` writes as run.json, results.json and items.jsonl)."""
        return self._run_module().summarise(Path(run_dir))

    def is_own_folder(self, run_dir: Path) -> bool:
        """Whether the benchmark's own files of a run are in `run_dir` (also in a folder
        written before the run format, which `histbench convert-run` converts)."""
        return bool(self.run_module) and self._run_module().is_own_folder(Path(run_dir))

    def finish_run(self, run_dir: Path, started: str | None = None) -> None:
        """Write the run format's three files of a run folder the evaluation has written."""
        from histbench.core.runfolder import write_run_folder

        summary = self.summarise_run(run_dir)
        if summary.benchmark != self.name:
            raise UsageError(f"{self.name}'s summary names benchmark {summary.benchmark}", file=run_dir)
        write_run_folder(Path(run_dir), summary, started=started)

    def open_run(self, run_dir: Path):
        """The RunFolder of a run of this benchmark (an older folder is refused with the
        command that converts it)."""
        from histbench.core.runfolder import RunFolder

        return RunFolder.open(Path(run_dir), benchmark=self.name)

    def results(self, run_dir: Path) -> Results:
        """The metrics ({id: metric}), per-item records and signature of a run folder (what
        `histbench.evaluate` returns), read from its run.json, results.json and items.jsonl."""
        from histbench.core.results import Results

        folder = self.open_run(run_dir)
        return Results(self.name, folder.path, folder.label, {m["id"]: m for m in folder.metrics}, folder.items,
                       folder.results.get("signature"), folder.run)

    def is_run_folder(self, run_dir: Path) -> bool:
        """Whether `run_dir` is a run folder of this benchmark (`histbench view` finds the
        benchmark of a folder by asking every evaluator)."""
        from histbench.core.runfolder import read_run_manifest

        return (read_run_manifest(run_dir) or {}).get("benchmark") == self.name

    def view_items(self, run_dir: Path) -> ViewerRun:
        """Every item of a run folder for the per-item viewer (histbench.eval.viewer): its
        prompt, raw response, parsed answer or parse failure, gold, outcome and score."""
        from histbench.eval.viewer import DEFAULT_OPTION_COLUMNS, ViewerRun

        folder = self.open_run(run_dir)
        shown = folder.run.get("viewer") or {}
        columns = shown.get("option_columns")
        return ViewerRun(self.name, folder.label, folder.path, folder.items, shown.get("labels") or {},
                         list(shown.get("notes") or []),
                         [tuple(c) for c in columns] if columns else DEFAULT_OPTION_COLUMNS,
                         aliases=shown.get("aliases") or {})

    def headlines(self, run_dir: Path) -> list[Headline]:
        """The headline number(s) of a run folder, with their intervals, for the report
        site's index card (one per model or system of the run)."""
        from histbench.core.runfolder import format_metric
        from histbench.eval.report import Headline

        folder = self.open_run(run_dir)
        systems = folder.system_labels
        out = []
        for metric in folder.metrics:
            if metric.get("headline"):
                run = systems.get(metric.get("system"), metric.get("system")) if metric.get("system") else folder.label
                out.append(Headline(run, metric.get("label") or metric["metric"], format_metric(metric),
                                    estimate=metric.get("estimate"), higher_is_better=metric.get("higher_is_better"),
                                    measure=metric["metric"]))
        return out

    def report_runs(self, args: argparse.Namespace) -> list[Path]:
        """The run folders a `histbench report` call reads (`args.runs`); the report site
        writes a viewer for each and links its tables to them."""
        return [Path(r) for r in args.runs]

    def add_report_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Options of `histbench report <name>`: `add_report_run_arguments` and the benchmark's own."""

    def run_report(self, args: argparse.Namespace) -> None:
        raise UsageError(f"{self.name} has no `histbench report` command")

    def report_out(self, args: argparse.Namespace) -> Path | None:
        """The folder `run_report` writes (default `--out`; None: no folder). The CLI stages
        it: `run_report` then gets `args.out` set to a temporary folder that replaces this
        one only when the report is complete (histbench.eval.report.run_report)."""
        out = getattr(args, "out", None)
        return Path(out) if out else None

    def add_commands(self, subparsers) -> None:
        """Extra top-level subcommands (each must set `func` via set_defaults)."""

    def exporters(self) -> dict[str, dict]:
        """Formats this benchmark can be exported to, for `histbench export FORMAT <name> ...`.

        {format: {"help": str, "add_arguments": f(parser), "run": f(args)}}.
        """
        return {}

    def demo(self, built: BuiltDataset, work_dir: Path, report_dir: Path) -> ReportSection | None:
        """Run the reference baselines on the sample build for `histbench demo`.

        work_dir: a scratch folder for run stores; report_dir: where figures go (link
        them relative to the report index as `<name>/<file>`). The section's `runs` lists
        the run folders it made: the demo writes a viewer for each and puts their headline
        numbers on the site's index.
        """
        return None


# --------------------------------------------------------------------------- shared options
# Every `histbench eval BENCHMARK` takes these with the same names and meaning; an
# evaluator adds them with `add_run_arguments` (and `add_baseline_argument` where it has
# baselines) rather than defining its own.


def default_dataset(benchmark: str) -> str:
    """build/<benchmark>-<version>: where `histbench build BENCHMARK` writes by default."""
    from histbench.builders.machinery.build import DEFAULT_OUT, get_builder

    return str(get_builder(benchmark).output_dir(DEFAULT_OUT))


def add_run_arguments(parser, benchmark: str, *, limit: str = "items") -> None:
    """--dataset, --revision, --label and --limit.

    limit: what --limit counts, for its help ("temporal pairs", "rows per task").
    """
    default = default_dataset(benchmark)
    parser.add_argument("--dataset", default=default, metavar="BUILD",
                        help=f"the build to score: a folder, or a Hugging Face Hub dataset id ORG/NAME "
                             f"(default: {default}, where `histbench build {benchmark}` writes)")
    parser.add_argument("--revision", metavar="REV",
                        help="with a Hub id: the tag, branch or commit to load (e.g. v1.0.0)")
    parser.add_argument("--label", help="the run's name in tables and reports (default: the model spec or the baseline)")
    parser.add_argument("--limit", type=int, metavar="N", help=f"only the first N {limit} (a quick look)")


def default_report_folder(benchmark: str) -> Path:
    """reports/<benchmark>: where `histbench report BENCHMARK` writes by default."""
    return Path("reports") / benchmark


def add_report_run_arguments(parser, benchmark: str, runs_note: str = "") -> None:
    """RUN ... (the run folders), --out, --dataset and --revision: what every `histbench
    report BENCHMARK` takes, with the same names and meaning. runs_note: what the
    benchmark adds about its runs, for the help."""
    out = default_report_folder(benchmark)
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                        help=f"run folders written by `histbench eval {benchmark}`{runs_note}")
    parser.add_argument("--out", type=Path, default=out, help=f"the report folder (default: {out})")
    parser.add_argument("--dataset", metavar="BUILD",
                        help="the build the runs were made on: a folder or a Hub dataset id ORG/NAME; a run made on "
                             "another build is refused (default: the build the first run records)")
    parser.add_argument("--revision", metavar="REV", help="with a Hub id: the tag, branch or commit to load (e.g. v1.0.0)")


def default_run_folder(benchmark: str, args: argparse.Namespace) -> Path:
    """runs/<benchmark>-<label, model or baseline>, for an evaluation given no --out."""
    name = getattr(args, "label", None)
    for candidate in (getattr(args, "model", None), getattr(args, "baseline", None)):
        if not name and candidate:
            values = [candidate] if isinstance(candidate, str) else [str(c) for c in candidate]
            name = "+".join(value.split("@", 1)[0] for value in values)  # a spec without its server or revision
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", str(name or "run")).strip("-.") or "run"
    return Path("runs") / f"{benchmark}-{slug}"


def add_baseline_argument(parser, names, what: str) -> None:
    """--baseline NAME, repeatable: reference predictors that need no model.

    what: what they are, for the help ("reference runs that need no model").
    """
    parser.add_argument(
        "--baseline", action="append", choices=list(names), metavar="NAME",
        help=f"{what}, instead of --model: {', '.join(names)}. Repeatable: each baseline is its own run "
             "(in --out, or in OUT/NAME when several are given)",
    )


def split_baselines(args: argparse.Namespace) -> list[argparse.Namespace]:
    """One namespace per run: a repeated --baseline gives one run per baseline, each in
    OUT/NAME (or the evaluator's default folder when --out is not given) and named by its
    baseline; otherwise `args` itself, with `baseline` the one name (or None)."""
    names = getattr(args, "baseline", None)
    if not isinstance(names, list):
        return [args]
    names = list(dict.fromkeys(names))
    if len(names) == 1:
        return [argparse.Namespace(**{**vars(args), "baseline": names[0]})]
    if getattr(args, "label", None):
        raise UsageError("--label names one run; with several --baseline each run is named by its baseline",
                         field="--label")
    out = getattr(args, "out", None)
    return [argparse.Namespace(**{**vars(args), "baseline": name, "out": Path(out) / name if out else None})
            for name in names]


#: options that configure a model's backend: given with --baseline (which asks no model) they
#: would be silently ignored, so they are refused
MODEL_ONLY_OPTIONS = {"model_option": "--model-option", "max_concurrency": "--max-concurrency",
                      "batch_size": "--batch-size", "threads": "--threads"}


def refuse_contradictions(args: argparse.Namespace) -> None:
    """A model's backend options beside --baseline (and no --model) are a usage error."""
    if not getattr(args, "baseline", None) or getattr(args, "model", None):
        return
    given = [flag for name, flag in MODEL_ONLY_OPTIONS.items() if getattr(args, name, None)]
    if given:
        verb = "configures" if len(given) == 1 else "configure"
        raise UsageError(f"{', '.join(given)} {verb} a model, and --baseline asks none: drop "
                         f"{', '.join(given)}, or give --model SPEC instead of --baseline", field=given[0])


def run_evaluations(evaluator: BenchmarkEvaluator, args: argparse.Namespace) -> list[argparse.Namespace]:
    """`histbench eval BENCHMARK`: `run_eval` once per run (see `split_baselines`), after
    refusing contradictory options (`refuse_contradictions`). A run whose every request the
    backend refused is an EvalError (exit 2) once all runs are done: its run folder keeps
    the refusals, and a rerun asks them again."""
    refuse_contradictions(args)
    runs = split_baselines(args)
    refused = []
    from histbench.core.runfolder import utc_now

    for run in runs:
        started = utc_now()
        evaluator.run_eval(run)
        folder = evaluator.run_folder(run)
        if folder is not None:
            if evaluator.is_own_folder(folder):
                evaluator.finish_run(folder, started)
            refused += all_refused(folder)
    if refused:
        from histbench.core.errors import EvalError

        raise EvalError(refused[0][1], file=refused[0][0], details=[f"{f}: {m}" for f, m in refused[1:]])
    return runs


def all_refused(folder: Path) -> list[tuple[Path, str]]:
    """(records file, message) for each run store under `folder` whose every request (its
    latest record per key) was refused by the backend."""
    import json

    from histbench.core.runstore import RECORDS_NAME

    found = []
    for records in sorted(Path(folder).rglob(RECORDS_NAME)) if Path(folder).is_dir() else []:
        latest: dict[str, str | None] = {}
        try:
            for line in records.read_text(encoding="utf-8").split("\n"):
                try:
                    item = json.loads(line) if line.strip() else None
                except ValueError:
                    continue   # a torn last line: the run store says so itself
                if isinstance(item, dict) and isinstance(item.get("key"), str):
                    latest[item["key"]] = item.get("error")
        except (OSError, UnicodeDecodeError):
            continue
        errors = [error for error in latest.values() if error is not None]
        if latest and len(errors) == len(latest):
            first = " ".join(str(errors[0]).split())[:300]
            found.append((records, f"every one of the {len(latest)} requests was refused by the backend, so nothing "
                                   f"was scored (first refusal: {first}); a rerun asks them again"))
    return found


def get_evaluator(benchmark: str) -> BenchmarkEvaluator:
    """The evaluator of a benchmark; an unknown name gets the list of known ones."""
    from histbench.builders.machinery.build import get_builder

    get_builder(benchmark)
    evaluator = discover_evaluators([benchmark]).get(benchmark)
    if evaluator is None:
        raise UsageError(f"{benchmark} has no evaluator")
    return evaluator


def discover_evaluators(names) -> dict[str, BenchmarkEvaluator]:
    """The evaluators of the given benchmarks, for those that have one."""
    found: dict[str, BenchmarkEvaluator] = {}
    for name in names:
        module_name = f"histbench.eval.{name}"
        if find_spec(module_name) is None:
            continue
        evaluator = getattr(importlib.import_module(module_name), "EVALUATOR", None)
        if evaluator is not None:
            found[name] = evaluator
    return found


def evaluator_of_folder(run_dir: Path, benchmark: str | None = None, *, own_files: bool = False) -> BenchmarkEvaluator:
    """The evaluator of a run folder: `benchmark`'s, or the one whose run.json names it
    (own_files: the one whose own files are in it, for folders written before the run format)."""
    from histbench.builders.machinery.build import discover_builders

    evaluators = discover_evaluators(discover_builders())
    if benchmark is not None:
        if benchmark not in evaluators:
            raise UsageError(f"unknown benchmark {benchmark!r} (known: {', '.join(sorted(evaluators))})", field="--benchmark")
        return evaluators[benchmark]
    claimed = [e for e in evaluators.values() if (e.is_own_folder(run_dir) if own_files else e.is_run_folder(run_dir))]
    if not claimed:
        if not own_files and any(e.is_own_folder(run_dir) for e in evaluators.values()):
            from histbench.core.runfolder import convert_hint

            raise UsageError(f"a run folder written before the run format; {convert_hint(run_dir)}", file=run_dir)
        raise UsageError("not a run folder of any benchmark (no run.json naming one, nor a benchmark's own run "
                         "files); give --benchmark if it is one", file=run_dir)
    if len(claimed) > 1:
        raise UsageError(f"this folder looks like a run of {', '.join(e.name for e in claimed)}; choose with --benchmark",
                         file=run_dir)
    return claimed[0]


def convert_run_folder(run_dir: Path, benchmark: str | None = None) -> tuple[str, bool]:
    """`histbench convert-run RUN`: add the run format's run.json, results.json and
    items.jsonl to a run folder written before it, from the benchmark's own files (which
    are kept; a file whose name the format now uses is first copied to the benchmark's own
    name). Returns (benchmark, whether anything was written); a folder already in the format
    is left as it is."""
    from histbench.core.paths import confine_run_folder
    from histbench.core.runfolder import is_run_folder

    run_dir = Path(run_dir).expanduser()
    if not run_dir.is_dir():
        raise UsageError("no such run folder", file=run_dir)
    confine_run_folder(run_dir)
    if is_run_folder(run_dir):
        return evaluator_of_folder(run_dir, benchmark).name, False
    evaluator = evaluator_of_folder(run_dir, benchmark, own_files=True)
    evaluator.finish_run(run_dir)
    return evaluator.name, True


def add_convert_command(subparsers) -> None:
    parser = subparsers.add_parser(
        "convert-run", help="give a run folder of an earlier histbench the run format (run.json, results.json, items.jsonl)",
        description="Add run.json, results.json and items.jsonl to run folders written before histbench had one run "
                    "format, from the files the benchmark's evaluation wrote (kept as they are). A folder already in "
                    "the format is left alone.")
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR", help="run folders of `histbench eval BENCHMARK`")
    parser.add_argument("--benchmark", help="the runs' benchmark, when it cannot be recognised from their files")

    def run(args) -> None:
        for run_dir in args.runs:
            name, written = convert_run_folder(run_dir, args.benchmark)
            print(f"{run_dir}: {'converted' if written else 'already in the run format'} ({name})")

    parser.set_defaults(func=run)
