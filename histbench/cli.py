"""The `histbench` command: build, validate, push, eval, report, view, convert-run, demo.

Benchmarks plug in through `BUILDER` (histbench.builders.<name>) and `EVALUATOR`
(histbench.eval.<name>). This module parses the command line with argparse, from each
command's options as histbench.options declares them, and calls the Python API
(histbench.api) with what it parsed; the API resolves keyword arguments against the same
declarations, without a parser. Any `HistbenchError`
is printed as one line (plus its detail lines, if any) and the exit status is 2; so is a
missing optional dependency, with the extra that installs it.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from histbench import api
from histbench.core.errors import HistbenchError, UsageError

EXIT_ERROR = 2


_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<word>[^']*)' \(choose from (?P<known>.*)\)$")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit status 2, and a misspelt
    choice (a benchmark, a command, a --mode) gets the closest one ("did you mean")."""

    def error(self, message: str):  # noqa: D401 - argparse API
        from histbench.core.suggest import did_you_mean

        found = _INVALID_CHOICE.search(message)
        if found:
            known = [k.strip().strip("'") for k in found["known"].split(",")]
            message += did_you_mean(found["word"], known)
        raise UsageError(f"{self.prog}: {message} (see --help)")


def _leaf_parser(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The (sub)command parser that `argv` reaches: `eval chronologic ...` -> that benchmark's."""
    for word in argv:
        if word.startswith("-"):
            continue
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not actions or word not in actions[0].choices:
            break
        parser = actions[0].choices[word]
    return parser


def _unknown_options_hint(parser: argparse.ArgumentParser, argv: list[str], error: UsageError) -> UsageError:
    """"unrecognized arguments: --modle x" -> the same with "did you mean '--model'?", from the
    options of the subcommand the words reached (the top parser reports them but knows only its own)."""
    from histbench.core.suggest import closest

    if "unrecognized arguments:" not in error.message:
        return error
    leaf = _leaf_parser(parser, argv)
    known = [flag for action in leaf._actions for flag in action.option_strings if flag.startswith("--")]
    hints = []
    for word in argv:
        if word.startswith("--"):
            name = word.split("=", 1)[0]
            match = None if name in known else closest(name, known)
            if match:
                hints.append(f"{name}: did you mean {match!r}?")
    if not hints:
        return error
    return UsageError(f"{error.message.removesuffix(' (see --help)')} ({'; '.join(hints)}; see --help)")


def _add_build(subparsers, builders) -> None:
    from histbench.options import build_options

    build = subparsers.add_parser(
        "build", help=COMMANDS["build"],
        description="Build a benchmark from your raw files into build/<benchmark>-<version>/.",
    )
    per_benchmark = build.add_subparsers(dest="benchmark", metavar="BENCHMARK", parser_class=_Parser, required=True)
    for name, builder in builders.items():
        parser = per_benchmark.add_parser(name, help=builder.title, description=f"Build {builder.title}.")
        options = build_options(name)
        options.add_to(parser)
        parser.set_defaults(func=lambda args, o=options: print(api.build(args.benchmark, **o.keywords(args))))


def _run_validate(args) -> None:
    result = api.validate(args.path, revision=args.revision)
    rows = sum(sum(splits.values()) for splits in result["rows"].values())
    print(f"ok: {result['benchmark']} {result['version']} at {result['path']} ({rows:,} rows, every file and row checked)")


def _run_push(args) -> None:
    from histbench.options import PUSH

    plan = api.push(**PUSH.keywords(args))
    print(plan.describe())
    if plan.url:
        print(f"uploaded ({plan.visibility}): {plan.url}")


def _run_demo(args) -> None:
    from histbench.demo import run_demo

    index = run_demo(out_root=args.out, only=args.only)
    print(index)


def _evaluator_parsers(subparsers, evaluators, builders) -> None:
    from histbench.options import eval_options, report_options

    eval_parser = subparsers.add_parser("eval", help=COMMANDS["eval"])
    per_eval = eval_parser.add_subparsers(dest="benchmark", metavar="BENCHMARK", parser_class=_Parser, required=True)
    report_parser = subparsers.add_parser("report", help=COMMANDS["report"])
    per_report = report_parser.add_subparsers(dest="benchmark", metavar="BENCHMARK", parser_class=_Parser, required=True)
    for name in evaluators:
        title = builders[name].title
        parser = per_eval.add_parser(name, help=f"score models on {title}", description=f"Score models on {title}.")
        options = eval_options(name)
        options.add_to(parser)
        parser.set_defaults(func=lambda args, o=options: api.run_evaluation(args.benchmark, verbose=True,
                                                                           **o.keywords(args)))
        parser = per_report.add_parser(name, help=f"tables and figures from {name} runs",
                                       description=f"Tables and figures from runs of `histbench eval {name}`.")
        options = report_options(name)
        options.add_to(parser)
        parser.set_defaults(func=lambda args, o=options: api.report(args.benchmark, verbose=True, **o.keywords(args)))
    for evaluator in evaluators.values():
        evaluator.add_commands(subparsers)
    _add_export(subparsers, evaluators)


def _add_export(subparsers, evaluators) -> None:
    """`histbench export FORMAT BENCHMARK ...` from every evaluator's `exporters()`."""
    by_format: dict[str, dict[str, dict]] = {}
    for name, evaluator in evaluators.items():
        for fmt, spec in evaluator.exporters().items():
            by_format.setdefault(fmt, {})[name] = spec
    if not by_format:
        return
    export = subparsers.add_parser(
        "export", help=COMMANDS["export"],
        description="Write a built benchmark in another tool's format.",
    )
    formats = export.add_subparsers(dest="export_format", metavar="FORMAT", parser_class=_Parser, required=True)
    for fmt in sorted(by_format):
        fmt_parser = formats.add_parser(fmt, help=f"export as {fmt} ({', '.join(sorted(by_format[fmt]))})")
        benchmarks = fmt_parser.add_subparsers(dest="export_benchmark", metavar="BENCHMARK",
                                               parser_class=_Parser, required=True)
        for name in sorted(by_format[fmt]):
            spec = by_format[fmt][name]
            parser = benchmarks.add_parser(name, help=spec["help"], description=spec["help"])
            spec["add_arguments"](parser)
            parser.set_defaults(func=spec["run"])


#: the commands in the order of `histbench --help`, with their one-line help (the parsers
#: below are made with these; the shallow parser lists them without importing a benchmark)
COMMANDS: dict[str, str] = {
    "build": "build a benchmark dataset from raw source files",
    "validate": "check a built folder (or Hub dataset) against its histbench.json",
    "push": "upload a built folder to the Hugging Face Hub and tag its version",
    "eval": "score a model (or baselines) on a built benchmark",
    "report": "tables and figures from one or more evaluation runs",
    "view": "an offline HTML page of one run's items: prompts, answers, parsing, gold and scores",
    "convert-run": "give a run folder of an earlier histbench the run format (run.json, results.json, items.jsonl)",
    "export": "write a built benchmark in another tool's format (e.g. an lm-evaluation-harness task)",
    "demo": "build every benchmark from its bundled sample, check it, run baselines, write build/report/",
}


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    from histbench.core.version import histbench_version

    parser = _Parser(
        prog="histbench",
        description="Rebuild published benchmarks about the past from your licensed raw files, "
        "and score language models on them as the papers did.",
    )
    parser.add_argument("--version", action="version", version=f"histbench {histbench_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, required=True)
    return parser, subparsers


def shallow_parser() -> argparse.ArgumentParser:
    """The top-level parser alone (`histbench --help`, `--version`, no command): every
    command listed with its help, in make_parser's order, without importing a builder (the
    benchmarks' packages are listed, not imported; their evaluators, which are light, add
    their own commands). tests/core/test_cli_consistency.py checks its help equals
    make_parser()'s."""
    import pkgutil

    import histbench.builders as root
    from histbench.eval.plugin import discover_evaluators

    names = sorted(m.name for m in pkgutil.iter_modules(root.__path__)
                   if m.ispkg and m.name != "machinery" and not m.name.startswith("_"))
    evaluators = discover_evaluators(names)
    parser, subparsers = _top_parser()
    for name in ("build", "validate", "push", "eval", "report"):
        subparsers.add_parser(name, help=COMMANDS[name])
    for evaluator in evaluators.values():
        evaluator.add_commands(subparsers)
    if any(evaluator.exporters() for evaluator in evaluators.values()):
        subparsers.add_parser("export", help=COMMANDS["export"])
    for name in ("view", "convert-run", "demo"):
        subparsers.add_parser(name, help=COMMANDS[name])
    return parser


def make_parser() -> argparse.ArgumentParser:
    from histbench.builders.machinery.build import discover_builders
    from histbench.eval.plugin import discover_evaluators
    from histbench.options import PUSH, VALIDATE

    builders = discover_builders()
    evaluators = discover_evaluators(builders)
    parser, subparsers = _top_parser()
    _add_build(subparsers, builders)

    validate = subparsers.add_parser("validate", help=COMMANDS["validate"])
    VALIDATE.add_to(validate).set_defaults(func=_run_validate)
    push = subparsers.add_parser("push", help=COMMANDS["push"])
    PUSH.add_to(push).set_defaults(func=_run_push)

    _evaluator_parsers(subparsers, evaluators, builders)
    from histbench.eval.viewer import add_view_command

    add_view_command(subparsers)
    from histbench.eval.plugin import add_convert_command

    add_convert_command(subparsers)

    demo = subparsers.add_parser("demo", help=COMMANDS["demo"])
    demo.add_argument("--out", type=Path, default=Path("build"), help="output root (default: build/)")
    demo.add_argument("--only", nargs="+", metavar="BENCHMARK", help="limit the demo to these benchmarks")
    demo.set_defaults(func=_run_demo)
    return parser


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(action.choices)


def _print_error(error: HistbenchError) -> None:
    from histbench.core.secrets import redact

    # a URL's user part and secret query values, and every credential this process read, never reach stderr
    print(redact(f"histbench: error: {error}"), file=sys.stderr)
    for line in error.details:
        print(redact(f"  - {line}"), file=sys.stderr)


def _per_benchmark(argv: list[str]) -> list[list[str]]:
    """`eval a,b,c OPTIONS`: one argument list per benchmark (as lm-evaluation-harness's
    `--tasks a,b`), each with the same options; a given --out becomes OUT/<benchmark>, since
    one run folder holds one benchmark's run. Any other command line is itself."""
    if len(argv) < 2 or argv[0] != "eval" or "," not in argv[1]:
        return [argv]
    names = [name.strip() for name in argv[1].split(",")]
    if any(not name for name in names) or len(set(names)) != len(names):
        raise UsageError(f"histbench eval: {argv[1]!r}: give benchmarks separated by commas, each once", field="BENCHMARK")
    for word in argv[2:]:
        flag = word.split("=", 1)[0]
        if flag in ("--dataset", "--revision", "--label"):
            raise UsageError(f"{flag} names one benchmark's build or run; with several benchmarks each scores its "
                             "default build (build/<benchmark>-<version>): give one benchmark at a time to choose",
                             field=flag)
    out = []
    for name in names:
        rest = list(argv[2:])
        for k, word in enumerate(rest):
            if word == "--out" and k + 1 < len(rest):
                rest[k + 1] = str(Path(rest[k + 1]) / name)
            elif word.startswith("--out="):
                rest[k] = "--out=" + str(Path(word.split("=", 1)[1]) / name)
        out.append(["eval", name, *rest])
    return out


def main(argv: list[str] | None = None) -> int:
    from histbench.core.signals import Terminated, signals_as_interrupts

    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        with signals_as_interrupts():   # SIGTERM/SIGHUP end the command as Ctrl-C does: staging removed
            top_level = not argv or argv[0] in ("-h", "--help", "--version")
            parser = shallow_parser() if top_level else make_parser()
            if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
                raise UsageError(f"histbench: unknown option {argv[0]}: give a command first "
                                 f"({', '.join(_commands(parser))}; see --help)")
            calls = []
            for one in _per_benchmark(argv):   # `eval a,b ...`: every call parsed before any runs
                try:
                    calls.append(parser.parse_args(one))
                except UsageError as error:
                    raise _unknown_options_hint(parser, one, error) from None
            for args in calls:
                if len(calls) > 1:
                    print(f"== histbench eval {args.benchmark}", flush=True)
                args.func(args)
    except HistbenchError as error:
        _print_error(error)
        return EXIT_ERROR
    except ModuleNotFoundError as exc:
        from histbench.core.extras import missing_dependency

        error = missing_dependency(exc)
        if error is None:
            raise
        _print_error(error)
        return EXIT_ERROR
    except OSError as exc:   # a file the system refused (permission, read-only, disk full ...): one line
        from histbench.core.errors import from_os_error

        _print_error(from_os_error(exc))
        return EXIT_ERROR
    except Terminated as stop:
        print(f"histbench: stopped by {stop.name} (completed work is kept; rerun to resume)", file=sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:
        print("histbench: interrupted (completed work is kept; rerun to resume)", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
