"""Model spec strings, --model options, request validation and result signatures (issue 3)."""

from __future__ import annotations

import argparse

import pytest

from histbench.core.backends import (
    FillMaskRequest,
    GenerateRequest,
    LoglikelihoodRequest,
    add_model_arguments,
    backend_from_args,
    load_backend,
    request_from_dict,
)
from histbench.core.backends.spec import parse_api_target, split_revision, split_spec
from histbench.core.errors import EvalError, MissingDependencyError, UsageError
from histbench.eval.signature import hash_text, make_signature


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("gpt-4o", ("gpt-4o", "https://api.openai.com/v1", None)),
        ("gpt-4o#OPENAI_KEY_2", ("gpt-4o", "https://api.openai.com/v1", "OPENAI_KEY_2")),
        ("m@http://127.0.0.1:8000/v1", ("m", "http://127.0.0.1:8000/v1", None)),
        ("m@http://127.0.0.1:8000/v1/", ("m", "http://127.0.0.1:8000/v1", None)),
        ("m@http://localhost:8000/v1/chat/completions", ("m", "http://localhost:8000/v1", None)),
        ("meta-llama/llama-3.3-70b-instruct:free@https://openrouter.ai/api/v1#OPENROUTER_API_KEY",
         ("meta-llama/llama-3.3-70b-instruct:free", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY")),
        ("qwen2.5:7b@http://localhost:11434/v1", ("qwen2.5:7b", "http://localhost:11434/v1", None)),
    ],
)
def test_api_spec_syntax(target, expected):
    assert parse_api_target(target) == expected


@pytest.mark.parametrize("spec", ["gpt2", "foo:bar", "hf:", "api:m@ftp://x", "api:m#not-a-var"])
def test_bad_specs_are_usage_errors(spec):
    with pytest.raises(UsageError):
        kind, target = split_spec(spec)
        if kind == "api":
            parse_api_target(target)


def test_hub_revision_and_local_paths(tmp_path):
    assert split_revision("org/model@v1.2") == ("org/model", "v1.2")
    assert split_revision("org/model") == ("org/model", None)
    folder = tmp_path / "my@model"
    folder.mkdir()
    assert split_revision(str(folder)) == (str(folder), None)


def test_model_arguments_and_backend_from_args(chat_server):
    server = chat_server()
    parser = argparse.ArgumentParser()
    add_model_arguments(parser)
    args = parser.parse_args(["--model", server.spec(), "--model-option", "timeout=2.5", "--model-option",
                              "extra_body={\"seed_hint\": 1}", "--max-concurrency", "3", "--batch-size", "16"])
    backend = backend_from_args(args)
    assert backend.kind == "api" and backend.spec == server.spec()
    assert backend.options["timeout"] == 2.5 and backend.options["max_concurrency"] == 3
    assert backend.options["extra_body"] == {"seed_hint": 1}
    assert "batch_size" not in backend.options  # not an api option: the flag is ignored
    with pytest.raises(EvalError, match="unknown option.*bogus"):
        backend_from_args(parser.parse_args(["--model", server.spec(), "--model-option", "bogus=1"]))
    with pytest.raises(UsageError, match="no model given"):
        backend_from_args(parser.parse_args([]))
    with pytest.raises(UsageError, match="not KEY=VALUE"):
        backend_from_args(parser.parse_args(["--model", server.spec(), "--model-option", "novalue"]))
    defaulted = argparse.ArgumentParser()
    add_model_arguments(defaulted, default="offline:smollm2")
    assert defaulted.parse_args([]).model == "offline:smollm2"


def test_hf_batch_size_flag_reaches_the_backend(tiny_causal_lm):
    parser = argparse.ArgumentParser()
    add_model_arguments(parser)
    backend = backend_from_args(parser.parse_args(["--model", f"hf:{tiny_causal_lm}", "--batch-size", "5",
                                                   "--max-concurrency", "9", "--model-option", "dtype=float32"]))
    assert backend.options["batch_size"] == 5 and "max_concurrency" not in backend.options


def test_vllm_backend_is_importable_without_vllm_and_fails_clearly_when_used():
    pytest.importorskip("torch")
    backend = load_backend("vllm:/models/some-model", {"tensor_parallel_size": 2})
    assert backend.supports == frozenset({"generate", "loglikelihood"})
    assert backend.options["tensor_parallel_size"] == 2 and backend.options["enable_prefix_caching"] is True
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(MissingDependencyError, match=r"needs vllm, which is not installed: pip install 'histbench\[vllm\]'"):
            backend.generate([GenerateRequest(prompt="x")])


