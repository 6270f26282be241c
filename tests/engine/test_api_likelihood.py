"""Log-likelihoods from a served model (issue 27): the api backend over `/v1/completions`
(echo, logprobs) against the tests' imitation of vLLM's completions server
(tests/servers/completions_server.py, an imitation of vLLM's response format) in front of the tiny
llama-style model, compared with the hf backend on the same model. The real SmolLM2 and
lm-evaluation-harness's local-completions are in test_served_smollm2.py."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from histbench.core.backends import GenerateRequest, load_backend  # noqa: E402
from histbench.core.backends import LoglikelihoodRequest as LL  # noqa: E402
from histbench.core.errors import EvalError  # noqa: E402

FAST = {"backoff_base": 0.01, "backoff_max": 0.05, "timeout": 30}
# float32 on CPU; batch shapes differ between the server's passes and the hf scorer's
TOL = 1e-5

REQUESTS = [
    *(LL("The capital of France is", answer) for answer in [" Paris.", " London, a city of mills", " P"]),
    LL("Answer: ", "yes"),
    LL("Answer: ", "no"),
    LL("In 1851 the Great Exhibition opened in London's Hyde Park. The railway", " reached the village."),
    LL("In 1851 the Great Exhibition opened in London's Hyde Park. The railway", " drove the mills."),
    LL("She wrote to her brother that", " the harvest had failed again"),
]


@pytest.fixture(scope="module")
def tiny_hf(tiny_causal_lm):
    backend = load_backend(f"hf:{tiny_causal_lm}", {"device": "cpu", "dtype": "float32", "threads": 1})
    backend.model  # noqa: B018 - loaded once for the module
    return backend


@pytest.fixture
def served(tiny_hf):
    """Factory of completions servers in front of the tiny model (stopped at teardown)."""
    from ..servers.completions_server import CompletionsServer

    servers = []

    def start(**kwargs):
        server = CompletionsServer(tiny_hf.model, tiny_hf.tokenizer, model_name="tiny", **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def _both_boundaries(requests):
    return [*requests, *(LL(r.context, r.continuation, boundary="context-length") for r in requests)]


@pytest.mark.parametrize("tokenised_here", [False, True], ids=["server-tokenised", "tokenizer-option"])
def test_served_log_likelihoods_equal_the_in_process_ones(tiny_hf, tiny_causal_lm, served, tokenised_here):
    """Both boundaries (the harness's and the Chronologic authors'), with the text sent and
    the continuation found by text offset, or tokenised here and sent as token ids."""
    server = served()
    options = {**FAST, **({"tokenizer": str(tiny_causal_lm)} if tokenised_here else {})}
    api = load_backend(server.spec(), options)
    requests = _both_boundaries(REQUESTS)
    ours, theirs = api.loglikelihood(requests), tiny_hf.loglikelihood(requests)
    for got, want in zip(ours, theirs, strict=True):
        assert got.n_tokens == want.n_tokens and got.is_greedy == want.is_greedy
        assert got.logprob == pytest.approx(want.logprob, abs=TOL)
    # the authors' boundary reads a first word that absorbed the context's space as context
    assert ours[len(REQUESTS) + 3].n_tokens == ours[3].n_tokens - 1
    prompts = [p for body in server.bodies for p in body["prompt"]]
    assert all(isinstance(p, list) for p in prompts) == tokenised_here
    assert all(isinstance(p, str) for p in prompts) != tokenised_here
    body = server.bodies[-1]
    assert (body["echo"], body["logprobs"], body["temperature"], body["max_tokens"]) == (True, 1, 0.0, 0)


def _greedy_continuations(hf, contexts):
    """(context, its argmax next token as text) where that text tokenises back to the token."""
    tokenizer, model = hf.tokenizer, hf.model
    found = []
    for context in contexts:
        ids = tokenizer(context)["input_ids"]
        with torch.inference_mode():
            top = int(model(torch.tensor([ids])).logits[0, -1].argmax())
        piece = tokenizer.decode([top])
        if "\ufffd" not in piece and piece.strip() and tokenizer(context + piece)["input_ids"] == [*ids, top]:
            found.append((context, piece))
    return found


def test_is_greedy_comes_from_the_top_logprobs(tiny_hf, served):
    """A continuation that is the tiny model's argmax token is greedy, its other options are not."""
    from histbench.core.backends.tiny import TRAINING_LINES

    found = _greedy_continuations(tiny_hf, [line[:n] for line in TRAINING_LINES for n in (12, 20, 28)])
    assert found
    requests = [LL(context, piece) for context, piece in found] + [LL(found[0][0], " Manchester Manchester")]
    api = load_backend(served().spec(), FAST)
    ours = api.loglikelihood(requests)
    assert [r.is_greedy for r in ours] == [r.is_greedy for r in tiny_hf.loglikelihood(requests)]
    assert all(r.is_greedy for r in ours[:-1]) and not ours[-1].is_greedy


