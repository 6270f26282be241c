"""Prefix-shared log-likelihood (issue 3; the Chronologic-EN paper, section 5.1: per-token
log-likelihoods of answers compared after one context) against the plain full-sequence
computation, on a tiny llama-style model built from a config."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from histbench.core.backends import LoglikelihoodRequest as LL  # noqa: E402
from histbench.core.errors import EvalError  # noqa: E402
from histbench.core.likelihood import encode_requests, loglikelihood, model_max_length  # noqa: E402

TOL = 1e-5  # per request, float32 on CPU (measured: at most 1.4e-6 on this model)


@pytest.fixture(scope="module")
def tiny(tiny_causal_lm):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_causal_lm, dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(tiny_causal_lm)


def reference(model, tokenizer, request: LL, max_length: int | None = None) -> tuple[float, int, bool, int]:
    """The naive computation, written out independently: harness tokenisation, one
    unpadded full sequence per request, log-softmax in float64."""
    context, continuation = request.context, request.continuation
    if context == "":
        ctx = [tokenizer.bos_token_id]
        cont = tokenizer(continuation, add_special_tokens=False)["input_ids"]
    else:
        stripped = context.rstrip()
        continuation = context[len(stripped):] + continuation
        if stripped == "":  # whitespace only: as empty, with the spaces kept on the continuation
            ctx = [tokenizer.bos_token_id]
            cont = tokenizer(continuation, add_special_tokens=False)["input_ids"]
        else:
            ctx = tokenizer(stripped, add_special_tokens=False)["input_ids"]
            cont = tokenizer(stripped + continuation, add_special_tokens=False)["input_ids"][len(ctx):]
    window = max_length or model.config.max_position_embeddings
    dropped = max(0, len(ctx) + len(cont) - (window + 1))
    ctx = ctx[dropped:]
    sequence = torch.tensor([ctx + cont[:-1]])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(sequence).logits[0].double(), dim=-1)
    rows = logprobs[len(ctx) - 1 :]
    total = sum(float(rows[k, token]) for k, token in enumerate(cont))
    greedy = all(int(rows[k].argmax()) == token for k, token in enumerate(cont))
    return total, len(cont), greedy, dropped


LONG_CONTEXT = " ".join(
    ["In 1851 the Great Exhibition opened in London's Hyde Park, and the railway reached the village."] * 3
)
MIXED = [
    # one context, answers of very different lengths (single-token ones included)
    *(LL("The capital of France is", answer) for answer in [" P", " Paris.", " London, a city of many mills and looms", "x", " a"]),
    # trailing spaces of the context move to the continuation
    LL("Answer: ", "yes"),
    LL("Answer: ", "no"),
    LL("Answer:", " yes"),
    # empty and whitespace-only contexts
    LL("", "The railway"),
    LL("", "T"),
    LL("   ", "hello there"),
    # a long context next to short ones
    LL(LONG_CONTEXT, " The end."),
    LL(LONG_CONTEXT, " Steam engines drove the mills of Manchester."),
    LL("She", " wrote"),
]


@pytest.mark.parametrize(("method", "batch_size", "token_budget"), [
    ("prefix", 8, 2048),   # everything in one pass
    ("prefix", 2, 2048),   # contexts split over batches
    ("prefix", 3, 40),     # continuation passes split by the token budget
    ("prefix", 1, 1),      # one row at a time
    ("naive", 3, 2048),
])
def test_scores_equal_the_full_sequence_computation(tiny, method, batch_size, token_budget):
    model, tokenizer = tiny
    results = loglikelihood(model, tokenizer, MIXED, method=method, batch_size=batch_size, token_budget=token_budget)
    assert len(results) == len(MIXED)
    for request, result in zip(MIXED, results, strict=True):
        logprob, n_tokens, greedy, truncated = reference(model, tokenizer, request)
        assert abs(result.logprob - logprob) <= TOL, request
        assert (result.n_tokens, result.is_greedy, result.truncated) == (n_tokens, greedy, truncated)
    lengths = {r.n_tokens for r in results}
    assert 1 in lengths and max(lengths) >= 10  # single- and multi-token answers were both exercised


def test_batch_composition_does_not_change_a_score(tiny):
    model, tokenizer = tiny
    alone = [loglikelihood(model, tokenizer, [request])[0].logprob for request in MIXED]
    together = [r.logprob for r in loglikelihood(model, tokenizer, list(reversed(MIXED)), batch_size=4)][::-1]
    assert max(abs(a - b) for a, b in zip(alone, together, strict=True)) <= TOL


def test_harness_tokenisation_convention(tiny):
    _, tokenizer = tiny
    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    (spaced, plain, empty, blank) = encode_requests(
        tokenizer, [LL("Answer: ", "yes"), LL("Answer:", " yes"), LL("", "The"), LL("  ", "The")], max_length=256
    )
    # trailing space moved: both spellings give the same token sequences
    assert spaced == plain
    assert spaced.context == tuple(encode("Answer:"))
    assert spaced.continuation == tuple(encode("Answer: yes")[len(encode("Answer:")):])
    # an empty context is the prefix token (BOS here) and the continuation is encoded alone
    assert empty.context == (tokenizer.bos_token_id,) and empty.continuation == tuple(encode("The"))
    assert blank.context == (tokenizer.bos_token_id,) and blank.continuation == tuple(encode("  The"))


def test_continuation_tokens_come_from_the_joint_encoding(tiny):
    """When encoding context+continuation merges across the boundary, the continuation's
    tokens are those after the context's own token count (as the harness does)."""
    _, tokenizer = tiny
    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    found = None
    for context, continuation in [("The capit", "al"), ("Pari", "s."), ("Manch", "ester"), ("rail", "way")]:
        if encode(context) + encode(continuation) != encode(context + continuation):
            found = (context, continuation)
            break
    assert found is not None, "no boundary merge in the tiny vocabulary"
    (item,) = encode_requests(tokenizer, [LL(*found)], max_length=256)
    whole = encode(found[0] + found[1])
    assert item.context == tuple(encode(found[0]))
    assert item.continuation == tuple(whole[len(encode(found[0])):])


