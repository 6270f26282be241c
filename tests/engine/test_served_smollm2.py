"""Integration (issue 27): the real SmolLM2-135M-Instruct behind histbench's completions
server (tests/servers/completions_server.py, an imitation of vLLM: transformers on CPU, vLLM's response
format, text and token-id prompts) scored through `api:` gives the in-process `hf:`
log-likelihoods, for Chronologic (the evaluator's own scoring path, both tokenisations),
for Italian multiple choice and ChronoCulture's modal-answer prompts (histbench.eval.choices:
the chat template the server applies, rendered here from the tokenizer option), each
through its `histbench eval ... --mode likelihood` command,
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
    from ..servers.completions_server import CompletionsServer

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


def _within(got: list[float], want: list[float]) -> tuple[float, float]:
    """(share of options within 1e-3, largest difference)."""
    diffs = [abs(a - b) for a, b in zip(got, want, strict=True)]
    return sum(d <= 1e-3 for d in diffs) / len(diffs), max(diffs)


def test_histbench_eval_likelihood_commands_against_the_server(smollm2_hf, smollm2_path, served, built_sample,
                                                               tmp_path):
    """Issue 27's "done when", command by command: `histbench eval chronologic|italian|
    chronoculture --mode likelihood --model api:NAME@URL` against the served SmolLM2 give
    the log-likelihoods and choices the same evaluators give in process (hf:, the session's
    model). Chronologic with the default tokenisation (the authors' boundary, text sent,
    answers by text offset: the issue's bar is >= 90% within 1e-3 and the same choice on
    >= 95% of questions; measured here within 1e-4, so that is asserted); the
    multiple-choice ones with the tokenizer option (the chat template the server applies),
    the same boundary: within 1e-4. Two questions, one Italian WSD item, one
    ChronoCulture pair (two prompts)."""
    from histbench.cli import main
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.chronoculture.data import load_benchmark
    from histbench.eval.chronoculture.run import choose_pairs, run_likelihood
    from histbench.eval.chronologic.likelihood import evaluate
    from histbench.eval.italian.run import evaluate_likelihood

    def lines(path: Path) -> list[dict]:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    spec, tokenizer = served.spec(), f"tokenizer={smollm2_path}"
    # Chronologic
    chrono = built_sample("chronologic")
    assert main(["eval", "chronologic", "--dataset", str(chrono), "--mode", "likelihood", "--model", spec,
                 "--limit", "2", "--bootstrap", "50", "--out", str(tmp_path / "chronologic-api")]) == 0
    evaluate(BuiltDataset.open(chrono, benchmark="chronologic"), backend=smollm2_hf, run_dir=tmp_path / "chronologic-hf",
             limit=2, n_resamples=50)
    got, want = (lines(tmp_path / f"chronologic-{side}" / "questions.jsonl") for side in ("api", "hf"))
    share, worst = _within([v for q in got for v in q["loglik"]], [v for q in want for v in q["loglik"]])
    assert len(got) == 2 and share >= 0.9 and worst <= SAME_BOUNDARY
    assert [q["choice"] for q in got] == [q["choice"] for q in want]
    # Italian multiple choice (WSD: the first item)
    italian = built_sample("italian", embedding_model="tfidf")
    tasks = ["wsd"]
    assert main(["eval", "italian", "--dataset", str(italian), "--mode", "likelihood", "--model", spec,
                 "--model-option", tokenizer, "--tasks", *tasks, "--limit", "1",
                 "--out", str(tmp_path / "italian-api")]) == 0
    evaluate_likelihood(BuiltDataset.open(italian, benchmark="italian"), tmp_path / "italian-hf", backend=smollm2_hf,
                        tasks=tasks, limit=1)
    for task in tasks:
        got, want = (lines(tmp_path / f"italian-{side}" / "italian-items" / f"{task}.jsonl") for side in ("api", "hf"))
        assert len(got) == len(want) == 1 and got[0]["chat_template"]
        assert got[0]["logliks"] == pytest.approx(want[0]["logliks"], abs=SAME_BOUNDARY), task
        assert got[0]["n_tokens"] == want[0]["n_tokens"], task
        assert (got[0]["choice"], got[0]["choice_norm"]) == (want[0]["choice"], want[0]["choice_norm"]), task
    # ChronoCulture modal-answer prompts: the first four pairs, of which the fourth has them (old and new)
    chronoculture = built_sample("chronoculture")
    assert main(["eval", "chronoculture", "--dataset", str(chronoculture), "--mode", "likelihood", "--model", spec,
                 "--model-option", tokenizer, "--limit", "4", "--out", str(tmp_path / "chronoculture-api")]) == 0
    built = BuiltDataset.open(chronoculture, benchmark="chronoculture")
    bench = load_benchmark(built)
    pairs, sample = choose_pairs(bench, None, None, 0, 4)
    run_likelihood(built, bench, smollm2_hf, tmp_path / "chronoculture-hf", pairs=pairs, sample=sample)
    got, want = (lines(tmp_path / f"chronoculture-{side}" / "predictions.jsonl") for side in ("api", "hf"))
    assert len(got) == len(want) == 2
    for mine, theirs in zip(got, want, strict=True):
        assert mine["logliks"] == pytest.approx(theirs["logliks"], abs=SAME_BOUNDARY)
        assert (mine["choice"], mine["choice_norm"]) == (theirs["choice"], theirs["choice_norm"])
