"""The `api` backend: any OpenAI-compatible chat-completions endpoint (OpenAI, a vLLM or
llama.cpp server, OpenRouter, ...), over httpx, asynchronously, with a concurrency limit.

Retry policy (fixed before any run, the same for every request):

- retried, with exponential backoff and full jitter (wait uniform(0, min(backoff_max,
  backoff_base * 2**(attempt-1))) seconds, at least the server's Retry-After when it sends
  one): transport errors (refused or reset connections, a connection closed half-way
  through a response), timeouts, HTTP 429, HTTP 5xx, and a 200 whose body is not a
  complete chat-completion JSON (a truncated transfer is not an answer);
- never retried: a complete answer, whatever it says. Parsing happens later, in the run
  store, and a parse failure is stored as such;
- a definitive refusal of one request (HTTP 400, 413, 422 and other 4xx) is recorded as a
  failed request (`RequestFailed`) with the provider's body; the run continues;
- HTTP 401/403/404 (wrong key, wrong URL or model) and exhausted retries stop the run with
  an `EvalError`: every answer received so far is already in the run store, so a rerun
  resumes.

Each retry is said on stderr as it happens ("retrying (3/6) after connection refused ..."),
once for all the requests in flight that retry for the same reason at the same attempt.

Prompt-only requests (`GenerateRequest(prompt=...)`) are sent as one user message.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import random
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC
from typing import Any

from histbench.core.errors import EvalError
from histbench.core.secrets import is_secret_name, redact_http_logs, register_secret

from .base import GENERATE, Backend, GenerateRequest, GenerateResult, Request, RequestFailed, Result

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
RETRY_STATUSES = frozenset({429}) | frozenset(range(500, 600))
FATAL_STATUSES = {401: "authentication failed", 403: "access refused", 404: "no such endpoint or model"}
#: seconds after which the same retry line is said again
RETRY_LINE_EVERY_S = 10.0


class _Fatal(Exception):
    pass


class APIBackend(Backend):
    kind = "api"
    OPTIONS = {
        "max_concurrency": (8, "requests in flight at once"),
        "timeout": (120.0, "seconds allowed per HTTP attempt (read/write/pool; connect gets min(timeout, 10))"),
        "max_retries": (6, "retries per request after transport errors, timeouts, 429 and 5xx"),
        "backoff_base": (1.0, "seconds: the first retry waits up to this long, doubling each time (full jitter)"),
        "backoff_max": (60.0, "seconds: longest wait between two attempts"),
        "api_key_env": (None, "environment variable holding the key (same as #ENV in the spec)"),
        "max_tokens_field": ("max_tokens", "JSON field carrying max_new_tokens (max_completion_tokens for OpenAI reasoning models)"),
        "extra_body": (None, "JSON object merged into every request body, e.g. {\"reasoning_effort\": \"low\"}"),
        "headers": (None, "JSON object of extra HTTP headers"),
    }
    KEY_OPTIONS = ("max_tokens_field", "extra_body")

    def __init__(self, spec: str, model: str, base_url: str, key_env: str | None, options: Mapping | None = None) -> None:
        super().__init__(spec, model, options)
        self.model = model
        self.base_url = base_url
        env = key_env or self.options.get("api_key_env")
        self.key_env = env
        # the key is read when requests are sent; it is registered now, before anything is written
        register_secret(os.environ.get(env or DEFAULT_KEY_ENV))
        redact_http_logs()   # httpx logs each request's URL (with its user part and query) at INFO
        self.supports = frozenset({GENERATE})
        for name in ("extra_body", "headers"):
            value = self.options.get(name)
            if value is not None and not isinstance(value, dict):
                raise EvalError(f"option {name} must be a JSON object, got {value!r}", field="--model-option")
        if int(self.options["max_concurrency"]) < 1:
            raise EvalError("max_concurrency must be at least 1", field="--max-concurrency")
        #: counters over the backend's life: attempts, retries by reason, failed requests.
        self.stats: dict[str, Any] = {"attempts": 0, "retries": {}, "failed": 0}
        self._said: dict[tuple[int, str], float] = {}   # (attempt, reason) -> when its retry line was said

    @classmethod
    def from_spec(cls, spec: str, target: str, options: Mapping) -> APIBackend:
        from .spec import parse_api_target

        model, url, env = parse_api_target(target)
        return cls(spec, model, url, env, options)

    @property
    def url(self) -> str:
        """The chat-completions URL (the base URL's query string, e.g. Azure's api-version, kept)."""
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(self.base_url)
        return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/chat/completions"))

    @property
    def shown_url(self) -> str:
        """The URL as error messages show it (credentials in its query redacted)."""
        from histbench.core.secrets import redact_url

        return redact_url(self.url)

    def identity(self) -> dict:
        from histbench.core.secrets import redact_url

        ident = super().identity()
        ident.update({"model": self.model, "base_url": redact_url(self.base_url), "key_env": self.key_env})
        return ident

    # -- requests ----------------------------------------------------------------------

    def body(self, request: GenerateRequest) -> dict:
        messages = list(request.messages) if request.messages is not None else [{"role": "user", "content": request.prompt}]
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            self.options["max_tokens_field"]: request.max_new_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if request.seed is not None:
            body["seed"] = request.seed
        body.update(self.options.get("extra_body") or {})
        body.update(request.extra or {})
        return body

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        env = self.key_env
        if env:
            key = os.environ.get(env)
            if not key:
                raise EvalError(f"the model spec names ${env} for the API key, but it is not set", field="--model")
        else:
            key = os.environ.get(DEFAULT_KEY_ENV)
        if key:
            register_secret(key)
            headers["Authorization"] = f"Bearer {key}"
        extra = self.options.get("headers") or {}
        for name, value in extra.items():
            if is_secret_name(name):
                register_secret(str(value))
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

    def _say_retry(self, attempt: int, reason: str, detail: str, delay: float) -> None:
        """One stderr line per (attempt, reason) while it repeats (the requests in flight
        retry together), again after RETRY_LINE_EVERY_S seconds."""
        import time

        from histbench.core.progress import log

        said, now = (attempt, reason), time.monotonic()
        if now - self._said.get(said, -RETRY_LINE_EVERY_S) < RETRY_LINE_EVERY_S:
            return
        self._said[said] = now
        log(f"histbench: {self.shown_url}: retrying ({attempt}/{int(self.options['max_retries'])}) after "
            f"{_retry_reason(reason, detail)}; next attempt in {delay:.1f} s")

    async def _ask(self, client, headers: dict, request: GenerateRequest, state: dict) -> GenerateResult | RequestFailed | None:
        """One request with its retries; None when the run is stopping (another request hit
        a fatal error) and this one would need another attempt."""
        import httpx

        body = self.body(request)
        attempt = 0
        while True:
            attempt += 1
            self.stats["attempts"] += 1
            retry_after = None
            try:
                response = await client.post(self.url, json=body, headers=headers)
            except httpx.TimeoutException as exc:
                reason, detail = "timeout", f"{type(exc).__name__}: {exc}"
            except httpx.TransportError as exc:
                reason, detail = "transport", f"{type(exc).__name__}: {exc}{_system_cause(exc)}"
            else:
                status = response.status_code
                if status == 200:
                    try:
                        data = response.json()
                        message = data["choices"][0]["message"]
                    except (ValueError, KeyError, IndexError, TypeError):
                        reason, detail = "incomplete", f"HTTP 200 without a complete chat completion: {response.text[:300]!r}"
                    else:
                        choice = data["choices"][0]
                        return GenerateResult(
                            text=message.get("content") or "",
                            finish_reason=choice.get("finish_reason"),
                            model=data.get("model"),
                            usage=data.get("usage"),
                            raw=data,
                            attempts=attempt,
                        )
                elif status in RETRY_STATUSES:
                    reason, detail = f"http_{status}", f"HTTP {status}: {response.text[:300]}"
                    retry_after = _retry_after(response.headers.get("Retry-After"))
                elif status in FATAL_STATUSES:
                    hint = f" (key from ${self.key_env or DEFAULT_KEY_ENV})" if status in (401, 403) else ""
                    raise _Fatal(f"{FATAL_STATUSES[status]}{hint}: HTTP {status} from {self.shown_url}: {response.text[:300]}")
                else:
                    self.stats["failed"] += 1
                    try:
                        raw = response.json()
                    except ValueError:
                        raw = response.text
                    return RequestFailed(f"HTTP {status}: {response.text[:500]}", raw={"status": status, "body": raw}, attempts=attempt)
            if state.get("fatal") is not None:
                return None
            if attempt > int(self.options["max_retries"]):
                raise _Fatal(f"no answer from {self.shown_url} after {attempt} attempts; last: {detail}")
            self._count_retry(reason)
            delay = self._delay(attempt, retry_after)
            self._say_retry(attempt, reason, detail, delay)
            await asyncio.sleep(delay)

    async def _run(self, requests: Sequence[GenerateRequest], out: queue.Queue, stop: threading.Event) -> None:
        import httpx

        headers = self._headers()
        timeout = float(self.options["timeout"])
        limit = int(self.options["max_concurrency"])
        todo: asyncio.Queue = asyncio.Queue()
        for item in enumerate(requests):
            todo.put_nowait(item)
        limits = httpx.Limits(max_connections=limit, max_keepalive_connections=limit)
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)), limits=limits) as client:

            # A fatal error (wrong key, endpoint gone) stops the hand-out of new requests; the
            # attempts in flight still finish, so no answer the server sent is thrown away.
            state: dict[str, Any] = {"fatal": None}

            async def worker() -> None:
                while state["fatal"] is None:
                    try:
                        index, request = todo.get_nowait()
                    except asyncio.QueueEmpty:
                        return
                    try:
                        result = await self._ask(client, headers, request, state)
                    except _Fatal as exc:
                        state["fatal"] = state["fatal"] or exc
                        return
                    if result is not None:
                        out.put(("result", (index, result)))

            workers = [asyncio.create_task(worker()) for _ in range(min(limit, len(requests)))]

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
        out: queue.Queue = queue.Queue()
        stop = threading.Event()

        def runner() -> None:
            try:
                asyncio.run(self._run(requests, out, stop))
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