def test_long_inputs_are_cut_from_the_left_and_counted(tiny):
    model, tokenizer = tiny
    window = 24
    requests = [LL(LONG_CONTEXT, " The end."), LL(LONG_CONTEXT, " Steam engines drove the mills."), LL("She", " wrote")]
    results = loglikelihood(model, tokenizer, requests, max_length=window)
    for request, result in zip(requests, results, strict=True):
        logprob, n_tokens, _, truncated = reference(model, tokenizer, request, max_length=window)
        assert result.truncated == truncated and abs(result.logprob - logprob) <= TOL
    context_tokens = len(tokenizer(LONG_CONTEXT, add_special_tokens=False)["input_ids"])
    assert results[0].truncated == context_tokens + results[0].n_tokens - (window + 1) > 0
    assert results[1].truncated > results[0].truncated  # a longer answer leaves less context
    assert results[2].truncated == 0


def test_a_continuation_longer_than_the_window_is_an_error(tiny):
    model, tokenizer = tiny
    with pytest.raises(EvalError, match="more than the model's window of 8"):
        loglikelihood(model, tokenizer, [LL("a", " " + LONG_CONTEXT)], max_length=8)


def test_is_greedy_marks_the_models_own_continuation(tiny):
    """Token level: the model's own greedy continuation is greedy; one changed token is not."""
    from histbench.core.likelihood import Encoded, PrefixSharedScorer, score_naive

    model, tokenizer = tiny
    ids = tokenizer("The capital of France is", add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=6, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    context, greedy = tuple(ids[0].tolist()), tuple(out[0, ids.shape[1]:].tolist())
    changed = (*greedy[:3], (greedy[3] + 1) % len(tokenizer), *greedy[4:])
    encoded = [Encoded(context, greedy), Encoded(context, changed), Encoded(context, greedy[:1])]
    for scores in (PrefixSharedScorer(model).score(encoded), score_naive(model, encoded)):
        assert [g for _, g in scores] == [True, False, True]


def test_window_is_found_like_the_harness(tiny):
    model, tokenizer = tiny
    assert model_max_length(model, tokenizer) == model.config.max_position_embeddings

    class Bare:
        config = object()

    class Tok:
        model_max_length = 1000000000000000019884624838656

    assert model_max_length(Bare(), Tok()) == 2048


def test_unknown_method_is_an_error(tiny):
    model, tokenizer = tiny
    with pytest.raises(EvalError, match="unknown likelihood method"):
        loglikelihood(model, tokenizer, [LL("a", " b")], method="fast")


@pytest.fixture(scope="module")
def bos_tokenizer(tiny_causal_lm):
    """The tiny tokenizer made to add BOS by default, like Llama's."""
    from tokenizers import processors
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_causal_lm)
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", tokenizer.bos_token_id)]
    )
    assert tokenizer("Answer:")["input_ids"][0] == tokenizer.bos_token_id
    return tokenizer


