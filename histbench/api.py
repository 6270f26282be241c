"""The Python API: what the `histbench` command does, as functions.

Every function takes the command's options as keyword arguments, named as the command's
options with dashes as underscores (`--max-new-tokens 64` is `max_new_tokens=64`, a
repeatable option takes a list, `--model-option KEY=VALUE` also takes a dict, a flag takes
True). They are read by the command's own parser, so the two accept exactly the same
options, with the same defaults and the same checks; `histbench eval BENCHMARK --help`
lists them. Errors are the project's `HistbenchError` types, with the message the command
would print; a missing optional dependency names the extra that installs it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from os import PathLike
from pathlib import Path
from typing import Any

from histbench.core.errors import UsageError

from .run_results import Results

PathOrStr = str | PathLike


def benchmarks() -> dict[str, str]:
    """Every benchmark this histbench can build: name -> title."""
    from histbench.builders.machinery.build import discover_builders

    return {name: builder.title for name, builder in discover_builders().items()}


def build(benchmark: str, *, sample: bool = False, out: PathOrStr = "build", seed: int = 0,
          allow_checksum_mismatch: bool = False, **inputs_and_options: Any) -> Path:
    """Build a benchmark from your raw files (or its bundled sample); returns the folder
    `build/<benchmark>-<version>` (under `out`).

    Raw inputs are keyword arguments named by their role, as `histbench build BENCHMARK
    --help` lists them (`histbench.build("chronoculture", wvs="~/data/WVS.sav",
    issp=["ZA1950.sav", "ZA2900.dta"])`); the benchmark's build options likewise.
    sample=True builds the small sample bundled with histbench instead.
    """
    with _dependencies():
        parser = _parser_for("build", benchmark)
        dests = _option_dests(parser)
        options = {}
        for name, value in inputs_and_options.items():
            options[f"input_{name}" if f"input_{name}" in dests and name not in dests else name] = value
        args = _parse(["build", benchmark], parser, {
            "sample": sample, "out": out, "seed": seed, "allow_checksum_mismatch": allow_checksum_mismatch, **options,
        })
        return build_from_args(args)


def build_from_args(args: argparse.Namespace) -> Path:
    """`histbench build`: the parsed command line -> the output folder."""
    from histbench.builders.machinery.build import run_build

    builder = args.builder
    given = {role: getattr(args, f"input_{role}") for role in args.input_roles}
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
    ValidationError listing every mismatch."""
    from histbench.builders.machinery.validate import validate_build

    with _dependencies():
        return validate_build(dataset, revision=revision)


def push(folder: PathOrStr, repo_id: str, *, public: bool = False, confirm_redistribution: bool = False,
         dry_run: bool = False):
    """Upload a build folder to the Hugging Face Hub as dataset `repo_id` and tag its version.

    Private unless public=True; a public upload of a build whose sources forbid
    redistribution needs confirm_redistribution=True and is gated. Returns the PushPlan
    (files, visibility, what the sources' terms say: `plan.describe()`), with `plan.url`
    the commit's address after an upload (None for dry_run=True: nothing is sent)."""
    from histbench.builders.machinery.hub import push_build

    with _dependencies():
        return push_build(folder, repo_id, public=public, confirm_redistribution=confirm_redistribution,
                          dry_run=dry_run)


def evaluate(benchmark: str, model: str | list[str] | None = None, *, dataset: PathOrStr | None = None,
             out: PathOrStr | None = None, baseline: str | list[str] | None = None,
             **options: Any) -> Results | list[Results]:
    """Score a model (a model spec such as "hf:gpt2", "api:gpt-4o@https://api.openai.com/v1",
    "vllm:meta-llama/Llama-3.3-70B-Instruct", "offline:smollm2") or a baseline on a build,
    and return its Results (metrics, per-item records, signature); a list of them, one per
    baseline, when several baselines are given.

    dataset: the build folder or Hub id (default: build/<benchmark>-<version>); out: the run
    folder (created; an existing one is resumed, so nothing answered is asked again; default:
    the command's, as `histbench eval BENCHMARK --help` says). Other options as that help
    lists them (label, limit, revision, seed, ...).
    """
    from histbench.core.errors import EvalError
    from histbench.eval.plugin import run_evaluations

    with _dependencies():
        evaluator = _evaluator(benchmark)
        parser = _parser_for("eval", benchmark)
        args = _parse(["eval", benchmark], parser,
                      {"model": model, "dataset": dataset, "out": out, "baseline": baseline, **options})
        found = []
        for run in run_evaluations(evaluator, args):
            folder = evaluator.run_folder(run)
            if folder is None:
                raise EvalError(f"{benchmark}: the evaluation did not say which run folder it wrote")
            found.append(evaluator.results(folder))
        return found[0] if len(found) == 1 else found


