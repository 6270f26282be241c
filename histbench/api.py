"""The Python API: what the `histbench` command does, as functions with typed keyword
arguments. The command (histbench.cli) parses its arguments and calls these.

Every function takes the command's options as keyword arguments named as the options with
dashes as underscores (`--max-new-tokens 64` is `max_new_tokens=64`; a raw input is its role,
`--questions FILE` is `questions=FILE`; a repeatable option takes a list, `--model-option
KEY=VALUE` also takes a dict; a flag takes True or False). Both read the same declaration of
each option (histbench.options), so they accept the same options with the same defaults and
checks; `histbench eval BENCHMARK --help` lists them. Errors are the project's
`HistbenchError` types, with the message the command would print; a missing optional
dependency names the extra that installs it.

`evaluate` and `report` print nothing on standard output unless verbose=True (the command
passes True: it shows the tables); progress and notes go to standard error as always.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext, redirect_stdout
from os import PathLike
from pathlib import Path
from typing import Any

from histbench.core.errors import EvalError, UsageError
from histbench.core.results import Results

PathOrStr = str | PathLike


def benchmarks() -> dict[str, str]:
    """Every benchmark this histbench can build: name -> title."""
    from histbench.builders.machinery.build import discover_builders

    return {name: builder.title for name, builder in discover_builders().items()}


def build(benchmark: str, *, sample: bool = False, out: PathOrStr = "build", seed: int = 0,
          allow_checksum_mismatch: bool = False, **inputs_and_options: Any) -> Path:
    """Build a benchmark from your raw files (or its bundled sample); returns the folder
    `<out>/<benchmark>-<version>`.

    Raw inputs are keyword arguments named by their role, as `histbench build BENCHMARK
    --help` lists them (`histbench.build("chronoculture", wvs="~/data/WVS.sav",
    issp=["ZA1950.sav", "ZA2900.dta"])`); the benchmark's build options likewise.
    sample=True builds the small sample bundled with histbench instead.
    """
    from histbench.builders.machinery.build import get_builder, run_build
    from histbench.options import build_options

    with _dependencies():
        builder = get_builder(benchmark)
        args = build_options(benchmark).resolve({
            "sample": sample, "out": out, "seed": seed, "allow_checksum_mismatch": allow_checksum_mismatch,
            **inputs_and_options,
        })
        given = {role: getattr(args, f"input_{role}") for role in builder.manifest().inputs}
        options = builder.options_from_args(args)
        if args.sample:
            named = sorted(role for role, value in given.items() if value)
            if named:
                raise UsageError(f"give either --sample or your own files, not both (got {', '.join(named)})",
                                 field="--sample")
            given = builder.manifest().sample_paths()
            options = {**options, **builder.demo_options()}
        return run_build(builder, given, options=options, out_root=args.out, seed=args.seed,
                         allow_checksum_mismatch=args.allow_checksum_mismatch)


def load(dataset: PathOrStr, config: str, split: str | None = None, *, revision: str | None = None):
    """One config of a build, as `datasets.load_dataset(folder_or_hub_id, config)` gives it
    (a DatasetDict, or the Dataset of one split)."""
    from histbench.core.dataset import BuiltDataset

    with _dependencies():
        return BuiltDataset.open(dataset, revision=revision).load(config, split)


def validate(dataset: PathOrStr, *, revision: str | None = None) -> dict:
    """Check a build (folder or Hub id) against its histbench.json: every file's sha256,
    every row count, every row against its schema. Returns the summary; raises
    ValidationError listing every mismatch. revision (a tag, branch or commit) is for a
    Hub id only: given with a local folder, it is refused."""
    from histbench.builders.machinery.validate import validate_build

    if revision is not None and Path(dataset).exists():
        raise UsageError(f"--revision names a revision of a Hub dataset, but {dataset} is a local folder "
                         "(a folder is validated as it is)", field="--revision")
    with _dependencies():
        return validate_build(dataset, revision=revision)


def push(path: PathOrStr, repo_id: str, *, public: bool = False, confirm_redistribution_rights: bool = False,
         dry_run: bool = False):
    """Upload a build folder to the Hugging Face Hub as dataset `repo_id` and tag its version.

    Private unless public=True; a public upload of a build whose sources forbid
    redistribution (or do not say) needs confirm_redistribution_rights=True and is gated.
    A repository that exists already is read first: a public or ungated one is refused
    unless public=True (and, for restricted terms, confirm_redistribution_rights=True); a
    private one stays private. Returns the PushPlan (files, visibility, what the sources'
    terms say: `plan.describe()`), with `plan.url` the commit's address and `plan.after`
    what the repository is once uploaded (both None for dry_run=True: no Hub is asked)."""
    from histbench.builders.machinery.hub import push_build
    from histbench.options import PUSH

    args = PUSH.resolve({"path": path, "repo_id": repo_id, "public": public,
                         "confirm_redistribution_rights": confirm_redistribution_rights, "dry_run": dry_run})
    with _dependencies():
        return push_build(args.path, args.repo_id, public=args.public,
                          confirm_redistribution=args.confirm_redistribution_rights, dry_run=args.dry_run)


def evaluate(benchmark: str, model: str | list[str] | None = None, *, dataset: PathOrStr | None = None,
             out: PathOrStr | None = None, baseline: str | list[str] | None = None, verbose: bool = False,
             **options: Any) -> Results | list[Results]:
    """Score a model (a model spec such as "hf:gpt2", "api:gpt-4o@https://api.openai.com/v1",
    "vllm:meta-llama/Llama-3.3-70B-Instruct", "offline:smollm2") or a baseline on a build,
    and return its Results (metrics, per-item records, signature); a list of them, one per
    baseline, when several baselines are given.

    dataset: the build folder or Hub id (default: build/<benchmark>-<version>); out: the run
    folder (created; an existing one is resumed, so nothing answered is asked again; default:
    the command's, as `histbench eval BENCHMARK --help` says). Other options as that help
    lists them (label, limit, revision, seed, ...). verbose=True prints the tables the
    command prints.
    """
    folders = run_evaluation(benchmark, model=model, dataset=dataset, out=out, baseline=baseline,
                             verbose=verbose, **options)
    evaluator = _evaluator(benchmark)
    found = []
    with _dependencies():
        for folder in folders:
            if folder is None:
                raise EvalError(f"{benchmark}: the evaluation did not say which run folder it wrote")
            found.append(evaluator.results(folder))
    return found[0] if len(found) == 1 else found


def run_evaluation(benchmark: str, *, verbose: bool = True, **options: Any) -> list[Path | None]:
    """What `histbench eval BENCHMARK` does: score, and return the run folder of each run
    (None for a mode that writes none), without reading them back (`evaluate` does)."""
    from histbench.eval.plugin import run_evaluations
    from histbench.options import eval_options

    with _dependencies():
        evaluator = _evaluator(benchmark)
        args = eval_options(benchmark).resolve(options)
        with _output(verbose):
            runs = run_evaluations(evaluator, args)
        return [evaluator.run_folder(run) for run in runs]


def results(benchmark: str, run: PathOrStr) -> Results:
    """The Results of a run folder written earlier (by `evaluate` or `histbench eval`)."""
    from histbench.core.paths import confine_run_folder

    with _dependencies():
        return _evaluator(benchmark).results(confine_run_folder(Path(run)))


def report(benchmark: str, runs: PathOrStr | Results | Iterable[PathOrStr | Results], *,
           out: PathOrStr | None = None, verbose: bool = False, **options: Any) -> Path:
    """Tables and figures from one or more runs (folders or Results), written as `histbench
    report` writes them (the report site: index.html, <benchmark>.html, a viewer of each run,
    index.md and report.json) into `out` (default reports/<benchmark>); returns that folder.
    Other options as `histbench report BENCHMARK --help` lists them. verbose=True prints
    what the command prints."""
    from histbench.eval.report import run_report
    from histbench.options import report_options

    if isinstance(runs, str | PathLike | Results):
        runs = [runs]
    folders = [Path(run.path if isinstance(run, Results) else run) for run in runs]
    with _dependencies():
        evaluator = _evaluator(benchmark)
        args = report_options(benchmark).resolve({"runs": folders, "out": out, **options})
        written = Path(args.out)
        with _output(verbose):
            run_report(evaluator, args)   # staged: a site with the runs' viewers
        return written


# --------------------------------------------------------------------------- plumbing


@contextmanager
def _dependencies() -> Iterator[None]:
    """A missing optional dependency becomes MissingDependencyError naming its extra."""
    from histbench.core.extras import missing_dependency

    try:
        yield
    except ModuleNotFoundError as exc:
        error = missing_dependency(exc)
        if error is None:
            raise
        raise error from exc


def _output(verbose: bool):
    """Standard output as it is (verbose) or swallowed (the tables a notebook need not show)."""
    return nullcontext() if verbose else redirect_stdout(io.StringIO())


def _evaluator(benchmark: str):
    from histbench.eval.plugin import get_evaluator

    return get_evaluator(benchmark)