def test_special_tokens_follow_the_tokenizer_default_like_the_harness(bos_tokenizer):
    tok = bos_tokenizer
    bos = tok.bos_token_id
    plain = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    pair, empty, starts_with_bos, no_bos, starts_with_prefix = encode_requests(
        tok,
        [LL("Answer:", " yes"), LL("", "The"), LL("<|endoftext|>Answer:", " yes"), LL("Answer:", " yes"),
         LL("", "<|endoftext|>The")],
        max_length=256,
    )[:4] + encode_requests(tok, [LL("", "<|endoftext|>The")], max_length=256)
    assert pair.context == (bos, *plain("Answer:"))
    assert pair.continuation == tuple(plain("Answer: yes")[len(plain("Answer:")):])
    assert empty == encode_requests(tok, [LL("", "The")], max_length=256)[0]
    assert empty.context == (bos,) and empty.continuation == tuple(plain("The"))  # no second BOS
    assert starts_with_bos == pair  # a text that starts with BOS gets no other
    assert starts_with_prefix.context == (bos,) and starts_with_prefix.continuation == tuple(plain("The"))
    off = encode_requests(tok, [LL("Answer:", " yes")], max_length=256, add_bos_token=False)[0]
    assert off.context == tuple(plain("Answer:"))


def test_tokenisation_is_the_harness_own_when_lm_eval_is_installed(tiny, bos_tokenizer):
    """Token for token what lm_eval's HFLM builds (context_enc, continuation_enc)."""
    pytest.importorskip("lm_eval")
    from lm_eval.models.huggingface import HFLM

    model, tokenizer = tiny
    requests = [r for r in MIXED if r.context.strip() or r.context == ""]  # the harness cannot score blank contexts
    for tok in (tokenizer, bos_tokenizer):
        lm = HFLM(pretrained=model, tokenizer=tok, backend="causal", device="cpu", batch_size=4)
        ours = encode_requests(tok, requests, max_length=lm.max_length)
        for request, item in zip(requests, ours, strict=True):
            if request.context == "":
                cont = lm.tok_encode(request.continuation, add_special_tokens=False)
                ctx, cont = ([lm.prefix_token_id], cont) if cont[0] != lm.prefix_token_id else (cont[:1], cont[1:])
            else:
                ctx, cont = lm._encode_pair(request.context, request.continuation)
            assert (item.context, item.continuation) == (tuple(ctx), tuple(cont)), request


