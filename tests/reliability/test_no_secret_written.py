"""No credential is ever written (issue 17, point 2).

Every benchmark that has `histbench eval` is run through the real command line against a
loopback chat server (valence: a tiny masked LM), with three credentials: an API key in the
environment variable the spec names, a key passed as `--model-option headers={"x-api-key":
...}`, and a key in the endpoint's query string (`?api-key=...`). Then `histbench report`
runs on the result. Every file under the run and report folders is read as bytes and must
hold none of them, while the requests did carry them to the server. Before the fix the
header key was written verbatim into run.json, the benchmark's results JSON and report.json.
"""

from __future__ import annotations

import json
import secrets as random_secrets
from pathlib import Path

import pytest

from histbench.cli import main

REPO = Path(__file__).resolve().parents[2]
SOURCES = REPO / "sources"


def _credentials() -> dict[str, str]:
    return {kind: f"{kind}-{random_secrets.token_hex(12)}" for kind in ("env", "header", "query")}


@pytest.fixture
def creds(monkeypatch):
    values = _credentials()
    monkeypatch.setenv("HB_SECRET_KEY", values["env"])
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return values


def _model_args(server, creds) -> list[str]:
    spec = f"api:{server.model}@{server.base_url}?api-key={creds['query']}#HB_SECRET_KEY"
    headers = json.dumps({"x-api-key": creds["header"]}, separators=(",", ":"))
    return ["--model", spec, "--model-option", f"headers={headers}", "--model-option", "max_retries=0"]


def _assert_clean(folders: list[Path], creds: dict[str, str]) -> int:
    """Every file under the folders is free of every credential; returns how many files were read."""
    files = [p for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        for kind, value in creds.items():
            assert value.encode() not in data, f"the {kind} credential is written in {path}"
    return len(files)


def _assert_sent(server, creds) -> None:
    assert server.requests > 0
    sent = server.headers[0]
    assert sent["Authorization"] == f"Bearer {creds['env']}" and sent["x-api-key"] == creds["header"]


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """The bundled samples of the API-scored benchmarks, built once (italian with TF-IDF embeddings)."""
    from histbench.builders.machinery.build import discover_builders, run_build

    root = tmp_path_factory.mktemp("secret-builds")
    builders = discover_builders()
    out = {}
    for name in ("chronoculture", "chronologic", "mher", "italian"):
        builder = builders[name]
        given = {role: [str(p) for p in paths] if builder.manifest().inputs[role].multiple else str(paths[0])
                 for role, paths in builder.manifest().sample_paths().items()}
        options = builder.demo_options()
        if name == "italian":
            options.update({"embedding_model": "tfidf", "chat_cache": str(root / "chat.jsonl")})
        out[name] = run_build(builder, given, options=options, out_root=root)
    return out


def test_chronoculture_run_and_report_hold_no_credential(builds, chat_server, creds, tmp_path):
    server = chat_server(lambda m: '```json\n{"a": 0.5, "b": 0.5}\n```')
    run, report = tmp_path / "run", tmp_path / "report"
    assert main(["eval", "chronoculture", "--dataset", str(builds["chronoculture"]), "--out", str(run),
                 "--limit", "3", *_model_args(server, creds)]) == 0
    assert main(["report", "chronoculture", str(run), "--out", str(report), "--resamples", "10"]) == 0
    _assert_sent(server, creds)
    assert _assert_clean([run, report], creds) >= 6
    assert "x-api-key" in (run / "run.json").read_text()   # the name stays, its value is <redacted>


def test_chronologic_generation_run_and_report_hold_no_credential(builds, chat_server, creds, tmp_path):
    server = chat_server(lambda m: "An answer.")
    run, report = tmp_path / "run", tmp_path / "report"
    assert main(["eval", "chronologic", "--mode", "generate", "--dataset", str(builds["chronologic"]), "--out", str(run),
                 "--limit", "3", *_model_args(server, creds)]) == 0
    assert main(["report", "chronologic", str(run), "--out", str(report)]) == 0
    _assert_sent(server, creds)
    _assert_clean([run, report], creds)


def test_mher_run_and_report_hold_no_credential(builds, chat_server, creds, tmp_path):
    server = chat_server(lambda m: '{"same": 0.5, "different": 0.4, "ambiguous": 0.1}')
    run, report = tmp_path / "run", tmp_path / "report"
    assert main(["eval", "mher", "--dataset", str(builds["mher"]), "--out", str(run), *_model_args(server, creds)]) == 0
    assert main(["report", "mher", str(run), "--out", str(report), "--resamples", "10"]) == 0
    _assert_sent(server, creds)
    _assert_clean([run, report], creds)


def test_italian_run_and_report_hold_no_credential(builds, chat_server, creds, tmp_path):
    server = chat_server(lambda m: '{"answer": "A"}')
    run, report = tmp_path / "run", tmp_path / "report"
    assert main(["eval", "italian", "--dataset", str(builds["italian"]), "--out", str(run), "--limit", "2",
                 *_model_args(server, creds)]) == 0
    assert main(["report", "italian", str(run), "--out", str(report)]) == 0
    _assert_sent(server, creds)
    _assert_clean([run, report], creds)


def test_valence_run_and_report_hold_no_hub_token(tiny_masked_lm, creds, monkeypatch, tmp_path):
    """Valence asks no API: the credential its hf backend may read is the Hugging Face
    token (HF_TOKEN), which the backend registers and which no file holds."""
    from histbench.builders.machinery.build import run_build
    from histbench.builders.valence import BUILDER

    monkeypatch.setenv("HF_TOKEN", creds["env"])
    built = run_build(BUILDER, {"sentences": SOURCES / "valence" / "sample" / "sentences.csv",
                                "annotations": [SOURCES / "valence" / "sample" / "annotations.csv"]},
                      options=BUILDER.demo_options(), out_root=tmp_path / "build")
    run = tmp_path / "run"
    assert main(["eval", "valence", "--dataset", str(built), "--out", str(run), "--top-k", "3",
                 "--model", f"tiny=hf:{tiny_masked_lm}"]) == 0
    assert main(["report", "valence", str(run), "--bootstrap", "10", "--allow-unannotated", "--no-vocabulary-check",
                 "--out", str(run / "report")]) == 0
    from histbench.core.secrets import registered_secrets

    assert creds["env"] in registered_secrets()
    assert _assert_clean([run], {"env": creds["env"]}) >= 8
