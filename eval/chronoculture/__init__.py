"""ChronoCulture evaluator (Saha et al. 2026): predicted response distributions against survey change.

    histbench eval chronoculture --model api:gpt-4o@https://api.openai.com/v1 --dataset build/chronoculture-1.0.0 --out runs/gpt4o
    histbench eval chronoculture --baseline uniform --dataset build/chronoculture-1.0.0 --out runs/uniform
    histbench report chronoculture runs/gpt4o runs/llama --out reports/chronoculture

Modules: parsing.py (B.1 output parser), metrics.py (pure vectorised metrics), data.py
(the build and a run's predictions as arrays; reference predictors), analysis.py (every
cell of one run with bootstrap intervals), breakdowns.py (topics and regions, Kendall's
W), run.py (`histbench eval`), run_summary.py (the run folder's run.json, results.json
and items.jsonl, with viewer.py's items), reporting.py and figures.py (`histbench report`).
Only light modules are imported here; the work happens in the command functions.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from histbench.eval.plugin import BenchmarkEvaluator, add_report_run_arguments


class ChronoCultureEvaluator(BenchmarkEvaluator):
    name = "chronoculture"
    run_module = f"{__name__}.run_summary"

    def add_eval_arguments(self, parser: argparse.ArgumentParser) -> None:
        from .run import add_eval_arguments

        add_eval_arguments(parser)

    def run_eval(self, args: argparse.Namespace) -> None:
        from .run import run_eval

        run_eval(args)

    def add_report_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_report_run_arguments(parser, "chronoculture", " (the same label twice: repeated runs, F.3)")
        parser.add_argument("--retention", type=float, default=None,
                            help="knowledge-filter retention for every model run (default: 0.75 as in 4.1; runs on a "
                                 "--sample are analysed without the filter, as F.3 does)")
        parser.add_argument("--min-pairs", type=int, default=20,
                            help="pairs a topic or region cell needs (default 20, as in C.4)")
        parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples over temporal pairs (default 1000)")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
        parser.add_argument("--no-references", action="store_true",
                            help="leave out the uniform and static references of C.1 under each model")

    def run_report(self, args: argparse.Namespace) -> None:
        from .reporting_cli import run_report

        run_report(args)

    def exporters(self) -> dict[str, dict]:
        from .lm_eval_export import EXPORTER

        return {"lm-eval": EXPORTER}

    def demo(self, built, work_dir: Path, report_dir: Path):
        from .reporting_cli import demo

        return demo(built, Path(work_dir), Path(report_dir))


EVALUATOR = ChronoCultureEvaluator()
