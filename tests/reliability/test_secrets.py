"""The redaction rules of histbench.core.secrets (issue 17, point 2): by name and by value."""

from __future__ import annotations

import json

import pytest

from histbench.core.atomic import write_text_atomic
from histbench.core.backends import GenerateRequest, load_backend
from histbench.core.backends.spec import display_spec
from histbench.core.runstore import RunStore
from histbench.core.secrets import (
    REDACTED,
    is_secret_name,
    is_secret_query_name,
    redact,
    redact_url,
    register_secret,
    register_url_secrets,
    scrub_text,
)


@pytest.mark.parametrize("name", ["Authorization", "Proxy-Authorization", "api-key", "X-Api-Key", "x-goog-api-key",
                                  "api_key", "apiKey", "key", "access_token", "X-Auth-Token", "client_secret",
                                  "password", "Cookie", "sig", "Ocp-Apim-Subscription-Key"])
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["max_tokens_field", "token_budget", "api_key_env", "key_env", "timeout",
                                  "Content-Type", "extra_body", "reasoning_effort", "api-version"])
def test_names_that_are_not_secret(name):
    assert not is_secret_name(name)


def test_urls_lose_passwords_and_secret_query_values():
    assert redact_url("https://user:hunter2hunter2@h.example/v1") == f"https://{REDACTED}@h.example/v1"
    assert redact_url("https://sk-token-as-user@h.example/v1") == f"https://{REDACTED}@h.example/v1"
    assert redact_url("http://tok@[::1/v1") == f"http://{REDACTED}@[::1/v1"   # unparsable: the user part goes all the same
    assert redact_url("https://f.example/api/x?code=abc&sig=d&X-Amz-Signature=e&api-version=1") == \
        f"https://f.example/api/x?code={REDACTED}&sig={REDACTED}&X-Amz-Signature={REDACTED}&api-version=1"
    assert redact_url("https://h.example/v1?api-version=2024&api-key=abc") == \
        f"https://h.example/v1?api-version=2024&api-key={REDACTED}"
    assert display_spec("api:m@https://h.example/v1?key=abc123#MY_KEY") == f"api:m@https://h.example/v1?key={REDACTED}#MY_KEY"
    assert display_spec("hf:org/model@v1") == "hf:org/model@v1"


@pytest.mark.parametrize("name", ["code", "sig", "signature", "X-Amz-Signature", "token", "key", "session_id", "hmac"])
def test_secret_query_names(name):
    assert is_secret_query_name(name)


@pytest.mark.parametrize("name", ["api-version", "model", "format", "country_code", "deployment", "code_version"])
def test_query_names_that_are_not_secret(name):
    assert not is_secret_query_name(name) and not is_secret_name(name)


def test_a_url_registers_its_user_part_and_the_basic_header_derived_from_it():
    import base64

    register_url_secrets("http://alice-1234:pa%3Ass-5678@h.example/v1?code=fn-code-0123456789")
    derived = base64.b64encode(b"alice-1234:pa:ss-5678").decode()
    text = f"Authorization: Basic {derived}; user alice-1234, password pa:ss-5678, code fn-code-0123456789"
    assert scrub_text(text) == f"Authorization: {REDACTED}; user {REDACTED}, password {REDACTED}, code {REDACTED}"


def test_redact_keeps_names_and_non_text_values():
    options = {"headers": {"x-api-key": "k-123456789", "X-Trace": "on"}, "add_bos_token": True, "token_budget": 2048,
               "extra_body": {"client_secret": ["a-long-secret-value"]}}
    assert redact(options) == {"headers": {"x-api-key": REDACTED, "X-Trace": "on"}, "add_bos_token": True,
                               "token_budget": 2048, "extra_body": {"client_secret": [REDACTED]}}