AUTHORS_CONTEXT = (
    "The following question asks for information from a British encyclopedia published in 1880.\n"
    "If the author(s) of this text would not have been able to answer the question, reply 'insufficient information'.\n"
    "QUESTION: What is the capital of France?\nANSWER: "
)
AUTHORS_ANSWERS = ["Paris", "The capital of France is Paris.", "yes", "London, in 1851", "insufficient information", "in"]
# The Chronologic authors' _score_answer_ll_hf (chronologic/evalcode/benchmark_evaluation.py,
# GitHub Historical-AI-Lab/GPT-1914 commit 69508ca) run outside this repository on the tiny
# causal LM (build_tiny_causal_lm, seed 0) after their own prompt: mean per-token
# log-likelihood of each answer, and how many answer tokens their slicing scores.
AUTHORS_MEANS = [-5.444805145263672, -6.49008321762085, -6.032783031463623, -6.043135643005371,
                 -6.481224060058594, 0.0]
AUTHORS_TOKENS = [2, 17, 1, 8, 15, 0]


def test_context_length_boundary_reproduces_the_chronologic_authors(tiny):
    """boundary="context-length": the context keeps its trailing space, the answer's tokens
    are those after the context's token count; " yes" loses its first token (the space
    merged into it) and " in" keeps none, scored 0.0 over 0 tokens as their code does."""
    model, tokenizer = tiny
    requests = [LL(AUTHORS_CONTEXT, a) for a in AUTHORS_ANSWERS]
    theirs = loglikelihood(model, tokenizer, [LL(AUTHORS_CONTEXT, a, boundary="context-length") for a in AUTHORS_ANSWERS])
    assert [r.n_tokens for r in theirs] == AUTHORS_TOKENS
    means = [r.logprob / r.n_tokens if r.n_tokens else r.logprob for r in theirs]
    assert means == pytest.approx(AUTHORS_MEANS, abs=1e-5)
    harness = loglikelihood(model, tokenizer, requests)
    assert [r.n_tokens for r in harness] == [3, 18, 2, 9, 16, 1]  # every answer token, the space with the first
    mixed = loglikelihood(model, tokenizer, [LL(AUTHORS_CONTEXT, "yes", boundary="context-length"), LL(AUTHORS_CONTEXT, "yes")])
    assert [r.n_tokens for r in mixed] == [AUTHORS_TOKENS[2], 2]  # each request keeps its own convention in one batch


@pytest.mark.parametrize(("method", "batch_size", "token_budget"), [("prefix", 8, 2048), ("prefix", 3, 40), ("naive", 4, 2048)])
def test_in_float64_the_batched_scores_are_the_unpadded_ones_exactly(tiny, method, batch_size, token_budget):
    """Issue 13 (engine): padding, masks, cached prefixes and position ids change nothing
    but float rounding. In float64 the prefix-shared (and padded naive) scores equal an
    independent pass over each unpadded sequence alone to 1e-10; what remains in float32
    is rounding (bound measured on SmolLM2 in test_smollm2.py and docs/engine.md)."""
    import copy

    model, tokenizer = tiny
    model64 = copy.deepcopy(model).double()
    results = loglikelihood(model64, tokenizer, MIXED, method=method, batch_size=batch_size, token_budget=token_budget)
    worst = max(abs(r.logprob - reference(model64, tokenizer, q)[0]) for q, r in zip(MIXED, results, strict=True))
    assert worst <= 1e-10


@pytest.mark.parametrize(("batch_size", "token_budget"), [(8, 2048), (3, 40), (1, 1)])
def test_packed_passes_feed_each_position_once_and_score_only_answer_rows(tiny, batch_size, token_budget):
    """Issue 45: the packed computation feeds the model each context once and each
    continuation but its last token once (no padding, no repeated context token), and
    the output layer sees only the scored rows (one per continuation token)."""
    from histbench.core import likelihood as engine

    model, tokenizer = tiny
    assert engine._packs(model)
    encoded = encode_requests(tokenizer, MIXED, max_length=model_max_length(model, tokenizer))
    contexts = {e.context for e in encoded}
    # each shared prefix (a context but its last token) once, each distinct context's last token once
    needed = sum(len(p) for p in {c[:-1] for c in contexts}) + len(contexts) + sum(len(e.continuation) - 1 for e in encoded)
    fed, head_rows = [], []
    hooks = [
        model.register_forward_pre_hook(lambda m, a, k: fed.append(k["input_ids"].numel()), with_kwargs=True),
        model.get_output_embeddings().register_forward_pre_hook(lambda m, a: head_rows.append(a[0].shape[:-1].numel())),
    ]
    try:
        results = loglikelihood(model, tokenizer, MIXED, batch_size=batch_size, token_budget=token_budget)
    finally:
        for hook in hooks:
            hook.remove()
    assert sum(fed) == needed
    assert sum(head_rows) == sum(r.n_tokens for r in results)
    for request, result in zip(MIXED, results, strict=True):
        assert abs(result.logprob - reference(model, tokenizer, request)[0]) <= TOL, request


