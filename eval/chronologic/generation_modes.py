"""The free-generation modes of `histbench eval chronologic` (paper 5.2, A.1, A.2).

    --mode generate  --model SPEC --out RUN                 candidate answers (generation.py)
    --mode anchors   --judge SPEC [--partial-judge SPEC] --out ANCHORS
                                                            reliability, frozen anchors, calibration (anchors.py)
    --mode judge     --run RUN --judge SPEC --anchors ANCHORS [--partial-judge SPEC]
                                                            pass/fail and partial-credit scores (substantive.py)
    --mode style     --run RUN --reference REF.parquet --date-model DIR --authenticity-model DIR
                                                            date fidelity, error in years, authenticity (style/)

and the reporter of free-generation runs (generation_report.py). The style judges are
trained with `python -m histbench.eval.chronologic.style.train`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from histbench.core.errors import UsageError
from histbench.core.progress import log

from . import Mode
from .generation_report import REPORTERS  # noqa: F401 - picked up by the package's mode loader


def _add_generate(group) -> None:
    group.add_argument("--prompt-style", choices=("chat", "plain"), default="chat",
                       help="generate: a system and a user message (default) or system + newline + user as one plain "
                            "prompt (models without a chat template)")
    group.add_argument("--max-new-tokens", type=int, metavar="N",
                       help="generate: token budget of every answer (default: twice the requested upper length, at least 16)")
    group.add_argument("--reasoning", action="store_true",
                       help="generate: the candidate reasons before answering: budget 25000 tokens for thinking and answer")
    group.add_argument("--temperature", type=float, default=0.0, help="generate: sampling temperature (default 0 = greedy)")
    group.add_argument("--top-p", type=float, default=1.0, help="generate: nucleus sampling mass (default 1)")
    group.add_argument("--sampling-seed", type=int, help="generate: seed passed to backends that sample")
    group.add_argument("--generation-prompts", type=Path, metavar="YAML",
                       help="generate/judge/anchors: another prompt file (default: sources/chronologic/generation_prompts.yaml)")


def _add_judges(group) -> None:
    group.add_argument("--run", type=Path, metavar="RUN", help="judge/style: a free-generation run folder (--mode generate)")
    group.add_argument("--judge", metavar="SPEC", help="judge/anchors: the pass/fail judge model (e.g. api:claude-sonnet@URL)")
    group.add_argument("--partial-judge", metavar="SPEC", help="judge/anchors: the partial-credit judge (default: --judge)")
    group.add_argument("--judge-option", action="append", default=[], metavar="KEY=VALUE",
                       help="judge/anchors: backend option of the judges, repeatable (e.g. max_concurrency=16)")
    group.add_argument("--judge-effort", choices=("none", "low", "medium", "high"), default="medium",
                       help="judge/anchors: the judges' reasoning effort, which sets their token budget as the authors' "
                            "does (50 / 1024 / 4096 / 16000; default medium); pass the provider's own effort field with "
                            "--judge-option if it has one")
    group.add_argument("--anchors", type=Path, metavar="DIR", help="judge: the frozen anchors folder (--mode anchors)")
    group.add_argument("--allow-judge-mismatch", action="store_true",
                       help="judge: accept anchors built with another partial-credit judge or prompt")
    group.add_argument("--bt-prior-sd", type=float, default=1.0,
                       help="anchors: scale of the zero-sum normal prior on Bradley-Terry strengths (default 1)")
    group.add_argument("--bt-draws", type=int, default=4000, metavar="N",
                       help="anchors: importance draws of each question's Bradley-Terry posterior (default 4000)")
    group.add_argument("--calibration-weighting", choices=("class-balance", "ratio"), default="class-balance",
                       help="anchors: the authors' class-balanced fit with a 0.01 ridge (default) or the 23:1 reading "
                            "(--gt-weight-ratio)")
    group.add_argument("--gt-weight-ratio", type=float, default=23.0,
                       help="anchors, --calibration-weighting ratio: total weight of ground-truth vs distractor evidence")
    group.add_argument("--published-reliability", type=Path, metavar="JSON",
                       help="anchors: the authors' judge reliability file (llm_reliability/<judge>__<version>.json) "
                            "instead of asking the pass/fail judge")
    group.add_argument("--published-judgments", type=Path, metavar="JSONL",
                       help="anchors: the authors' judgment log (bt_artifacts/bt_judgments_<tag>.jsonl): anchors and "
                            "leave-one-out trials from it instead of the partial-credit judge")
    group.add_argument("--published-calibration", nargs="?", const="shipped", metavar="JSON",
                       help="anchors: the authors' calibration (bt_artifacts/bt_calibration_<tag>.json; without a file, "
                            "the figures shipped in sources/chronologic/published/instruments.yaml)")
    group.add_argument("--published-calibration-draws", type=Path, metavar="NPZ",
                       help="anchors: the authors' calibration draws (bt_artifacts/bt_calib_draws_<tag>.npz, array cal_b) "
                            "for the instrument layer of the bootstrap")
    group.add_argument("--bootstrap-layers", default="judgment,instrument,item",
                       help="judge: layers of the Table 7 bootstrap (default judgment,instrument,item)")


def _add_style(group) -> None:
    group.add_argument("--reference", type=Path, metavar="PARQUET",
                       help="style: reference corpus of dated authentic passages (text, date; volume for leave-one-volume-out)")
    group.add_argument("--date-model", type=Path, metavar="DIR", help="style: trained date predictor folder")
    group.add_argument("--authenticity-model", type=Path, metavar="DIR", help="style: trained authenticity detector folder")
    group.add_argument("--length-bins", type=float, nargs=5, metavar="EDGE",
                       help="style: five interior edges on log(word count) of the six length bins, for both judges "
                            "(default: the authors' frozen edges, sources/chronologic/style_length_bins.yaml)")
    group.add_argument("--min-window", type=int, default=1,
                       help="style: fewest reference passages in a window (default 1: any non-empty window)")
    group.add_argument("--null-draws", type=int, default=2000,
                       help="style: pseudo-model draws for W0 and mu0 (default 2000)")
    group.add_argument("--device", help="style: torch device (default: cuda when available)")
    group.add_argument("--style-batch-size", type=int, default=32, help="style: texts per forward pass (default 32)")
    group.add_argument("--reference-cache", type=Path, metavar="DIR",
                       help="style: where scored reference corpora are cached (default: next to the run folder)")


def _judge_backend(spec: str, args):
    from histbench.core.backends import load_backend
    from histbench.core.backends.spec import parse_option

    return load_backend(spec, dict(parse_option(text) for text in args.judge_option))


def _judges(args):
    if not args.judge:
        raise UsageError(f"--mode {args.mode} needs --judge SPEC", field="--judge")
    pass_fail = _judge_backend(args.judge, args)
    partial = pass_fail if not args.partial_judge or args.partial_judge == args.judge else _judge_backend(args.partial_judge, args)
    return pass_fail, partial


def _prompts(args):
    from .generation import load_prompts

    return load_prompts(args.generation_prompts)


def _dataset(args):
    from histbench.core.dataset import BuiltDataset

    return BuiltDataset.open(args.dataset, revision=args.revision, benchmark="chronologic")


def run_generate(args: argparse.Namespace) -> None:
    from histbench.core.backends import backend_from_args

    from .generation import RESULTS_NAME, generate

    if not args.out:
        raise UsageError("--mode generate needs --out RUN_FOLDER", field="--out")
    built = _dataset(args)
    backend = backend_from_args(args)
    try:
        result = generate(built, backend, args.out, prompts=_prompts(args), prompt_style=args.prompt_style,
                          max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p, seed=args.seed,
                          sampling_seed=args.sampling_seed, reasoning=args.reasoning, limit=args.limit,
                          permute_frames=args.permute_frames, frame_groups=args.frame_groups, label=args.label)
    finally:
        backend.close()
    counts = result["counts"]
    print(f"{counts['questions']} answers ({counts['reused']} reused, {counts['empty_answers']} empty, "
          f"{counts['truncated_answers']} cut at the token budget) -> {Path(args.out) / RESULTS_NAME}")
    print(f"signature: {result['signature']['text']}")


def _published(args):
    if not (args.published_reliability or args.published_judgments or args.published_calibration):
        return None
    from .published import PublishedInstruments

    return PublishedInstruments.load(args.published_reliability, args.published_judgments, args.published_calibration,
                                     args.published_calibration_draws)


def run_anchors(args: argparse.Namespace) -> None:
    from .anchors import build_anchors

    if not args.out:
        raise UsageError("--mode anchors needs --out ANCHORS_FOLDER", field="--out")
    built = _dataset(args)
    published = _published(args)
    needs_pass_fail = published is None or published.reliability is None
    needs_partial = published is None or published.judgments is None
    pass_fail = partial = None
    if needs_pass_fail or needs_partial:
        pass_fail, partial = _judges(args)
    try:
        result = build_anchors(built, pass_fail if needs_pass_fail else None, partial if needs_partial else None, args.out,
                               prompts=_prompts(args), prior_sd=args.bt_prior_sd, weighting=args.calibration_weighting,
                               gt_weight_ratio=args.gt_weight_ratio, judge_effort=args.judge_effort, draws=args.bt_draws,
                               seed=args.seed, limit=args.limit, published=published)
    finally:
        for backend in {id(b): b for b in (pass_fail, partial) if b is not None}.values():
            backend.close()
    pooled = result["reliability"]["pooled"]
    counts = result["counts"]
    print(f"paths (released partial_credit): {counts['pass_fail_path']} pass/fail, {counts['partial_path']} partial credit; "
          f"{len(pooled['alpha_over_threshold'])} pass/fail questions with alpha > 0.25")
    print(f"judge reliability: pooled alpha {pooled['alpha_pooled']} over {pooled['alpha_trials']} trials, "
          f"beta {pooled['beta']} over {pooled['beta_trials']} trials")
    if result["calibration"]:
        c = result["calibration"]
        print(f"calibration ({c.get('source', 'fitted')}): p_fit = sigmoid({c['intercept']:.4f} + {c['slope']:.4f} * delta), "
              f"{len(result['calibration_draws'])} bootstrap draws; Bradley-Terry prior sd {result['options']['prior_sd']}")
    else:
        print(f"calibration: none ({result['calibration_error']})")
    print(Path(args.out) / "anchors.json")


def run_judge(args: argparse.Namespace) -> None:
    from .anchors import load_anchors
    from .generation_report import generation_markdown
    from .substantive import judge_run, judged_dir

    run_dir = args.run or args.out
    if not run_dir:
        raise UsageError("--mode judge needs --run RUN_FOLDER (a --mode generate run)", field="--run")
    if not args.anchors:
        raise UsageError("--mode judge needs --anchors DIR (build them once per dataset with --mode anchors)", field="--anchors")
    built = _dataset(args)
    anchors = load_anchors(args.anchors, built)
    pass_fail, partial = _judges(args)
    layers = tuple(x.strip() for x in args.bootstrap_layers.split(",") if x.strip())
    try:
        result = judge_run(built, run_dir, pass_fail, partial, anchors, prompts=_prompts(args), seed=args.seed,
                           judge_effort=args.judge_effort, n_resamples=getattr(args, "bootstrap", 2000), layers=layers,
                           allow_judge_mismatch=args.allow_judge_mismatch)
    finally:
        pass_fail.close()
        if partial is not pass_fail:
            partial.close()
    from .generation import read_generation

    entry = {"run_dir": Path(run_dir), "generation": read_generation(run_dir), "substantive": result, "style": None}
    print(generation_markdown([entry]))
    log(f"results: {judged_dir(run_dir, pass_fail.spec)}")


def run_style(args: argparse.Namespace) -> None:
    from .style.scoring import style_run

    run_dir = args.run or args.out
    if not run_dir:
        raise UsageError("--mode style needs --run RUN_FOLDER (a --mode generate run)", field="--run")
    if not args.reference:
        raise UsageError("--mode style needs --reference PARQUET (dated authentic passages)", field="--reference")
    built = _dataset(args)
    result = style_run(built, run_dir, args.reference, date_model=args.date_model, authenticity_model=args.authenticity_model,
                       length_edges=args.length_bins, min_window=args.min_window, null_draws=args.null_draws,
                       n_resamples=getattr(args, "bootstrap", 1000), device=args.device, batch_size=args.style_batch_size,
                       cache_dir=args.reference_cache)
    for name, cell in result["scores"].items():
        print(f"{name}: {cell}")
    print(f"skipped: {result['counts']['skipped']}")


MODES = [
    Mode("generate", "free generation: the candidate answers every question (paper 5.2)", run_generate, _add_generate),
    Mode("anchors", "judge reliability, frozen Bradley-Terry anchors and calibration, once per release (A.2)", run_anchors, None),
    Mode("judge", "pass/fail and partial-credit judging of a generation run (5.2.2, A.2)", run_judge, _add_judges),
    Mode("style", "date fidelity, error in years and human authenticity of a generation run (5.2.1, A.1)", run_style, _add_style),
]