def results(benchmark: str, run: PathOrStr) -> Results:
    """The Results of a run folder written earlier (by `evaluate` or `histbench eval`)."""
    with _dependencies():
        return _evaluator(benchmark).results(Path(run))


def report(benchmark: str, runs: PathOrStr | Results | Iterable[PathOrStr | Results], *,
           out: PathOrStr | None = None, **options: Any) -> Path:
    """Tables and figures from one or more runs (folders or Results), written as `histbench
    report` writes them (the report site: index.html, <benchmark>.html, a viewer of each run,
    index.md and report.json) into `out` (default reports/<benchmark>); returns that folder.
    Other options as `histbench report BENCHMARK --help` lists them."""
    if isinstance(runs, str | PathLike | Results):
        runs = [runs]
    folders = [str(run.path if isinstance(run, Results) else run) for run in runs]
    out = Path(out) if out is not None else Path("reports") / benchmark
    with _dependencies():
        evaluator = _evaluator(benchmark)
        parser = _parser_for("report", benchmark)
        args = _parse(["report", benchmark], parser, {"out": out, **options}, positionals=folders)
        from histbench.eval.report import run_report

        run_report(evaluator, args)   # as `histbench report`: staged, a site with the runs' viewers
    return out


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


@lru_cache(maxsize=1)
def _command_parser() -> argparse.ArgumentParser:
    from histbench.cli import make_parser

    return make_parser()


def _evaluator(benchmark: str):
    from histbench.builders.machinery.build import get_builder
    from histbench.eval.plugin import discover_evaluators

    get_builder(benchmark)  # an unknown name gets the list of known ones
    evaluator = discover_evaluators([benchmark]).get(benchmark)
    if evaluator is None:
        raise UsageError(f"{benchmark} has no evaluator")
    return evaluator


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _parser_for(command: str, benchmark: str) -> argparse.ArgumentParser:
    per_benchmark = _subcommands(_subcommands(_command_parser())[command])
    if benchmark not in per_benchmark:
        known = ", ".join(sorted(per_benchmark)) or "none"
        raise UsageError(f"histbench {command}: unknown benchmark {benchmark!r} (known: {known})")
    return per_benchmark[benchmark]


def _option_dests(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    found: dict[str, argparse.Action] = {}
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            found.setdefault(action.dest, action)
    return found


def _text(value: Any) -> str:
    return str(Path(value)) if isinstance(value, PathLike) else str(value)


def _values(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [f"{k}={v}" for k, v in value.items()]
    if isinstance(value, str | PathLike) or not isinstance(value, Iterable):
        return [_text(value)]
    return [_text(v) for v in value]


def _argv(parser: argparse.ArgumentParser, options: Mapping[str, Any]) -> list[str]:
    """The command-line words for keyword options, checked against the parser's options."""
    dests = _option_dests(parser)
    argv: list[str] = []
    for name, value in options.items():
        if value is None:
            continue
        action = dests.get(name)
        if action is None:
            known = ", ".join(sorted(dests))
            raise UsageError(f"{parser.prog}: no option {name!r} (options: {known})", field=name)
        flag = max(action.option_strings, key=len)
        if action.nargs == 0:  # flags: store_true / store_false / store_const
            if not isinstance(value, bool):
                raise UsageError(f"{parser.prog}: {name} is a flag: give True or False", field=name)
            # store_true / store_const: the flag sets it; store_false: the flag clears it
            if value == (action.const is not False):
                argv.append(flag)
        elif isinstance(action, argparse._AppendAction):
            argv += [f"{flag}={v}" for v in _values(value)]
        elif action.nargs not in (None, "?"):
            argv += [flag, *_values(value)]
        else:
            if not isinstance(value, str | PathLike) and isinstance(value, Iterable):
                raise UsageError(f"{parser.prog}: {name} takes one value, got {value!r}", field=name)
            argv.append(f"{flag}={_text(value)}")
    return argv


def _parse(command: list[str], parser: argparse.ArgumentParser, options: Mapping[str, Any],
           positionals: list[str] | None = None) -> argparse.Namespace:
    """Parse through the `histbench` command's own parser, exactly as the command would."""
    return _command_parser().parse_args([*command, *(positionals or []), *_argv(parser, options)])