@pytest.mark.parametrize(("batch_size", "token_budget"), [(8, 2048), (3, 40), (1, 1)])
def test_the_cached_fallback_equals_the_full_sequence_computation(tiny, monkeypatch, batch_size, token_budget):
    """Where packing does not apply (an attention that takes no custom 4D mask, a forward
    without logits_to_keep), each context's cache is shared by padded continuation passes:
    the same numbers (1e-10 in float64, TOL in float32)."""
    import copy

    from histbench.core import likelihood as engine

    monkeypatch.setattr(engine, "_packs", lambda model: False)
    model, tokenizer = tiny
    for dtype_model, bound in ((model, TOL), (copy.deepcopy(model).double(), 1e-10)):
        results = loglikelihood(dtype_model, tokenizer, MIXED, batch_size=batch_size, token_budget=token_budget)
        for request, result in zip(MIXED, results, strict=True):
            logprob, n_tokens, greedy, truncated = reference(dtype_model, tokenizer, request)
            assert abs(result.logprob - logprob) <= bound, request
            assert (result.n_tokens, result.is_greedy, result.truncated) == (n_tokens, greedy, truncated)


def test_contexts_that_differ_in_their_last_token_share_one_packed_prefix(tiny):
    """Issue 45 (the demo's Chronologic runs): with the authors' boundary ("context-length")
    each answer's context ends in a token of its own where the answer's first character
    merges with the context's trailing space. The packed computation still runs the shared
    part once: the prefix once, each distinct last token once, each answer but its last
    token once; the scores equal one full pass per request (TOL in float32, 1e-10 in float64)."""
    import copy

    model, tokenizer = tiny
    requests = [LL(AUTHORS_CONTEXT, a, boundary="context-length") for a in AUTHORS_ANSWERS + [" yesterday", " in time"]]
    encoded = [e for e in encode_requests(tokenizer, requests, max_length=model_max_length(model, tokenizer)) if e.continuation]
    contexts = {e.context for e in encoded}
    assert len(contexts) > 1 and len({c[:-1] for c in contexts}) == 1  # the case in question
    needed = len(next(iter(contexts))) - 1 + len(contexts) + sum(len(e.continuation) - 1 for e in encoded)
    fed = []
    hook = model.register_forward_pre_hook(lambda m, a, k: fed.append(k["input_ids"].numel()), with_kwargs=True)
    try:
        packed = loglikelihood(model, tokenizer, requests)
    finally:
        hook.remove()
    assert sum(fed) == needed
    naive = loglikelihood(model, tokenizer, requests, method="naive")
    assert [r.n_tokens for r in packed] == [r.n_tokens for r in naive]
    assert max(abs(a.logprob - b.logprob) for a, b in zip(packed, naive, strict=True)) <= TOL
    assert [r.is_greedy for r in packed] == [r.is_greedy for r in naive]
    model64 = copy.deepcopy(model).double()
    packed64 = loglikelihood(model64, tokenizer, requests, token_budget=7)
    naive64 = loglikelihood(model64, tokenizer, requests, method="naive")
    assert max(abs(a.logprob - b.logprob) for a, b in zip(packed64, naive64, strict=True)) <= 1e-10
