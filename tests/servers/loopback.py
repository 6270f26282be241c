"""A real OpenAI-compatible chat-completions server on 127.0.0.1, for tests and dry runs.

It speaks HTTP/1.1 on a loopback port (a thread of this process), answers
`POST /v1/chat/completions` with a function of the messages (and `POST /v1/embeddings`
with a function of each input text, `embed`), and can be told to
misbehave the way real endpoints do: 429 with Retry-After, 500/503, hanging until the
client times out, closing the connection half-way through a response, or dying for good
after N answers (every later request and every request in flight gets no answer). It
counts requests, delivered answers, and the most requests it ever held at once.

    with LoopbackChatServer(lambda messages: "42", delay=0.05) as server:
        backend = load_backend(server.spec(), {"max_concurrency": 4})
        ...
        server.max_concurrency   # <= 4

The tests' `chat_server` fixture (tests/conftest.py) wraps this class.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STATUS_FAULTS = ("400", "401", "404", "422", "429", "500", "502", "503")
FAULTS = (*STATUS_FAULTS, "timeout", "close", "truncate", "die")

AnswerFn = Callable[[list[dict]], Any]


def _default_answer(messages: list[dict]) -> str:
    return "echo: " + messages[-1]["content"]


def hashed_trigram_embedding(text: str, dimensions: int = 64) -> list[float]:
    """A deterministic stand-in embedding: character trigram counts hashed (crc32) into
    `dimensions` buckets, so texts sharing trigrams have a high cosine."""
    import zlib

    vector = [0.0] * dimensions
    padded = f"  {text.casefold()}  "
    for i in range(len(padded) - 2):
        vector[zlib.crc32(padded[i:i + 3].encode()) % dimensions] += 1.0
    return vector


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def handle_error(self, request, client_address):
        """A client that went away (killed, timed out) is routine here, not worth a traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _JsonHandler(BaseHTTPRequestHandler):
    """What the test servers' request handlers share: HTTP/1.1 keep-alive, no stderr log,
    JSON answers, and dropping a connection without an answer."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - silence the default stderr log
        pass

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send_json(self, status: int, payload: dict, extra_headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (extra_headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


class LoopbackChatServer:
    """answer(messages) returns the reply text, or a dict with any of "content",
    "finish_reason", "usage", "model" (a reply shaped by the test), or raises (-> HTTP 500).

    faults: queue faults with `fail(kind, times)`, or set `fault_for(n, body)` (n counts
    every request from 1) returning a fault kind or None. Kinds: "400", "401", "404",
    "422", "429", "500", "502", "503" (that status with an error body), "timeout" (hold the request without answering
    for `hang` seconds, then drop it), "close" (send the headers and half the body, then
    close), "truncate" (a 200 whose JSON body is cut short, connection closed), "die"
    (stop the server now; this request and all in flight get no answer).
    die_after: stop the server right after the N-th delivered answer.
    echo_headers: every error body also holds the request's headers (`request_headers`), as
    some gateways echo them; the answer function can read them from `server.headers[-1]`.
    """

    def __init__(
        self,
        answer: AnswerFn | None = None,
        *,
        model: str = "loopback-model",
        delay: float = 0.0,
        hang: float = 5.0,
        retry_after: float | None = None,
        die_after: int | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        embed: Callable[[str], list[float]] | None = None,
        echo_headers: bool = False,
    ) -> None:
        self.answer = answer or _default_answer
        self.embed = embed or hashed_trigram_embedding
        self.model = model
        self.delay = delay
        self.hang = hang
        self.retry_after = retry_after
        self.die_after = die_after
        self.echo_headers = echo_headers
        self.fault_for: Callable[[int, dict], str | None] | None = None
        self._queued: list[str] = []
        self._lock = threading.Lock()
        self._stop_lock = threading.Lock()
        self._dead = threading.Event()
        self.requests = 0  # every POST received
        self.bodies: list[dict] = []  # every JSON body received, in arrival order
        self.headers: list[dict] = []
        self.delivered = 0  # complete 200 answers written
        self.delivered_keys: Counter = Counter()  # last user message -> answers delivered
        self.faults_sent: Counter = Counter()
        self.in_flight = 0
        self.max_concurrency = 0
        self._server = _Server((host, port), self._handler_class())
        self.host, self.port = self._server.server_address[:2]
        self._thread: threading.Thread | None = None

    # -- control -----------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def spec(self, model: str | None = None, key_env: str | None = None) -> str:
        return f"api:{model or self.model}@{self.base_url}" + (f"#{key_env}" if key_env else "")

    def fail(self, kind: str, times: int = 1) -> None:
        """The next `times` requests get `kind` instead of an answer."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r} (known: {FAULTS})")
        with self._lock:
            self._queued += [kind] * times

    def start(self) -> LoopbackChatServer:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop for good: the port closes, requests in flight get no answer."""
        self._dead.set()
        # stop() may run twice at once (die_after's own thread and the caller's): each takes the
        # serving thread at most once
        with self._stop_lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            threading.Thread(target=self._server.shutdown, daemon=True).start()
            thread.join(timeout=5)
        self._server.server_close()

    @property
    def alive(self) -> bool:
        return not self._dead.is_set()

    def __enter__(self) -> LoopbackChatServer:
        return self.start() if self._thread is None else self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- the handler ---------------------------------------------------------------

    def _next_fault(self, n: int, body: dict) -> str | None:
        with self._lock:
            if self._queued:
                return self._queued.pop(0)
        if self.fault_for is not None:
            return self.fault_for(n, body)
        return None

    def _completion(self, body: dict) -> dict:
        messages = body.get("messages") or []
        reply = self.answer(messages)
        shaped = reply if isinstance(reply, dict) else {"content": reply}
        content = shaped.get("content", "")
        finish = shaped.get("finish_reason", "stop")
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        words = content.split(" ")
        if "finish_reason" not in shaped and limit and len(words) > limit:
            content, finish = " ".join(words[:limit]), "length"
        for stop in body.get("stop") or []:
            if stop in content:
                content, finish = content.split(stop, 1)[0], "stop"
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
        usage = shaped.get(
            "usage",
            {"prompt_tokens": prompt_tokens, "completion_tokens": len(content.split()), "total_tokens": prompt_tokens + len(content.split())},
        )
        with self._lock:
            serial = self.requests
        return {
            "id": f"chatcmpl-loopback-{serial}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": shaped.get("model", self.model),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
            "usage": usage,
        }

    def _embeddings(self, body: dict) -> dict:
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        data = [{"object": "embedding", "index": i, "embedding": self.embed(t)} for i, t in enumerate(texts)]
        tokens = sum(len(str(t).split()) for t in texts)
        return {"object": "list", "data": data, "model": body.get("model", self.model),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def _die(self) -> None:
        self._dead.set()
        threading.Thread(target=self.stop, daemon=True).start()

    def _handler_class(self):
        owner = self

        class Handler(_JsonHandler):
            def setup(self):
                super().setup()
                # headers and body go out in separate writes: without this, Nagle's algorithm
                # and delayed ACKs hold the body back ~40 ms on loopback
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self):  # noqa: N802 - http.server API
                if self.path.rstrip("/").endswith("/models"):
                    self._send_json(200, {"object": "list", "data": [{"id": owner.model, "object": "model"}]})
                else:
                    self._send_json(404, {"error": {"message": "not found"}})

            def do_POST(self):  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not owner.alive:
                    return self._drop()
                route = self.path.split("?", 1)[0].rstrip("/")
                if not route.endswith(("/chat/completions", "/embeddings")):
                    return self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self._send_json(400, {"error": {"message": "body is not JSON"}})
                with owner._lock:
                    owner.requests += 1
                    n = owner.requests
                    owner.bodies.append(body)
                    owner.headers.append(dict(self.headers))
                    owner.in_flight += 1
                    owner.max_concurrency = max(owner.max_concurrency, owner.in_flight)
                try:
                    self._serve(n, body)
                finally:
                    with owner._lock:
                        owner.in_flight -= 1

            def _serve(self, n: int, body: dict) -> None:
                fault = owner._next_fault(n, body)
                if fault:
                    with owner._lock:
                        owner.faults_sent[fault] += 1
                if owner.delay:
                    owner._dead.wait(owner.delay)
                if fault in STATUS_FAULTS:
                    headers = {}
                    if fault == "429" and owner.retry_after is not None:
                        headers["Retry-After"] = str(owner.retry_after)
                    error = {"message": f"loopback fault {fault}"}
                    if owner.echo_headers:
                        error["request_headers"] = dict(self.headers)
                    return self._send_json(int(fault), {"error": error}, headers)
                if fault == "timeout":
                    owner._dead.wait(owner.hang)
                    return self._drop()
                if fault == "die":
                    owner._die()
                    return self._drop()
                try:
                    payload = (owner._embeddings(body) if self.path.rstrip("/").endswith("/embeddings")
                               else owner._completion(body))
                except Exception as exc:  # the test's answer or embed function failed: a server error
                    return self._send_json(500, {"error": {"message": f"answer function raised {exc!r}"}})
                data = json.dumps(payload).encode()
                if fault in ("close", "truncate"):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    if fault == "close":
                        self.send_header("Content-Length", str(len(data)))
                    else:
                        self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    return self._drop()
                key = (body.get("messages") or [{}])[-1].get("content") if "messages" in body else str(body.get("input"))
                with owner._lock:
                    if not owner.alive:
                        return self._drop()
                    # counted before the answer goes out (and taken back if it cannot be written), so a
                    # client that has read it never sees the count without it
                    owner.delivered += 1
                    owner.delivered_keys[key] += 1
                    try:
                        self._send_json(200, payload)
                    except OSError:
                        owner.delivered -= 1
                        owner.delivered_keys[key] -= 1
                        return None
                    if owner.die_after is not None and owner.delivered >= owner.die_after:
                        owner._dead.set()
                        threading.Thread(target=owner.stop, daemon=True).start()
                return None

        return Handler
