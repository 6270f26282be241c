"""The `hf` backend: a transformers model on CPU or CUDA.

- causal LMs answer `generate` (chat template for messages when the tokenizer has one,
  greedy when temperature is 0, batched with left padding) and `loglikelihood` (the
  prefix-shared scorer of histbench.core.likelihood, harness tokenisation);
- masked LMs answer `fill_mask` (top-k with softmax probabilities at the mask; any mask
  spelling in MASK_SPELLINGS becomes the model's own mask token).

Which kind a model is comes from its config (architectures, else model type), or from the
`task` option. torch and transformers are imported when the backend is created, never when
this module is imported; the model itself loads on first use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from histbench.core.errors import EvalError
from histbench.core.paths import folder_fingerprint

from .base import (
    FILL_MASK,
    GENERATE,
    LOGLIKELIHOOD,
    MASK_SPELLINGS,
    Backend,
    FillMaskRequest,
    FillMaskResult,
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    RequestFailed,
    register_hub_token,
)

#: masked LMs whose position ids start after the padding index (RoBERTa's offset)
_PADDING_OFFSET_MODELS = frozenset({"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer", "data2vec-text"})
CHAT_TEMPLATE_MODES = {"auto": "auto", "always": "always", "never": "never", True: "always", False: "never"}
DTYPES = ("auto", "float32", "bfloat16", "float16")
#: loglikelihood requests tokenised and scheduled per step (contexts are never split across
#: steps); results are yielded, and saved, batch by batch within a step.
LOGLIKELIHOOD_STEP = 256


def _resolve_device(option: str) -> str:
    import torch

    if option in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(option)


def _resolve_dtype(option: str, device: str):
    import torch

    if option not in DTYPES:
        raise EvalError(f"dtype must be one of {', '.join(DTYPES)}, got {option!r}", field="--model-option")
    if option == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    return getattr(torch, option)


def _load_errors() -> tuple[type[BaseException], ...]:
    """What from_pretrained raises for weights it cannot read: missing or unreadable files
    (OSError), bad configs (ValueError), shapes that do not fit (RuntimeError), corrupt
    safetensors files."""
    errors: tuple[type[BaseException], ...] = (OSError, ValueError, RuntimeError)
    try:
        from safetensors import SafetensorError
    except ImportError:
        return errors
    return (*errors, SafetensorError)


class HFBackend(Backend):
    kind = "hf"
    OPTIONS = {
        "batch_size": (8, "requests (distinct contexts for loglikelihood) per forward pass"),
        "dtype": ("auto", "auto (float32 on CPU, bfloat16 on CUDA), float32, bfloat16 or float16"),
        "device": ("auto", "auto (cuda if available, else cpu), cpu, cuda, cuda:1, mps"),
        "max_length": (None, "context window for loglikelihood (default: the model config's)"),
        "chat_template": ("auto", "auto (messages through the chat template when there is one), always (prompts too), never"),
        "add_bos_token": (None, "loglikelihood: encode with special tokens: null = the tokenizer's default (as the harness), true, false"),
        "loglikelihood_method": ("prefix", "prefix (shared context passes) or naive (one full pass per pair, like the harness)"),
        "token_budget": (1024, "loglikelihood: most tokens per packed pass (the attention of a pass grows with its square)"),
        "task": ("auto", "auto, causal or masked"),
        "trust_remote_code": (False, "allow model code from the Hub"),
        "threads": ("auto", "CPU: torch threads; auto = the usable CPUs not busy with other work when the model loads "
                            "(OMP_NUM_THREADS, when set, wins), or a number"),
    }
    KEY_OPTIONS = ("dtype", "max_length", "chat_template", "add_bos_token", "task")

    def __init__(
        self, spec: str, target: str, options: Mapping | None = None, revision: str | None = None, hub_revision: str | None = None
    ) -> None:
        """target: a local folder or a Hub id; hub_revision: the Hub branch/tag/commit asked
        for (spec `hf:ID@REV`); revision: what identity() reports (default: the Hub commit,
        or a fingerprint of a local folder)."""
        super().__init__(spec, target, options)
        register_hub_token()
        self._hub_revision_arg = hub_revision
        self._revision = revision
        if self.options["chat_template"] not in CHAT_TEMPLATE_MODES:
            raise EvalError(f"chat_template must be auto, always or never, got {self.options['chat_template']!r}", field="--model-option")
        self.options["chat_template"] = CHAT_TEMPLATE_MODES[self.options["chat_template"]]
        if self.options["dtype"] not in DTYPES:
            raise EvalError(f"dtype must be one of {', '.join(DTYPES)}, got {self.options['dtype']!r}", field="--model-option")
        self._model = None
        self._tokenizer = None
        self._device: str | None = None
        self._config = None
        #: what the threads option did last ({"threads", "why"}; CPU only): when the model
        #: loaded, and again between batches of a long run (every 30 s at most)
        self.threads_info: dict | None = None
        self._retuner = None
        if self.options["threads"] != "auto":
            from histbench.core.threads import choose_threads

            choose_threads(self.options["threads"])  # a bad value is an error now, not at load
        self.task = self._detect_task()
        self.supports = frozenset({FILL_MASK}) if self.task == "masked" else frozenset({GENERATE, LOGLIKELIHOOD})

    @classmethod
    def from_spec(cls, spec: str, target: str, options: Mapping) -> HFBackend:
        from .spec import split_revision

        name, revision = split_revision(target)
        return cls(spec, name, options, hub_revision=revision)

    # -- configuration ---------------------------------------------------------------------

    @property
    def is_local(self) -> bool:
        return Path(self.target).expanduser().is_dir()

    def _pretrained_kwargs(self) -> dict:
        kwargs: dict[str, Any] = {"trust_remote_code": bool(self.options["trust_remote_code"])}
        if self._hub_revision_arg:
            kwargs["revision"] = self._hub_revision_arg
        return kwargs

    @property
    def location(self) -> str:
        return str(Path(self.target).expanduser()) if self.is_local else self.target

    def config(self):
        if self._config is None:
            from transformers import AutoConfig

            try:
                self._config = AutoConfig.from_pretrained(self.location, **self._pretrained_kwargs())
            except (OSError, ValueError) as exc:
                raise EvalError(f"cannot load the model's config: {exc}", file=self.target, field="--model") from exc
        return self._config

    def _detect_task(self) -> str:
        task = self.options["task"]
        if task in ("causal", "masked"):
            return task
        if task != "auto":
            raise EvalError(f"task must be auto, causal or masked, got {task!r}", field="--model-option")
        config = self.config()
        archs = list(getattr(config, "architectures", None) or [])
        if any(a.endswith("ForMaskedLM") for a in archs):
            return "masked"
        if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
            return "causal"
        from transformers.models.auto.modeling_auto import (
            MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
            MODEL_FOR_MASKED_LM_MAPPING_NAMES,
        )

        if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
            return "causal"
        if config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
            return "masked"
        raise EvalError(f"cannot tell whether {config.model_type!r} is a causal or masked LM: set --model-option task=...", file=self.target)

    @property
    def revision(self) -> str | None:
        if self._revision is None:
            if self.is_local:
                self._revision = folder_fingerprint(Path(self.location))
            else:
                self._revision = self._hub_commit() or self._hub_revision_arg
        return self._revision

    def _hub_commit(self) -> str | None:
        try:
            from huggingface_hub import hf_hub_download

            path = Path(hf_hub_download(self.target, "config.json", revision=self._hub_revision_arg))
        except Exception:  # noqa: BLE001 - the revision is informative only
            return None
        return path.parent.name if path.parent.parent.name == "snapshots" else None

    @property
    def device(self) -> str:
        if self._device is None:
            self._device = _resolve_device(self.options["device"])
        return self._device

    @property
    def dtype_name(self) -> str:
        return str(_resolve_dtype(self.options["dtype"], self.device)).replace("torch.", "")

    def identity(self) -> dict:
        ident = super().identity()
        ident.update({"task": self.task, "device": self.device, "dtype": self.dtype_name})
        ident["options"]["dtype"] = self.dtype_name
        if self.threads_info is not None:
            # the number of torch threads the threads option chose and why (run.json records
            # it with the first answer, after the model loaded, and again when a session ends)
            ident["threads"] = {"chosen": self.threads_info["threads"], "why": self.threads_info["why"]}
        return ident

    def key_identity(self) -> dict:
        ident = super().key_identity()
        ident["options"] = {**ident["options"], "dtype": self.dtype_name, "task": self.task}
        return ident

    # -- loading ------------------------------------------------------------------------------

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            try:
                self._tokenizer = AutoTokenizer.from_pretrained(self.location, **self._pretrained_kwargs())
            except (OSError, ValueError) as exc:
                raise EvalError(f"cannot load the tokenizer: {exc}", file=self.target) from exc
        return self._tokenizer

    @property
    def model(self):
        if self._model is None:
            import transformers
            from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

            transformers.utils.logging.disable_progress_bar()
            if self.device == "cpu":
                from histbench.core.threads import Retuner

                self._retuner = Retuner(self.options["threads"])
                self.threads_info = self._retuner.check()
            cls = AutoModelForMaskedLM if self.task == "masked" else AutoModelForCausalLM
            dtype = _resolve_dtype(self.options["dtype"], self.device)
            try:
                model = cls.from_pretrained(self.location, dtype=dtype, **self._pretrained_kwargs())
            except _load_errors() as exc:
                raise EvalError(f"cannot load the model: {exc}", file=self.target) from exc
            self._model = model.to(self.device).eval()
        return self._model

    def close(self) -> None:
        self._model = None
        self._tokenizer = None

    def _retune(self) -> None:
        """Between batches: torch's threads follow the machine's load (threads=auto, CPU)."""
        if self._retuner is not None:
            self.threads_info = self._retuner.check() or self.threads_info

    # -- generate ------------------------------------------------------------------------------

    def render(self, request: GenerateRequest) -> tuple[str, bool]:
        """The text fed to the model and whether it came from the chat template."""
        mode = self.options["chat_template"]
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        messages = list(request.messages) if request.messages is not None else None
        if messages is None and mode == "always":
            messages = [{"role": "user", "content": request.prompt}]
        if messages is None:
            return request.prompt, False
        if mode != "never" and has_template:
            text = self.tokenizer.apply_chat_template([dict(m) for m in messages], add_generation_prompt=True, tokenize=False)
            return text, True
        if mode == "always":
            raise EvalError("chat_template=always, but the tokenizer has no chat template", file=self.target)
        # No template (a base model): the messages' contents, one paragraph each.
        return "\n\n".join(m["content"] for m in messages), False

    def _generate_batch(self, requests: Sequence[GenerateRequest], indices: Sequence[int]) -> Iterator:
        for request in requests:
            if request.extra:
                raise EvalError("GenerateRequest.extra is for the api backend; the hf backend does not take it", field="extra")
        groups: dict[tuple, list[int]] = {}
        for n, request in enumerate(requests):
            key = (request.max_new_tokens, request.temperature, request.top_p, request.stop, request.seed)
            groups.setdefault(key, []).append(n)
        rendered = [self.render(r) for r in requests]
        for members in groups.values():
            members.sort(key=lambda n: -len(rendered[n][0]))
            for start in range(0, len(members), self.batch_size):
                chunk = members[start : start + self.batch_size]
                self._retune()
                results = self._generate_chunk([requests[n] for n in chunk], [rendered[n] for n in chunk])
                yield [indices[n] for n in chunk], results

    def _generate_chunk(self, requests: Sequence[GenerateRequest], rendered: Sequence[tuple[str, bool]]) -> list[GenerateResult]:
        import torch
        from transformers import GenerationConfig

        tokenizer, model = self.tokenizer, self.model
        first = requests[0]
        texts = [text for text, _ in rendered]
        templated = rendered[0][1]
        side = tokenizer.padding_side
        tokenizer.padding_side = "left"
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        try:
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
            batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=not templated)
        finally:
            tokenizer.padding_side = side
        batch = {k: v.to(self.device) for k, v in batch.items() if k in ("input_ids", "attention_mask")}
        eos = model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if tokenizer.eos_token_id is not None:
            eos_ids.add(tokenizer.eos_token_id)
        config = GenerationConfig(
            max_new_tokens=first.max_new_tokens,
            do_sample=not first.greedy,
            temperature=first.temperature if not first.greedy else None,
            top_p=first.top_p if not first.greedy else None,
            top_k=None,
            pad_token_id=pad_id,
            eos_token_id=sorted(eos_ids) or None,
            bos_token_id=model.generation_config.bos_token_id,
        )
        kwargs: dict[str, Any] = {"generation_config": config}
        if first.stop:
            config.stop_strings = list(first.stop)
            kwargs["tokenizer"] = tokenizer
        if first.seed is not None:
            torch.manual_seed(first.seed)
        with torch.inference_mode():
            output = model.generate(**batch, **kwargs)
        prompt_len = batch["input_ids"].shape[1]
        results = []
        for row, request in enumerate(requests):
            new = output[row, prompt_len:].tolist()
            if pad_id not in eos_ids:  # rows that ended early are padded
                while new and new[-1] == pad_id:
                    new.pop()
            ended = next((pos for pos, token in enumerate(new) if token in eos_ids), None)
            kept = new if ended is None else new[:ended]
            text = tokenizer.decode(kept, skip_special_tokens=True)
            if ended is not None:
                finish = "stop"
            elif len(new) >= request.max_new_tokens:
                finish = "length"
            else:  # generation ended on a stop string
                finish = "stop"
            if request.stop:
                cut = min((text.find(s) for s in request.stop if s in text), default=-1)
                if cut >= 0:
                    text, finish = text[:cut], "stop"
            prompt_tokens = int(batch["attention_mask"][row].sum())
            results.append(
                GenerateResult(
                    text=text,
                    finish_reason=finish,
                    model=self.target,
                    usage={"prompt_tokens": prompt_tokens, "completion_tokens": len(kept) + (ended is not None), "total_tokens": prompt_tokens + len(kept) + (ended is not None)},
                    raw={"prompt": texts[row], "chat_template": rendered[row][1], "token_ids": kept},
                )
            )
        return results

    # -- loglikelihood ------------------------------------------------------------------------

    def _loglikelihood_batch(self, requests: Sequence[LoglikelihoodRequest], indices: Sequence[int]) -> Iterator:
        """Requests are tokenised and scheduled LOGLIKELIHOOD_STEP at a time (whole
        contexts), and every scored batch of contexts is yielded at once, so the run store
        saves each question as it completes."""
        from histbench.core.likelihood import iter_loglikelihood

        by_context: dict[str, list[int]] = {}
        for n, request in enumerate(requests):
            by_context.setdefault(request.context, []).append(n)
        step: list[int] = []
        groups = list(by_context.values())
        for g, members in enumerate(groups):
            step += members
            if len(step) >= LOGLIKELIHOOD_STEP or g == len(groups) - 1:
                for positions, results in iter_loglikelihood(
                    self.model,
                    self.tokenizer,
                    [requests[n] for n in step],
                    method=self.options["loglikelihood_method"],
                    batch_size=self.batch_size,
                    max_length=self.options["max_length"],
                    add_bos_token=self.options["add_bos_token"],
                    token_budget=int(self.options["token_budget"]),
                ):
                    yield [indices[step[k]] for k in positions], results
                    self._retune()  # the next batch runs when the caller asks for it
                step = []

    # -- fill_mask -------------------------------------------------------------------------------

    def normalise_mask(self, text: str) -> str:
        """Every mask spelling (MASK_SPELLINGS) becomes the model's own mask token."""
        mask = self.tokenizer.mask_token
        if mask is None:
            raise EvalError("the tokenizer has no mask token; fill_mask needs a masked LM", file=self.target)
        placeholder = "\uffff"
        for spelling in sorted(MASK_SPELLINGS, key=len, reverse=True):
            text = text.replace(spelling, placeholder)
        return text.replace(placeholder, mask)

    def fill_mask_window(self) -> int | None:
        """The most tokens a fill-mask input may have: the tokenizer's model_max_length when
        it sets a real one, and the model's position embeddings (less RoBERTa's padding
        offset: its positions start after the padding index)."""
        limits = []
        tokenizer_limit = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < 1_000_000:
            limits.append(tokenizer_limit)
        positions = getattr(self.config(), "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            if self.config().model_type in _PADDING_OFFSET_MODELS:
                positions -= int(getattr(self.config(), "pad_token_id", 1) or 0) + 1
            limits.append(positions)
        return min(limits) if limits else None

    def _fill_mask_batch(self, requests: Sequence[FillMaskRequest], indices: Sequence[int]) -> Iterator:
        """Top-k at the mask, in batches. A sentence that cannot be scored on its own terms
        (longer than the model's window, or not exactly one mask once tokenised) is a
        failed request naming why; the others are scored."""
        import torch

        tokenizer, model = self.tokenizer, self.model
        texts = [self.normalise_mask(r.text) for r in requests]
        window = self.fill_mask_window()
        usable = []
        for n, text in enumerate(texts):
            ids = tokenizer(text)["input_ids"]
            masks = sum(1 for token in ids if token == tokenizer.mask_token_id)
            if window is not None and len(ids) > window:
                yield [indices[n]], [RequestFailed(
                    f"the sentence is {len(ids)} tokens long, longer than the model's window of {window} tokens; "
                    "shorten it or use a model with a longer window", raw={"tokens": len(ids), "window": window})]
            elif masks != 1:
                yield [indices[n]], [RequestFailed(
                    f"a fill_mask request needs exactly one mask, found {masks} in the tokenised sentence",
                    raw={"masks": masks})]
            else:
                usable.append(n)
        order = sorted(usable, key=lambda n: -len(texts[n]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            batch = tokenizer([texts[n] for n in chunk], return_tensors="pt", padding=True)
            ids = batch["input_ids"]
            positions = [int((ids[row] == tokenizer.mask_token_id).nonzero().flatten()[0]) for row in range(len(chunk))]
            batch = {k: v.to(self.device) for k, v in batch.items()}
            with torch.inference_mode():
                logits = model(**batch).logits
            rows = torch.arange(len(chunk), device=logits.device)
            probs = torch.softmax(logits[rows, torch.tensor(positions, device=logits.device)].float(), dim=-1)
            results = []
            for row, n in enumerate(chunk):
                k = min(requests[n].top_k, probs.shape[-1])
                values, token_ids = probs[row].topk(k)
                results.append(
                    FillMaskResult(
                        candidates=[
                            {
                                "token": tokenizer.decode([tid]).strip(),
                                "token_id": int(tid),
                                "probability": float(p),
                                "piece": tokenizer.convert_ids_to_tokens(int(tid)),
                            }
                            for p, tid in zip(values.tolist(), token_ids.tolist(), strict=True)
                        ]
                    )
                )
            yield [indices[n] for n in chunk], results

