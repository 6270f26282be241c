"""Evaluation of the Historical Italian benchmark: `histbench eval italian` and `histbench report italian`.

    histbench eval italian --model api:MODEL@URL --dataset build/italian-1.0.0 --out runs/NAME
    histbench eval italian --baseline random --dataset build/italian-1.0.0 --out runs/random
    histbench eval italian --mode likelihood --model hf:MODEL --dataset build/italian-1.0.0 --out runs/NAME-lik
    histbench report italian runs/NAME runs/random --out runs/report-italian

A model run sends one chat request per row (prompts: sources/italian/prompts.yaml, section
`eval`; greedy decoding) through the run store (`runs/NAME/records.jsonl`: resumable, an
answer is never paid twice) and writes `italian.json` (metrics per task, signature) and
`italian-items/<task>.jsonl` (per-row scoring), then the run format's run.json, results.json
and items.jsonl (run_summary.py). Metrics: see `metrics.py` and `tasks.py`.

`--mode likelihood` scores the multiple-choice form of the tasks instead (every option's
log-likelihood after the same prompt; histbench.eval.choices), as the tasks of
`histbench export lm-eval italian` (lm_eval_export.py) do in lm-evaluation-harness.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from histbench.core.errors import EvalError, UsageError
from histbench.eval.plugin import BenchmarkEvaluator, add_report_run_arguments

from .tasks import BASELINES, NER_TOKENS_PER_CHAR, TASKS


class ItalianEvaluator(BenchmarkEvaluator):
    name = "italian"
    run_module = f"{__name__}.run_summary"

    def add_commands(self, subparsers) -> None:
        """`histbench review italian BUILD --out SHEET`: the WSD review sheet (the paper's
        native-speaker review, 3.1; histbench.builders.italian.review)."""
        existing = subparsers.choices.get("review")
        if existing is None:
            existing = subparsers.add_parser("review", help="write a sheet to review a build's constructed questions",
                                             description="Write a review sheet of a build's constructed questions; "
                                                         "rebuild with --reviews SHEET to apply the decisions.")
            existing.set_defaults(_review_benchmarks=existing.add_subparsers(
                dest="review_benchmark", metavar="BENCHMARK", required=True, parser_class=type(existing)))
        benchmarks = existing.get_default("_review_benchmarks")
        parser = benchmarks.add_parser("italian", help="review the WSD questions of a Historical Italian build",
                                       description="One row per candidate of every WSD question (gold first, with the "
                                                   "context and the commentators' notes): fill decision (gold: keep, "
                                                   "correct, drop-item; distractor: keep, drop, replace), replacement, "
                                                   "reviewer, comment; then build again with --reviews SHEET.")
        parser.add_argument("build", type=Path, help="build/italian-<version>")
        parser.add_argument("--out", type=Path, required=True,
                            help="the sheet to write (.csv, .tsv or .jsonl); a sheet holding decisions is never overwritten")
        parser.add_argument("--only-unreviewed", action="store_true", help="only the questions nobody has reviewed yet")
        parser.set_defaults(func=self._review)

    @staticmethod
    def _review(args) -> None:
        from histbench.builders.italian.review import export_sheet

        stats = export_sheet(args.build, args.out, only_unreviewed=args.only_unreviewed)
        print(f"{stats['path']}: {stats['rows']} rows for {stats['questions']} WSD questions ({stats['reviewed']} reviewed, "
              f"their decisions filled in; {stats['unreviewed']} to review; {stats['dropped_questions']} dropped questions "
              "kept as rows). Fill decision, replacement, reviewer and comment, then rebuild with --reviews SHEET.")

    def add_eval_arguments(self, parser: argparse.ArgumentParser) -> None:
        from histbench.core.backends import add_model_arguments
        from histbench.eval.plugin import add_baseline_argument, add_run_arguments

        add_run_arguments(parser, "italian", limit="rows per task")
        parser.add_argument("--mode", choices=("generate", "likelihood"), default="generate",
                            help="generate (default): the model answers each prompt; likelihood: every option of the "
                                 "multiple-choice tasks (and every order of the ranking task) scored by log-likelihood "
                                 "after the same prompt, as `histbench export lm-eval italian` tasks score them "
                                 "(hf: or vllm: models)")
        parser.add_argument("--out", type=Path, help="run folder (resumable; default: runs/italian-LABEL, with -likelihood "
                                                           "for --mode likelihood)")
        parser.add_argument("--tasks", nargs="+", choices=TASKS, help="tasks to run (default: every task in the build)")
        add_baseline_argument(parser, BASELINES, "no-model baselines")
        parser.add_argument("--seed", type=int, default=0, help="seed of the random baseline")
        parser.add_argument("--ner-tokens-per-char", type=float, default=NER_TOKENS_PER_CHAR,
                            help=f"NER answer budget: tokens per letter character, at least 1500 (default {NER_TOKENS_PER_CHAR})")
        add_model_arguments(parser)

    def run_eval(self, args: argparse.Namespace) -> None:
        from histbench.core.dataset import BuiltDataset

        from .run import evaluate, evaluate_likelihood

        if bool(args.baseline) == bool(args.model):
            raise UsageError("give exactly one of --model SPEC or --baseline NAME", field="--model")
        if args.mode == "likelihood" and args.baseline:
            raise UsageError("--mode likelihood scores a model's log-likelihoods; a baseline answers without one",
                             field="--baseline")
        built = BuiltDataset.open(args.dataset, revision=args.revision, benchmark="italian")
        if args.out is None:
            from histbench.eval.plugin import default_run_folder

            args.out = default_run_folder("italian", args)
            if args.mode == "likelihood":
                args.out = args.out.with_name(args.out.name + "-likelihood")
        backend = None
        if args.model:
            from histbench.core.backends import backend_from_args

            backend = backend_from_args(args)
        try:
            if args.mode == "likelihood":
                results = evaluate_likelihood(built, args.out, backend=backend, tasks=args.tasks, limit=args.limit,
                                              label=args.label)
            else:
                results = evaluate(built, args.out, backend=backend, baseline=args.baseline, tasks=args.tasks,
                                   limit=args.limit, seed=args.seed, ner_tokens_per_char=args.ner_tokens_per_char,
                                   label=args.label)
        finally:
            if backend is not None:
                backend.close()
        from .report import results_markdown

        print(results_markdown([results]))
        print(f"\nrun folder: {args.out}")

    def add_report_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_report_run_arguments(parser, "italian")

    def run_report(self, args: argparse.Namespace) -> None:
        from histbench.core.readers import read_json_object
        from histbench.eval.report import ReportSection, write_report

        from .report import FIGURE_TITLE, results_figure, results_markdown
        from .run import OWN_RESULTS

        loaded = [read_json_object(self.open_run(run).extra(OWN_RESULTS), error=EvalError) for run in args.runs]
        text = results_markdown(loaded)
        print(text)
        if args.out:
            figures = []
            figure = results_figure(loaded, Path(args.out) / "results.png")
            if figure is not None:
                figures.append(figure)
                text += f"\n![{FIGURE_TITLE}]({figure.name})\n"
            index = write_report([ReportSection("Historical Italian", text, figures, data={"runs": loaded})], args.out,
                                 "Historical Italian benchmark")
            print(f"\nreport: {index}")

    def exporters(self) -> dict[str, dict]:
        from .lm_eval_export import EXPORTER

        return {"lm-eval": EXPORTER}

    def demo(self, built, work_dir: Path, report_dir: Path):
        from .report import demo_section

        return demo_section(built, Path(work_dir), Path(report_dir))


EVALUATOR = ItalianEvaluator()
