"""A real OpenAI-compatible `/v1/completions` server for a local transformers causal LM, on
127.0.0.1: what the tests and `bench/served_likelihood.py` put behind `api:` to check that
scores over HTTP are the in-process ones.

It answers as vLLM's OpenAI server does (`choices[].text`, `choices[].logprobs.tokens /
token_logprobs / top_logprobs / text_offset`, `usage`), for text and token-id prompts,
one or several per request:

- `echo: true` returns the prompt's tokens with their log-probabilities (the first token
  has none: `null`), followed by the generated ones; `logprobs: k` adds the k likeliest
  tokens at every position (and the token itself, as vLLM does);
- `max_tokens: 0` with echo is served (the prompt's log-probabilities only), as vLLM 0.32's
  server serves it (checked against it: tests/engine/test_real_vllm.py);
  `accept_zero_max_tokens=False` refuses it with HTTP 400 naming max_tokens, as a server
  that asks for at least one token does (the client then sends 1);
- generation is greedy at temperature 0 (sampled otherwise, seeded by `seed`), `stop`
  strings cut the text;
- `serve_logprobs=False` answers like a server that has no prompt log-probabilities
  (llama.cpp's: only the generated token's);
- `fail(kind, times)`: the next requests get HTTP `kind` ("429", "500", "503", ...) or,
  for "close", a connection closed without an answer.

One worker thread runs the model: the prompts of every request waiting when it is free are
scored in one go (as a serving engine batches concurrent requests), and prompts that share
a prefix of at least `MIN_SHARED` tokens are run once up to it, the rest on top of its
key/value cache (a prefix cache, as vLLM's and SGLang's; `prefix_cache=False` turns it
off). It counts requests, prompts, forward passes and the prefix tokens it did not run.

    server = CompletionsServer(model, tokenizer, model_name="smollm2").start()
    backend = load_backend(server.spec(), {"tokenizer": str(path)})
    ...
    server.stop()
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .loopback import _JsonHandler, _Server

#: prompts sharing at least this many leading tokens are run once up to the shared part
MIN_SHARED = 16
#: most rows x tokens of logits held at once (x vocabulary x 4 bytes)
TOKEN_BUDGET = 2048
#: most prompts the worker takes from waiting requests in one go
MAX_BATCH_PROMPTS = 64


class BadRequest(Exception):
    """HTTP 400 with this message."""


@dataclass
class _Scored:
    """One sequence's log-probabilities: `token` (len L-1: token t given tokens < t, for
    t = 1..L-1) and `top` (len L: the k likeliest (id, logprob) after tokens <= t)."""

    token: list[float]
    top: list[list[tuple[int, float]]]


@dataclass
class _Job:
    body: dict
    prompts: list[list[int]]
    texts: list[str]
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def token_pieces(tokenizer, ids: Sequence[int], window: int = 6) -> list[str]:
    """The text each token adds, as a streaming detokenizer gives it: a token that ends
    inside a multi-byte character adds "" and the token that completes it adds the whole
    character, so the pieces join to the decoded text."""
    pieces = []
    for i in range(len(ids)):
        start = max(0, i - window)
        before = tokenizer.decode(list(ids[start:i])) if i > start else ""
        now = tokenizer.decode(list(ids[start:i + 1]))
        if now.endswith("\ufffd"):
            pieces.append("")
            continue
        pieces.append(now[len(before.rstrip("\ufffd")):])
    return pieces


class CompletionsServer:
    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        model_name: str = "served-model",
        accept_zero_max_tokens: bool = True,
        serve_logprobs: bool = True,
        prefix_cache: bool = True,
        max_model_len: int | None = None,
        threads: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        """threads: torch threads of the worker (the thread that runs the model; torch's
        thread count is per thread): a number, "auto" (histbench.core.threads, measured
        again every 30 s), or None to leave it as it is; settable later."""
        from histbench.core.likelihood import _forward_names, model_max_length

        self.model = model
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.accept_zero_max_tokens = accept_zero_max_tokens
        self.serve_logprobs = serve_logprobs
        self.prefix_cache = prefix_cache
        self.max_model_len = max_model_len or model_max_length(model, tokenizer)
        self.cache_arg, _ = _forward_names(model)
        self._jobs: queue.Queue = queue.Queue()
        self._faults: list[str] = []
        self.threads = threads
        #: the worker's last thread choice ({"threads", "why"})
        self.threads_info: dict | None = None
        self._retune_now = threading.Event()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests = 0
        self.prompts = 0
        self.bodies: list[dict] = []
        self.forward_passes = 0
        self.tokens_run = 0
        self.prefix_tokens_reused = 0
        self.in_flight = 0
        self.max_concurrency = 0
        self._server = _Server((host, port), self._handler_class())
        self.host, self.port = self._server.server_address[:2]
        self._threads: list[threading.Thread] = []

    @classmethod
    def from_path(cls, path, **kwargs) -> CompletionsServer:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        return cls(model, AutoTokenizer.from_pretrained(path), **kwargs)

    # -- control -------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def spec(self, model: str | None = None) -> str:
        return f"api:{model or self.model_name}@{self.base_url}"

    def fail(self, kind: str, times: int = 1) -> None:
        """The next `times` requests get HTTP `kind` (e.g. "503") or, for "close", no answer."""
        if kind != "close" and not (kind.isdigit() and len(kind) == 3):
            raise ValueError(f"unknown fault {kind!r}: an HTTP status or 'close'")
        with self._lock:
            self._faults += [kind] * times

    def retune(self) -> None:
        """Have the worker choose its threads again before its next batch (threads="auto")."""
        self._retune_now.set()

    def start(self) -> CompletionsServer:
        for target, name in ((self._work, "completions-worker"), (self._serve, "completions-http")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _serve(self) -> None:
        self._server.serve_forever(poll_interval=0.05)

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        for thread in self._threads:
            thread.join(timeout=10)

    def __enter__(self) -> CompletionsServer:
        return self.start() if not self._threads else self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- the model ------------------------------------------------------------------------

    def _work(self) -> None:
        from histbench.core.threads import Retuner

        retuner, option = None, None
        while not self._stopping.is_set():
            if self.threads is not None:
                if retuner is None or option != self.threads:
                    retuner, option = Retuner(self.threads), self.threads
                force = self._retune_now.is_set()
                self._retune_now.clear()
                self.threads_info = retuner.check(force=force) or self.threads_info
            try:
                first = self._jobs.get(timeout=0.05)
            except queue.Empty:
                continue
            jobs = [first]
            count = len(first.prompts)
            while count < MAX_BATCH_PROMPTS:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                jobs.append(job)
                count += len(job.prompts)
            try:
                self._answer(jobs)
            except BaseException as exc:  # noqa: BLE001 - each waiting request gets a 500
                for job in jobs:
                    if not job.done.is_set():
                        job.error = exc
                        job.done.set()

    def _answer(self, jobs: list[_Job]) -> None:
        """Generate where asked, then score every sequence that needs log-probabilities in
        one batch (prefix-shared), then build each response."""
        generated: dict[tuple[int, int], list[int]] = {}
        finish: dict[tuple[int, int], str] = {}
        to_score: list[tuple[int, int]] = []
        for j, job in enumerate(jobs):
            body = job.body
            max_tokens = int(body.get("max_tokens", 16))
            greedy = float(body.get("temperature", 1.0) or 0.0) == 0.0
            wants_logprobs = body.get("logprobs") is not None or bool(body.get("echo"))
            for p, prompt in enumerate(job.prompts):
                if max_tokens == 1 and greedy and wants_logprobs:
                    to_score.append((j, p))  # the next token is the argmax of the scoring pass
                    continue
                if max_tokens > 0:
                    generated[(j, p)], finish[(j, p)] = self._generate(prompt, body, max_tokens, greedy)
                if wants_logprobs:
                    to_score.append((j, p))
        sequences = [jobs[j].prompts[p] + generated.get((j, p), []) for j, p in to_score]
        tops = max([1] + [int(jobs[j].body.get("logprobs") or 0) for j, _ in to_score])
        scored = dict(zip(to_score, self._score(sequences, tops), strict=True))
        for j, job in enumerate(jobs):
            choices = []
            for p, prompt in enumerate(job.prompts):
                key = (j, p)
                if key in scored and key not in generated and int(job.body.get("max_tokens") or 0) == 1:
                    top = scored[key].top[len(prompt) - 1]
                    generated[key] = [top[0][0]]
                    finish[key] = "stop" if top[0][0] == self.tokenizer.eos_token_id else "length"
                choices.append(self._choice(p, job, prompt, generated.get(key, []), finish.get(key, "length"),
                                            scored.get(key)))
            n_prompt = sum(len(x) for x in job.prompts)
            n_new = sum(len(generated.get((j, p), [])) for p in range(len(job.prompts)))
            job.result = {
                "id": f"cmpl-histbench-{id(job):x}", "object": "text_completion", "created": int(time.time()),
                "model": self.model_name, "choices": choices,
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_new, "total_tokens": n_prompt + n_new},
            }
            job.done.set()

    def _generate(self, prompt: list[int], body: dict, max_tokens: int, greedy: bool) -> tuple[list[int], str]:
        import torch

        kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "do_sample": not greedy,
                                  "pad_token_id": self.tokenizer.pad_token_id or self.tokenizer.eos_token_id}
        if not greedy:
            kwargs.update(temperature=float(body.get("temperature", 1.0)), top_p=float(body.get("top_p", 1.0)), top_k=None)
            if body.get("seed") is not None:
                torch.manual_seed(int(body["seed"]))
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            out = self.model.generate(torch.tensor([prompt]), attention_mask=torch.ones((1, len(prompt)), dtype=torch.long),
                                      **kwargs)
        with self._lock:
            self.forward_passes += 1
            self.tokens_run += len(prompt) + max_tokens
        new = out[0, len(prompt):].tolist()
        eos = self.tokenizer.eos_token_id
        if eos in new:
            return new[: new.index(eos) + 1], "stop"
        return new, "length"

    def _score(self, sequences: list[list[int]], top_k: int) -> list[_Scored]:
        """Log-probabilities of every token of every sequence; sequences sharing a prefix of
        MIN_SHARED tokens or more run it once. In sorted order a sequence joins the group
        before it unless that would cost more tokens than it saves: joining cuts the group's
        shared prefix to the part the newcomer shares (every member runs the rest again), a
        new group runs the shared part once more. So the options of one question share their
        whole context, not just the instructions every question begins with."""
        out: list[_Scored | None] = [None] * len(sequences)
        order = sorted(range(len(sequences)), key=lambda i: sequences[i])
        groups: list[tuple[list[int], list[int]]] = []  # (shared prefix, members)
        for i in order:
            if self.prefix_cache and groups:
                prefix, members = groups[-1]
                shared = _common_prefix(prefix, sequences[i])
                lost = (len(prefix) - shared) * len(members) if len(members) > 1 else 0
                if shared >= MIN_SHARED and lost <= shared:
                    groups[-1] = (prefix[:shared], members + [i])
                    continue
            groups.append((list(sequences[i]), [i]))
        plain: list[int] = []
        for prefix, members in groups:
            shared = min(len(prefix), min(len(sequences[i]) for i in members) - 1)
            if len(members) == 1 or shared < MIN_SHARED:
                plain += members
            else:
                for i, scored in zip(members, self._score_shared([sequences[i] for i in members], shared, top_k), strict=True):
                    out[i] = scored
        plain.sort(key=lambda i: -len(sequences[i]))
        start = 0
        while start < len(plain):
            width = len(sequences[plain[start]])
            end = start + max(1, TOKEN_BUDGET // max(1, width))
            chunk = plain[start:end]
            for i, scored in zip(chunk, self._score_plain([sequences[i] for i in chunk], top_k), strict=True):
                out[i] = scored
            start = end
        return out  # type: ignore[return-value]

    @staticmethod
    def _log_softmax(logits_rows):
        import torch

        # logits - logsumexp, not torch.log_softmax: on CPU in float32 the latter's normaliser is
        # biased (about +8e-6 per token over a 49k vocabulary; docs/engine.md). Row by row, so a
        # subset of rows gives the same values as the whole.
        logits_rows = logits_rows.float()
        return logits_rows - torch.logsumexp(logits_rows, dim=-1, keepdim=True)

    @staticmethod
    def _pick(logprobs, targets: Sequence[int], top_k: int) -> tuple[list[float], list[list[tuple[int, float]]]]:
        """(log-probability of targets[k] at row k, the top_k of every row)."""
        import torch

        token = logprobs[torch.arange(len(targets)), torch.tensor(list(targets), dtype=torch.long)].tolist() if targets else []
        values, ids = logprobs.topk(top_k, dim=-1)
        return token, [list(zip(i, v, strict=True)) for i, v in zip(ids.tolist(), values.tolist(), strict=True)]

    def _extract(self, logits_rows, sequence: list[int], top_k: int) -> _Scored:
        token, top = self._pick(self._log_softmax(logits_rows), sequence[1:], top_k)
        return _Scored(token=token, top=top)

    def _score_plain(self, sequences: list[list[int]], top_k: int) -> list[_Scored]:
        import torch

        width = max(len(s) for s in sequences)
        ids = torch.zeros((len(sequences), width), dtype=torch.long)
        mask = torch.zeros((len(sequences), width), dtype=torch.long)
        for row, sequence in enumerate(sequences):
            ids[row, : len(sequence)] = torch.tensor(sequence)
            mask[row, : len(sequence)] = 1
        with torch.inference_mode():
            logits = self.model(input_ids=ids, attention_mask=mask).logits
            scored = [self._extract(logits[row, : len(s)], s, top_k) for row, s in enumerate(sequences)]
        with self._lock:
            self.forward_passes += 1
            self.tokens_run += sum(len(s) for s in sequences)
        return scored

    def _score_shared(self, sequences: list[list[int]], shared: int, top_k: int) -> list[_Scored]:
        import torch

        from histbench.core.likelihood import _output_cache, _select_cache

        prefix = sequences[0][:shared]
        with torch.inference_mode():
            first = self.model(input_ids=torch.tensor([prefix]), use_cache=True)
            cache = _output_cache(first)
            # the shared prefix's rows once (what a prefix cache saves), all but its last row,
            # whose target is each sequence's first token after it
            head = self._log_softmax(first.logits[0])
            common_token, common_top = self._pick(head[: shared - 1], prefix[1:], top_k)
            last = head[shared - 1:]
            out: list[_Scored] = []
            rows = list(range(len(sequences)))
            start = 0
            while start < len(rows):
                width = max(len(sequences[i]) - shared for i in rows[start:])
                chunk = rows[start:start + max(1, TOKEN_BUDGET // max(1, width))]
                start += len(chunk)
                width = max(len(sequences[i]) - shared for i in chunk)
                ids = torch.zeros((len(chunk), width), dtype=torch.long)
                mask = torch.zeros((len(chunk), shared + width), dtype=torch.long)
                mask[:, :shared] = 1
                for row, i in enumerate(chunk):
                    rest = sequences[i][shared:]
                    ids[row, : len(rest)] = torch.tensor(rest)
                    mask[row, shared: shared + len(rest)] = 1
                positions = torch.arange(shared, shared + width).unsqueeze(0).expand(len(chunk), -1)
                kwargs = {"attention_mask": mask, "position_ids": positions, "use_cache": True,
                          self.cache_arg: _select_cache(cache, torch.zeros(len(chunk), dtype=torch.long))}
                logits = self.model(input_ids=ids, **kwargs).logits
                for row, i in enumerate(chunk):
                    rest = len(sequences[i]) - shared
                    token, top = self._pick(torch.cat([last, self._log_softmax(logits[row, :rest])]),
                                            sequences[i][shared:], top_k)
                    out.append(_Scored(token=common_token + token, top=common_top + top))
        with self._lock:
            self.forward_passes += 2
            self.tokens_run += shared + sum(len(s) - shared for s in sequences)
            self.prefix_tokens_reused += shared * (len(sequences) - 1)
        return out

    # -- responses -------------------------------------------------------------------------

    def _choice(self, index: int, job: _Job, prompt: list[int], new: list[int], finish: str, scored: _Scored | None) -> dict:
        body = job.body
        echo = bool(body.get("echo"))
        prompt_text = job.texts[index]
        new_text = self.tokenizer.decode(new, skip_special_tokens=True)
        for stop in ([body["stop"]] if isinstance(body.get("stop"), str) else body.get("stop") or []):
            if stop and stop in new_text:
                new_text, finish = new_text.split(stop, 1)[0], "stop"
        choice: dict[str, Any] = {"index": index, "text": (prompt_text if echo else "") + new_text, "logprobs": None,
                                  "finish_reason": finish, "stop_reason": None}
        if body.get("logprobs") is None or scored is None:
            return choice
        k = int(body.get("logprobs") or 0)
        ids = (prompt if echo else []) + new
        first = 0 if echo else len(prompt)  # position in prompt + new of ids[0]
        pieces = token_pieces(self.tokenizer, prompt + new)[first:]
        if not self.serve_logprobs:  # llama.cpp: only the generated token's
            ids, pieces, first = new, pieces[len(pieces) - len(new):] if new else [], len(prompt)
        tokens, values, tops, offsets = [], [], [], []
        at = 0 if echo else len(prompt_text)
        for n, (token_id, piece) in enumerate(zip(ids, pieces, strict=True)):
            position = first + n
            tokens.append(piece)
            offsets.append(at)
            at += len(piece)
            if position == 0:
                values.append(None)
                tops.append(None)
                continue
            if position - 1 < len(scored.token):
                value = scored.token[position - 1]
            else:  # the one token generated from the scoring pass: its argmax
                value = dict(scored.top[position - 1])[token_id]
            values.append(value)
            top = {self.tokenizer.decode([t]): v for t, v in scored.top[position - 1][:k]}
            top[piece] = value
            tops.append(top)
        choice["logprobs"] = {"tokens": tokens, "token_logprobs": values, "top_logprobs": tops, "text_offset": offsets}
        return choice

    # -- HTTP --------------------------------------------------------------------------------

    def _prompts(self, body: dict) -> tuple[list[list[int]], list[str]]:
        prompt = body.get("prompt")
        if isinstance(prompt, str) or (isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt)):
            prompt = [prompt]
        if not isinstance(prompt, list) or not prompt:
            raise BadRequest("prompt must be a string, a list of strings, a list of token ids or a list of such lists")
        ids, texts = [], []
        for item in prompt:
            if isinstance(item, str):
                ids.append(list(self.tokenizer(item)["input_ids"]))
                texts.append(item)
            elif isinstance(item, list) and item and all(isinstance(t, int) and not isinstance(t, bool) for t in item):
                ids.append(list(item))
                texts.append(self.tokenizer.decode(item))
            else:
                raise BadRequest("each prompt must be a string or a non-empty list of token ids")
        return ids, texts

    def _check(self, body: dict, prompts: list[list[int]]) -> None:
        max_tokens = body.get("max_tokens", 16)
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 0:
            raise BadRequest(f"max_tokens must be a non-negative integer, got {max_tokens!r}")
        if max_tokens == 0 and not self.accept_zero_max_tokens:
            raise BadRequest("max_tokens must be at least 1, got 0.")
        if int(body.get("n", 1) or 1) != 1:
            raise BadRequest("n must be 1 here")
        for prompt in prompts:
            if len(prompt) + max_tokens > self.max_model_len:
                raise BadRequest(f"This model's maximum context length is {self.max_model_len} tokens. However, you "
                                 f"requested {len(prompt) + max_tokens} tokens ({len(prompt)} in the messages, "
                                 f"{max_tokens} in the completion).")

    def _handler_class(self):
        owner = self

        class Handler(_JsonHandler):
            def do_GET(self):  # noqa: N802 - http.server API
                if self.path.rstrip("/").endswith("/models"):
                    self._send_json(200, {"object": "list", "data": [
                        {"id": owner.model_name, "object": "model", "max_model_len": owner.max_model_len}]})
                else:
                    self._send_json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):  # noqa: N802 - http.server API
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self.path.split("?", 1)[0].rstrip("/").endswith("/completions") or "/chat/" in self.path:
                    return self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                try:
                    body = json.loads(raw)
                    if not isinstance(body, dict):
                        raise ValueError
                except ValueError:
                    return self._send_json(400, {"error": {"message": "body is not a JSON object"}})
                with owner._lock:
                    owner.requests += 1
                    owner.bodies.append(body)
                    fault = owner._faults.pop(0) if owner._faults else None
                if fault == "close":
                    return self._drop()
                if fault is not None:
                    return self._send_json(int(fault), {"error": {"message": f"injected fault {fault}"}})
                with owner._lock:
                    owner.in_flight += 1
                    owner.max_concurrency = max(owner.max_concurrency, owner.in_flight)
                try:
                    try:
                        prompts, texts = owner._prompts(body)
                        owner._check(body, prompts)
                    except BadRequest as exc:
                        return self._send_json(400, {"error": {"message": str(exc), "type": "BadRequestError", "code": 400}})
                    with owner._lock:
                        owner.prompts += len(prompts)
                    job = _Job(body, prompts, texts)
                    owner._jobs.put(job)
                    while not job.done.wait(0.1):
                        if owner._stopping.is_set():
                            return None
                    if job.error is not None:
                        return self._send_json(500, {"error": {"message": f"{type(job.error).__name__}: {job.error}"}})
                    return self._send_json(200, job.result)
                finally:
                    with owner._lock:
                        owner.in_flight -= 1

        return Handler
