"""What every backend speaks: requests, results, the `Backend` interface and request keys.

Three kinds of request exist: `generate` (chat messages or a plain prompt -> text),
`loglikelihood` ((context, continuation) -> summed log-probability) and `fill_mask`
(a sentence with one mask -> the top-k tokens). Requests and results are plain
dataclasses that round-trip through JSON (`to_dict` / `from_dict`), because the run
store keeps every one of them on disk.

A backend answers a list of requests through `Backend.stream`, which yields
`(index, result)` pairs as answers arrive (any order), so that the run store can write
each answer the moment it exists: an interrupted run loses only what was in flight.
"""

from __future__ import annotations

import hashlib
import json
import math
from abc import ABC
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from histbench.core.errors import EvalError

GENERATE = "generate"
LOGLIKELIHOOD = "loglikelihood"
FILL_MASK = "fill_mask"
KINDS = (GENERATE, LOGLIKELIHOOD, FILL_MASK)

#: Mask spellings a request may use; each backend rewrites them to its model's own token.
MASK_SPELLINGS = ("[MASK]", "<mask>", "<MASK>", "[mask]", "<unk_mask>")

_ROLES = {"system", "user", "assistant", "developer", "tool"}


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class GenerateRequest:
    """Chat `messages` (list of {"role", "content"}) or a plain `prompt`, never both.

    `temperature=0.0` means greedy decoding. `stop` is a list of strings that end the
    answer (the stop string itself is not part of the text). `seed` is passed to the
    backend when it supports seeded sampling. `extra` holds provider-specific request
    fields for the api backend (e.g. {"response_format": {"type": "json_object"}});
    other backends reject a non-empty `extra`.
    """

    messages: tuple | list | None = None
    prompt: str | None = None
    max_new_tokens: int = 120
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple | list | None = None
    seed: int | None = None
    extra: Mapping | None = None

    kind: ClassVar[str] = GENERATE

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise EvalError("a GenerateRequest needs exactly one of messages= or prompt=")
        if self.messages is not None:
            if not self.messages:
                raise EvalError("a GenerateRequest's messages list is empty")
            for n, message in enumerate(self.messages):
                if not isinstance(message, Mapping) or set(message) < {"role", "content"}:
                    raise EvalError("each message is a dict with 'role' and 'content'", row=n, field="messages")
                if message["role"] not in _ROLES:
                    raise EvalError(f"unknown role {message['role']!r} (expected one of {sorted(_ROLES)})", row=n, field="messages")
                if not isinstance(message["content"], str):
                    raise EvalError("message content must be a string", row=n, field="messages")
            object.__setattr__(self, "messages", tuple({"role": m["role"], "content": m["content"]} for m in self.messages))
        elif not isinstance(self.prompt, str):
            raise EvalError("prompt must be a string", field="prompt")
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise EvalError(f"max_new_tokens must be a positive integer, got {self.max_new_tokens!r}", field="max_new_tokens")
        if not (self.temperature >= 0 and math.isfinite(self.temperature)):
            raise EvalError(f"temperature must be >= 0, got {self.temperature!r}", field="temperature")
        if not (0 < self.top_p <= 1):
            raise EvalError(f"top_p must be in (0, 1], got {self.top_p!r}", field="top_p")
        if self.stop is not None:
            stop = [self.stop] if isinstance(self.stop, str) else list(self.stop)
            if not all(isinstance(s, str) and s for s in stop):
                raise EvalError("stop must be a list of non-empty strings", field="stop")
            object.__setattr__(self, "stop", tuple(stop) or None)
        if self.extra is not None:
            object.__setattr__(self, "extra", dict(self.extra) or None)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def decoding(self) -> dict:
        """The decoding parameters alone (for signatures)."""
        return {
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "stop": list(self.stop) if self.stop else None,
            "seed": self.seed,
        }

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "messages": [dict(m) for m in self.messages] if self.messages is not None else None,
            "prompt": self.prompt,
            **self.decoding(),
            "extra": self.extra,
        }


# Which tokens of context+continuation are the continuation's (see LoglikelihoodRequest).
BOUNDARIES = ("harness", "context-length")


