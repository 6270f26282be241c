"""Secrets in new places (issue 39, class 7): a credential is found by its value and its
looks, not only by the name it is held under; a key pasted where a variable's name belongs
is never echoed; a credential too short to scrub is refused."""

from __future__ import annotations

import json
import string
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histbench.core.backends import GenerateRequest, load_backend
from histbench.core.backends.spec import display_spec
from histbench.core.errors import EvalError, UsageError
from histbench.core.runstore import RunStore
from histbench.core.secrets import (
    MIN_SECRET_LENGTH,
    REDACTED,
    forget_registered_secrets,
    is_secret_name,
    redact,
    register_secrets_in,
    scrub_text,
    short_credentials,
)


class _Echo(BaseHTTPRequestHandler):
    """Answers every chat request with the request's headers and body in its text, and with
    HTTP 400 echoing them when the question says "refuse": a server that repeats secrets."""

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        echoed = json.dumps({"headers": dict(self.headers), "body": body})
        if "refuse" in body:
            payload, status = json.dumps({"error": {"message": "bad request: " + echoed}}).encode(), 400
        else:
            answer = {"model": "echo", "choices": [{"index": 0, "finish_reason": "stop",
                                                    "message": {"role": "assistant", "content": echoed}}]}
            payload, status = json.dumps(answer).encode(), 200
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture(scope="module")
def echo_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


FAST = {"backoff_base": 0.01, "backoff_max": 0.02, "timeout": 2, "max_retries": 0}

_ALNUM = string.ascii_letters + string.digits
#: header names that say nothing about holding a credential
innocent_names = st.from_regex(r"x-[a-z]{1,10}(-[a-z]{1,8})?", fullmatch=True).filter(lambda n: not is_secret_name(n))
secret_names = st.sampled_from(["api_key", "apiKey", "token", "password", "x-api-key", "client_secret", "Authorization"])
shaped_keys = st.one_of(
    st.from_regex(r"sk-(proj-|ant-|or-v1-)?[A-Za-z0-9]{20,40}", fullmatch=True),
    st.from_regex(r"hf_[A-Za-z0-9]{30,34}", fullmatch=True),
    st.from_regex(r"AKIA[0-9A-Z]{16}", fullmatch=True),
)
plain_keys = st.text(_ALNUM, min_size=MIN_SECRET_LENGTH, max_size=40).filter(lambda k: any(c.isdigit() for c in k))


@st.composite
def header_holding_a_key(draw):
    """(header name, header value, the key inside it): the value carries the key under an
    innocent header name, as JSON, as a name=value pair, behind a scheme, or bare."""
    name = draw(innocent_names)
    form = draw(st.sampled_from(["json", "nested-json", "pair", "scheme", "bare"]))
    key = draw(shaped_keys if form == "bare" else st.one_of(shaped_keys, plain_keys))
    secret = draw(secret_names)
    value = {
        "json": json.dumps({secret: key, "provider": "openai"}),
        "nested-json": json.dumps({"targets": [{"provider": "openai", secret: key}], "retry": {"attempts": 3}}),
        "pair": f"provider=openai; {secret}={key}",
        "scheme": f"Bearer {key}",
        "bare": key,
    }[form]
    return name, value, key


@settings(max_examples=40, deadline=None)
@given(header_holding_a_key())
def test_a_key_inside_an_innocent_header_is_found_by_value(header):
    name, value, key = header
    forget_registered_secrets()
    options = {"headers": {name: value, "x-trace": "on"}}
    register_secrets_in(options)
    assert key not in json.dumps(redact(options))  # what run.json and the report record
    assert key not in scrub_text(f"server said: {value} / {key} / {json.dumps(key)}")  # what anything else writes
    assert redact(options)["headers"]["x-trace"] == "on"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=header_holding_a_key())
def test_a_server_echoing_an_innocent_header_leaves_no_key_in_the_run_folder(echo_url, tmp_path_factory, header):
    name, value, key = header
    forget_registered_secrets()
    run = tmp_path_factory.mktemp("run") / "run"
    backend = load_backend(f"api:m@{echo_url}", {**FAST, "headers": {name: value}})
    records = RunStore.open(run, backend=backend).run([GenerateRequest(prompt="hello"), GenerateRequest(prompt="refuse")])
    assert key in json.dumps(records[0].response["raw"])  # the server did echo it (held in memory only)
    assert records[1].error.startswith("HTTP 400")
    for path in run.iterdir():
        if path.is_file():
            assert key not in path.read_text(errors="replace"), path.name


def test_the_issue_example_portkey_config(echo_url, tmp_path):
    value = '{"api_key": "sk-portkey-0123456789abcdef", "provider": "openai"}'
    backend = load_backend(f"api:m@{echo_url}", {**FAST, "headers": {"x-portkey-config": value}})
    RunStore.open(tmp_path / "run", backend=backend).run([GenerateRequest(prompt="hello")])
    run_json = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run_json["backend"]["options"]["headers"]["x-portkey-config"] == \
        f'{{"api_key": "{REDACTED}", "provider": "openai"}}'
    assert "sk-portkey" not in (tmp_path / "run" / "records.jsonl").read_text()


# --------------------------------------------------------------------------- a key where a name belongs


@pytest.mark.parametrize("pasted", ["sk-proj-abcdef0123456789XYZ", "sk_live_abcdef0123456789", "abc-1", "key with spaces",
                                    "hf_abcdefghijklmnopqrstuvwxyz0123"])
