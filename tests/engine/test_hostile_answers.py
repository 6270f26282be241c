"""Servers' answers are validated before they are stored (issue 39, class 5).

Each test starts its own small hostile HTTP server on 127.0.0.1 (a port the system picks)
that answers what a broken or malicious OpenAI-compatible server may answer: NaN, infinite
or positive token log-probabilities, finish_reason "error", an error object, content as a
list or a number, the wrong number of choices, a 100 MB answer, bytes dripped one at a time,
a stream that never ends. None of it may be stored as a valid answer, no request may be held
past its deadline, and a rerun against an honest server completes the run folder.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import warnings
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from histbench.core.backends import GenerateRequest, LoglikelihoodRequest, load_backend
from histbench.core.backends.base import LOGPROB_TOLERANCE, invalid_result
from histbench.core.errors import EvalError
from histbench.core.runstore import RECORDS_NAME, RunStore
from histbench.eval.viewer import StoredAnswers

#: fast retries and deadlines of a second or less: every test here ends in a few seconds
FAST = {"backoff_base": 0.01, "backoff_max": 0.02, "timeout": 0.5, "deadline": 0.8, "max_retries": 1}

Behaviour = Callable[["_Handler", dict, int], None]


class _Handler(BaseHTTPRequestHandler):
    server: _HostileServer

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with self.server.lock:
            self.server.count += 1
            number = self.server.count
            self.server.bodies.append(body)
        try:
            self.server.behaviour(self, body, number)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up: what these servers are for

    def send_bytes(self, payload: bytes, status: int = 200, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload) if length is None else length))
        self.end_headers()
        self.wfile.write(payload)

    def send_json(self, data: dict, status: int = 200) -> None:
        # json.dumps writes NaN and Infinity as the bare words a hostile server may send
        self.send_bytes(json.dumps(data).encode())


class _HostileServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, behaviour: Behaviour) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.behaviour = behaviour
        self.lock = threading.Lock()
        self.count = 0
        self.bodies: list[dict] = []
        self.stopping = threading.Event()

    def spec(self, model: str = "hostile") -> str:
        return f"api:{model}@http://127.0.0.1:{self.server_address[1]}/v1"


@pytest.fixture
def hostile():
    servers: list[_HostileServer] = []

    def start(behaviour: Behaviour) -> _HostileServer:
        server = _HostileServer(behaviour)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stopping.set()
        server.shutdown()
        server.server_close()


def _chat(content, finish_reason="stop", **extra) -> dict:
    return {"id": "x", "object": "chat.completion", "model": "hostile",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
            **extra}


def _honest_chat(handler: _Handler, body: dict, number: int) -> None:
    handler.send_json(_chat("answer: " + body["messages"][-1]["content"]))


def _echo(prompt: str, continuation_logprob: float | None = None) -> dict:
    """A completions choice echoing `prompt` word by word, as vLLM does: the first token
    without a log-probability, every other -1.0, the last `continuation_logprob`."""
    tokens = re.findall(r"\s*\S+", prompt)
    offsets = [sum(len(t) for t in tokens[:k]) for k in range(len(tokens))]
    values: list = [None] + [-1.0] * (len(tokens) - 1)
    if continuation_logprob is not None:
        values[-1] = continuation_logprob
    tops = [None] + [{t: v} for t, v in zip(tokens[1:], values[1:], strict=True)]
    return {"text": prompt, "finish_reason": "length",
            "logprobs": {"tokens": tokens, "token_logprobs": values, "top_logprobs": tops, "text_offset": offsets}}


def _likelihood_server(hostile, value_of: Callable[[int], float]) -> _HostileServer:
    """A /completions server whose continuation token gets value_of(request number)."""

    def behaviour(handler: _Handler, body: dict, number: int) -> None:
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        choices = [{"index": n, **_echo(p, value_of(number))} for n, p in enumerate(prompts)]
        handler.send_json({"object": "text_completion", "model": "hostile", "choices": choices})

    return hostile(behaviour)


LL = [LoglikelihoodRequest("The year is", " 1850")]


def _gen(n: int = 1) -> list[GenerateRequest]:
    return [GenerateRequest(messages=[{"role": "user", "content": f"q{i}"}], max_new_tokens=120) for i in range(n)]


# --------------------------------------------------------------------------- log-probabilities


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 0.5, 1e-3])
def test_a_non_finite_or_positive_logprob_is_never_stored_and_the_rerun_completes(hostile, tmp_path, bad):
    value = {"now": bad}
    server = _likelihood_server(hostile, lambda number: value["now"])
    backend = load_backend(server.spec(), FAST)
    store = RunStore.open(tmp_path / "run", backend=backend)
    (record,) = store.run(LL)
    assert record.response is None and record.error.startswith("an invalid answer")
    assert "log-probability" in record.error and server.count == 2  # one retry, then a failed request
    lines = [json.loads(line) for line in (tmp_path / "run" / RECORDS_NAME).read_text().splitlines()]
    assert [line["response"] for line in lines] == [None]
    value["now"] = -2.5  # the server mends its ways: the rerun asks again and the folder is complete
    again = RunStore.open(tmp_path / "run", backend=backend).run(LL)
    assert again[0].ok and again[0].result.logprob == pytest.approx(-2.5)


def test_a_logprob_within_the_tolerance_above_zero_is_read_as_zero(hostile):
    server = _likelihood_server(hostile, lambda number: LOGPROB_TOLERANCE / 2)
    (result,) = load_backend(server.spec(), FAST).loglikelihood(LL)
    assert result.logprob == 0.0 and result.n_tokens == 1


def test_a_nan_in_the_top_logprobs_is_invalid_too(hostile):
    def behaviour(handler, body, number):
        choice = {"index": 0, **_echo(body["prompt"][0], -1.0)}
        choice["logprobs"]["top_logprobs"][-1] = {" 1850": -1.0, " 1851": math.nan}
        handler.send_json({"choices": [choice]})

    server = hostile(behaviour)
    with pytest.raises(EvalError, match="request 0 failed: an invalid answer .*top log-probability"):
        load_backend(server.spec(), FAST).loglikelihood(LL)


def test_choices_with_repeated_indices_are_not_matched_to_the_wrong_prompts(hostile):
    def behaviour(handler, body, number):
        choices = [{"index": 0, **_echo(p, -1.0 if p.endswith("1850") else -2.0)} for p in body["prompt"]]
        handler.send_json({"choices": choices})

    server = hostile(behaviour)
    requests = [LoglikelihoodRequest("The year is", " 1850"), LoglikelihoodRequest("The year is", " 1900")]
    results = load_backend(server.spec(), FAST).loglikelihood(requests)
    # [0, 0] is refused (twice), then each prompt is asked alone and read as its own
    assert [r.logprob for r in results] == [-1.0, -2.0]
    assert [len(b["prompt"]) for b in server.bodies] == [2, 2, 1, 1]


def test_a_nan_stored_by_an_older_histbench_is_asked_again(hostile, tmp_path):
    """A run folder where a NaN answer was stored (before answers were validated) is not
    stuck: the stored answer is named, not scored, and asked again."""
    server = _likelihood_server(hostile, lambda number: -3.0)
    backend = load_backend(server.spec(), FAST)
    run = tmp_path / "run"
    run.mkdir()
    line = {"key": backend.key(LL[0]), "kind": "loglikelihood", "request": LL[0].to_dict(), "backend": backend.spec,
            "response": {"logprob": math.nan, "n_tokens": 1, "is_greedy": False, "truncated": 0}, "error": None}
    (run / RECORDS_NAME).write_text(json.dumps(line) + "\n")
    with pytest.warns(UserWarning, match="1 line holds an invalid answer, not used: the request is asked again \\(line 1: the summed "
                                          "log-probability is nan"):
        store = RunStore.open(run, backend=backend)
    (record,) = store.run(LL)
    assert record.ok and not record.reused and record.result.logprob == -3.0 and server.count == 1
    # the viewer shows the answer that was scored, not the NaN
    shown = StoredAnswers.open(run).loglikelihood("The year is", " 1850")
    assert shown["response"]["logprob"] == -3.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the third run reads the folder as complete
        assert RunStore.open(run, backend=backend).run(LL)[0].reused


# --------------------------------------------------------------------------- generated text


@pytest.mark.parametrize(("answer", "why"), [
    (_chat("partial", finish_reason="error"), "finish_reason 'error'"),
    (_chat("", error={"message": "upstream failed", "code": 502}), "carries an error"),
    ({"error": {"message": "rate limited upstream"}}, "carries an error"),
    (_chat(42), "message.content is a int"),
    (_chat({"text": "x"}), "message.content is a dict"),
    (_chat([{"type": "image_url", "image_url": {"url": "x"}}]), "not text"),
    ({**_chat("a"), "choices": [_chat("a")["choices"][0], _chat("b")["choices"][0]]}, "2 choices for a request of 1"),
    (_chat("a", finish_reason=7), "finish_reason is a int"),
])
def test_an_invalid_chat_answer_is_a_failed_request_and_the_rerun_completes(hostile, tmp_path, answer, why):
    server = hostile(lambda handler, body, number: handler.send_json(answer))
    backend = load_backend(server.spec(), FAST)
    records = RunStore.open(tmp_path / "run", backend=backend).run(_gen(2), parse=lambda r: r.text)
    for record in records:
        assert record.response is None and why in record.error
    assert server.count == 4  # two attempts each, never stored as an answer
    server.behaviour = _honest_chat
    again = RunStore.open(tmp_path / "run", backend=backend).run(_gen(2), parse=lambda r: r.text)
    assert [r.parsed for r in again] == ["answer: q0", "answer: q1"]


def test_content_as_a_list_of_text_parts_is_joined(hostile):
    parts = [{"type": "text", "text": "The answer "}, {"type": "text", "text": "is 1850."}]
    server = hostile(lambda handler, body, number: handler.send_json(_chat(parts)))
    (result,) = load_backend(server.spec(), FAST).generate(_gen())
    assert result.text == "The answer is 1850."


def test_an_error_that_passes_once_is_retried_and_answered(hostile):
    def behaviour(handler, body, number):
        handler.send_json(_chat("", finish_reason="error") if number == 1 else _chat("fine"))

    server = hostile(behaviour)
    (result,) = load_backend(server.spec(), FAST).generate(_gen())
    assert (result.text, result.attempts) == ("fine", 2)


# --------------------------------------------------------------------------- size and time


def _hundred_megabytes(announce: bool) -> Behaviour:
    """A 100 MB answer to a 120-token request, sent as fast as the client reads it; with or
    without a Content-Length header."""

    def behaviour(handler: _Handler, body: dict, number: int) -> None:
        total, chunk = 100 * 2**20, b"a" * 2**20
        head = b'{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"'
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if announce:
            handler.send_header("Content-Length", str(total))
        handler.end_headers()
        handler.wfile.write(head)
        sent = len(head)
        while sent < total - 10 and not handler.server.stopping.is_set():
            handler.wfile.write(chunk)
            sent += len(chunk)
        handler.wfile.write(b'"}}]}')

    return behaviour


@pytest.mark.parametrize("announce", [True, False], ids=["content-length", "unannounced"])
def test_a_100_mb_answer_is_refused_at_the_default_cap_and_the_rerun_completes(hostile, tmp_path, announce):
    server = hostile(_hundred_megabytes(announce))
    backend = load_backend(server.spec(), {**FAST, "deadline": 5.0, "timeout": 5.0})
    assert backend.options["max_response_bytes"] == 32 * 2**20
    started = time.monotonic()
    (record,) = RunStore.open(tmp_path / "run", backend=backend).run(_gen())
    assert time.monotonic() - started < 5.0
    assert record.response is None and "max_response_bytes" in record.error
    assert server.count == 1  # not asked again: the cap is the user's to raise
    server.behaviour = _honest_chat
    assert RunStore.open(tmp_path / "run", backend=backend).run(_gen())[0].ok


def test_a_smaller_cap_is_an_option(hostile):
    server = hostile(lambda handler, body, number: handler.send_json(_chat("x" * 5000)))
    with pytest.raises(EvalError, match="max_response_bytes \\(1,000 bytes\\)"):
        load_backend(server.spec(), {**FAST, "max_response_bytes": 1000}).generate(_gen())


def _drip(seconds_per_byte: float, attempts_dripped: int) -> Behaviour:
    """Drip a complete answer one byte at a time (each read well within `timeout`) on the
    first `attempts_dripped` requests; answer at once afterwards."""

    def behaviour(handler: _Handler, body: dict, number: int) -> None:
        payload = json.dumps(_chat("dripped")).encode()
        if number > attempts_dripped:
            handler.send_bytes(payload)
            return
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        for byte in payload:
            if handler.server.stopping.is_set():
                return
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(seconds_per_byte)

    return behaviour


def test_a_dripping_server_is_cut_off_at_the_deadline_not_each_read(hostile):
    server = hostile(_drip(0.05, attempts_dripped=1))  # a 120-byte answer over 6 s, 0.05 s per read
    started = time.monotonic()
    (result,) = load_backend(server.spec(), FAST).generate(_gen())
    elapsed = time.monotonic() - started
    assert (result.text, result.attempts) == ("dripped", 2)
    assert 0.8 <= elapsed < 2.5  # the first attempt was cut at the 0.8 s deadline


def _endless(handler: _Handler, body: dict, number: int) -> None:
    """A streamed answer (server-sent events) that never ends."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.end_headers()
    while not handler.server.stopping.is_set():
        handler.wfile.write(b'data: {"choices":[{"index":0,"delta":{"content":"more "}}]}\n\n')
        handler.wfile.flush()
        time.sleep(0.01)