@dataclass(frozen=True)
class LoglikelihoodRequest:
    """log P(continuation | context), summed over the continuation's tokens.

    `boundary` says which tokens are the continuation's (histbench.core.likelihood):
    "harness" (the default, lm-evaluation-harness's convention: trailing whitespace of the
    context moves to the start of the continuation, and the continuation's tokens are those
    of context+continuation after the context's tokens) or "context-length" (the Chronologic
    authors' convention: the context keeps its whitespace, the continuation's tokens are
    those after as many tokens as the context alone has). It is part of the request, so of
    its key; the default adds nothing to the key.
    """

    context: str
    continuation: str
    boundary: str = "harness"

    kind: ClassVar[str] = LOGLIKELIHOOD

    def __post_init__(self) -> None:
        if not isinstance(self.context, str) or not isinstance(self.continuation, str):
            raise EvalError("a LoglikelihoodRequest takes two strings (context, continuation)")
        if not self.continuation:
            raise EvalError("a LoglikelihoodRequest's continuation is empty", field="continuation")
        if self.boundary not in BOUNDARIES:
            raise EvalError(f"unknown tokenisation boundary {self.boundary!r} (known: {', '.join(BOUNDARIES)})",
                            field="boundary")

    def to_dict(self) -> dict:
        data = {"kind": self.kind, "context": self.context, "continuation": self.continuation}
        if self.boundary != "harness":  # keys of requests made before the field existed stay as they were
            data["boundary"] = self.boundary
        return data


@dataclass(frozen=True)
class FillMaskRequest:
    """A sentence with exactly one mask (any of MASK_SPELLINGS) -> the top_k fillers."""

    text: str
    top_k: int = 10

    kind: ClassVar[str] = FILL_MASK

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise EvalError("a FillMaskRequest's text must be a string", field="text")
        if not isinstance(self.top_k, int) or self.top_k < 1:
            raise EvalError(f"top_k must be a positive integer, got {self.top_k!r}", field="top_k")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "text": self.text, "top_k": self.top_k}


Request = GenerateRequest | LoglikelihoodRequest | FillMaskRequest


def request_from_dict(data: Mapping) -> Request:
    kind = data.get("kind")
    body = {k: v for k, v in data.items() if k != "kind"}
    if kind == GENERATE:
        return GenerateRequest(**body)
    if kind == LOGLIKELIHOOD:
        return LoglikelihoodRequest(**body)
    if kind == FILL_MASK:
        return FillMaskRequest(**body)
    raise EvalError(f"unknown request kind {kind!r}")


# --------------------------------------------------------------------------- results


@dataclass
class GenerateResult:
    """text: the answer (stop string removed); finish_reason: "stop" or "length" (or what
    the provider said); model: the model id the backend reports; usage: token counts;
    raw: the provider's JSON (api) or what the local backend computed; attempts: how
    many HTTP attempts the answer took (api)."""

    text: str
    finish_reason: str | None = None
    model: str | None = None
    usage: dict | None = None
    raw: Any = None
    attempts: int = 1

    kind: ClassVar[str] = GENERATE

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class LoglikelihoodResult:
    """logprob: natural-log probability summed over n_tokens continuation tokens;
    is_greedy: every continuation token was the argmax; truncated: how many tokens were
    cut from the left of the context to fit the model's window (0 = none)."""

    logprob: float
    n_tokens: int
    is_greedy: bool
    truncated: int = 0

    kind: ClassVar[str] = LOGLIKELIHOOD

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class FillMaskResult:
    """candidates: [{"token": decoded and stripped, "token_id": int, "probability": float,
    "piece": the vocabulary entry}, ...], most probable first."""

    candidates: list[dict] = field(default_factory=list)

    kind: ClassVar[str] = FILL_MASK

    def to_dict(self) -> dict:
        return asdict(self)


Result = GenerateResult | LoglikelihoodResult | FillMaskResult

_RESULT_TYPES = {GENERATE: GenerateResult, LOGLIKELIHOOD: LoglikelihoodResult, FILL_MASK: FillMaskResult}


def result_from_dict(kind: str, data: Mapping) -> Result:
    return _RESULT_TYPES[kind](**data)


#: how far above zero a token log-probability may lie and still be read as 0 (float rounding:
#: a log-softmax computed in float32 or a server's rounding can give +1e-7); anything higher,
#: and NaN or an infinity, is an invalid answer
LOGPROB_TOLERANCE = 1e-4


