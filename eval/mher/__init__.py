"""MHER evaluator: baselines, the generative protocol and the paired statistics of "When
Names Cross Scripts: A Source-Grounded Benchmark for Historical Entity Reconciliation in the
Mongol World".

    histbench eval mher --baseline table2 --dataset build/mher-1.0.0 --out runs/mher-baselines
    histbench eval mher --model api:MODEL@URL --dataset build/mher-1.0.0 --out runs/model
    histbench report mher runs/mher-baselines runs/model --out reports/mher

Modules: protocol.py (prompts, JSON contract, action rule), baselines.py (Table 2
methods, DEV-only fitting), embeddings.py (local and /embeddings API models), systems.py
(deterministic reference systems for every condition), run.py (`histbench eval mher`),
metrics.py (metrics and statistics), analysis.py (Tables 3-7 numbers), figures.py
(Figures 2-4), coding.py (Table 7's person-coded categories), run_summary.py (a run folder
in the run format: run.json, results.json, items.jsonl; viewer.py its items), report.py
(`histbench report mher`), demo.py (`make demo`). Only this light module is imported by
the CLI at start-up.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from histbench.eval.plugin import BenchmarkEvaluator


class MherEvaluator(BenchmarkEvaluator):
    name = "mher"
    run_module = f"{__name__}.run_summary"

    def add_eval_arguments(self, parser: argparse.ArgumentParser) -> None:
        from .run import add_eval_arguments

        add_eval_arguments(parser)

    def run_eval(self, args: argparse.Namespace) -> None:
        from .run import run_eval

        run_eval(args)

    def add_report_arguments(self, parser: argparse.ArgumentParser) -> None:
        from .report import add_report_arguments

        add_report_arguments(parser)

    def run_report(self, args: argparse.Namespace) -> None:
        from .report import run_report

        run_report(args)

    def demo(self, built, work_dir: Path, report_dir: Path):
        from .demo import demo

        return demo(built, Path(work_dir), Path(report_dir))


EVALUATOR = MherEvaluator()