def test_a_never_ending_stream_is_cut_off_and_the_rerun_completes(hostile, tmp_path):
    server = hostile(_endless)
    backend = load_backend(server.spec(), FAST)
    started = time.monotonic()
    with pytest.raises(EvalError, match="no answer from .* after 2 attempts; last: no complete answer within the "
                                        "deadline of 0.8 s"):
        RunStore.open(tmp_path / "run", backend=backend).run(_gen())
    assert time.monotonic() - started < 3.0
    server.behaviour = _honest_chat
    (record,) = RunStore.open(tmp_path / "run", backend=backend).run(_gen(), parse=lambda r: r.text)
    assert record.parsed == "answer: q0"


@pytest.mark.parametrize(("name", "value"), [("deadline", 0), ("deadline", -1.0), ("max_response_bytes", "big"),
                                             ("deadline", math.nan), ("max_response_bytes", True)])
def test_deadline_and_size_cap_must_be_positive_numbers(name, value):
    with pytest.raises(EvalError, match=f"option {name} must be a positive number"):
        load_backend("api:m@http://127.0.0.1:1/v1", {name: value})


# --------------------------------------------------------------------------- any backend


def test_the_run_store_refuses_invalid_answers_from_any_backend(tmp_path):
    """Local backends go through the same check: a NaN from a float16 overflow is a failed
    request, not an answer."""
    from histbench.core.backends.base import LOGLIKELIHOOD, Backend, LoglikelihoodResult

    class NaNBackend(Backend):
        kind = "nan"

        def __init__(self):
            super().__init__("nan:model", "model")
            self.supports = frozenset({LOGLIKELIHOOD})

        def _loglikelihood_batch(self, requests, indices):
            yield indices, [LoglikelihoodResult(logprob=math.nan, n_tokens=1, is_greedy=True) for _ in requests]

    (record,) = RunStore.open(tmp_path / "run", backend=NaNBackend()).run(LL)
    assert record.response is None and record.error == "invalid answer: the summed log-probability is nan: not a finite number"