def test_max_tokens_zero_first_then_one_when_the_server_refuses_it(served):
    refusing = served(accept_zero_max_tokens=False)
    api = load_backend(refusing.spec(), {**FAST, "max_concurrency": 1, "prompts_per_request": 2})
    api.loglikelihood(REQUESTS)
    sent = [body["max_tokens"] for body in refusing.bodies]
    assert sent[0] == 0 and set(sent[1:]) == {1} and api.echo_max_tokens == 1
    assert api.stats["failed"] == 0 and api.stats["retries"] == {}
    accepting = served(accept_zero_max_tokens=True)
    load_backend(accepting.spec(), FAST).loglikelihood(REQUESTS)
    assert {body["max_tokens"] for body in accepting.bodies} == {0}


def test_several_prompts_per_request_one_context_together_in_text_order(served):
    server = served(accept_zero_max_tokens=True)
    api = load_backend(server.spec(), {**FAST, "prompts_per_request": 3, "max_concurrency": 1})
    api.loglikelihood(REQUESTS)
    batches = [body["prompt"] for body in server.bodies]
    assert max(len(b) for b in batches) == 3 and sum(len(b) for b in batches) == len(REQUESTS)
    # each context's options in one request (none here has more than prompts_per_request)
    for context in {r.context.rstrip() for r in REQUESTS}:
        holding = [b for b in batches if any(p.startswith(context) for p in b)]
        assert len(holding) == 1
    # contexts in text order, so that shared prefixes reach the server one after another
    firsts = [b[0] for b in batches]
    assert firsts == sorted(firsts)


def test_a_server_without_prompt_logprobs_is_one_line_naming_it(served):
    server = served(serve_logprobs=False)
    api = load_backend(server.spec(), FAST)
    with pytest.raises(EvalError) as info:
        api.loglikelihood(REQUESTS[:2])
    message = str(info.value)
    assert "\n" not in message and server.base_url + "/completions" in message
    assert "without the prompt's log-probabilities" in message and "vLLM" in message


def test_an_empty_context_needs_the_tokenizer_and_nothing_is_sent(tiny_causal_lm, tiny_hf, served):
    server = served()
    with pytest.raises(EvalError, match="tokenizer=PATH_OR_ID"):
        load_backend(server.spec(), FAST).loglikelihood([LL("", "The railway"), LL("   ", "The railway")])
    assert server.requests == 0
    api = load_backend(server.spec(), {**FAST, "tokenizer": str(tiny_causal_lm)})
    requests = [LL("", "The railway"), LL("   ", "hello there")]
    for got, want in zip(api.loglikelihood(requests), tiny_hf.loglikelihood(requests), strict=True):
        assert got.logprob == pytest.approx(want.logprob, abs=TOL) and got.n_tokens == want.n_tokens


def test_long_inputs_are_cut_from_the_left_with_the_tokenizer(tiny_causal_lm, served):
    """The window (max_length) holds context + continuation + the one generated token."""
    server = served()
    api = load_backend(server.spec(), {**FAST, "tokenizer": str(tiny_causal_lm), "max_length": 24})
    long = LL(" ".join(["The railway reached the village."] * 10), " Steam engines drove the mills.")
    (result,) = api.loglikelihood([long])
    assert result.truncated > 0
    assert all(len(p) == 23 for body in server.bodies for p in body["prompt"])  # + 1 generated = 24


