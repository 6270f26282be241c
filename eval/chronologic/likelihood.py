"""`--mode likelihood`: per-token likelihood scoring of Chronologic-EN (paper 5.1, Table 3).

Every answer option is scored as the continuation of one prompt per question (the
authors' own: metadata frame, the abstention reminder for the questions that get it,
`QUESTION:` and `ANSWER:` lines; sources/chronologic/likelihood_prompt.yaml) through the
evaluator engine's loglikelihood requests and run store (answers are saved as they
arrive and never asked twice; an interrupted run resumes). Metrics, computed as the
authors' code computes them: see `metrics.py`.

A run folder gets, besides the engine's records.jsonl and the run format's run.json,
results.json and items.jsonl (written after the run from these two; run_summary.py):

    chronologic.json every metric overall, per group and per reasoning type, with bootstrap
                     95% intervals; the metric definitions; the signature (data, model,
                     prompt-template hash); counts; the frame permutation if any
    questions.jsonl  one line per question: log-likelihoods, token counts, probabilities,
                     choices and per-question metrics (the ledger)

`--baseline random` writes the same files for the random-choice baseline (every option
equally likely) without a model. `--published-table3 [FILE]` prints the authors'
published Table 3 rows beside the run (published_table3.py).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from histbench.core.atomic import atomic_path, write_text_atomic
from histbench.core.errors import EvalError, UsageError
from histbench.core.progress import log

from . import Mode
from .files import OWN_NAME

RESULTS_NAME = OWN_NAME   # chronologic.json (results.json is the run format's)
LEDGER_NAME = "questions.jsonl"
DEFAULT_RUNS = Path("runs") / "chronologic"
RANDOM = "random"
# --tokenisation -> LoglikelihoodRequest.boundary. The paper (5.1) says an option's score is
# its mean per-token log-likelihood but not which tokens are the answer's; the authors' code
# (benchmark_evaluation.py, _score_answer_ll_hf) keeps the prompt's trailing space in the
# context and scores the tokens after the context's own token count, which is how their
# published Table 3 came about, so it is the default.
TOKENISATION = {"authors": "context-length", "harness": "harness"}


def add_arguments(group) -> None:
    from histbench.eval.plugin import add_baseline_argument

    add_baseline_argument(group, [RANDOM], "likelihood: a baseline (random = every option equally likely)")
    group.add_argument("--prompt-template", type=Path, metavar="YAML",
                       help="another likelihood prompt template (default: sources/chronologic/likelihood_prompt.yaml)")
    group.add_argument("--bootstrap", type=int, default=1000, metavar="B",
                       help="bootstrap resamples over questions for the 95%% intervals (default: 1000)")
    group.add_argument("--platt-fit", choices=("nelder-mead", "newton"), default="nelder-mead",
                       help="how the Table 3 Brier's Platt calibration is fitted: nelder-mead (the authors' "
                            "optimiser, default: figures compare with the published ones) or newton (the exact "
                            "maximum-likelihood fit)")
    group.add_argument("--tokenisation", choices=sorted(TOKENISATION), default="authors",
                       help="likelihood: which tokens are an answer's. authors (default): the Chronologic authors' "
                            "convention, which their published Table 3 used (the prompt's trailing space stays in the "
                            "context, the answer's tokens are those after the context's token count); harness: "
                            "lm-evaluation-harness's (every answer token scored, as `histbench export lm-eval` runs)")
    add_published_argument(group)


def add_published_argument(group) -> None:
    group.add_argument("--published-table3", nargs="?", const=True, default=True, metavar="FILE",
                       help="the authors' published Table 3 rows shown beside the runs (on by default: the bundled "
                            "copy of their leaderboard), or their leaderboard.md / leaderboard.csv at FILE")
    group.add_argument("--no-published-table3", dest="published_table3", action="store_const", const=None,
                       help="leave the published Table 3 rows out")


def published_from_args(args):
    from .published_table3 import load_published_table3

    value = getattr(args, "published_table3", None)
    if value is None:
        return None
    return load_published_table3(None if value is True else value)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:80] or "run"


def default_run_dir(label: str, permuted: bool) -> Path:
    return DEFAULT_RUNS / f"likelihood-{_slug(label)}{'-wrong-frames' if permuted else ''}"


def build_requests(questions: list[dict], template, tokenisation: str = "authors") -> tuple[list, list[tuple[int, int]]]:
    """One LoglikelihoodRequest per option, with the tokenisation boundary of `tokenisation`
    (TOKENISATION); returns requests and (question, option) index pairs."""
    from histbench.core.backends import LoglikelihoodRequest

    boundary = TOKENISATION[tokenisation]
    requests, where = [], []
    for qi, question in enumerate(questions):
        context = template.render_context(question)
        for oi, answer in enumerate(question["answer_strings"]):
            requests.append(LoglikelihoodRequest(context=context, continuation=template.render_continuation(answer),
                                                 boundary=boundary))
            where.append((qi, oi))
    return requests, where


def score_with_backend(questions, template, backend, built, run_dir: Path, run_options: dict):
    """Ask (or reuse) every option's log-likelihood; returns per-question scores and counts."""
    from histbench.core.runstore import RunStore, summarize

    from .metrics import score_question

    if "loglikelihood" not in backend.supports:
        raise UsageError(
            f"--mode likelihood needs a model that gives log-likelihoods; {backend.spec!r} supports "
            f"{', '.join(sorted(backend.supports)) or 'nothing'} (use an hf: or vllm: model, or api: on a vLLM, "
            "SGLang or TGI server)", field="--model",
        )
    requests, where = build_requests(questions, template, run_options.get("tokenisation", "authors"))
    store = RunStore.open(run_dir, backend=backend, dataset=built, options=run_options)
    records = store.run(requests, desc="chronologic likelihood")
    counts = summarize(records)
    failed = [(questions[qi]["question_number"], oi, r.error) for (qi, oi), r in zip(where, records, strict=True) if r.error]
    if failed:
        shown = "; ".join(f"question {n} option {o}: {e}" for n, o, e in failed[:5])
        raise EvalError(
            f"{len(failed)} of {len(requests)} log-likelihood requests failed ({shown}); "
            "rerun the same command to ask them again (answered ones are kept)", file=run_dir,
        )
    logliks: list[list[float]] = [[0.0] * len(q["answer_strings"]) for q in questions]
    tokens: list[list[int]] = [[0] * len(q["answer_strings"]) for q in questions]
    truncated = 0
    for (qi, oi), record in zip(where, records, strict=True):
        logliks[qi][oi] = float(record.response["logprob"])
        tokens[qi][oi] = int(record.response["n_tokens"])
        truncated += int(record.response.get("truncated") or 0) > 0
    scores = [score_question(q, logliks[i], tokens[i]) for i, q in enumerate(questions)]
    counts["options_with_truncated_context"] = truncated
    counts["options_scored_over_no_tokens"] = sum(t == 0 for row in tokens for t in row)
    if counts["options_scored_over_no_tokens"]:
        log(f"[chronologic] {counts['options_scored_over_no_tokens']} options had no token of their own after the "
            "context (the authors' tokenisation) and score 0.0, as in their code")
    return scores, counts