@pytest.mark.parametrize(("kind", "response", "why"), [
    ("generate", {"text": 3}, "not a string"),
    ("generate", {"text": "x", "finish_reason": "error"}, "finish_reason 'error'"),
    ("generate", {"text": "x", "surprise": 1}, "fields"),
    ("loglikelihood", {"logprob": 0.01, "n_tokens": 1, "is_greedy": True}, "above 0"),
    ("loglikelihood", {"logprob": "-1", "n_tokens": 1, "is_greedy": True}, "not a number"),
    ("loglikelihood", {"logprob": -1.0, "n_tokens": -1, "is_greedy": True}, "n_tokens"),
    ("loglikelihood", {"logprob": -1.0, "n_tokens": 1, "is_greedy": "yes"}, "is_greedy"),
    ("fill_mask", {"candidates": [{"token": "a", "probability": math.inf}]}, "probability"),
    ("fill_mask", {"candidates": [{"token": "a", "probability": 1.5}]}, "probability"),
    ("fill_mask", {"candidates": "a"}, "not a list"),
])
def test_invalid_result_names_what_is_wrong(kind, response, why):
    assert why in invalid_result(kind, response)


def test_valid_results_pass():
    assert invalid_result("generate", {"text": "", "finish_reason": None}) is None
    assert invalid_result("loglikelihood", {"logprob": 0.0, "n_tokens": 0, "is_greedy": False}) is None
    assert invalid_result("fill_mask", {"candidates": [{"token": "a", "probability": 1.0, "token_id": 3}]}) is None


