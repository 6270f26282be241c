"""Integration (issue 27): the real SmolLM2-135M-Instruct behind histbench's completions
server (histbench.core.backends.completions_server: transformers on CPU, vLLM's response
format, text and token-id prompts) scored through `api:` gives the in-process `hf:`
log-likelihoods, for Chronologic (the evaluator's own scoring path, both tokenisations),
for multiple-choice chat prompts (Italian MC, ChronoCulture MCQ: histbench.eval.choices),
and lm-evaluation-harness's local-completions on the same server agrees.

A handful of questions only: the model is the session's (tests/conftest.py smollm2_hf),
the server shares it, and the suite is near CI's time limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SAMPLE = Path(__file__).resolve().parents[2] / "sources" / "chronologic" / "sample" / "chronologic_sample.jsonl"
#: a knowledge question (short answers: the authors' boundary reads their first word as
#: context) and an inference question, both with the abstention reminder: 9 options
QUESTION_NUMBERS = (151, 162)
SAME_BOUNDARY = 1e-4  # issue 27: per option, where both sides tokenise the same way


@pytest.fixture(scope="module")
def served(smollm2_hf):
    from histbench.core.backends.completions_server import CompletionsServer

    server = CompletionsServer(smollm2_hf.model, smollm2_hf.tokenizer, model_name="smollm2").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def questions():
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    return [q for q in rows if q["question_number"] in QUESTION_NUMBERS]


def _ledger(questions, backend, run_dir, tokenisation):
    """The Chronologic evaluator's own scoring (run store and all): per option
    log-likelihoods and per question the chosen option."""
    from histbench.eval.chronologic.data import PromptTemplate
    from histbench.eval.chronologic.likelihood import score_with_backend

    scores, counts = score_with_backend(questions, PromptTemplate.load(), backend, None, run_dir,
                                        {"mode": "likelihood", "tokenisation": tokenisation})
    assert counts["failed"] == 0
    return [list(s.to_json()["loglik"]) for s in scores], [s.to_json()["choice"] for s in scores]


@pytest.mark.parametrize(("tokenisation", "tokenised_here"), [("authors", False), ("harness", True)],
                         ids=["authors-boundary-text-offsets", "harness-boundary-token-ids"])
def test_chronologic_over_http_gives_the_in_process_log_likelihoods(smollm2_hf, smollm2_path, served, questions,
                                                                     tmp_path, tokenisation, tokenised_here):
    """Issue 27's bar: >= 90% of options within 1e-3 and the same choice on >= 95% of
    questions with the default tokenisation (the authors'), within 1e-4 where the boundary
    is the same. Measured here: every option within 1e-4 both ways: the default (the
    authors' boundary, text sent, the continuation found by text offset) and the harness's
    boundary tokenised here (the tokenizer option, token ids sent); tests/engine/
    test_api_likelihood.py crosses the other two combinations on the tiny model."""
    from histbench.core.backends import load_backend

    want, want_choice = _ledger(questions, smollm2_hf, tmp_path / "hf", tokenisation)
    api = load_backend(served.spec(), {"timeout": 60, **({"tokenizer": str(smollm2_path)} if tokenised_here else {})})
    got, got_choice = _ledger(questions, api, tmp_path / "api", tokenisation)
    diffs = [abs(a - b) for row_a, row_b in zip(got, want, strict=True) for a, b in zip(row_a, row_b, strict=True)]
    assert len(diffs) == 9
    assert sum(d <= 1e-3 for d in diffs) >= 0.9 * len(diffs) and got_choice == want_choice
    assert max(diffs) <= SAME_BOUNDARY
    # answers come back from the run store without asking again
    before = served.requests
    _ledger(questions, api, tmp_path / "api", tokenisation)
    assert served.requests == before


def test_multiple_choice_chat_prompts_over_http(smollm2_hf, smollm2_path, served, tmp_path):
    """Italian MC and ChronoCulture MCQ go through histbench.eval.choices: the context is
    the chat template the server applies (rendered here from the tokenizer option), each
    option the answer as the prompt asks for it."""
    from histbench.core.backends import load_backend
    from histbench.core.runstore import RunStore
    from histbench.eval.choices import ChoiceItem, score_items

    items = [
        ChoiceItem(({"role": "system", "content": "You answer questions about the past as a survey respondent of the "
                                                  "year given. Answer with JSON: {\"answer\": LETTER}."},
                    {"role": "user", "content": "Year: 1990. Should women work outside the home? A) yes B) no C) it "
                                                "depends"}),
                   tuple(json.dumps({"answer": letter}) for letter in "ABC")),
        ChoiceItem(({"role": "user", "content": "Which word fits the letter of 1845: 'I write to you by the ___'? "
                                                "A) post B) e-mail. Answer with JSON: {\"answer\": LETTER}."},),
                   tuple(json.dumps({"answer": letter}) for letter in "AB")),
    ]
    api = load_backend(served.spec(), {"tokenizer": str(smollm2_path), "timeout": 60})
    ours = score_items(items, api, RunStore.open(tmp_path / "api", backend=api), desc="api")
    theirs = score_items(items, smollm2_hf, RunStore.open(tmp_path / "hf", backend=smollm2_hf), desc="hf")
    for got, want in zip(ours, theirs, strict=True):
        assert got.chat_template and want.chat_template
        assert got.logliks == pytest.approx(want.logliks, abs=SAME_BOUNDARY)
        assert (got.choice, got.choice_norm, got.n_tokens) == (want.choice, want.choice_norm, want.n_tokens)


def test_lm_eval_local_completions_on_the_same_server_agrees(smollm2_hf, smollm2_path, served, questions):
    """lm-evaluation-harness's local-completions (its tokenizer here, token ids sent, the
    harness's boundary) against the same server: its log-likelihoods are histbench's."""
    pytest.importorskip("lm_eval")
    from lm_eval.api.instance import Instance
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    from histbench.core.backends import load_backend
    from histbench.eval.chronologic.data import PromptTemplate
    from histbench.eval.chronologic.likelihood import build_requests

    requests, _ = build_requests(questions, PromptTemplate.load(), "harness")
    harness = LocalCompletionsAPI(base_url=served.base_url + "/completions", model="smollm2", tokenizer=str(smollm2_path),
                                  tokenizer_backend="huggingface", num_concurrent=8, max_retries=1)
    instances = [Instance(request_type="loglikelihood", doc={}, arguments=(r.context, r.continuation), idx=i)
                 for i, r in enumerate(requests)]
    theirs = harness.loglikelihood(instances, disable_tqdm=True)
    ours = load_backend(served.spec(), {"timeout": 60}).loglikelihood(requests)
    in_process = smollm2_hf.loglikelihood(requests)
    for (logprob, greedy), mine, local in zip(theirs, ours, in_process, strict=True):
        assert logprob == pytest.approx(mine.logprob, abs=SAME_BOUNDARY) and greedy == mine.is_greedy
        assert logprob == pytest.approx(local.logprob, abs=SAME_BOUNDARY)
