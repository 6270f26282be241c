"""The hf backend on tiny models built from a config (issue 3): generation with the chat
template, greedy and batched; log-likelihood through the prefix-shared scorer; fill-mask
top-k with probabilities and mask spellings normalised."""

from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")

from histbench.core.backends import (  # noqa: E402
    FillMaskRequest,
    GenerateRequest,
    LoglikelihoodRequest,
    load_backend,
)
from histbench.core.errors import EvalError  # noqa: E402
from histbench.core.runstore import RunStore  # noqa: E402


@pytest.fixture(scope="module")
def causal(tiny_causal_lm):
    return load_backend(f"hf:{tiny_causal_lm}", {"batch_size": 3})


@pytest.fixture(scope="module")
def masked(tiny_masked_lm):
    return load_backend(f"hf:{tiny_masked_lm}")


def _chat(text: str, **kwargs) -> GenerateRequest:
    return GenerateRequest(messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}], **kwargs)


def test_kind_is_read_from_the_config(causal, masked):
    assert causal.supports == frozenset({"generate", "loglikelihood"})
    assert masked.supports == frozenset({"fill_mask"})
    with pytest.raises(EvalError, match="cannot answer fill_mask requests"):
        causal.fill_mask([FillMaskRequest("a [MASK] b")])
    with pytest.raises(EvalError, match="cannot answer generate requests"):
        masked.generate([GenerateRequest(prompt="x")])


def test_identity_has_a_revision_fingerprint_dtype_and_device(causal, tiny_causal_lm):
    ident = causal.identity()
    assert ident["backend"] == "hf" and ident["model"] == str(tiny_causal_lm)
    assert ident["revision"].startswith("sha256:") and ident["dtype"] == "float32" and ident["device"] == "cpu"
    assert ident["options"]["batch_size"] == 3
    json.dumps(ident)


def test_messages_go_through_the_chat_template(causal):
    text, templated = causal.render(_chat("hello"))
    assert templated
    assert text == "<|system|>Be brief.<|end|>\n<|user|>hello<|end|>\n<|assistant|>"
    assert causal.render(GenerateRequest(prompt="raw text")) == ("raw text", False)
    always = load_backend(causal.spec, {"chat_template": "always"})
    assert always.render(GenerateRequest(prompt="raw")) == ("<|user|>raw<|end|>\n<|assistant|>", True)
    never = load_backend(causal.spec, {"chat_template": False})
    assert never.render(_chat("hello")) == ("Be brief.\n\nhello", False)


