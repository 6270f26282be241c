"""The api backend against a real loopback chat-completions server (issue 3; the MHER paper
section 5.4: retries only for transport/quota failures, raw provider responses kept)."""

from __future__ import annotations

import json
import time

import pytest

from histbench.core.backends import GenerateRequest, load_backend
from histbench.core.backends.api import APIBackend
from histbench.core.errors import EvalError

FAST = {"backoff_base": 0.01, "backoff_max": 0.05, "timeout": 5}


def _requests(n: int, **kwargs) -> list[GenerateRequest]:
    return [GenerateRequest(messages=[{"role": "user", "content": f"question {i}"}], **kwargs) for i in range(n)]


def test_answers_are_the_servers_and_carry_model_usage_finish_reason_and_raw_json(chat_server):
    server = chat_server(lambda messages: "answer to " + messages[-1]["content"], model="served-model-2024")
    backend = load_backend(server.spec(model="asked-model"), FAST)
    results = backend.generate(_requests(3, max_new_tokens=50))
    assert [r.text for r in results] == [f"answer to question {i}" for i in range(3)]
    for result in results:
        assert result.model == "served-model-2024"  # what the server says it ran, not what we asked
        assert result.finish_reason == "stop"
        assert result.usage == {"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6}
        assert result.raw["object"] == "chat.completion"
        assert result.raw["choices"][0]["message"]["content"] == result.text
    body = server.bodies[0]
    assert body["model"] == "asked-model"
    assert body["max_tokens"] == 50 and body["temperature"] == 0.0 and body["top_p"] == 1.0
    assert "seed" not in body and "stop" not in body


def test_decoding_parameters_extra_fields_and_prompt_requests_reach_the_server(chat_server):
    server = chat_server(lambda messages: "one two three four five six")
    backend = load_backend(server.spec(), {**FAST, "extra_body": {"reasoning_effort": "low"}, "max_tokens_field": "max_completion_tokens"})
    request = GenerateRequest(prompt="plain prompt", max_new_tokens=3, temperature=0.7, top_p=0.9, stop=["\n"], seed=11,
                              extra={"response_format": {"type": "json_object"}})
    (result,) = backend.generate([request])
    body = server.bodies[0]
    assert body["messages"] == [{"role": "user", "content": "plain prompt"}]
    assert body["max_completion_tokens"] == 3 and "max_tokens" not in body
    assert (body["temperature"], body["top_p"], body["stop"], body["seed"]) == (0.7, 0.9, ["\n"], 11)
    assert body["reasoning_effort"] == "low" and body["response_format"] == {"type": "json_object"}
    assert (result.text, result.finish_reason) == ("one two three", "length")


def test_concurrency_limit_is_respected(chat_server):
    server = chat_server(delay=0.05)
    backend = load_backend(server.spec(), {**FAST, "max_concurrency": 3})
    results = backend.generate(_requests(24))
    assert len(results) == 24 and server.delivered == 24
    assert server.max_concurrency == 3  # reached, never exceeded


@pytest.mark.parametrize("fault", ["429", "500", "502", "503", "close", "truncate", "timeout"])
def test_transport_faults_are_retried_until_answered(chat_server, fault):
    server = chat_server(hang=2.0)
    backend = load_backend(server.spec(), {**FAST, "timeout": 0.3, "max_concurrency": 1})
    server.fail(fault, times=2)
    (result,) = backend.generate(_requests(1))
    assert result.text == "echo: question 0"
    assert result.attempts == 3
    assert server.requests == 3 and server.delivered == 1
    assert sum(backend.stats["retries"].values()) == 2


def test_retry_after_is_honoured(chat_server):
    server = chat_server(retry_after=0.4)
    backend = load_backend(server.spec(), {**FAST, "backoff_max": 5.0, "max_concurrency": 1})
    server.fail("429")
    start = time.monotonic()
    backend.generate(_requests(1))
    assert time.monotonic() - start >= 0.4


def test_backoff_is_exponential_with_full_jitter():
    backend = APIBackend("api:m@http://127.0.0.1:1/v1", "m", "http://127.0.0.1:1/v1", None, {"backoff_base": 1.0, "backoff_max": 10.0})
    for attempt, cap in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (9, 10.0)]:
        delays = [backend._delay(attempt, None) for _ in range(300)]
        assert all(0 <= d <= cap for d in delays)
        assert max(delays) > 0.8 * cap and min(delays) < 0.2 * cap  # spread over [0, cap]
    assert backend._delay(1, retry_after=5.0) >= 5.0
    assert backend._delay(1, retry_after=500.0) <= 10.0