def test_registered_values_are_scrubbed_everywhere_they_are_written(tmp_path):
    register_secret("Bearer sk-scrub-test-0123456789")
    text = 'curl -H "Authorization: Bearer sk-scrub-test-0123456789" and the key sk-scrub-test-0123456789 alone'
    assert "sk-scrub-test" not in scrub_text(text)
    write_text_atomic(tmp_path / "x.json", json.dumps({"note": text}))
    assert "sk-scrub-test" not in (tmp_path / "x.json").read_text()
    register_secret("short")   # too short to be a credential: ordinary text is left alone
    assert scrub_text("a short note") == "a short note"


def test_a_credential_under_an_innocent_name_is_scrubbed_by_value(chat_server, tmp_path, monkeypatch):
    """The key read from $HB_VALUE_KEY also appears in extra_body under a name that says
    nothing, and the server echoes the request headers into its answer: neither is written."""
    monkeypatch.setenv("HB_VALUE_KEY", "sk-value-9f8e7d6c5b4a")
    server = chat_server(lambda m: "ok")
    spec = server.spec(key_env="HB_VALUE_KEY")
    backend = load_backend(spec, {"extra_body": {"user": "sk-value-9f8e7d6c5b4a"}, "max_retries": 0})
    RunStore.open(tmp_path / "run", backend=backend).run([GenerateRequest(prompt="p", max_new_tokens=4)])
    assert server.bodies[0]["user"] == "sk-value-9f8e7d6c5b4a"       # sent as given
    for path in (tmp_path / "run").iterdir():
        assert "sk-value-9f8e7d6c5b4a" not in path.read_text(errors="replace"), path


def test_the_key_is_registered_before_a_resumed_folder_rewrites_run_json(chat_server, tmp_path, monkeypatch):
    monkeypatch.setenv("HB_EARLY_KEY", "sk-early-0a1b2c3d4e5f")
    server = chat_server(lambda m: "ok")
    RunStore.open(tmp_path / "run", backend=load_backend(server.spec())).run([GenerateRequest(prompt="p")])
    # reopening rewrites run.json at once, before any request reads the key
    RunStore.open(tmp_path / "run", backend=load_backend(server.spec(key_env="HB_EARLY_KEY"),
                                                        {"extra_body": {"note": "sk-early-0a1b2c3d4e5f"}}))
    assert "sk-early" not in (tmp_path / "run" / "run.json").read_text()


def test_a_build_with_a_chat_model_writes_no_credential(chat_server, tmp_path, monkeypatch):
    """The Italian WSD steps ask a chat model while building; the build manifest records the
    build options (--chat-option headers=...), which must not carry the key."""
    from histbench.cli import main

    from .conftest import SOURCES

    def answer(messages):
        user = messages[-1]["content"]
        if '"suitable"' in user:
            return '{"suitable": true, "reason": "gloss"}'
        if '"distractors"' in user:
            return json.dumps({"distractors": ["senso figurato", "luogo", "strumento", "modo di camminare lento e pesante", "tessuto"]})
        return '{"answer": "significato sintetico"}'

    monkeypatch.setenv("HB_BUILD_KEY", "sk-build-1122334455")
    server = chat_server(answer)
    out = tmp_path / "out"
    assert main(["build", "italian", "--leggomanzoni", str(SOURCES / "italian" / "sample" / "leggomanzoni"),
                 "--embedding-model", "tfidf", "--wsd-questions", "0", "--chat-cache", str(tmp_path / "chat.jsonl"),
                 "--chat-model", server.spec(key_env="HB_BUILD_KEY"),
                 "--chat-option", 'headers={"x-api-key": "hdr-build-5566778899"}', "--out", str(out)]) == 0
    assert server.headers[0]["x-api-key"] == "hdr-build-5566778899"
    for path in [p for p in out.rglob("*") if p.is_file()] + [tmp_path / "chat.jsonl"]:
        data = path.read_bytes()
        assert b"hdr-build-5566778899" not in data and b"sk-build-1122334455" not in data, path
