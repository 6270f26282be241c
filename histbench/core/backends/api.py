"""The `api` backend: any OpenAI-compatible endpoint (OpenAI, vLLM, SGLang, TGI or llama.cpp
servers, OpenRouter, ...), over httpx, asynchronously, with a concurrency limit.

- generate: `POST {base}/chat/completions` (chat messages; a plain prompt is sent as one
  user message), or with `generate_endpoint=completions`, `POST {base}/completions` with
  the prompt as text, so that base models read no chat template (messages are joined by
  blank lines, or rendered with the local tokenizer's chat template under
  `chat_template=always`);
- loglikelihood: `POST {base}/completions` with `echo: true`, `logprobs: 1`, `temperature: 0`
  and `max_tokens: 0` (vLLM 0.32's server answers it; 1 where a server refuses 0: the extra
  token is ignored), several prompts per request (`prompts_per_request`), the options of one context
  together and contexts in text order, so that a server's prefix cache sees shared
  prefixes one after another. The answer is read from `choices[].logprobs` (`tokens`,
  `token_logprobs`, `top_logprobs`, `text_offset`: the format vLLM, SGLang and TGI serve).
  Which tokens are the continuation's:
    * with the model's tokenizer (`tokenizer=PATH_OR_ID`): tokenised here exactly as the hf
      backend tokenises (histbench.core.likelihood.encode_requests: either boundary, empty
      contexts, left truncation to the window, counted) and sent as token ids, as
      lm-evaluation-harness's local-completions does; the continuation is the token
      positions after the context's;
    * without it: the text is sent and the continuation's tokens are those whose text offset
      is at or after the continuation's first character, counted from the end of the
      echoed prompt (harness boundary: the context's trailing whitespace moves to the
      continuation first; the Chronologic authors' boundary: the context keeps it, so a
      first word that absorbed the space is read as context, as in their code). This equals
      the token-count rules wherever the tokenizer does not merge across the boundary.
  `is_greedy` says whether each continuation token was the top-1 token (top_logprobs).
  A server that answers without prompt log-probabilities (llama.cpp's server, OpenAI's
  chat models) stops the run with one line naming it.

Retry policy (fixed before any run, the same for every request):

- retried, with exponential backoff and full jitter (wait uniform(0, min(backoff_max,
  backoff_base * 2**(attempt-1))) seconds, at least the server's Retry-After when it sends
  one): transport errors (refused or reset connections, a connection closed half-way
  through a response), timeouts, HTTP 429, HTTP 5xx, and a 200 whose body is not a
  complete chat-completion (or completion) JSON (a truncated transfer is not an answer);
- never retried: a complete answer, whatever it says. Parsing happens later, in the run
  store, and a parse failure is stored as such;
- an answer that cannot be true or says it is an error (a NaN, infinite or positive
  log-probability beyond LOGPROB_TOLERANCE, the wrong number of choices or repeated
  choice indices, content that is not text, finish_reason "error", an error object) is
  a failed attempt: retried like a transport error, and once the retries are spent the
  request is recorded as failed (`RequestFailed`), never as an answer; the run goes on;
- each attempt is read as a stream under a wall-clock `deadline` (to the answer's last
  byte: `timeout` bounds each read only) and a size cap `max_response_bytes`; an attempt
  past the deadline is retried like a timeout, an answer over the cap is a failed
  request (not retried);
- a definitive refusal of one request (HTTP 400, 413, 422 and other 4xx) is recorded as a
  failed request (`RequestFailed`) with the provider's body; the run continues (a refused
  request of several prompts is asked again one prompt at a time, so that one prompt too
  long for the server fails alone);
- HTTP 401/403/404 (wrong key, wrong URL or model) and exhausted retries stop the run with
  an `EvalError`: every answer received so far is already in the run store, so a rerun
  resumes.

Each retry is said on stderr as it happens ("retrying (3/6) after connection refused ..."),
once for all the requests in flight that retry for the same reason at the same attempt.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import random
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from histbench.core.errors import EvalError
from histbench.core.secrets import (
    MIN_SECRET_LENGTH,
    is_secret_name,
    key_like_values,
    redact,
    redact_http_logs,
    register_secret,
    short_credentials,
    short_url_credentials,
)

from .base import (
    GENERATE,
    LOGLIKELIHOOD,
    Backend,
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    Request,
    RequestFailed,
    Result,
    check_logprob,
)

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
RETRY_STATUSES = frozenset({429}) | frozenset(range(500, 600))
FATAL_STATUSES = {401: "authentication failed", 403: "access refused", 404: "no such endpoint or model"}
GENERATE_ENDPOINTS = ("chat", "completions")
CHAT_TEMPLATE_MODES = {"auto": "auto", "always": "always", "never": "never", True: "always", False: "never"}
#: options that change answers only when they are not at their default: a run made before
#: they existed keeps its request keys
_KEY_WHEN_SET = ("generate_endpoint", "chat_template", "tokenizer", "add_bos_token", "max_length")
#: seconds after which the same retry line is said again
RETRY_LINE_EVERY_S = 10.0
#: the default size cap of one answer: a 120-token chat answer is a few KB, and eight echoed
#: 2,048-token prompts with their top log-probabilities about 3 MB
MAX_RESPONSE_BYTES = 32 * 2**20


class _Fatal(Exception):
    pass


class _Incomplete(Exception):
    """A 200 whose body is not the complete answer (retried like a transport error)."""


class _Invalid(Exception):
    """A complete 200 whose answer cannot be true or was an error: a log-probability that is
    NaN, infinite or above zero, the wrong number of choices, content that is not text,
    finish_reason "error" or an error object. A failed attempt: asked again like a
    transport error, and once the retries are spent the request is recorded as failed
    (never as an answer), so that a later run asks it again."""

    def __init__(self, message: str, body: str = "") -> None:
        super().__init__(message)
        self.body = body


class _TooLarge(Exception):
    """An answer longer than max_response_bytes (read no further)."""


@dataclass
class _Answer:
    """An HTTP answer read whole within the deadline and the size cap."""

    status_code: int
    headers: Any
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


@dataclass
class _Job:
    """One HTTP request: the request indices it answers, its URL and body, and how to turn
    the server's JSON into (index, result) pairs."""

    indices: list[int]
    url: str
    body: dict
    parse: Callable[[dict], list[tuple[int, Result | RequestFailed]]]
    #: the same work as single-prompt jobs, asked when the server refuses this one (4xx)
    split: Callable[[], list[_Job]] | None = None


