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
from abc import ABC
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from histbench.builders.core.errors import UsageError

if TYPE_CHECKING:
    from histbench.builders.core.dataset import BuiltDataset
    from histbench.eval.report import ReportSection


class BenchmarkEvaluator(ABC):
    name: ClassVar[str]

    def add_eval_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Options of `histbench eval <name>`."""

    def run_eval(self, args: argparse.Namespace) -> None:
        raise UsageError(f"{self.name} has no `histbench eval` command")

    def add_report_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Options of `histbench report <name>`."""

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
        them relative to the report index as `<name>/<file>`).
        """
        return None


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