@pytest.mark.parametrize("url", ["@http://127.0.0.1:1/v1", ""])
def test_a_key_pasted_after_the_hash_is_refused_without_being_shown(pasted, url, capsys):
    spec = f"api:gpt-4o{url}#{pasted}"
    with pytest.raises(UsageError) as caught:
        load_backend(spec)
    message = str(caught.value)
    assert "the part after # must name an environment variable" in message
    assert pasted not in message and pasted not in capsys.readouterr().err
    assert pasted not in display_spec(spec)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from histbench.builders.chronoculture import BUILDER
    from histbench.builders.machinery.build import run_build

    from .conftest import SOURCES

    return run_build(BUILDER, {"wvs": SOURCES / "chronoculture" / "sample" / "wvs_timeseries_synthetic.sav"},
                     options=BUILDER.demo_options(), out_root=tmp_path_factory.mktemp("hash-key"))


def test_a_key_pasted_after_the_hash_is_not_echoed_by_the_command_line(cli, built, tmp_path):
    pasted = "sk-proj-0123456789abcdefABCDEF"
    result = cli("eval", "chronoculture", "--dataset", built, "--out", tmp_path / "run", "--limit", "3",
                 "--model", f"api:gpt-4o@http://127.0.0.1:1/v1#{pasted}")
    assert result.status == 2
    assert len(result.error_lines) == 1 and "the part after # must name an environment variable" in result.error_lines[0]
    assert pasted not in result.stderr and pasted not in result.stdout
    assert not (tmp_path / "run").exists()


def test_a_variable_name_after_the_hash_still_works(monkeypatch, echo_url):
    monkeypatch.setenv("HB_GOOD_KEY", "sk-good-0123456789abc")
    backend = load_backend(f"api:m@{echo_url}#HB_GOOD_KEY", FAST)
    (result,) = backend.generate([GenerateRequest(prompt="hello")])
    assert "Bearer sk-good-0123456789abc" in result.text  # sent; the echo is in memory only


# --------------------------------------------------------------------------- keys too short to scrub


@pytest.mark.parametrize("short", ["a", "abc", "1234567"])
def test_a_key_shorter_than_8_characters_is_refused_before_anything_is_sent(monkeypatch, echo_url, tmp_path, short):
    monkeypatch.setenv("HB_SHORT_KEY", short)
    backend = load_backend(f"api:m@{echo_url}#HB_SHORT_KEY", FAST)
    with pytest.raises(EvalError, match=r"the API key in \$HB_SHORT_KEY is shorter than 8 characters") as caught:
        RunStore.open(tmp_path / "run", backend=backend).run([GenerateRequest(prompt="hello")])
    assert f"'{short}'" not in str(caught.value)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("headers", [{"x-api-key": "abc"}, {"x-portkey-config": '{"api_key": "abc12"}'},
                                     {"x-cfg": '{"targets": [{"token": "t0k"}]}'}])
def test_a_short_credential_in_a_header_is_refused(headers):
    with pytest.raises(EvalError, match="holds a credential shorter than 8 characters") as caught:
        load_backend("api:m@http://127.0.0.1:1/v1", {"headers": headers})
    assert "abc" not in str(caught.value) and "t0k" not in str(caught.value)


def test_short_credentials_names_places_not_values():
    assert short_credentials({"headers": {"x-cfg": '{"api_key": "abc"}', "api-key": "s", "x-ok": "fine"},
                              "extra_body": {"user": "someone"}}) == ["headers.x-cfg.api_key", "headers.api-key"]
    assert short_credentials({"headers": {"api-key": "a-long-enough-key"}}) == []


def test_prose_is_not_taken_for_a_key():
    forget_registered_secrets()
    register_secrets_in({"extra_body": {"system": "You are the bearer of history; token counts matter; max_tokens=120"}})
    text = "The bearer of history answered with token representations of 1850."
    assert scrub_text(text) == text
    line = "histbench: x.json, field 'token': expected a string; add_bos_token=True, api_key_env=MY_KEY"
    assert redact(line) == line  # status and error lines pass through redact
    assert redact("api_key=abcdefgh123 password: correcthorsebattery") == f"api_key={REDACTED} password: {REDACTED}"


@pytest.mark.parametrize("given", ["sk-proj-abcdef0123456789XYZ", "my-key-1234", "sk_live_abcdef0123456789"])
def test_a_key_given_as_the_api_key_env_option_is_refused_without_being_shown(given):
    with pytest.raises(EvalError, match="option api_key_env must name an environment variable") as caught:
        load_backend("api:m@http://127.0.0.1:1/v1", {"api_key_env": given})
    assert given not in str(caught.value)


@pytest.mark.parametrize(("url", "where"), [
    ("http://bob:pw12@127.0.0.1:1/v1", "the URL's password"),
    ("http://tok5@127.0.0.1:1/v1", "the URL's user part"),
    ("http://127.0.0.1:1/v1?api-version=2024-06-01&key=k3y", "the URL's query parameter 'key'"),
])
def test_a_short_credential_in_the_url_is_refused(url, where):
    with pytest.raises(EvalError, match=f"{where} is shorter than 8 characters") as caught:
        load_backend(f"api:m@{url}")
    for value in ("pw12", "tok5", "k3y"):
        assert value not in str(caught.value)
    # a user name beside a long password is a name, not a credential
    load_backend("api:m@http://bob:a-long-password-1@127.0.0.1:1/v1")