def check_logprob(value: Any, what: str = "log-probability") -> float:
    """A log-probability read from outside: a finite number not above LOGPROB_TOLERANCE,
    clamped to at most 0. ValueError naming what is wrong otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"the {what} is not a number: {str(value)[:80]!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"the {what} is {number!r}: not a finite number")
    if number > LOGPROB_TOLERANCE:
        raise ValueError(f"the {what} is {number!r}: above 0 (a probability above 1)")
    return min(number, 0.0)


def invalid_result(kind: str, response: Any) -> str | None:
    """Why a result (as its dict, the way the run store keeps it) is not a valid answer, or
    None when it is one. The run store asks this of every answer before it stores it and of
    every stored answer it reads back, so that an invalid answer is never scored and is
    asked again:

    - generate: `text` a string, `finish_reason` a string (or null) and not "error";
    - loglikelihood: `logprob` finite and not above LOGPROB_TOLERANCE, `n_tokens` a
      non-negative integer, `is_greedy` a boolean;
    - fill_mask: `candidates` a list of objects, each with a `token` string and a finite
      `probability` in [0, 1 + LOGPROB_TOLERANCE]."""
    if not isinstance(response, Mapping):
        return "the answer is not an object"
    if kind in _RESULT_TYPES:
        try:
            result_from_dict(kind, response)
        except TypeError as exc:
            return f"the answer does not have a {kind} result's fields ({exc})"
    if kind == GENERATE:
        if not isinstance(response.get("text"), str):
            return f"the answer's text is a {type(response.get('text')).__name__}, not a string"
        reason = response.get("finish_reason")
        if reason is not None and not isinstance(reason, str):
            return f"the finish reason is a {type(reason).__name__}, not a string"
        if reason == "error":
            return "the server ended the answer with finish_reason 'error'"
        return None
    if kind == LOGLIKELIHOOD:
        try:
            check_logprob(response.get("logprob"), "summed log-probability")
        except ValueError as exc:
            return str(exc)
        n_tokens = response.get("n_tokens")
        if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 0:
            return f"n_tokens is {n_tokens!r}, not a non-negative integer"
        if not isinstance(response.get("is_greedy"), bool):
            return f"is_greedy is {response.get('is_greedy')!r}, not true or false"
        return None
    if kind == FILL_MASK:
        candidates = response.get("candidates")
        if not isinstance(candidates, list):
            return "the candidates are not a list"
        for n, candidate in enumerate(candidates):
            if not isinstance(candidate, Mapping) or not isinstance(candidate.get("token"), str):
                return f"candidate {n} has no token string"
            probability = candidate.get("probability")
            if (isinstance(probability, bool) or not isinstance(probability, int | float) or not math.isfinite(probability)
                    or not 0.0 <= probability <= 1.0 + LOGPROB_TOLERANCE):
                return f"candidate {n}'s probability is {probability!r}, not a number in [0, 1]"
        return None
    return f"unknown request kind {kind!r}"


class RequestFailed(Exception):
    """One request got a definitive non-answer (e.g. HTTP 400 for a too-long prompt).

    Yielded (not raised) by `Backend.stream` in place of a result; the run store records
    it as a failed request, which a later run asks again.
    """

    def __init__(self, message: str, raw: Any = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.raw = raw
        self.attempts = attempts


# --------------------------------------------------------------------------- keys


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def request_key(backend_key: Mapping, request: Request) -> str:
    """sha256 of the backend's identity (spec, revision, output-affecting options) and the
    canonical request (which holds its decoding parameters)."""
    text = canonical_json({"backend": dict(backend_key), "request": request.to_dict()})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- backend


class Backend(ABC):
    """One model behind one spec string.

    Subclasses set `kind`, `supports`, and implement the batched methods for the kinds
    they support (`_generate_batch`, `_loglikelihood_batch`, `_fill_mask_batch`) or
    override `stream` entirely (the api backend does, to answer concurrently).
    """

    kind: ClassVar[str]
    #: option name -> (default, help); unknown options are an error.
    OPTIONS: ClassVar[dict[str, tuple[Any, str]]] = {}
    #: options that change answers, hence part of every request key.
    KEY_OPTIONS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: str, target: str, options: Mapping | None = None) -> None:
        from histbench.core.secrets import register_secrets_in

        from .spec import canonical_spec, display_spec

        #: the spec as given, credentials in its URL redacted: what every file records
        self.spec = display_spec(spec)
        #: what identifies the model's answers (request keys, the run folder's owner check)
        self.canonical_spec = canonical_spec(spec)
        self.target = target
        #: what results call the model ("model" of identity() and of every record): the
        #: target, or a name where the target is a folder histbench chose (the offline
        #: model's cache), so that no local path of histbench's own lands in a run's files
        self.model_name = target
        self.options = self._check_options(options or {})
        register_secrets_in({"spec": spec, **self.options})
        self.supports: frozenset[str] = frozenset()

    @classmethod
    def _check_options(cls, options: Mapping) -> dict:
        unknown = sorted(set(options) - set(cls.OPTIONS))
        if unknown:
            known = ", ".join(sorted(cls.OPTIONS)) or "none"
            raise EvalError(f"unknown option(s) {', '.join(unknown)} for the {cls.kind} backend (known: {known})", field="--model-option")
        merged = {name: default for name, (default, _) in cls.OPTIONS.items()}
        merged.update(options)
        return merged

    # -- identity ----------------------------------------------------------------

    @property
    def revision(self) -> str | None:
        return None

    def identity(self) -> dict:
        """What results record about the model: backend kind, spec, canonical spec, model,
        revision, options. Credentials are redacted (by name and by value, see
        histbench.core.secrets), so the identity can be written anywhere."""
        from histbench.core.secrets import redact

        return redact({
            "backend": self.kind,
            "spec": self.spec,
            "canonical_spec": self.canonical_spec,
            "model": self.model_name,
            "revision": self.revision,
            "options": {k: v for k, v in sorted(self.options.items()) if _jsonable(v)},
        })

    def key_identity(self) -> dict:
        """The part of the identity that goes into every request key: the canonical spec
        (not how the key is found or how the host is spelt), the revision, and the
        options that change answers."""
        return {
            "spec": self.canonical_spec,
            "revision": self.revision,
            "options": {k: self.options.get(k) for k in self.KEY_OPTIONS},
        }

    def key_config(self, kind: str) -> dict:
        """What a request key of this kind hashes besides the request: the key identity
        (a backend may add options that shape one kind of request only)."""
        return self.key_identity()

    def key(self, request: Request) -> str:
        return request_key(self.key_config(request.kind), request)

    def config_digest(self, kind: str) -> str:
        """A short digest of key_config(kind): each stored record carries it, and run.json
        the current one per kind, so that a reader without the backend (the viewer) can tell
        a line of another model or configuration."""
        return hashlib.sha256(canonical_json(self.key_config(kind)).encode("utf-8")).hexdigest()[:16]

    # -- answering ---------------------------------------------------------------

    def check_supported(self, requests: Sequence[Request]) -> None:
        for n, request in enumerate(requests):
            if request.kind not in self.supports:
                can = ", ".join(sorted(self.supports)) or "nothing"
                raise EvalError(
                    f"the {self.kind} backend {self.spec!r} cannot answer {request.kind} requests (it supports: {can})",
                    row=n,
                )

    @property
    def batch_size(self) -> int:
        return int(self.options.get("batch_size") or 8)

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Result | RequestFailed]]:
        """Yield (index into requests, result) as answers become available."""
        self.check_supported(requests)
        by_kind: dict[str, list[int]] = {}
        for n, request in enumerate(requests):
            by_kind.setdefault(request.kind, []).append(n)
        for kind, indices in by_kind.items():
            method: Callable = getattr(self, f"_{kind}_batch")
            for chunk_indices, results in method([requests[i] for i in indices], indices):
                yield from zip(chunk_indices, results, strict=True)

    def answer(self, requests: Sequence[Request]) -> list[Result]:
        """All answers in request order (no run store: nothing is saved)."""
        out: list[Result | None] = [None] * len(requests)
        for index, result in self.stream(list(requests)):
            if isinstance(result, RequestFailed):
                raise EvalError(f"request {index} failed: {result}")
            out[index] = result
        return out  # type: ignore[return-value]

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        return self.answer(requests)  # type: ignore[return-value]

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest]) -> list[LoglikelihoodResult]:
        return self.answer(requests)  # type: ignore[return-value]

    def fill_mask(self, requests: Sequence[FillMaskRequest]) -> list[FillMaskResult]:
        return self.answer(requests)  # type: ignore[return-value]

    def close(self) -> None:
        """Release resources (models, connections)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}>"


def register_hub_token() -> None:
    """The Hugging Face token (HF_TOKEN, or the one `hf auth login` saved) is read by
    transformers and vLLM when they download: register it, so that it is never written."""
    from histbench.core.secrets import register_secret

    try:
        from huggingface_hub import get_token
    except ImportError:
        return
    try:
        register_secret(get_token())
    except Exception:  # noqa: BLE001 - an unreadable token file is the Hub client's business
        return


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True
