"""The embedding baseline through an OpenAI-compatible /embeddings endpoint (section 5.2:
the paper's embedding baseline is an API model), beside the local sentence-transformers
one; short names in tables; English-only models flagged."""

from __future__ import annotations

import json

import numpy as np
import pytest

from histbench.cli import main
from histbench.core.errors import EvalError
from histbench.eval.mher.data import read_run
from histbench.eval.mher.embeddings import (
    ENGLISH_ONLY,
    MULTILINGUAL,
    UNKNOWN,
    ApiEmbeddings,
    describe_local,
    load_embedding_model,
)


def _client(server, model="text-embedding-3-small", **options):
    return ApiEmbeddings(f"api:{model}@{server.base_url}", model, server.base_url, **options)


def test_api_embeddings_are_batched_normalised_and_in_order(chat_server):
    server = chat_server()
    client = _client(server, batch_size=3)
    texts = ["Batu", "Baatu", "Bati", "Möngke", "蒙哥", "منکو قاآن", "Mangu Chan"]
    vectors = client.encode(texts)
    assert vectors.shape == (7, 64) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert server.requests == 3 and [len(b["input"]) for b in server.bodies] == [3, 3, 1]
    assert all(b["model"] == "text-embedding-3-small" for b in server.bodies)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[4]   # similar strings, similar vectors


def test_api_embeddings_retry_rate_limits_and_server_errors(chat_server):
    server = chat_server()
    server.fail("429")
    server.fail("503")
    client = _client(server, backoff_base=0.001)
    assert client.encode(["Arghun", "Argon"]).shape == (2, 64)
    assert client.stats["retries"] == 2 and server.requests == 3


def test_api_embeddings_stop_on_a_wrong_key_or_url(chat_server):
    server = chat_server()
    server.fail("401")
    with pytest.raises(EvalError, match=r"authentication failed: HTTP 401 from http://127\.0\.0\.1:\d+/v1/embeddings"):
        _client(server).encode(["Arghun"])
    server.fail("500", times=3)
    with pytest.raises(EvalError, match="no embeddings from .* after 3 attempts"):
        _client(server, max_retries=2, backoff_base=0.001).encode(["Arghun"])


def test_baselines_with_an_api_embedding_model_end_to_end(sample_build, chat_server, tmp_path, monkeypatch, capsys):
    """`--embedding-model api:MODEL@URL#KEY_ENV`: the key goes in the header and nowhere
    else; Table 2 names the model by its short name."""
    monkeypatch.setenv("MHER_TEST_KEY", "sk-test-secret-123")
    server = chat_server()
    out = tmp_path / "baselines"
    spec = f"api:text-embedding-3-small@{server.base_url}#MHER_TEST_KEY"
    assert main(["eval", "mher", "--baseline", "table2", "--dataset", str(sample_build), "--out", str(out),
                 "--embedding-model", spec]) == 0
    assert server.requests > 0 and all(h.get("Authorization") == "Bearer sk-test-secret-123" for h in server.headers)
    run = read_run(out)
    info = run.info["embedding_model"]
    assert info == {"spec": spec, "name": "text-embedding-3-small", "backend": "api", "coverage": MULTILINGUAL,
                    "coverage_source": "model family name", "label": "text-embedding-3-small"}
    assert {"embedding_name", "embedding_context"} <= set(run.info["systems"])
    for path in out.rglob("*"):
        if path.is_file():
            assert "sk-test-secret-123" not in path.read_text(encoding="utf-8", errors="replace")
    report = tmp_path / "report"
    assert main(["report", "mher", str(out), "--out", str(report), "--resamples", "200"]) == 0
    text = (report / "index.md").read_text(encoding="utf-8")
    assert "| Name | Sentence embedding (text-embedding-3-small) |" in text
    assert "| Context | Sentence embedding (text-embedding-3-small) |" in text
    assert "English-only" not in text
    capsys.readouterr()


def test_an_english_only_embedding_model_is_flagged(sample_build, chat_server, tmp_path, capsys):
    server = chat_server()
    out = tmp_path / "baselines"
    assert main(["eval", "mher", "--baseline", "table2", "--dataset", str(sample_build), "--out", str(out),
                 "--embedding-model", f"api:all-MiniLM-L6-v2@{server.base_url}"]) == 0
    report = tmp_path / "report"
    assert main(["report", "mher", str(out), "--out", str(report), "--resamples", "200"]) == 0
    text = (report / "index.md").read_text(encoding="utf-8")
    assert "| Name | Sentence embedding (all-MiniLM-L6-v2, English-only) |" in text
    assert "an English-only model (the paper's embedding baseline is multilingual)" in text
    capsys.readouterr()


def _model_folder(tmp_path, name, front_matter):
    folder = tmp_path / name / "model"
    folder.mkdir(parents=True)
    card = f"---\n{front_matter}\n---\n\n# {name}\n\nA test card.\n" if front_matter is not None else f"# {name}\n"
    (folder / "README.md").write_text(card, encoding="utf-8")
    return folder


@pytest.mark.parametrize(("front_matter", "coverage", "source"), [
    ("language: en\nlibrary_name: sentence-transformers", ENGLISH_ONLY, "model card (README.md language)"),
    ("language:\n- en\n- mn\n- fa\n- zh", MULTILINGUAL, "model card (README.md language)"),
    ("language: multilingual", MULTILINGUAL, "model card (README.md language)"),
    ("license: apache-2.0", UNKNOWN, "neither the model card nor the name says"),
])
def test_local_model_coverage_comes_from_its_card(tmp_path, front_matter, coverage, source):
    info = describe_local(str(_model_folder(tmp_path, "tiny-encoder", front_matter)))
    assert (info.name, info.coverage, info.coverage_source) == ("tiny-encoder", coverage, source)
    assert info.label == ("tiny-encoder, English-only" if coverage == ENGLISH_ONLY else "tiny-encoder")


def test_names_of_hub_ids_and_known_families():
    assert describe_local("sentence-transformers/paraphrase-multilingual-mpnet-base-v2").coverage == MULTILINGUAL
    info = describe_local("sentence-transformers/all-mpnet-base-v2")
    assert (info.name, info.coverage) == ("all-mpnet-base-v2", ENGLISH_ONLY)


def test_api_spec_is_parsed_like_the_chat_backend(monkeypatch):
    client, info = load_embedding_model("api:gemini-embedding-001@https://gateway.example/v1#GW_KEY")
    assert (client.model, client.base_url, client.key_env, client.url) == (
        "gemini-embedding-001", "https://gateway.example/v1", "GW_KEY", "https://gateway.example/v1/embeddings")
    assert info.coverage == MULTILINGUAL
    monkeypatch.delenv("GW_KEY", raising=False)
    with pytest.raises(EvalError, match=r"names \$GW_KEY for the API key, but it is not set"):
        client.encode(["x"])


def test_the_loopback_embeddings_route_speaks_the_openai_format(chat_server):
    import httpx

    server = chat_server()
    reply = httpx.post(server.base_url + "/embeddings", json={"model": "m", "input": "Qubilai"}).json()
    assert reply["object"] == "list" and reply["data"][0]["index"] == 0 and len(reply["data"][0]["embedding"]) == 64
    assert json.loads(json.dumps(reply))["usage"]["prompt_tokens"] == 1
