"""How far float32 log-likelihoods are from the exact ones, and why (issue 26, item 4).

    .venv/bin/python bench/likelihood_exactness.py [--questions FILE.jsonl] [--limit N]
        [--tokenisation authors|harness] [--threads 1] [--json OUT]

On the real SmolLM2-135M-Instruct (float32, CPU) and Chronologic questions after the
authors' prompt (default: the bundled sample; the authors' public 100-question sample
gives the figures in docs/engine.md), every option is scored four ways:

- histbench: the hf backend as `histbench eval chronologic --mode likelihood` scores it
  (prefix-shared, contexts batched and padded, normaliser logsumexp in float32);
- exact: each sequence alone, unpadded, its logits' log-softmax in float64 (the float32
  model's own arithmetic is the only rounding left);
- single f32: the same single pass with torch.log_softmax in float32, which is what a
  one-sequence-at-a-time check written the plain way computes, and what
  lm-evaluation-harness's HFLM computes (F.log_softmax in the model's dtype);
- lm-eval HFLM.loglikelihood on the same model object and (context, continuation) pairs
  (harness tokenisation only: HFLM knows no other), when lm_eval is installed.

It prints, for each pair, the largest and median |difference|, the share of options above
1e-4, and the share where the first is lower. CPU time is printed beside wall time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sources" / "chronologic" / "sample" / "chronologic_sample.jsonl"


def summary(name: str, first: list[float], second: list[float]) -> dict:
    diffs = [a - b for a, b in zip(first, second, strict=True)]
    absolute = [abs(d) for d in diffs]
    out = {"pair": name, "options": len(diffs), "max": max(absolute), "median": statistics.median(absolute),
           "above_1e-4": sum(d > 1e-4 for d in absolute) / len(diffs), "first_lower": sum(d < 0 for d in diffs) / len(diffs)}
    print(f"{name}: {out['options']} options, max |d| {out['max']:.2e}, median {out['median']:.1e}, "
          f"{100 * out['above_1e-4']:.1f}% above 1e-4, first lower in {100 * out['first_lower']:.1f}%")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=Path, default=SAMPLE, help="Chronologic questions, one JSON object a line")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--tokenisation", choices=("authors", "harness"), default="authors")
    parser.add_argument("--threads", default="auto", help="torch threads (the hf backend's threads option)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    import torch

    from histbench.core.backends import load_backend
    from histbench.core.backends.offline import OfflineModelUnavailable, smollm2_path
    from histbench.core.likelihood import encode_requests
    from histbench.eval.chronologic.data import PromptTemplate
    from histbench.eval.chronologic.likelihood import build_requests

    try:
        path = smollm2_path()
    except OfflineModelUnavailable as exc:
        print(f"cannot run: {exc}", file=sys.stderr)
        return 2
    threads = int(args.threads) if str(args.threads).isdigit() else "auto"
    backend = load_backend(f"hf:{path}", {"device": "cpu", "dtype": "float32", "threads": threads})
    model, tokenizer = backend.model, backend.tokenizer
    questions = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    questions = questions[: args.limit] if args.limit else questions
    requests, _ = build_requests(questions, PromptTemplate.load(), args.tokenisation)
    print(f"{len(questions)} questions, {len(requests)} options, tokenisation {args.tokenisation}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} thread(s) ({backend.threads_info['why']})")

    clock, cpu = time.perf_counter(), time.process_time()
    ours = [r.logprob for r in backend.loglikelihood(requests)]
    print(f"histbench: {time.perf_counter() - clock:.0f} s wall, {time.process_time() - cpu:.0f} s CPU")
    clock, cpu = time.perf_counter(), time.process_time()
    exact, single32, kept = [], [], []
    per_token = {"log_softmax": [], "logsumexp": []}  # float32 error of each answer token's log-probability
    with torch.inference_mode():
        for n, item in enumerate(encode_requests(tokenizer, requests, max_length=backend.model.config.max_position_embeddings)):
            if not item.continuation:  # the authors' boundary left it no token: 0.0 everywhere
                continue
            logits = model(torch.tensor([[*item.context, *item.continuation[:-1]]])).logits[0, len(item.context) - 1:]
            targets = torch.tensor(item.continuation).unsqueeze(-1)
            exact_rows = torch.log_softmax(logits.double(), -1).gather(-1, targets).squeeze(-1)
            plain_rows = torch.log_softmax(logits, -1).gather(-1, targets).squeeze(-1).double()
            lse_rows = (logits - torch.logsumexp(logits, -1, keepdim=True)).gather(-1, targets).squeeze(-1).double()
            exact.append(float(exact_rows.sum()))
            single32.append(float(plain_rows.sum()))
            per_token["log_softmax"] += (plain_rows - exact_rows).tolist()
            per_token["logsumexp"] += (lse_rows - exact_rows).tolist()
            kept.append(n)
    print(f"single passes: {time.perf_counter() - clock:.0f} s wall, {time.process_time() - cpu:.0f} s CPU")
    token_figures = {}
    for name, errors in per_token.items():
        token_figures[name] = {"tokens": len(errors), "mean": statistics.mean(errors),
                               "higher": sum(e > 0 for e in errors) / len(errors), "max_abs": max(abs(e) for e in errors)}
        print(f"per answer token, float32 {'torch.log_softmax' if name == 'log_softmax' else 'logits - logsumexp'} "
              f"vs exact: mean {token_figures[name]['mean']:+.1e}, higher in {100 * token_figures[name]['higher']:.0f}% "
              f"of {len(errors)} tokens, max |error| {token_figures[name]['max_abs']:.1e}")
    ours_kept = [ours[n] for n in kept]
    results = [summary("histbench vs exact", ours_kept, exact), summary("single f32 vs exact", single32, exact),
               summary("histbench vs single f32", ours_kept, single32)]
    if args.tokenisation == "harness":
        try:
            from lm_eval.api.instance import Instance
            from lm_eval.models.huggingface import HFLM
        except ImportError:
            print("lm_eval is not installed: no HFLM comparison")
        else:
            lm = HFLM(pretrained=model, tokenizer=tokenizer, backend="causal", device="cpu", batch_size=8)
            instances = [Instance(request_type="loglikelihood", doc={}, arguments=(r.context, r.continuation), idx=i)
                         for i, r in enumerate(requests)]
            clock, cpu = time.perf_counter(), time.process_time()
            harness = [float(lp) for lp, _ in lm.loglikelihood(instances, disable_tqdm=True)]
            print(f"lm-eval HFLM: {time.perf_counter() - clock:.0f} s wall, {time.process_time() - cpu:.0f} s CPU")
            harness_kept = [harness[n] for n in kept]
            results += [summary("histbench vs lm-eval HFLM", ours_kept, harness_kept),
                        summary("lm-eval HFLM vs exact", harness_kept, exact)]
    if args.json:
        args.json.write_text(json.dumps({"tokenisation": args.tokenisation, "questions": len(questions),
                                         "results": results, "per_token": token_figures}, indent=2) + "\n",
                                        encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