def _write_json_atomic(path: Path, data) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def table3_row(metrics: dict) -> dict:
    """The Table 3 cells: the authors' Brier overall and accuracy (%) per group; quote
    `median` [`low`, `high`], as their leaderboard does."""
    row = {"brier": metrics["brier"]["overall"]}
    for group in ("cloze", "generation", "knowledge"):
        cell = metrics["acc"].get(f"group:{group}")
        row[group] = None if cell is None else {k: (v * 100 if k != "n" else v) for k, v in cell.items()}
    return row


def evaluate(
    built,
    *,
    model_spec: str | None = None,
    backend=None,
    baseline: str | None = None,
    run_dir: Path | None = None,
    seed: int = 0,
    limit: int | None = None,
    permute_frames: bool = False,
    template_path: Path | None = None,
    n_resamples: int = 1000,
    label: str | None = None,
    platt_fit: str = "nelder-mead",
    frame_groups: str = "authors",
    tokenisation: str = "authors",
) -> dict:
    """Score one model (or the random baseline) and write the run folder; returns results."""
    from histbench.eval.signature import make_signature

    from .data import PromptTemplate, apply_frames, frame_permutation, load_questions
    from .metrics import METRIC_DEFINITIONS, aggregate, random_choice_score

    if (backend is None) == (baseline is None):
        raise UsageError("give either --model or --baseline random", field="--model")
    if n_resamples < 1:
        raise UsageError("--bootstrap must be at least 1", field="--bootstrap")
    template = PromptTemplate.load(template_path)
    questions = load_questions(built, limit)
    permutation = frame_permutation(questions, seed, frame_groups) if permute_frames else None
    scored_questions = apply_frames(questions, permutation)
    label = label or ("random choice" if baseline else backend.spec)
    run_dir = Path(run_dir) if run_dir else default_run_dir(RANDOM if baseline else backend.spec, permute_frames)
    run_options = {
        "mode": "likelihood", "permute_frames": permute_frames, "seed": seed, "limit": limit,
        **({"frame_groups": frame_groups} if permute_frames else {}), "tokenisation": tokenisation,
        "prompt_template_sha256": template.sha256,
    }
    if baseline:
        if (run_dir / "records.jsonl").is_file():
            raise UsageError("this folder holds a model's run; give the baseline its own --out", file=run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        scores = [random_choice_score(q) for q in scored_questions]
        counts = {"requests": 0, "answered": 0, "reused": 0, "failed": 0, "parse_failures": 0,
                  "options_with_truncated_context": 0, "options_scored_over_no_tokens": 0}
        model_identity = {"baseline": RANDOM, "spec": "baseline:random"}
    else:
        scores, counts = score_with_backend(scored_questions, template, backend, built, run_dir, run_options)
        model_identity = backend.identity()
    metrics = aggregate(scores, n_resamples=n_resamples, seed=seed, platt_fit=platt_fit)
    signature = make_signature(
        dataset=built.identity(), backend=model_identity, decoding={"method": "loglikelihood", "tokenisation": tokenisation},
        prompt_template_hash=template.sha256, mode="likelihood",
        **({"frames": f"permuted-{frame_groups}-seed{seed}"} if permute_frames else {}),
    )
    results = {
        "benchmark": "chronologic",
        "mode": "likelihood",
        "label": label + (" (wrong frames)" if permute_frames else ""),
        "signature": signature.to_dict(),
        "dataset": built.identity(),
        "model": model_identity,
        "prompt_template": {"path": template.recorded_path(run_dir), "sha256": template.sha256, "text": template.text},
        "options": {**run_options, "bootstrap_resamples": n_resamples, "platt_fit": platt_fit,
                    "interval": "percentile bootstrap 95% over questions (the Table 3 metrics quote its median)"},
        "frame_permutation": None if permutation is None else permutation.to_json(),
        "counts": {"questions": len(scores), "options": sum(s.n_options for s in scores),
                   "questions_with_tied_top_options": sum(s.tied > 1 for s in scores),
                   "questions_with_reminder": sum(template.gets_reminder(q) for q in scored_questions), **counts},
        "definitions": METRIC_DEFINITIONS,
        "metrics": metrics,
        "table3": table3_row(metrics),
    }
    with atomic_path(run_dir / LEDGER_NAME) as tmp, tmp.open("w", encoding="utf-8") as handle:
        for question, score in zip(scored_questions, scores, strict=True):
            line = score.to_json()
            line["frame_donor"] = question["frame_donor"]
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    _write_json_atomic(run_dir / RESULTS_NAME, results)
    return results


def run(args: argparse.Namespace) -> None:
    from histbench.core.dataset import BuiltDataset

    from .report import likelihood_markdown

    if args.baseline and args.model:
        raise UsageError("give either --model or --baseline, not both", field="--baseline")
    built = BuiltDataset.open(args.dataset, revision=args.revision, benchmark="chronologic")
    backend = None
    if not args.baseline:
        from histbench.core.backends import backend_from_args

        backend = backend_from_args(args)
    if args.out is None:
        args.out = default_run_dir(args.label or args.baseline or backend.spec, args.permute_frames)
    try:
        results = evaluate(
            built, backend=backend, baseline=args.baseline, run_dir=args.out, seed=args.seed, limit=args.limit,
            permute_frames=args.permute_frames, template_path=args.prompt_template, n_resamples=args.bootstrap,
            label=args.label,
            platt_fit=args.platt_fit,
            frame_groups=args.frame_groups,
            tokenisation=args.tokenisation,
        )
    finally:
        if backend is not None:
            backend.close()
    print(likelihood_markdown([results], published_from_args(args)))
    log(f"results: {Path(args.out)}")


def report(runs: list[tuple[Path, dict]], args) -> ReportSection:  # noqa: F821
    from .report import likelihood_section

    return likelihood_section([results for _, results in runs], published_from_args(args))


MODES = [
    Mode(
        name="likelihood",
        help="per-token likelihood of every answer option: Brier score and accuracy (paper 5.1, Table 3)",
        run=run,
        add_arguments=add_arguments,
    )
]
REPORTERS = {"likelihood": report}