def test_one_invalid_prompt_in_a_batch_fails_alone(hostile):
    """Several prompts share a /completions request; when one choice stays invalid, each
    prompt is asked alone, so only that one fails."""

    def behaviour(handler, body, number):
        prompts = body["prompt"]
        choices = [{"index": n, **_echo(p, math.nan if p.endswith("1900") else -1.5)} for n, p in enumerate(prompts)]
        handler.send_json({"choices": choices})

    server = hostile(behaviour)
    backend = load_backend(server.spec(), FAST)
    requests = [LoglikelihoodRequest("The year is", " 1850"), LoglikelihoodRequest("The year is", " 1900"),
                LoglikelihoodRequest("The year is", " 1950")]
    results = dict(backend.stream(requests))
    assert results[0].logprob == results[2].logprob == -1.5
    assert "log-probability of prompt token 3 is nan" in str(results[1])
    assert [len(b["prompt"]) for b in server.bodies] == [3, 3, 1, 1, 1, 1]


# --------------------------------------------------------------------------- the MHER embeddings client


def _embeddings(values: Callable[[int], list]) -> Behaviour:
    def behaviour(handler: _Handler, body: dict, number: int) -> None:
        data = [{"index": n, "embedding": values(number)} for n in range(len(body["input"]))]
        handler.send_json({"data": data, "model": "emb"})

    return behaviour


