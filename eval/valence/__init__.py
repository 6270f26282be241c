"""Evaluator for temporal valence (Cuscito, Ferrara and Ruskov 2024): fill-mask runs, the annotation loop, beta and delta.

    histbench eval valence --model hf:bert-base-uncased --model macberth=hf:emanjavacas/MacBERTh \\
        --top-k 10 --dataset build/valence-1.0.0 --out runs/valence
    histbench valence export-vocabulary runs/valence --out to_annotate.csv
    histbench valence import-annotations runs/valence annotated.csv [more.csv ...]
    histbench valence auto-sigma runs/valence --early early/ --modern modern/ [--import]
    histbench report valence runs/valence
    histbench valence package runs/valence --out build/valence-run-1.0.0

See run.py (predictions), vocabulary.py (export/import), metrics.py (beta, delta, what is
scored), scoring.py, reporting.py (tables and figures), autosigma.py, runfolder.py (files).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from histbench.core.errors import EvalError, UsageError
from histbench.eval.plugin import BenchmarkEvaluator, add_report_run_arguments


def _add_score_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("scoring")
    group.add_argument(
        "--probabilities", choices=("raw", "renormalised"), default="raw",
        help="which beta/delta the report leads with: raw softmax probabilities (the paper's, default) or "
        "renormalised over the scored top-k words; both are always in scores.csv",
    )
    group.add_argument(
        "--conflicts", default="mean", metavar="POLICY",
        help="when annotators disagree: mean (default), error, or prefer:NAME",
    )
    group.add_argument(
        "--sigma-source", choices=("manual", "automatic", "manual+automatic"), default="manual",
        help="which annotations give sigma (default manual; automatic = auto-sigma values)",
    )
    group.add_argument(
        "--allow-unannotated", action="store_true",
        help="score (model, sentence) pairs whose top-k holds unannotated words over the annotated ones "
        "(default: no beta for them, listed as incomplete)",
    )
    group.add_argument("--plot", choices=("box", "violin"), default="box", help="Figures 1-2 style (default box)")
    group.add_argument("--examples", nargs="+", metavar="SENTENCE_ID", help="sentences shown as Tables 1-3 (default: the first of each group)")
    group.add_argument("--no-vocabulary-check", action="store_true",
                       help="skip loading each model's tokenizer to count the predicted words it cannot produce")
    group.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="bootstrap resamples for intervals (default 1000)")
    group.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")


def _score_options(args: argparse.Namespace, fold_case: bool):
    from .scoring import ScoreOptions

    policy = args.conflicts
    if policy not in ("mean", "error") and not (policy.startswith("prefer:") and len(policy) > len("prefer:")):
        raise UsageError(f"--conflicts {policy!r}: use mean, error or prefer:NAME", field="--conflicts")
    if args.bootstrap < 1:
        raise UsageError("--bootstrap must be at least 1", field="--bootstrap")
    return ScoreOptions(
        mode=args.probabilities, conflicts=policy, sigma_source=args.sigma_source,
        allow_unannotated=args.allow_unannotated, fold_case=fold_case, bootstrap=args.bootstrap, seed=args.seed,
    )


def score_folder(run, options):
    """Scores of a run folder (raises a clear error when nothing can be scored yet)."""
    from .scoring import score_run

    predictions = run.predictions()
    if not predictions:
        raise EvalError("this run holds no predictions: run `histbench eval valence` first", file=run.path)
    annotations = run.annotations()
    if not annotations:
        raise EvalError(
            "this run holds no annotations: `histbench valence export-vocabulary RUN --out to_annotate.csv`, "
            "annotate, then `histbench valence import-annotations RUN to_annotate.csv` (or auto-sigma)", file=run.path,
        )
    methods = {a["method"] for a in annotations}
    wanted = {"manual": {"manual"}, "automatic": {"automatic"}, "manual+automatic": {"manual", "automatic"}}[options.sigma_source]
    if not methods & wanted:
        raise EvalError(
            f"this run holds only {', '.join(sorted(methods))} annotations, none for --sigma-source "
            f"{options.sigma_source}; use --sigma-source {'automatic' if methods == {'automatic'} else 'manual'} "
            "or import annotations", file=run.annotations_path,
        )
    try:
        return score_run(run.sentences(), predictions, annotations, options, groups=run.manifest.get("groups"))
    except ValueError as exc:
        raise EvalError(str(exc), file=run.annotations_path) from exc


class ValenceEvaluator(BenchmarkEvaluator):
    name = "valence"
    run_module = f"{__name__}.run_summary"

    # -- histbench eval valence ------------------------------------------------------------

    def add_eval_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.description = (
            "Top-k fill-mask predictions of one or more masked LMs on a valence build, stored in a run "
            "folder (resumable). Then annotate the predicted words (histbench valence export-vocabulary / "
            "import-annotations) and run `histbench report valence RUN`."
        )
        from histbench.eval.plugin import add_run_arguments

        add_run_arguments(parser, "valence", limit="sentences (use a run folder of its own)")
        parser.add_argument("--out", type=Path, default=Path("runs/valence"), help="run folder (default runs/valence)")
        parser.add_argument("--top-k", type=int, default=10, help="fillers per sentence and model (default 10)")
        group = parser.add_argument_group("models")
        group.add_argument(
            "--model", action="append", default=[], metavar="[LABEL=]SPEC",
            help="a masked LM, repeatable: hf:PATH_OR_ID[@REV]; LABEL names it in tables (default: its name)",
        )
        group.add_argument("--model-option", action="append", default=[], metavar="KEY=VALUE",
                           help="backend option for every model, repeatable (e.g. device=cpu, dtype=float32)")
        group.add_argument("--batch-size", type=int, default=None, metavar="N", help="sentences per forward pass")

    def run_eval(self, args: argparse.Namespace) -> None:
        from histbench.core.backends.spec import options_from_args

        from .run import ModelSpec, evaluate, parse_model_specs

        models = parse_model_specs(args.model)
        if args.label:
            if len(models) != 1:
                raise UsageError("--label names the one model of a run; name several with --model LABEL=SPEC",
                                 field="--label")
            models = [ModelSpec(args.label, models[0].spec)]
        options = options_from_args(args)
        result = evaluate(args.dataset, models, args.out, top_k=args.top_k, options=options, revision=args.revision,
                          limit=args.limit)
        from .runfolder import RunFolder
        from .vocabulary import annotated_keys, free_sheet_name, predicted_vocabulary

        run = RunFolder.open(args.out)
        for label, info in result["models"].items():
            kinds = info["kinds"]
            print(f"{label}: {info['sentences']} sentences ({info['asked']} asked, {info['reused']} reused, "
                  f"{info['failed']} failed); top-{args.top_k} fillers: {kinds['word']} whole words, "
                  f"{kinds['subword']} sub-word pieces, {kinds['special']} special tokens")
            for sentence_id, error in info["failures"]:
                print(f"  failed: sentence {sentence_id}: {error}")
        vocabulary, _ = predicted_vocabulary(run)
        total = sum(len(v) for v in vocabulary.values())
        done = annotated_keys(run)
        missing = sum(1 for sid, words in vocabulary.items() for key in words if (sid, key) not in done)
        print(f"predictions: {run.predictions_path} ({result['predictions']} rows)")
        if result["copied_annotations"]:
            print(f"annotations from the build copied into the run: {result['copied_annotations']['rows']} rows")
        print(f"vocabulary to annotate: {total} sentence x word pairs, {missing} without a manual annotation")
        if missing:
            sheet = free_sheet_name(Path.cwd())
            print(f"next: histbench valence export-vocabulary {run.path} --out {sheet.name}"
                  f"{' --only-missing' if missing < total else ''}")
        else:
            print(f"next: histbench report valence {run.path}")

    # -- histbench report valence -------------------------------------------------------------

    def add_report_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.description = "Bias beta and adequacy delta per model and group, Tables 1-3 and Figures 1-3 style."
        add_report_run_arguments(parser, "valence", " (one: its models are compared with each other)")
        _add_score_arguments(parser)

    def run_report(self, args: argparse.Namespace) -> None:
        from histbench.eval.report import write_report

        from .reporting import build_section
        from .runfolder import RunFolder

        if len(args.runs) != 1:
            raise UsageError(f"histbench report valence reads one run folder (its models are compared with each "
                             f"other), got {len(args.runs)}: report each run on its own", field="RUN")
        run = RunFolder.open(args.runs[0])
        scores = score_folder(run, _score_options(args, run.fold_case))
        out = args.out
        from .coverage import vocabulary_coverage

        coverage = None if args.no_vocabulary_check else vocabulary_coverage(run.models, scores.candidates)
        section = build_section(scores, run.sentences(), out, plot=args.plot, examples=args.examples,
                                title="Temporal valence of masked LMs", coverage=coverage)
        index = write_report([section], out, f"Temporal valence: {run.path.name}")
        print(index)

    # -- histbench valence ... -------------------------------------------------------------------

    def add_commands(self, subparsers) -> None:
        valence = subparsers.add_parser("valence", help="temporal valence: annotation loop and packaging of runs")
        commands = valence.add_subparsers(dest="valence_command", metavar="COMMAND", required=True,
                                          parser_class=type(valence))

        export = commands.add_parser("export-vocabulary", help="predicted words per sentence, for annotation (CSV)")
        export.add_argument("run", type=Path)
        export.add_argument("--out", type=Path, required=True,
                            help="the sheet to write (.csv, .tsv or .jsonl); a file holding annotations is never overwritten")
        export.add_argument("--only-missing", action="store_true", help="only words without a manual annotation yet")
        export.add_argument("--prefill", nargs="?", const=True, default=None, metavar="ANNOTATOR",
                            help="fill the rows with the values ANNOTATOR gave so far (default: the run's only manual "
                            "annotator), to review and revise them; importing the sheet again replaces them")
        export.set_defaults(func=self._export)

        imp = commands.add_parser("import-annotations", help="check and store annotated sheets (sigma per sentence x word)")
        imp.add_argument("run", type=Path)
        imp.add_argument("files", type=Path, nargs="+", help="annotated CSV/TSV/JSONL files")
        imp.add_argument("--annotator", help="annotator name for files without an 'annotator' column")
        imp.add_argument("--partial", action="store_true", help="store even if some predicted words are still unannotated")
        imp.add_argument("--allow-extra", action="store_true", help="keep rows for words no model of the run predicted")
        imp.set_defaults(func=self._import)

        auto = commands.add_parser("auto-sigma", help="automatic sigma from an early vs a modern corpus (labelled automatic)")
        auto.add_argument("run", type=Path)
        auto.add_argument("--early", type=Path, nargs="+", default=[], help="early-period corpus: .txt files/folders or tables with 'text'")
        auto.add_argument("--modern", type=Path, nargs="+", default=[], help="modern-period corpus")
        auto.add_argument("--dated", type=Path, help="one table with 'year' and 'text' columns (instead of --early/--modern)")
        auto.add_argument("--split-year", type=int, help="with --dated: years before this are early")
        auto.add_argument("--min-count", type=int, default=5, help="skip words seen fewer times in both corpora (default 5)")
        auto.add_argument("--out", type=Path, default=None, help="sheet to write (default RUN/auto_sigma.csv)")
        auto.add_argument("--import", dest="do_import", action="store_true", help="also import the values into the run")
        auto.set_defaults(func=self._auto_sigma)

        package = commands.add_parser("package", help="write a run as a versioned dataset (sentences, predictions, annotations)")
        package.add_argument("run", type=Path)
        package.add_argument("--out", type=Path, default=None, help="dataset folder (default build/valence-run-<version>)")
        package.set_defaults(func=self._package)

    def _export(self, args) -> None:
        from .runfolder import RunFolder
        from .vocabulary import export_vocabulary

        stats = export_vocabulary(RunFolder.open(args.run), args.out, only_missing=args.only_missing, prefill=args.prefill)
        left_out = ", ".join(f"{n} {k}" for k, n in sorted(stats["not_whole_words_left_out"].items())) or "none"
        print(f"{stats['path']}: {stats['rows']} sentence x word rows for {stats['sentences']} sentences "
              f"(predictions that are not whole words, never scored, left out: {left_out})")
        if args.only_missing:
            print(f"left out as already annotated: {stats['already_annotated_left_out']} sentence x word pairs")
        if args.prefill:
            print(f"pre-filled with the values of {stats['prefilled_by']}: {stats['prefilled']} rows "
                  f"({stats['rows'] - stats['prefilled']} still blank)")

    def _import(self, args) -> None:
        from .runfolder import RunFolder
        from .vocabulary import free_sheet_name, import_annotations

        run = RunFolder.open(args.run)
        result = import_annotations(run, args.files, annotator=args.annotator, partial=args.partial, allow_extra=args.allow_extra)
        for f in result["files"]:
            extra = f" (columns not used: {', '.join(f['ignored_columns'])})" if f["ignored_columns"] else ""
            blank = f" {f['blank']} rows not annotated yet (left for later)," if f.get("blank") else ""
            print(f"{f['file']}: {f['annotations']} annotations ({f['skipped']} skipped) by "
                  f"{', '.join(f['annotators']) or 'nobody'};{blank} exact duplicates dropped: "
                  f"{f['exact_duplicates_dropped']}{extra}")
        print(f"stored {run.annotations_path}: {result['total']} rows ({result['added']} imported, {result['replaced']} replaced)")
        self.finish_run(run.path)   # results.json and items.jsonl scored with the new annotations
        if result["missing"]:
            print(f"still unannotated (--partial): {len(result['missing'])} sentence x word pairs, e.g. "
                  + ", ".join(f"{s}/{t}" for s, t in result["missing"][:5]))
            print(f"next: histbench valence export-vocabulary {run.path} --only-missing --out "
                  f"{free_sheet_name(Path.cwd()).name}")
        agreement = result["agreement"]
        if agreement["pairs_with_several_annotators"]:
            print(f"annotators: {', '.join(agreement['annotators'])}; {agreement['pairs_with_several_annotators']} pairs "
                  f"annotated by several, exact agreement {agreement['exact_agreement']:.1%}")
        if result["conflicts"]:
            print(f"conflicts between annotators: {len(result['conflicts'])} (all in {run.path / 'conflicts.csv'}):")
            for c in result["conflicts"][:20]:
                values = ", ".join(f"{a}={v if v == 'skip' else f'{v:g}'}" for a, v in c["values"].items())
                print(f"  {c['sentence_id']} / {c['token']}: {values}")

    def _auto_sigma(self, args) -> None:
        from histbench.core.sheets import sheet_text

        from .autosigma import automatic_sigmas, count_corpus, count_dated
        from .runfolder import RunFolder
        from .vocabulary import import_annotations, predicted_vocabulary

        run = RunFolder.open(args.run)
        if args.dated:
            if args.split_year is None:
                raise UsageError("--dated needs --split-year", field="--split-year")
            early, modern, _ = count_dated(args.dated, args.split_year, run.fold_case)
        else:
            if not args.early or not args.modern:
                raise UsageError("give --early and --modern corpora (or --dated with --split-year)")
            early, modern = count_corpus(args.early, run.fold_case), count_corpus(args.modern, run.fold_case)
        vocabulary, _ = predicted_vocabulary(run)
        rows = automatic_sigmas(vocabulary, run.sentences(), early, modern, run.scale(),
                                min_count=args.min_count, fold_case=run.fold_case)
        out = args.out or (run.path / "auto_sigma.csv")
        Path(out).write_text(sheet_text(list(rows[0].keys()) if rows else ["sentence_id"], rows),
                             encoding="utf-8", newline="")
        skipped = sum(1 for r in rows if r["skip"])
        print(f"{out}: {len(rows)} automatic sigma values ({skipped} skipped as too rare); "
              f"early corpus {sum(early.values())} words, modern {sum(modern.values())} words")
        if args.do_import:
            result = import_annotations(run, [Path(out)], method="automatic")
            self.finish_run(run.path)
            print(f"imported as method 'automatic' ({result['added']} rows); report with --sigma-source automatic "
                  "or manual+automatic")

    def _package(self, args) -> None:
        from .package import package_run
        from .runfolder import RunFolder

        print(package_run(RunFolder.open(args.run), args.out))

    # -- make demo ------------------------------------------------------------------------------

    def demo(self, built, work_dir: Path, report_dir: Path):
        from .demo import run_demo

        return run_demo(built, Path(work_dir), Path(report_dir))


EVALUATOR = ValenceEvaluator()
