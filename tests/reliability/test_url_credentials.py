"""Credentials carried in an endpoint's URL are written nowhere (issue 26, point 2).

The forms: a token as the URL's user part (`http://TOKEN@host/v1`), a user and password
(`http://user:PASSWORD@host/v1`) with the `Authorization: Basic ...` header httpx derives
from them, and query parameters whose names say they hold a credential (`?code=` of Azure
Functions, `sig`, `signature`, `token`, `key`). Each run goes through the real command line,
in this process: `histbench eval chronoculture` against the loopback server, which echoes
the request's headers into its answers and into the body of a refused request (stored in
records.jsonl), then `histbench report` and `histbench view` as a later process would run
them (knowing no registered credential). Every byte of every file under the run, report and
viewer folders, stdout and stderr of each command, and every log record at DEBUG level must
hold none of the credentials, while the server did receive them.
"""

from __future__ import annotations

import base64
import logging
import secrets as random_secrets

import pytest

from histbench.core.secrets import forget_registered_secrets

from .conftest import SOURCES


def _token(kind: str) -> str:
    return f"{kind}{random_secrets.token_hex(10)}"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from histbench.builders.chronoculture import BUILDER
    from histbench.builders.machinery.build import run_build

    return run_build(BUILDER, {"wvs": SOURCES / "chronoculture" / "sample" / "wvs_timeseries_synthetic.sav"},
                     options=BUILDER.demo_options(), out_root=tmp_path_factory.mktemp("url-secrets"))


def _forms(server) -> dict[str, tuple[str, dict[str, str]]]:
    """form -> (base URL, the credentials it carries, by name)."""
    host = f"{server.host}:{server.port}"
    user, password = _token("user"), _token("pw")
    query = {name: _token(name) for name in ("code", "sig", "signature", "token", "key")}
    token = _token("tok")
    basic_user = base64.b64encode(f"{user}:{password}".encode()).decode()
    basic_token = base64.b64encode(f"{token}:".encode()).decode()
    return {
        "token-as-user-and-secret-query": (
            f"http://{token}@{host}/v1?api-version=2024-06-01&" + "&".join(f"{k}={v}" for k, v in query.items()),
            {"token": token, "basic": basic_token, **{f"?{k}": v for k, v in query.items()}},
        ),
        "user-and-password": (f"http://{user}:{password}@{host}/v1", {"user": user, "password": password,
                                                                       "basic": basic_user}),
    }


def _assert_clean(texts: dict[str, bytes], creds: dict[str, str]) -> None:
    for where, data in texts.items():
        for kind, value in creds.items():
            assert value.encode() not in data, f"the {kind} credential is written in {where}"


@pytest.mark.parametrize("form", ["token-as-user-and-secret-query", "user-and-password"])
def test_url_credentials_reach_no_file_and_no_stream(form, built, chat_server, cli, tmp_path, caplog, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    caplog.set_level(logging.DEBUG)
    holder = {}

    def answer(messages):   # the server says back what it was sent
        return f'```json\n{{"a": 0.5, "b": 0.5}}\n```\nyou sent: {holder["server"].headers[-1].get("Authorization")}'

    server = chat_server(answer, echo_headers=True)
    holder["server"] = server
    url, creds = _forms(server)[form]
    server.fail("400")      # a refused request: its body (echoing the headers) is stored in records.jsonl
    server.fail("503")      # a retried one: the retry line names the endpoint on stderr
    run, report = tmp_path / "run", tmp_path / "report"
    streams = {}
    result = cli("eval", "chronoculture", "--dataset", built, "--out", run, "--limit", "3", "--model", f"api:m@{url}",
                 "--model-option", "backoff_base=0.01")
    assert result.status == 0, result.stderr
    streams["eval stdout"], streams["eval stderr"] = result.stdout.encode(), result.stderr.encode()
    assert "retrying (1/6) after HTTP 503" in result.stderr
    # the credentials did go to the server, and it echoed them
    sent = server.headers[0]["Authorization"]
    assert sent == f"Basic {creds['basic']}"
    assert any(creds["basic"] in str(b) for b in server.headers)

    forget_registered_secrets()   # report and view run later, in a process that read no credential
    result = cli("report", "chronoculture", run, "--out", report, "--resamples", "10")
    assert result.status == 0, result.stderr
    streams["report stdout"], streams["report stderr"] = result.stdout.encode(), result.stderr.encode()
    result = cli("view", run)
    assert result.status == 0, result.stderr
    streams["view stdout"], streams["view stderr"] = result.stdout.encode(), result.stderr.encode()
    streams["log records"] = "\n".join(r.getMessage() for r in caplog.records).encode()

    files = {str(p): p.read_bytes() for folder in (run, report) for p in sorted(folder.rglob("*")) if p.is_file()}
    assert any("records.jsonl" in f for f in files) and any("/viewer/" in f for f in files)
    assert any(name.endswith(".html") for name in files) and len(files) >= 10
    assert b"request_headers" in files[str(run / "records.jsonl")]   # the echoed refusal is stored ...
    _assert_clean({**files, **streams}, creds)                       # ... without what it echoed
    assert b"<redacted>@" in files[str(run / "run.json")]              # the URL is recorded, its user part redacted


def test_a_refusal_that_echoes_the_credential_is_one_clean_line(chat_server, cli, built, tmp_path, monkeypatch):
    """HTTP 401 whose body quotes the Authorization header back: the run stops with one
    error line on stderr, and that line holds no credential."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = chat_server(echo_headers=True)
    url, creds = _forms(server)["user-and-password"]
    server.fail("401", times=50)
    result = cli("eval", "chronoculture", "--dataset", built, "--out", tmp_path / "run", "--limit", "3",
                 "--model", f"api:m@{url}")
    assert result.status == 2
    assert len(result.error_lines) == 1 and "authentication failed" in result.error_lines[0]
    assert "<redacted>" in result.error_lines[0]
    _assert_clean({"stderr": result.stderr.encode(), "stdout": result.stdout.encode()}, creds)
    assert not (tmp_path / "run").exists()