@dataclass
class _Prompt:
    """One loglikelihood prompt: token ids (tokenised here) or text (tokenised by the server)."""

    index: int
    request: LoglikelihoodRequest
    ids: list[int] | None = None
    n_context: int = 0
    n_continuation: int = 0
    text: str | None = None
    continuation_text: str = ""
    truncated: int = 0

    @property
    def payload(self) -> str | list[int]:
        return self.ids if self.ids is not None else self.text  # type: ignore[return-value]


class APIBackend(Backend):
    kind = "api"
    OPTIONS = {
        "max_concurrency": (8, "requests in flight at once"),
        "timeout": (120.0, "seconds allowed per read, write or pool wait of an HTTP attempt (connect gets min(timeout, 10))"),
        "deadline": (600.0, "seconds allowed per HTTP attempt from sending the request to the answer's last byte, however "
                            "the server paces its bytes (a cut-off attempt is retried like a timeout)"),
        "max_response_bytes": (MAX_RESPONSE_BYTES, "bytes an answer may hold (decoded); a longer one is read no further and "
                                                   "its request recorded as failed"),
        "max_retries": (6, "retries per request after transport errors, timeouts, 429 and 5xx"),
        "backoff_base": (1.0, "seconds: the first retry waits up to this long, doubling each time (full jitter)"),
        "backoff_max": (60.0, "seconds: longest wait between two attempts"),
        "api_key_env": (None, "environment variable holding the key (same as #ENV in the spec)"),
        "max_tokens_field": ("max_tokens", "JSON field carrying max_new_tokens (max_completion_tokens for OpenAI reasoning models)"),
        "extra_body": (None, "JSON object merged into every request body, e.g. {\"reasoning_effort\": \"low\"}"),
        "headers": (None, "JSON object of extra HTTP headers"),
        "generate_endpoint": ("chat", "generate through chat (/chat/completions: the server applies the chat template) or "
                                      "completions (/completions with the prompt as text: base models)"),
        "tokenizer": (None, "the model's tokenizer (local folder or Hub id): loglikelihood requests are tokenised here and "
                            "sent as token ids (exact boundaries, empty contexts, left truncation), and chat prompts scored "
                            "by likelihood get its chat template"),
        "chat_template": ("auto", "what likelihood contexts and completions prompts read: auto (the tokenizer's chat template "
                                  "where generation goes through /chat/completions), always, never (messages joined by blank lines)"),
        "prompts_per_request": (8, "loglikelihood: prompts per /completions request (the options of a context stay together)"),
        "echo_max_tokens": ("auto", "loglikelihood: max_tokens sent with echo: auto (0, then 1 once the server refuses 0), 0 or 1"),
        "max_length": (None, "loglikelihood with a tokenizer: the model's window (default: the tokenizer folder's config, "
                             "else its model_max_length, else 2048)"),
        "add_bos_token": (None, "loglikelihood with a tokenizer: encode with special tokens: null = the tokenizer's default, true, false"),
        "trust_remote_code": (False, "tokenizer: allow its code from the Hub"),
    }
    KEY_OPTIONS = ("max_tokens_field", "extra_body")

    def __init__(self, spec: str, model: str, base_url: str, key_env: str | None, options: Mapping | None = None) -> None:
        super().__init__(spec, model, options)
        self.model = model
        self.base_url = base_url
        env = key_env or self.options.get("api_key_env")
        if env is not None:
            from .spec import is_env_name

            if not is_env_name(env):  # a key given where its variable's name belongs: never shown
                register_secret(env if isinstance(env, str) else None)
                raise EvalError("option api_key_env must name an environment variable that holds the key (e.g. "
                                "OPENAI_API_KEY), not the key itself; what was given is not shown", field="--model-option")
        self.key_env = env
        short = short_url_credentials(base_url)
        if short:
            raise EvalError(f"{', '.join(short)} is shorter than {MIN_SECRET_LENGTH} characters: histbench refuses credentials "
                            "that short, since it could not keep them out of what it writes (the value is not shown)",
                            field="--model")
        # the key is read when requests are sent; it is registered now, before anything is written
        register_secret(os.environ.get(env or DEFAULT_KEY_ENV))
        redact_http_logs()   # httpx logs each request's URL (with its user part and query) at INFO
        self.supports = frozenset({GENERATE, LOGLIKELIHOOD})
        for name in ("extra_body", "headers"):
            value = self.options.get(name)
            if value is not None and not isinstance(value, dict):
                raise EvalError(f"option {name} must be a JSON object, got {redact(value)!r}", field="--model-option")
        short = short_credentials({"headers": self.options.get("headers") or {},
                                   "extra_body": self.options.get("extra_body") or {}})
        if short:
            raise EvalError(f"{', '.join(short)} holds a credential shorter than {MIN_SECRET_LENGTH} characters: histbench "
                            "refuses credentials that short, since it could not keep them out of what it writes without "
                            "corrupting ordinary text (the value is not shown)", field="--model-option")
        for name in ("deadline", "max_response_bytes"):
            value = self.options[name]
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or value != value:
                raise EvalError(f"option {name} must be a positive number, got {value!r}", field="--model-option")
        if int(self.options["max_concurrency"]) < 1:
            raise EvalError("max_concurrency must be at least 1", field="--max-concurrency")
        if self.options["generate_endpoint"] not in GENERATE_ENDPOINTS:
            raise EvalError(f"generate_endpoint must be chat or completions, got {self.options['generate_endpoint']!r}",
                            field="--model-option")
        if self.options["chat_template"] not in CHAT_TEMPLATE_MODES:
            raise EvalError(f"chat_template must be auto, always or never, got {self.options['chat_template']!r}",
                            field="--model-option")
        self.options["chat_template"] = CHAT_TEMPLATE_MODES[self.options["chat_template"]]
        per_request = self.options["prompts_per_request"]
        if isinstance(per_request, bool) or not isinstance(per_request, int) or per_request < 1:
            raise EvalError(f"prompts_per_request must be a positive integer, got {per_request!r}", field="--model-option")
        if self.options["echo_max_tokens"] not in ("auto", 0, 1):
            raise EvalError(f"echo_max_tokens must be auto, 0 or 1, got {self.options['echo_max_tokens']!r}",
                            field="--model-option")
        #: max_tokens sent with echo now (auto starts at 0 and moves to 1 when the server refuses 0)
        self.echo_max_tokens = 0 if self.options["echo_max_tokens"] == "auto" else int(self.options["echo_max_tokens"])
        self._tokenizer = None
        self._window: int | None = None
        #: counters over the backend's life: attempts, retries by reason, failed requests.
        self.stats: dict[str, Any] = {"attempts": 0, "retries": {}, "failed": 0}
        self._said: dict[tuple[int, str], float] = {}   # (attempt, reason) -> when its retry line was said

    @classmethod
    def from_spec(cls, spec: str, target: str, options: Mapping) -> APIBackend:
        from .spec import parse_api_target

        model, url, env = parse_api_target(target)
        return cls(spec, model, url, env, options)

    def endpoint(self, path: str) -> str:
        """{base}/path (the base URL's query string, e.g. Azure's api-version, kept)."""
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(self.base_url)
        return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + path))

    @property
    def url(self) -> str:
        """The chat-completions URL."""
        return self.endpoint("chat/completions")

    @property
    def completions_url(self) -> str:
        return self.endpoint("completions")

    @property
    def shown_url(self) -> str:
        """The chat-completions URL as error messages show it (credentials in its query redacted)."""
        from histbench.core.secrets import redact_url

        return redact_url(self.url)

    def identity(self) -> dict:
        from histbench.core.secrets import redact_url

        ident = super().identity()
        ident.update({"model": self.model, "base_url": redact_url(self.base_url), "key_env": self.key_env})
        return ident

    def key_config(self, kind: str) -> dict:
        """As every backend's, plus the options that shape this kind of request when they are
        not at their defaults (so runs made before those options existed keep their keys)."""
        ident = self.key_identity()
        extra: dict[str, Any] = {}
        if kind == GENERATE and self.options["generate_endpoint"] == "completions":
            extra = {"generate_endpoint": "completions", "chat_template": self.options["chat_template"]}
            if self.options["chat_template"] == "always":
                extra["tokenizer"] = self.options["tokenizer"]
        elif kind == LOGLIKELIHOOD:
            extra = {"tokenizer": self.options["tokenizer"]}
            if self.options["tokenizer"]:
                extra.update(add_bos_token=self.options["add_bos_token"], max_length=self.options["max_length"])
        if extra:
            ident = {**ident, "options": {**ident["options"], **extra}}
        return ident

    # -- the model's tokenizer (optional) --------------------------------------------------

    @property
    def tokenizer(self):
        """The `tokenizer` option's tokenizer (loaded once), or None without the option."""
        name = self.options["tokenizer"]
        if not name:
            return None
        if self._tokenizer is None:
            from histbench.core.extras import require

            from .base import register_hub_token

            register_hub_token()
            transformers = require("transformers", "the api backend's tokenizer option")
            try:
                self._tokenizer = transformers.AutoTokenizer.from_pretrained(
                    os.path.expanduser(str(name)), trust_remote_code=bool(self.options["trust_remote_code"]))
            except (OSError, ValueError) as exc:
                raise EvalError(f"cannot load the tokenizer {name!r}: {exc}", field="--model-option") from exc
        return self._tokenizer

    def window(self) -> int:
        """The model's context window, for left truncation of tokenised requests."""
        if self._window is None:
            from types import SimpleNamespace

            from histbench.core.likelihood import model_max_length

            if self.options["max_length"]:
                self._window = int(self.options["max_length"])
            else:
                config = None
                try:
                    from transformers import AutoConfig

                    config = AutoConfig.from_pretrained(os.path.expanduser(str(self.options["tokenizer"])),
                                                        trust_remote_code=bool(self.options["trust_remote_code"]))
                except (OSError, ValueError):
                    config = None  # a tokenizer-only folder: the tokenizer's own limit
                self._window = model_max_length(SimpleNamespace(config=config), self.tokenizer)
        return self._window

    def render(self, request: GenerateRequest) -> tuple[str, bool]:
        """The text the model reads for a generate request, and whether a chat template made
        it: where generation goes through /chat/completions the server applies the model's
        chat template, so scoring the same prompt by likelihood needs that template here
        (the tokenizer option); under chat_template=never, or for /completions generation,
        the messages' contents joined by blank lines (a base model)."""
        mode = self.options["chat_template"]
        chat = self.options["generate_endpoint"] == "chat"
        messages = list(request.messages) if request.messages is not None else None
        if not (mode == "always" or (chat and mode == "auto")):
            if messages is None:
                return request.prompt or "", False
            return "\n\n".join(m["content"] for m in messages), False
        if messages is None:
            messages = [{"role": "user", "content": request.prompt}]
        tokenizer = self.tokenizer
        if tokenizer is None or not getattr(tokenizer, "chat_template", None):
            why = "no tokenizer is given" if tokenizer is None else f"the tokenizer {self.options['tokenizer']!r} has no chat template"
            raise EvalError(
                f"{self.spec}: what the model reads here is its chat template, and {why}: give the model's tokenizer "
                "(--model-option tokenizer=PATH_OR_ID), or --model-option chat_template=never to read the messages "
                "as plain text (a base model)", field="--model-option")
        text = tokenizer.apply_chat_template([dict(m) for m in messages], add_generation_prompt=True, tokenize=False)
        return text, True

    # -- request bodies ----------------------------------------------------------------------

    def body(self, request: GenerateRequest) -> dict:
        """The JSON of a generate request (chat or completions, by generate_endpoint)."""
        body: dict[str, Any]
        if self.options["generate_endpoint"] == "completions":
            body = {"model": self.model, "prompt": self.render(request)[0], "max_tokens": request.max_new_tokens}
        else:
            messages = list(request.messages) if request.messages is not None else [{"role": "user", "content": request.prompt}]
            body = {"model": self.model, "messages": [dict(m) for m in messages],
                    self.options["max_tokens_field"]: request.max_new_tokens}
        body.update({"temperature": request.temperature, "top_p": request.top_p})
        if request.stop:
            body["stop"] = list(request.stop)
        if request.seed is not None:
            body["seed"] = request.seed
        body.update(self.options.get("extra_body") or {})
        body.update(request.extra or {})
        return body

    def _generate_job(self, index: int, request: GenerateRequest) -> _Job:
        completions = self.options["generate_endpoint"] == "completions"

        def parse(data: dict, sent: dict) -> list[tuple[int, Result | RequestFailed]]:
            _check_no_error(data)
            try:
                choice = data["choices"][0]
                text = choice["text"] if completions else choice["message"].get("content")
            except (KeyError, IndexError, TypeError, AttributeError) as exc:
                kind = "completion" if completions else "chat completion"
                raise _Incomplete(f"HTTP 200 without a complete {kind}: {json.dumps(data)[:300]!r}") from exc
            wanted = sent.get("n", 1)
            if isinstance(wanted, int) and not isinstance(wanted, bool) and len(data["choices"]) != wanted:
                raise _Invalid(f"{len(data['choices'])} choices for a request of {wanted}")
            _check_no_error(choice, "choice")
            text = _answer_text(text, "text" if completions else "message.content")
            reason, model = choice.get("finish_reason"), data.get("model")
            if reason is not None and not isinstance(reason, str):
                raise _Invalid(f"finish_reason is a {type(reason).__name__}, not a string")
            if model is not None and not isinstance(model, str):
                raise _Invalid(f"the answer's model is a {type(model).__name__}, not a string")
            usage = data.get("usage")
            return [(index, GenerateResult(text=text, finish_reason=reason, model=model,
                                           usage=usage if isinstance(usage, dict) else None, raw=data))]

        return _Job([index], self.completions_url if completions else self.url, self.body(request), parse)

    # -- loglikelihood -------------------------------------------------------------------------

    def _prompts(self, requests: Sequence[LoglikelihoodRequest], indices: Sequence[int]):
        """(prompts to send, answers known without asking): requests tokenised here with the
        tokenizer option, else text prompts with the part that is the continuation."""
        prompts: list[_Prompt] = []
        known: list[tuple[int, Result | RequestFailed]] = []
        tokenizer = self.tokenizer
        if tokenizer is not None:
            from histbench.core.likelihood import encode_requests

            # the server feeds every prompt token and generates up to one more: the window
            # holds context + continuation + 1
            encoded = encode_requests(tokenizer, requests, max_length=self.window() - 2,
                                      add_bos_token=self.options["add_bos_token"])
            for index, request, item in zip(indices, requests, encoded, strict=True):
                if not item.continuation:  # the authors' boundary left the answer no token of its own
                    known.append((index, LoglikelihoodResult(logprob=0.0, n_tokens=0, is_greedy=False)))
                    continue
                prompts.append(_Prompt(index, request, ids=[*item.context, *item.continuation],
                                       n_context=len(item.context), n_continuation=len(item.continuation),
                                       truncated=item.truncated))
            return prompts, known
        for n, (index, request) in enumerate(zip(indices, requests, strict=True)):
            context, continuation = request.context, request.continuation
            if request.boundary == "harness":
                stripped = context.rstrip()
                context, continuation = stripped, context[len(stripped):] + continuation
            if not context.strip():
                raise EvalError(
                    f"{self.spec}: a log-likelihood request with an empty (or whitespace-only) context needs the model's "
                    "tokenizer, whose BOS token stands for the context: --model-option tokenizer=PATH_OR_ID", row=n,
                    field="context")
            prompts.append(_Prompt(index, request, text=context + continuation, continuation_text=continuation))
        return prompts, known

    def _loglikelihood_jobs(self, requests: Sequence[LoglikelihoodRequest], indices: Sequence[int]):
        """Jobs of up to prompts_per_request prompts: the options of one context together,
        contexts in text order (shared prefixes one after another)."""
        prompts, known = self._prompts(requests, indices)
        groups: dict[tuple, list[_Prompt]] = {}
        for prompt in prompts:
            key = (prompt.request.context, prompt.request.boundary)
            groups.setdefault(key, []).append(prompt)
        cap = int(self.options["prompts_per_request"])
        jobs: list[_Job] = []
        current: list[_Prompt] = []
        for key in sorted(groups):
            group = groups[key]
            if current and len(current) + len(group) > cap:
                jobs.append(self._likelihood_job(current))
                current = []
            for start in range(0, len(group), cap):
                part = group[start:start + cap]
                if current and len(current) + len(part) > cap:
                    jobs.append(self._likelihood_job(current))
                    current = []
                current += part
        if current:
            jobs.append(self._likelihood_job(current))
        return jobs, known

    def _likelihood_job(self, prompts: list[_Prompt]) -> _Job:
        body = {"model": self.model, "prompt": [p.payload for p in prompts], "max_tokens": 0, "echo": True,
                "logprobs": 1, "temperature": 0.0}
        body.update(self.options.get("extra_body") or {})

        def parse(data: dict, sent: dict) -> list[tuple[int, Result | RequestFailed]]:
            try:
                choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
            except (KeyError, TypeError, AttributeError) as exc:
                raise _Incomplete(f"HTTP 200 without a complete completion: {json.dumps(data)[:300]!r}") from exc
            if len(choices) != len(prompts):
                raise _Incomplete(f"HTTP 200 with {len(choices)} choices for {len(prompts)} prompts")
            _check_no_error(data)
            numbers = [c.get("index") if isinstance(c, Mapping) else None for c in choices]
            if any(n is not None for n in numbers) and (
                    not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers)
                    or sorted(numbers) != list(range(len(prompts)))):
                raise _Invalid(f"the choices' indices are {numbers[:20]}, not 0 to {len(prompts) - 1} once each")
            for choice in choices:
                _check_no_error(choice, "choice")
            generated = int(sent.get("max_tokens") or 0)
            return [(p.index, self._read_likelihood(p, choice, generated)) for p, choice in zip(prompts, choices, strict=True)]

        split = None
        if len(prompts) > 1:
            def split() -> list[_Job]:
                return [self._likelihood_job([p]) for p in prompts]
        return _Job([p.index for p in prompts], self.completions_url, body, parse, split=split)

    def _no_logprobs(self, detail: str) -> _Fatal:
        from histbench.core.secrets import redact_url

        return _Fatal(
            f"the server at {redact_url(self.completions_url)} answered without the prompt's log-probabilities ({detail}): "
            f"it cannot score log-likelihoods; serve the model with vLLM, SGLang or TGI (/completions with echo and "
            "logprobs), or score it in-process (hf: or vllm:)")

    def _read_likelihood(self, prompt: _Prompt, choice: Any, generated: int) -> Result | RequestFailed:
        logprobs = choice.get("logprobs") if isinstance(choice, Mapping) else None
        values = logprobs.get("token_logprobs") if isinstance(logprobs, Mapping) else None
        if not isinstance(values, list) or not values:
            raise self._no_logprobs("choices[].logprobs.token_logprobs is missing")
        tops = logprobs.get("top_logprobs")
        if prompt.ids is not None:
            n_prompt = len(prompt.ids)
            if len(values) < n_prompt:
                raise self._no_logprobs(f"{len(values)} token log-probabilities for a prompt of {n_prompt} tokens")
            positions = list(range(prompt.n_context, prompt.n_context + prompt.n_continuation))
        else:
            tokens = logprobs.get("tokens")
            n_prompt = len(values) - generated
            if n_prompt < 1 or not isinstance(tokens, list) or len(tokens) < n_prompt:
                raise self._no_logprobs(f"{len(values)} token log-probabilities, {generated} of them generated")
            tokens = [str(t) for t in tokens[:n_prompt]]
            offsets = logprobs.get("text_offset")
            if not (isinstance(offsets, list) and len(offsets) >= n_prompt):
                offsets, at = [], 0
                for token in tokens:
                    offsets.append(at)
                    at += len(token)
            end = int(offsets[n_prompt - 1]) + len(tokens[-1])
            if not "".join(tokens).endswith(prompt.continuation_text):
                return RequestFailed(
                    "the server's prompt tokens do not spell out the continuation (offsets cannot be trusted, e.g. a "
                    "character split across byte tokens); give the model's tokenizer (--model-option "
                    "tokenizer=PATH_OR_ID) to tokenise here", raw={"tokens": tokens[-20:]})
            boundary = end - len(prompt.continuation_text)
            positions = [k for k in range(n_prompt) if int(offsets[k]) >= boundary]
        if not positions:
            if prompt.request.boundary == "context-length":
                return LoglikelihoodResult(logprob=0.0, n_tokens=0, is_greedy=False)
            return RequestFailed("the continuation has no tokens of its own after tokenisation (it merged into the context)")
        picked = [values[k] for k in positions]
        if any(v is None for v in picked):
            return RequestFailed("the context has no token of its own before the continuation (the server gives the "
                                 "first token no log-probability)")
        try:  # each token's log-probability finite and not above 0 (within LOGPROB_TOLERANCE, read as 0)
            picked = [check_logprob(v, f"log-probability of prompt token {k}") for k, v in zip(positions, picked, strict=True)]
            greedy = True
            for k, value in zip(positions, picked, strict=True):
                top = tops[k] if isinstance(tops, list) and k < len(tops) else None
                if not isinstance(top, Mapping) or not top:
                    greedy = False
                    break
                best = max(check_logprob(v, f"top log-probability of prompt token {k}") for v in top.values())
                if value < best:
                    greedy = False
                    break
        except ValueError as exc:
            raise _Invalid(str(exc)) from None
        return LoglikelihoodResult(logprob=float(sum(picked)), n_tokens=len(positions),
                                   is_greedy=greedy, truncated=prompt.truncated)

    # -- sending ---------------------------------------------------------------------------------

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        env = self.key_env
        if env:
            key = os.environ.get(env)
            if not key:
                raise EvalError(f"the model spec names ${env} for the API key, but it is not set", field="--model")
        else:
            key = os.environ.get(DEFAULT_KEY_ENV)
        if key and len(key.strip()) < MIN_SECRET_LENGTH:
            raise EvalError(
                f"the API key in ${env or DEFAULT_KEY_ENV} is shorter than {MIN_SECRET_LENGTH} characters: histbench refuses "
                "keys that short, since it could not keep them out of what it writes (a server echoing it) without "
                "corrupting ordinary text; for a server that needs no key, leave the variable unset", field="--model")
        if key:
            register_secret(key)
            headers["Authorization"] = f"Bearer {key}"
        extra = self.options.get("headers") or {}
        for name, value in extra.items():
            if is_secret_name(name):
                register_secret(str(value))
            for found in key_like_values(str(value)):  # a key inside a value under an innocent name
                register_secret(found)
        headers.update({str(k): str(v) for k, v in extra.items()})
        return headers

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        cap = min(float(self.options["backoff_max"]), float(self.options["backoff_base"]) * 2 ** (attempt - 1))
        delay = random.uniform(0, cap)
        if retry_after is not None:
            delay = max(delay, min(retry_after, float(self.options["backoff_max"])))
        return delay

    def _count_retry(self, reason: str) -> None:
        retries = self.stats["retries"]
        retries[reason] = retries.get(reason, 0) + 1

    def _refuses_zero(self, body: dict, status: int, text: str) -> bool:
        """A 4xx to an echo request with max_tokens 0 that names max_tokens (a server that asks for
        at least one token)."""
        return (body.get("echo") is True and body.get("max_tokens") == 0 and self.options["echo_max_tokens"] == "auto"
                and 400 <= status < 500 and "max_tokens" in text.lower())

    def _say_retry(self, url: str, attempt: int, reason: str, detail: str, delay: float) -> None:
        """One stderr line per (attempt, reason) while it repeats (the requests in flight
        retry together), again after RETRY_LINE_EVERY_S seconds."""
        import time

        from histbench.core.progress import log
        from histbench.core.secrets import redact_url

        said, now = (attempt, reason), time.monotonic()
        if now - self._said.get(said, -RETRY_LINE_EVERY_S) < RETRY_LINE_EVERY_S:
            return
        self._said[said] = now
        why = _retry_reason(reason, detail)
        hint = ""
        if attempt == 1 and why in ("the host name could not be resolved", "connection refused"):
            # said at the first retry, not after all of them: it rarely mends itself
            hint = ("; check the host and port in the --model URL and that the server runs (--model-option "
                    "max_retries=0 gives up at once)")
        log(f"histbench: {redact_url(url)}: retrying ({attempt}/{int(self.options['max_retries'])}) after "
            f"{why}; next attempt in {delay:.1f} s{hint}")

    async def _ask_each_alone(self, client, headers: dict, job: _Job, state: dict) -> list[tuple[int, Result | RequestFailed]] | None:
        """A batched job's prompts asked one by one (to find the one a server refuses or
        answers wrongly); None when the run has to stop."""
        answers = []
        for part in job.split():
            got = await self._ask(client, headers, part, state)
            if got is None:
                return None
            answers += got
        return answers

    async def _ask(self, client, headers: dict, job: _Job, state: dict) -> list[tuple[int, Result | RequestFailed]] | None:
        """One job with its retries; None when the run is stopping (another request hit a
        fatal error) and this one would need another attempt."""
        import httpx

        attempt = 0
        while True:
            attempt += 1
            self.stats["attempts"] += 1
            retry_after = None
            invalid_body = ""
            body = dict(job.body)
            if body.get("echo") is True:
                body["max_tokens"] = self.echo_max_tokens
            try:
                response = await self._post(client, job.url, body, headers)
            except httpx.TimeoutException as exc:
                reason, detail = "timeout", f"{type(exc).__name__}: {exc}"
            except TimeoutError:
                reason, detail = "timeout", f"no complete answer within the deadline of {self.options['deadline']} s"
            except httpx.TransportError as exc:
                reason, detail = "transport", f"{type(exc).__name__}: {exc}{_system_cause(exc)}"
            except _TooLarge as exc:
                failures: list[tuple[int, Result | RequestFailed]] = []
                for index in job.indices:
                    self.stats["failed"] += 1
                    failures.append((index, RequestFailed(str(exc), raw={"max_response_bytes": self.options["max_response_bytes"]},
                                                          attempts=attempt)))
                return failures
            else:
                status = response.status_code
                if status == 200:
                    try:
                        data = response.json()
                        if not isinstance(data, dict):
                            raise _Incomplete(f"HTTP 200 whose body is not a JSON object: {response.text[:300]!r}")
                        answers = job.parse(data, body)
                    except ValueError:
                        reason, detail = "incomplete", f"HTTP 200 whose body is not complete JSON: {response.text[:300]!r}"
                    except _Incomplete as exc:
                        reason, detail = "incomplete", str(exc)
                    except _Invalid as exc:
                        reason, detail = "invalid", f"an invalid answer ({exc})"
                        invalid_body = response.text[:2000]
                    else:
                        for _, result in answers:
                            result.attempts = attempt
                        return answers
                elif status in RETRY_STATUSES:
                    reason, detail = f"http_{status}", f"HTTP {status}: {response.text[:300]}"
                    retry_after = _retry_after(response.headers.get("Retry-After"))
                elif status in FATAL_STATUSES:
                    from histbench.core.secrets import redact_url

                    hint = f" (key from ${self.key_env or DEFAULT_KEY_ENV})" if status in (401, 403) else ""
                    raise _Fatal(f"{FATAL_STATUSES[status]}{hint}: HTTP {status} from {redact_url(job.url)}: {response.text[:300]}")
                elif self._refuses_zero(body, status, response.text):
                    self.echo_max_tokens = 1  # and ask again at once: the refusal cost nothing
                    attempt -= 1
                    continue
                elif job.split is not None:  # one of its prompts may be the one refused: ask each alone
                    return await self._ask_each_alone(client, headers, job, state)
                else:
                    try:
                        raw = response.json()
                    except ValueError:
                        raw = response.text
                    failures = []
                    for index in job.indices:
                        self.stats["failed"] += 1
                        failures.append((index, RequestFailed(f"HTTP {status}: {response.text[:500]}",
                                                              raw={"status": status, "body": raw}, attempts=attempt)))
                    return failures
            if state.get("fatal") is not None:
                return None
            if attempt > int(self.options["max_retries"]):
                from histbench.core.secrets import redact_url

                if reason == "invalid" and job.split is not None:  # which prompt's answer is invalid: ask each alone
                    return await self._ask_each_alone(client, headers, job, state)
                if reason == "invalid":  # the server answers, wrongly: this request fails, the run goes on
                    self.stats["failed"] += len(job.indices)
                    return [(index, RequestFailed(f"{detail} in each of {attempt} attempts", raw={"body": invalid_body},
                                                  attempts=attempt)) for index in job.indices]
                raise _Fatal(f"no answer from {redact_url(job.url)} after {attempt} attempts; last: {detail}")
            self._count_retry(reason)
            delay = self._delay(attempt, retry_after)
            self._say_retry(job.url, attempt, reason, detail, delay)
            await asyncio.sleep(delay)

    async def _post(self, client, url: str, body: dict, headers: dict) -> _Answer:
        """One HTTP attempt, read whole: TimeoutError when the answer's last byte has not come
        within `deadline` seconds of sending (`timeout` bounds each read only, so a server
        that drips bytes or never ends its stream would hold the request for ever),
        _TooLarge as soon as the answer (decoded) exceeds `max_response_bytes`."""
        cap = int(self.options["max_response_bytes"])
        async with asyncio.timeout(float(self.options["deadline"])):
            async with client.stream("POST", url, json=body, headers=headers) as response:
                length = response.headers.get("Content-Length", "")
                if length.isdigit() and int(length) > cap:
                    raise _TooLarge(f"the server announced an answer of {int(length):,} bytes, above max_response_bytes "
                                    f"({cap:,} bytes): not read")
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > cap:
                        raise _TooLarge(f"the answer exceeded max_response_bytes ({cap:,} bytes): read no further")
                    chunks.append(chunk)
                return _Answer(response.status_code, response.headers, b"".join(chunks))

    async def _run(self, jobs: Sequence[_Job], out: queue.Queue, stop: threading.Event) -> None:
        import httpx

        headers = self._headers()
        timeout = float(self.options["timeout"])
        limit = int(self.options["max_concurrency"])
        todo: asyncio.Queue = asyncio.Queue()
        for job in jobs:
            todo.put_nowait(job)
        limits = httpx.Limits(max_connections=limit, max_keepalive_connections=limit)
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)), limits=limits) as client:

            # A fatal error (wrong key, endpoint gone) stops the hand-out of new requests; the
            # attempts in flight still finish, so no answer the server sent is thrown away.
            state: dict[str, Any] = {"fatal": None}

            async def worker() -> None:
                while state["fatal"] is None:
                    try:
                        job = todo.get_nowait()
                    except asyncio.QueueEmpty:
                        return
                    try:
                        answers = await self._ask(client, headers, job, state)
                    except _Fatal as exc:
                        state["fatal"] = state["fatal"] or exc
                        return
                    for answer in answers or ():
                        out.put(("result", answer))

            workers = [asyncio.create_task(worker()) for _ in range(min(limit, len(jobs)))]

            async def watch() -> None:  # the consumer went away (Ctrl-C, error): stop asking
                while not stop.is_set():
                    await asyncio.sleep(0.05)
                for task in workers:
                    task.cancel()

            watcher = asyncio.create_task(watch())
            try:
                await asyncio.gather(*workers)
                if state["fatal"] is not None:
                    raise state["fatal"]
            finally:
                watcher.cancel()
                for task in workers:
                    task.cancel()
                await asyncio.gather(*workers, watcher, return_exceptions=True)

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Result | RequestFailed]]:
        self.check_supported(requests)
        requests = list(requests)
        if not requests:
            return
        self._headers()  # a missing key is an error before anything is sent
        jobs: list[_Job] = []
        known: list[tuple[int, Result | RequestFailed]] = []
        likelihood = [n for n, r in enumerate(requests) if r.kind == LOGLIKELIHOOD]
        if likelihood:  # tokenised (or checked) before anything is sent
            jobs, known = self._loglikelihood_jobs([requests[n] for n in likelihood], likelihood)
        jobs = [self._generate_job(n, r) for n, r in enumerate(requests) if r.kind == GENERATE] + jobs
        yield from known
        if not jobs:
            return
        out: queue.Queue = queue.Queue()
        stop = threading.Event()

        def runner() -> None:
            try:
                asyncio.run(self._run(jobs, out, stop))
            except _Fatal as exc:
                out.put(("error", EvalError(str(exc), field="--model")))
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer thread
                out.put(("error", exc))
            finally:
                out.put(("done", None))

        thread = threading.Thread(target=runner, name="histbench-api", daemon=True)
        thread.start()
        try:
            while True:
                tag, payload = out.get()
                if tag == "done":
                    break
                if tag == "error":
                    raise payload
                yield payload
        finally:
            stop.set()
            thread.join(timeout=10)