def _embedding_client(server, **options):
    from histbench.eval.mher.embeddings import ApiEmbeddings

    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    return ApiEmbeddings(f"api:emb@{url}", "emb", url, **{"backoff_base": 0.001, "backoff_max": 0.01, **options})


def test_embeddings_with_nan_are_retried_then_refused(hostile):
    server = hostile(_embeddings(lambda number: [0.1, math.nan] if number <= 2 else [0.6, 0.8]))
    assert _embedding_client(server).encode(["Batu"]).tolist() == [[0.6, 0.8]]
    assert server.count == 3
    with pytest.raises(EvalError, match="without 1 finite embeddings"):
        _embedding_client(hostile(_embeddings(lambda number: [math.inf, 1.0])), max_retries=1).encode(["Batu"])


def test_embeddings_from_a_dripping_or_oversized_server_are_cut_off(hostile):
    started = time.monotonic()
    with pytest.raises(EvalError, match="no embeddings from .* after 2 attempts; last: ReadTimeout: no complete answer "
                                        "within the deadline of 0.8 s"):
        _embedding_client(hostile(_drip(0.05, attempts_dripped=5)), timeout=0.5, deadline=0.8, max_retries=1).encode(["x"])
    assert time.monotonic() - started < 3.0
    with pytest.raises(EvalError, match="above max_response_bytes \\(33,554,432 bytes\\)"):
        _embedding_client(hostile(_hundred_megabytes(announce=False)), timeout=5.0).encode(["x"])