def test_requests_validate_and_round_trip():
    request = GenerateRequest(messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], stop="\n")
    assert request.stop == ("\n",) and request.greedy
    assert request_from_dict(request.to_dict()) == request
    for other in (LoglikelihoodRequest("ctx", " cont"), FillMaskRequest("a [MASK] b", top_k=3), GenerateRequest(prompt="p", seed=1)):
        assert request_from_dict(other.to_dict()) == other
    with pytest.raises(EvalError, match="exactly one of messages= or prompt="):
        GenerateRequest()
    with pytest.raises(EvalError, match="unknown role"):
        GenerateRequest(messages=[{"role": "narrator", "content": "x"}])
    with pytest.raises(EvalError, match="max_new_tokens"):
        GenerateRequest(prompt="p", max_new_tokens=0)
    with pytest.raises(EvalError, match="continuation is empty"):
        LoglikelihoodRequest("ctx", "")
    with pytest.raises(EvalError, match="top_k"):
        FillMaskRequest("x", top_k=0)


def test_request_keys_depend_on_request_decoding_and_model(chat_server):
    server = chat_server()
    a = load_backend(server.spec(model="a"))
    b = load_backend(server.spec(model="b"))
    r = GenerateRequest(prompt="p")
    assert a.key(r) == a.key(GenerateRequest(prompt="p"))
    assert len({a.key(r), b.key(r), a.key(GenerateRequest(prompt="p", top_p=0.9)), a.key(GenerateRequest(prompt="q"))}) == 4
    # options that change answers are in the key, transport options are not
    assert load_backend(server.spec(model="a"), {"timeout": 3, "max_concurrency": 1}).key(r) == a.key(r)
    assert load_backend(server.spec(model="a"), {"extra_body": {"reasoning_effort": "high"}}).key(r) != a.key(r)


def test_hash_text():
    assert hash_text("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert hash_text(["system", "user {x}"]) == hash_text(["system", "user {x}"]) != hash_text(["system", "user {y}"])


def test_signature_names_version_data_model_decoding_and_prompt():
    dataset = {"benchmark": "chronoculture", "version": "1.0.0", "data_sha256": "0123456789abcdef" * 4, "path": "/b"}
    backend = {"backend": "api", "spec": "api:gpt-4o@https://api.openai.com/v1", "model": "gpt-4o", "revision": None,
               "options": {"timeout": 120}}
    decoding = GenerateRequest(prompt="p").decoding()
    template = hash_text("You estimate survey response distributions.")
    signature = make_signature(dataset=dataset, backend=backend, decoding=decoding, prompt_template_hash=template, metric="rf1")
    from histbench.core.version import histbench_version

    parts = signature.text.split("|")
    assert parts[0] == f"histbench:{histbench_version()}"
    assert parts[1] == "data:chronoculture@1.0.0#0123456789ab"
    assert parts[2] == "model:api:gpt-4o@https://api.openai.com/v1"
    assert parts[3] == "decode:greedy,max_new_tokens=120"
    assert parts[4] == f"prompt:{template[:12]}"
    assert parts[5] == "metric:rf1"
    assert str(signature) == signature.text
    data = signature.to_dict()
    assert data["dataset"] == dataset and data["backend"] == backend and data["prompt_template_hash"] == template
    assert data["decoding"]["max_new_tokens"] == 120 and data["metric"] == "rf1"
    # any change of what produced a number changes the signature
    sampled = make_signature(dataset=dataset, backend=backend, decoding={**decoding, "temperature": 0.7}, prompt_template_hash=template)
    assert "decode:max_new_tokens=120,temperature=0.7,top_p=1.0" in sampled.text
    other_data = make_signature(dataset={**dataset, "data_sha256": "f" * 64}, backend=backend, decoding=decoding)
    assert other_data.text != make_signature(dataset=dataset, backend=backend, decoding=decoding).text


def test_signature_shows_hf_revision_and_dtype():
    backend = {"backend": "hf", "spec": "hf:HuggingFaceTB/SmolLM2-135M-Instruct", "revision": "a" * 40,
               "options": {"dtype": "bfloat16"}}
    text = make_signature(backend=backend, decoding={"method": "loglikelihood"}).text
    assert "model:hf:HuggingFaceTB/SmolLM2-135M-Instruct@aaaaaaaaaaaa" in text
    assert "dtype:bfloat16" in text and "decode:method=loglikelihood" in text


def test_engine_modules_import_without_heavy_libraries():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import histbench.core.backends, histbench.core.runstore, histbench.eval.signature, histbench.core.likelihood\n"
        "import histbench.core.backends.api, histbench.core.backends.hf, histbench.core.backends.vllm\n"
        "import histbench.core.backends.offline, histbench.core.backends.tiny\n"
        "print(sorted(m for m in ('torch', 'transformers', 'httpx', 'vllm', 'datasets') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