def test_one_refused_prompt_fails_alone_and_a_rerun_asks_only_it(tiny_hf, served, tmp_path):
    """A prompt longer than the server's window (HTTP 400) among others: the request of
    several prompts is asked again one prompt at a time; the run store keeps the answers,
    records the failure, and a later run asks only the failed one."""
    from histbench.core.runstore import RunStore

    server = served(max_model_len=32, accept_zero_max_tokens=True)
    api = load_backend(server.spec(), {**FAST, "max_concurrency": 1})
    long = LL(" ".join(["The railway reached the village."] * 6), " The end.")
    requests = [*REQUESTS[:3], long]
    records = RunStore.open(tmp_path / "run", backend=api).run(requests)
    assert [r.error is None for r in records] == [True, True, True, False]
    assert records[3].error.startswith("HTTP 400") and "maximum context length" in records[3].error
    assert [len(body["prompt"]) for body in server.bodies] == [4, 1, 1, 1, 1]
    again = RunStore.open(tmp_path / "run", backend=api).run(requests)
    assert [r.reused for r in again] == [True, True, True, False]
    assert server.bodies[5:] == [{**server.bodies[4], "prompt": [long.context + long.continuation]}]


def test_transport_faults_are_retried_as_for_chat_requests(served):
    server = served(accept_zero_max_tokens=True)
    api = load_backend(server.spec(), {**FAST, "max_concurrency": 1, "prompts_per_request": 16})
    server.fail("503")
    server.fail("close")
    (result, *_) = api.loglikelihood(REQUESTS)
    assert result.attempts == 3 and sum(api.stats["retries"].values()) == 2


def test_base_model_generation_goes_through_completions(tiny_hf, served):
    server = served()
    api = load_backend(server.spec(), {**FAST, "generate_endpoint": "completions"})
    requests = [GenerateRequest(prompt="The capital of France is", max_new_tokens=6),
                GenerateRequest(messages=[{"role": "user", "content": "The railway"}], max_new_tokens=4)]
    ours = api.generate(requests)
    theirs = tiny_hf.generate([requests[0], GenerateRequest(prompt="The railway", max_new_tokens=4)])
    assert [r.text for r in ours] == [r.text for r in theirs]
    # the two requests are in flight together: they reach the server in either order
    assert sorted(body["prompt"] for body in server.bodies) == ["The capital of France is", "The railway"]
    assert not any("messages" in body for body in server.bodies)  # a base model reads no chat template


def test_chat_prompts_scored_by_likelihood_read_the_models_chat_template(tiny_hf, tiny_causal_lm, served):
    """What the model reads when it answers through /chat/completions is its chat template:
    multiple-choice prompts (histbench.eval.choices) need the tokenizer option for it."""
    from histbench.eval.choices import ChoiceItem, requests_for

    server = served()
    item = ChoiceItem(({"role": "system", "content": "Answer with a letter."}, {"role": "user", "content": "A or B?"}),
                      ('{"answer": "A"}', '{"answer": "B"}'))
    with pytest.raises(EvalError, match="chat template.*tokenizer=PATH_OR_ID"):
        requests_for([item], load_backend(server.spec(), FAST))
    api = load_backend(server.spec(), {**FAST, "tokenizer": str(tiny_causal_lm)})
    ours, templated = requests_for([item], api)
    assert templated == [True] and ours == requests_for([item], tiny_hf)[0]
    for got, want in zip(api.loglikelihood(ours), tiny_hf.loglikelihood(ours), strict=True):
        assert got.logprob == pytest.approx(want.logprob, abs=TOL)
    plain, templated = requests_for([item], load_backend(server.spec(), {**FAST, "chat_template": "never"}))
    assert templated == [False] and plain[0].context == "Answer with a letter.\n\nA or B?"


def test_new_options_leave_the_keys_of_chat_runs_as_they_were(chat_server):
    """Runs made before likelihood over /completions existed resume without asking again."""
    from histbench.core.backends.base import request_key

    server = chat_server()
    request = GenerateRequest(messages=[{"role": "user", "content": "q"}])
    plain = load_backend(server.spec(), FAST)
    assert plain.key(request) == request_key(plain.key_identity(), request)
    assert load_backend(server.spec(), {**FAST, "tokenizer": "x", "prompts_per_request": 2}).key(request) == plain.key(request)
    assert load_backend(server.spec(), {**FAST, "generate_endpoint": "completions"}).key(request) != plain.key(request)
    likelihood = LL("a", " b")
    assert load_backend(server.spec(), {**FAST, "tokenizer": "x"}).key(likelihood) != plain.key(likelihood)


@pytest.mark.parametrize(("name", "value"), [("prompts_per_request", 0), ("echo_max_tokens", 2),
                                             ("generate_endpoint", "embeddings"), ("chat_template", "sometimes")])
def test_bad_options_are_named(chat_server, name, value):
    with pytest.raises(EvalError, match=name):
        load_backend(chat_server().spec(), {name: value})
