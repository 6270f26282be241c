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

from histbench.builders.core.errors import UsageError
from histbench.builders.core.progress import log

from . import Mode
from .generation_report import REPORTERS  # noqa: F401 - picked up by the package's mode loader


def _add_generate(group) -> None:
    group.add_argument("--prompt-style", choices=("chat", "plain"), default="chat",
                       help="generate: chat messages (default) or one plain prompt ending in 'Answer:' (base models)")
    group.add_argument("--max-new-tokens", type=int, metavar="N",
                       help="generate: token budget of every answer (default: by answer_length, 64/128/700)")
    group.add_argument("--temperature", type=float, default=0.0, help="generate: sampling temperature (default 0 = greedy)")
    group.add_argument("--top-p", type=float, default=1.0, help="generate: nucleus sampling mass (default 1)")
    group.add_argument("--sampling-seed", type=int, help="generate: seed passed to backends that sample")
    group.add_argument("--system-prompt", help="generate: a system message before every question (default: none)")
    group.add_argument("--generation-prompts", type=Path, metavar="YAML",
                       help="generate/judge/anchors: another prompt file (default: eval/chronologic/generation_prompts.yaml)")


def _add_judges(group) -> None:
    group.add_argument("--run", type=Path, metavar="RUN", help="judge/style: a free-generation run folder (--mode generate)")
    group.add_argument("--judge", metavar="SPEC", help="judge/anchors: the pass/fail judge model (e.g. api:claude-sonnet@URL)")
    group.add_argument("--partial-judge", metavar="SPEC", help="judge/anchors: the partial-credit judge (default: --judge)")
    group.add_argument("--judge-option", action="append", default=[], metavar="KEY=VALUE",
                       help="judge/anchors: backend option of the judges, repeatable (e.g. max_concurrency=16)")
    group.add_argument("--judge-max-tokens", type=int, default=64, metavar="N",
                       help="judge/anchors: token budget of a judge's verdict (default 64)")
    group.add_argument("--anchors", type=Path, metavar="DIR", help="judge: the frozen anchors folder (--mode anchors)")
    group.add_argument("--allow-judge-mismatch", action="store_true",
                       help="judge: accept anchors built with another partial-credit judge or prompt")
    group.add_argument("--bt-prior-sd", type=float, default=2.5,
                       help="anchors: sd (logits) of the Gaussian prior on Bradley-Terry strengths (default 2.5)")
    group.add_argument("--gt-weight-ratio", type=float, default=23.0,
                       help="anchors: total weight of ground-truth vs distractor calibration evidence (default 23, A.2.2)")
    group.add_argument("--stylistic-families", default="anachronistic_model,anachronistic_source,anachronistic_year",
                       help="anchors: distractor families left out of alpha as purely stylistic (comma-separated)")


def _add_style(group) -> None:
    group.add_argument("--reference", type=Path, metavar="PARQUET", help="style: reference corpus of dated authentic passages")
    group.add_argument("--date-model", type=Path, metavar="DIR", help="style: trained date predictor folder")
    group.add_argument("--authenticity-model", type=Path, metavar="DIR", help="style: trained authenticity detector folder")
    group.add_argument("--length-bins", type=float, nargs=5, metavar="EDGE",
                       help="style: the five word-count edges of the six length bins (default: reference sextiles)")
    group.add_argument("--min-window", type=int, default=20, help="style: fewest reference passages in a window (default 20)")
    group.add_argument("--w0-draws", type=int, default=1000, help="style: samples for W0 (default 1000)")
    group.add_argument("--device", help="style: torch device (default: cuda when available)")
    group.add_argument("--style-batch-size", type=int, default=32, help="style: texts per forward pass (default 32)")
    group.add_argument("--reference-cache", type=Path, metavar="DIR",
                       help="style: where scored reference corpora are cached (default: next to the run folder)")


def _judge_backend(spec: str, args):
    from histbench.eval.backends import load_backend
    from histbench.eval.backends.spec import parse_option

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
    from histbench.builders.core.dataset import BuiltDataset

    return BuiltDataset.open(args.dataset, revision=args.revision, benchmark="chronologic")


def run_generate(args: argparse.Namespace) -> None:
    from histbench.eval.backends import backend_from_args

    from .generation import generate

    if not args.out:
        raise UsageError("--mode generate needs --out RUN_FOLDER", field="--out")
    built = _dataset(args)
    backend = backend_from_args(args)
    try:
        result = generate(built, backend, args.out, prompts=_prompts(args), prompt_style=args.prompt_style,
                          max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p, seed=args.seed,
                          sampling_seed=args.sampling_seed, system=args.system_prompt, limit=args.limit,
                          permute_frames=args.permute_frames, label=args.label)
    finally:
        backend.close()
    counts = result["counts"]
    print(f"{counts['questions']} answers ({counts['reused']} reused, {counts['empty_answers']} empty, "
          f"{counts['truncated_answers']} cut at the token budget) -> {Path(args.out) / 'results.json'}")
    print(f"signature: {result['signature']['text']}")


def run_anchors(args: argparse.Namespace) -> None:
    from .anchors import build_anchors

    if not args.out:
        raise UsageError("--mode anchors needs --out ANCHORS_FOLDER", field="--out")
    built = _dataset(args)
    pass_fail, partial = _judges(args)
    families = tuple(f.strip() for f in args.stylistic_families.split(",") if f.strip())
    try:
        result = build_anchors(built, pass_fail, partial, args.out, prompts=_prompts(args), prior_sd=args.bt_prior_sd,
                               gt_weight_ratio=args.gt_weight_ratio, stylistic_families=families,
                               judge_max_tokens=args.judge_max_tokens, limit=args.limit)
    finally:
        pass_fail.close()
        if partial is not pass_fail:
            partial.close()
    pooled = result["reliability"]["pooled"]
    counts = result["counts"]
    print(f"paths: {counts['pass_fail_path']} pass/fail, {counts['partial_path']} partial credit "
          f"({counts['moved_by_alpha']} moved by alpha > 0.25)")
    print(f"judge reliability: pooled alpha {pooled['alpha_pooled']} over {pooled['alpha_trials']} trials, "
          f"beta {pooled['beta']} over {pooled['beta_trials']} trials")
    if result["calibration"]:
        c = result["calibration"]
        print(f"calibration: p_fit = sigmoid({c['intercept']:.4f} + {c['slope']:.4f} * delta) from "
              f"{c['n_ground_truth']} held-out ground truths and {c['n_distractor']} distractors")
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
    try:
        result = judge_run(built, run_dir, pass_fail, partial, anchors, prompts=_prompts(args), seed=args.seed,
                           judge_max_tokens=args.judge_max_tokens, n_resamples=getattr(args, "bootstrap", 1000),
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
                       length_edges=args.length_bins, min_window=args.min_window, w0_draws=args.w0_draws, seed=args.seed,
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