def _check_no_error(data: Any, where: str = "answer") -> None:
    """_Invalid when a 200's answer (or one of its choices) says it is an error: an `error`
    object (OpenRouter and other proxies answer 200 with one) or finish_reason "error"."""
    if not isinstance(data, Mapping):
        return
    error = data.get("error")
    if error not in (None, "", {}, []):
        raise _Invalid(f"the {where} carries an error: {json.dumps(error, default=str)[:300]}")
    if data.get("finish_reason") == "error":
        raise _Invalid(f"the {where} ended with finish_reason 'error'")


def _answer_text(content: Any, field: str) -> str:
    """A generated answer's text: a string; null (no text, e.g. a refusal or a tool call) is
    the empty answer; a list of content parts (OpenAI's format for message content) is the
    concatenation of its text parts, and invalid when any part is not a text part. Any
    other type (a number, an object) is an invalid answer."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") in ("text", "output_text") and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, Mapping) and part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                texts.append(part["refusal"])
            else:
                raise _Invalid(f"{field} is a list holding a part that is not text: {json.dumps(part, default=str)[:200]}")
        return "".join(texts)
    raise _Invalid(f"{field} is a {type(content).__name__}, not a string: {json.dumps(content, default=str)[:200]}")


def _system_cause(exc: BaseException) -> str:
    """The operating system's reason behind a transport error, as ' (connection refused)':
    httpx says only 'All connection attempts failed'."""
    import errno
    import socket

    seen = exc.__cause__ or exc.__context__
    while seen is not None:
        if isinstance(seen, socket.gaierror):
            return " (the host name could not be resolved)"
        if isinstance(seen, OSError) and seen.errno in (errno.ECONNREFUSED, errno.ECONNRESET, errno.ENETUNREACH,
                                                        errno.EHOSTUNREACH, errno.ETIMEDOUT):
            return f" ({os.strerror(seen.errno).lower()})"
        seen = seen.__cause__ or seen.__context__
    return ""


def _retry_reason(reason: str, detail: str) -> str:
    """What a retry answers, in words: 'connection refused', 'HTTP 429', 'a timeout' ..."""
    text = detail.lower()
    if reason == "transport":
        for words in ("connection refused", "connection reset by peer", "the host name could not be resolved",
                      "no route to host", "network is unreachable", "connection timed out"):
            if words in text:
                return words
        if "remoteprotocolerror" in text or "incomplete" in text or "peer closed" in text:
            return "the connection closed mid-answer"
        return f"a network error ({detail.split(':', 1)[0]})"
    if reason == "timeout":
        return "a timeout"
    if reason == "incomplete":
        return "an incomplete answer"
    if reason == "invalid":
        return detail
    return reason.replace("http_", "HTTP ")


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from datetime import datetime
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, (when - datetime.now(UTC)).total_seconds())


def describe_body(request: GenerateRequest, backend: APIBackend) -> str:
    """The JSON the backend would send for a request (for --dry-run style displays)."""
    return json.dumps(backend.body(request), indent=2, ensure_ascii=False)