def test_greedy_generation_is_deterministic_and_independent_of_batching(causal):
    requests = [_chat(f"question number {i}" + " padding" * i, max_new_tokens=6) for i in range(5)]
    batched = causal.generate(requests)
    alone = [causal.generate([r])[0] for r in requests]
    assert [r.text for r in batched] == [r.text for r in alone]
    assert [r.raw["token_ids"] for r in batched] == [r.raw["token_ids"] for r in alone]
    for result in batched:
        assert result.finish_reason in ("stop", "length")
        assert result.usage["completion_tokens"] <= 6 and result.usage["prompt_tokens"] > 5
        assert result.raw["chat_template"] is True and result.raw["prompt"].endswith("<|assistant|>")
    # the same as transformers' own greedy generate on the same ids
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(causal.target)
    tokenizer = AutoTokenizer.from_pretrained(causal.target)
    ids = tokenizer(batched[0].raw["prompt"], return_tensors="pt", add_special_tokens=False)
    out = model.generate(**ids, max_new_tokens=6, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    expected = out[0, ids["input_ids"].shape[1]:].tolist()
    eos = tokenizer.eos_token_id
    expected = expected[: expected.index(eos)] if eos in expected else expected
    assert batched[0].raw["token_ids"] == expected


def test_max_new_tokens_and_stop_strings(causal):
    (long,) = causal.generate([GenerateRequest(prompt="The capital", max_new_tokens=12)])
    if long.finish_reason == "length":
        assert long.usage["completion_tokens"] == 12
    text = long.text
    stop = next((c for c in text[2:] if c.isalpha()), None)
    if stop is None:
        pytest.skip("the tiny model produced no letter to stop on")
    (stopped,) = causal.generate([GenerateRequest(prompt="The capital", max_new_tokens=12, stop=[stop])])
    assert stop not in stopped.text and stopped.finish_reason == "stop"
    assert text.startswith(stopped.text)


def test_sampling_with_a_seed_is_reproducible(causal):
    request = GenerateRequest(prompt="The railway", max_new_tokens=8, temperature=1.0, seed=3)
    assert causal.generate([request])[0].text == causal.generate([request])[0].text


def test_loglikelihood_is_the_prefix_shared_scorer(causal):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from histbench.core.likelihood import loglikelihood

    requests = [LoglikelihoodRequest("The capital of France is", a) for a in (" Paris.", " London", " a")] + [
        LoglikelihoodRequest("", "Steam")
    ]
    results = causal.loglikelihood(requests)
    model = AutoModelForCausalLM.from_pretrained(causal.target).eval()
    naive = loglikelihood(model, AutoTokenizer.from_pretrained(causal.target), requests, method="naive")
    for got, want in zip(results, naive, strict=True):
        assert abs(got.logprob - want.logprob) <= 1e-4 and got.n_tokens == want.n_tokens
        assert got.logprob < 0 and got.truncated == 0


def _questions(n: int) -> list[LoglikelihoodRequest]:
    """n questions (distinct contexts) of three options each."""
    return [LoglikelihoodRequest(f"Question {q}: in which year did the railway reach village {q}?\nANSWER: ", a)
            for q in range(n) for a in ("1847", "in the spring of 1851", "never")]


def _count_passes(model, fail_at: int | None = None) -> dict:
    """Count the model's forward passes (and fail the `fail_at`-th, as a crash would)."""
    import functools

    calls = {"n": 0}
    forward = model.forward

    @functools.wraps(forward)
    def counting(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise RuntimeError("out of memory (simulated)")
        return forward(*args, **kwargs)

    model.forward = counting
    calls["restore"] = lambda: setattr(model, "forward", forward)
    return calls


def test_loglikelihood_results_arrive_batch_by_batch(tiny_causal_lm, tmp_path):
    """Issue 13 (engine): a run used to receive nothing until a whole step of 256 requests
    was scored; now each batch of `batch_size` contexts is yielded (and stored) as soon as
    it is scored, so an interrupted run loses at most the batch in flight."""
    backend = load_backend(f"hf:{tiny_causal_lm}", {"batch_size": 2})
    calls = _count_passes(backend.model)
    seen = [(index, calls["n"]) for index, _ in backend.stream(_questions(6))]
    calls["restore"]()
    assert len(seen) == 18 and sorted(i for i, _ in seen) == list(range(18))
    passes_when_yielded = [n for _, n in seen]
    assert len(set(passes_when_yielded)) == 3  # three batches of two contexts (six options each)
    assert passes_when_yielded[0] < calls["n"]  # the first questions came back before the others were scored


def test_an_interrupted_likelihood_run_keeps_the_finished_batches(tiny_causal_lm, tmp_path):
    """A crash in the first model pass of the second batch of contexts leaves the first
    batch's six answers in records.jsonl; the resumed run asks only the other twelve."""
    backend = load_backend(f"hf:{tiny_causal_lm}", {"batch_size": 2})
    requests = _questions(6)
    calls = _count_passes(backend.model)
    first_batch = next(n for _, n in ((i, calls["n"]) for i, _ in backend.stream(requests)))
    calls["restore"]()
    calls = _count_passes(backend.model, fail_at=first_batch + 1)
    store = RunStore.open(tmp_path / "run", backend=backend)
    with pytest.raises(RuntimeError, match="simulated"):
        store.run(requests)
    calls["restore"]()
    kept = (tmp_path / "run" / "records.jsonl").read_text().splitlines()
    assert len(kept) == 6
    again = RunStore.open(tmp_path / "run", backend=backend)
    records = again.run(requests)
    assert again.last_stats["reused"] == 6 and again.last_stats["asked"] == 12
    assert all(r.response is not None for r in records)


def test_fill_mask_gives_top_k_with_probabilities(masked):
    (result,) = masked.fill_mask([FillMaskRequest("the capital of [MASK] is paris.", top_k=5)])
    candidates = result.candidates
    assert len(candidates) == 5
    probs = [c["probability"] for c in candidates]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1
    assert all(set(c) == {"token", "token_id", "probability", "piece"} for c in candidates)
    # the probabilities are the softmax at the mask position
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    model = AutoModelForMaskedLM.from_pretrained(masked.target).eval()
    tokenizer = AutoTokenizer.from_pretrained(masked.target)
    batch = tokenizer("the capital of [MASK] is paris.", return_tensors="pt")
    position = batch["input_ids"][0].tolist().index(tokenizer.mask_token_id)
    with torch.no_grad():
        probs_all = torch.softmax(model(**batch).logits[0, position], dim=-1)
    top = probs_all.topk(5)
    assert [c["token_id"] for c in candidates] == top.indices.tolist()
    assert all(math.isclose(c["probability"], p, rel_tol=1e-5) for c, p in zip(candidates, top.values.tolist(), strict=True))


def test_every_mask_spelling_is_the_models_mask(masked):
    spellings = ["[MASK]", "<mask>", "<MASK>", "[mask]"]
    results = masked.fill_mask([FillMaskRequest(f"the capital of {m} is paris.", top_k=3) for m in spellings])
    assert all(r.candidates == results[0].candidates for r in results)
    assert masked.normalise_mask("a <mask> b") == "a [MASK] b"


def test_fill_mask_batching_and_padding_do_not_change_answers(masked):
    requests = [FillMaskRequest("the [MASK] reached the village in the spring of 1847.", top_k=4),
                FillMaskRequest("[MASK] wrote.", top_k=4)]
    together = masked.fill_mask(requests)
    alone = [masked.fill_mask([r])[0] for r in requests]
    for a, b in zip(together, alone, strict=True):
        assert [c["token_id"] for c in a.candidates] == [c["token_id"] for c in b.candidates]
        assert all(math.isclose(x["probability"], y["probability"], rel_tol=1e-4) for x, y in zip(a.candidates, b.candidates, strict=True))


def test_fill_mask_needs_exactly_one_mask(masked):
    with pytest.raises(EvalError, match="exactly one mask, found 2"):
        masked.fill_mask([FillMaskRequest("[MASK] and <mask>")])
    with pytest.raises(EvalError, match="exactly one mask, found 0"):
        masked.fill_mask([FillMaskRequest("no mask here")])


def test_hf_requests_go_through_the_run_store(causal, tmp_path):
    requests = [_chat("one", max_new_tokens=4), _chat("two", max_new_tokens=4), LoglikelihoodRequest("a", " b")]
    store = RunStore.open(tmp_path / "run", backend=causal)
    first = store.run(requests)
    assert store.last_stats["asked"] == 3
    again = RunStore.open(tmp_path / "run", backend=causal).run(requests)
    assert all(r.reused for r in again)
    assert [r.response for r in again] == [r.response for r in first]
    assert again[2].result.n_tokens == first[2].result.n_tokens


def test_bad_options_are_errors(tiny_causal_lm):
    with pytest.raises(EvalError, match="unknown option.*max_concurrency_typo"):
        load_backend(f"hf:{tiny_causal_lm}", {"max_concurrency_typo": 2})
    with pytest.raises(EvalError, match="dtype must be one of"):
        load_backend(f"hf:{tiny_causal_lm}", {"dtype": "float8"})
    with pytest.raises(EvalError, match="cannot load the model's config"):
        load_backend("hf:/no/such/model/folder")


def test_tiny_masked_lm_is_the_same_in_every_process(tmp_path):
    """The same seed gives byte-identical tokenizer and weights, also in another process."""
    import subprocess
    import sys

    from histbench.core.backends.tiny import build_tiny_masked_lm

    here = build_tiny_masked_lm(tmp_path / "here")
    code = f"from histbench.core.backends.tiny import build_tiny_masked_lm; build_tiny_masked_lm({str(tmp_path / 'there')!r})"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    for name in ("tokenizer.json", "model.safetensors"):
        assert (here / name).read_bytes() == (tmp_path / "there" / name).read_bytes(), name


def test_the_tokenisation_boundary_is_part_of_the_request_and_its_key(tiny_causal_lm):
    """boundary="context-length" (the Chronologic authors' tokenisation) changes answers, so
    it is part of the request's key; the default leaves the keys of existing runs as they were."""
    backend = load_backend(f"hf:{tiny_causal_lm}")
    harness = LoglikelihoodRequest("ANSWER: ", "yes")
    authors = LoglikelihoodRequest("ANSWER: ", "yes", boundary="context-length")
    assert harness.to_dict() == {"kind": "loglikelihood", "context": "ANSWER: ", "continuation": "yes"}
    assert backend.key(harness) != backend.key(authors)
    theirs, ours = backend.loglikelihood([authors, harness])
    assert theirs.n_tokens == ours.n_tokens - 1
    with pytest.raises(EvalError, match="unknown tokenisation boundary 'joint'"):
        LoglikelihoodRequest("ANSWER: ", "yes", boundary="joint")