def test_a_complete_answer_is_never_retried_whatever_it_says(chat_server):
    server = chat_server(lambda messages: "I cannot answer that. {not json")
    backend = load_backend(server.spec(), FAST)
    results = backend.generate(_requests(5))
    assert server.requests == 5
    assert all(r.text == "I cannot answer that. {not json" for r in results)
    assert backend.stats["retries"] == {}


@pytest.mark.parametrize("status", ["400", "422"])
def test_a_refused_request_is_recorded_as_failed_not_retried_and_asked_again_later(chat_server, tmp_path, status):
    from histbench.core.runstore import RunStore

    server = chat_server(lambda messages: "ok")
    backend = load_backend(server.spec(), {**FAST, "max_concurrency": 1})
    requests = _requests(3)
    server.fault_for = lambda n, body: status if body["messages"][-1]["content"] == "question 1" and n == 2 else None
    store = RunStore.open(tmp_path / "run", backend=backend)
    records = store.run(requests, parse=lambda r: r.text)
    assert [r.parsed for r in records] == ["ok", None, "ok"]
    assert records[1].error.startswith(f"HTTP {status}") and "loopback fault" in records[1].error
    assert records[1].response is None and records[1].parse_error.startswith("no response")
    assert store.last_stats["failed"] == 1 and store.last_stats["parse_failures"] == 0
    assert server.requests == 3 and backend.stats["retries"] == {}
    # a later run asks the failed request again (it cost nothing), and only it
    again = RunStore.open(tmp_path / "run", backend=backend).run(requests, parse=lambda r: r.text)
    assert [r.reused for r in again] == [True, False, True]
    assert [r.parsed for r in again] == ["ok", "ok", "ok"]
    assert server.requests == 4


@pytest.mark.parametrize(("status", "message"), [("401", "authentication failed"), ("404", "no such endpoint or model")])
def test_wrong_key_or_url_stops_the_run(chat_server, status, message):
    server = chat_server()
    backend = load_backend(server.spec(), FAST)
    server.fail(status)
    with pytest.raises(EvalError, match=message):
        backend.generate(_requests(1))
    assert server.requests == 1


def test_exhausted_retries_stop_the_run_with_a_clear_error(chat_server):
    server = chat_server()
    backend = load_backend(server.spec(), {**FAST, "max_retries": 2})
    server.fail("503", times=10)
    with pytest.raises(EvalError, match="after 3 attempts; last: HTTP 503"):
        backend.generate(_requests(1))
    assert server.requests == 3


def test_key_comes_from_the_environment_variable_named_in_the_spec(chat_server, monkeypatch):
    server = chat_server()
    monkeypatch.setenv("MY_PROVIDER_KEY", "sk-test-123")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = load_backend(server.spec(key_env="MY_PROVIDER_KEY"), FAST)
    backend.generate(_requests(1))
    assert server.headers[0]["Authorization"] == "Bearer sk-test-123"
    assert backend.identity()["key_env"] == "MY_PROVIDER_KEY"
    assert "sk-test-123" not in json.dumps(backend.identity())
    monkeypatch.delenv("MY_PROVIDER_KEY")
    with pytest.raises(EvalError, match=r"\$MY_PROVIDER_KEY .* not set"):
        backend.generate(_requests(1))
    # no key named and none in OPENAI_API_KEY: no Authorization header (local servers)
    plain = load_backend(server.spec(), FAST)
    plain.generate(_requests(1))
    assert "Authorization" not in server.headers[-1]


def test_the_key_env_name_does_not_change_request_keys(chat_server):
    server = chat_server()
    a = load_backend(server.spec(key_env="A_KEY"), FAST)
    b = load_backend(server.spec(), FAST)
    request = _requests(1)[0]
    assert a.key(request) == b.key(request)
    other_model = load_backend(server.spec(model="other"), FAST)
    assert other_model.key(request) != a.key(request)


def test_likelihood_against_a_chat_only_endpoint_stops_with_one_line(chat_server):
    """The api backend scores log-likelihoods through /completions (test_api_likelihood.py);
    an endpoint that has none (this loopback server answers chat completions only) stops the
    run at the first request, naming the URL."""
    from histbench.core.backends import LoglikelihoodRequest

    server = chat_server()
    backend = load_backend(server.spec(), FAST)
    assert backend.supports == frozenset({"generate", "loglikelihood"})
    with pytest.raises(EvalError, match=r"no such endpoint or model: HTTP 404 from http://127\.0\.0\.1:\d+/v1/completions"):
        backend.loglikelihood([LoglikelihoodRequest("a", " b")])
