"""inspect task of Chronologic-EN's free generation (`inspect eval histbench/chronologic_generate`):
the candidate requests of `histbench eval chronologic --mode generate`, the pass/fail judge
requests of `--mode judge` (paper A.2.1), and on the same scripted answers and verdicts the
same pass/fail numbers, with inspect's mock model and with loopback OpenAI-compatible servers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from inspect_ai import eval as inspect_eval  # noqa: E402

from histbench.core.dataset import BuiltDataset  # noqa: E402

from .test_inspect_tasks import close, loopback_model, mock_model, sent  # noqa: E402

_QUESTION = re.compile(r"\nQUESTION: (?P<q>.*?)\nANSWER: $", re.DOTALL)
_PASS_FAIL = re.compile(r"Question: (?P<q>.*?)\n\nAnswer A: (?P<a>.*?)\n\nAnswer B: (?P<b>.*?)\n\n- Choose A or B", re.DOTALL)
_PARTIAL = re.compile(r"QUESTION: (?P<q>.*?)\n\nRUBRIC.*ANSWER A:\n\"(?P<a>.*?)\"\n\nANSWER B:\n\"(?P<b>.*?)\"\n\nRespond with JSON",
                      re.DOTALL)
_MARKER = re.compile(r"\[q=(\d+(?:\.\d+)?)\]")


def scripted_candidate(questions):
    """Per question (by position): a ground-truth copy behind a reasoning block and an
    "Answer:" label (automatic pass), a distractor copy (automatic fail or judged), answers
    the judge accepts, rejects, accepts only when shown first, answers whose first verdict
    does not parse, whose verdicts never parse, and empty answers."""
    plan = {}
    for index, q in enumerate(questions):
        kind = 7 if len(q.ground_truths) == 2 else index % 8   # two ground truths: three trials, 1/3 or 2/3
        plan[q.question] = [
            f"<think>the period view</think>Answer: {q.options[q.ground_truths[0]]}",
            q.options[q.distractors[0]],
            "[q=9.5] A sound answer, as a period writer would give it.",
            "[q=4] A middling answer of some merit.",
            "[q=7] An answer whose first verdict does not parse.",
            "[q=6] An answer the judge never rules on.",
            "   ",
            "[q=8] An answer this judge favours when it is shown first.",
        ][kind]

    def answer(messages):
        match = _QUESTION.search(messages[-1]["content"])
        assert match, messages[-1]["content"][-300:]
        return plan[match["q"]]

    return answer


def scripted_judge(questions):
    """Quality 10 for a ground truth, 10 x its probability for another option, a [q=N]
    marker's N, else 0. Pass/fail: "C" when both are >= 9 or equal, else the better, except
    [q=8] (always "A"), [q=7] (unparsable until retried, then "C") and [q=6] (never parsable).
    Partial credit: the better one."""
    by_text = {q.question: q for q in questions}

    def quality(question: str, text: str) -> float:
        marker = _MARKER.search(text)
        if marker:
            return float(marker.group(1))
        q = by_text[question]
        return max((10.0 * p for o, p in zip(q.options, q.probabilities, strict=True) if o == text), default=0.0)

    def answer(messages):
        text = messages[-1]["content"]
        match = _PARTIAL.search(text)
        if match:
            a, b = quality(match["q"], match["a"]), quality(match["q"], match["b"])
            return json.dumps({"context fit": "A" if a >= b else "B"})
        match = _PASS_FAIL.search(text)
        assert match, text[:300]
        pair = match["a"] + match["b"]
        if "[q=6]" in pair:
            return "I cannot rule on these."
        if "[q=7]" in pair:
            return '{"question fit": "C"}' if "IMPORTANT: Your previous response was not valid JSON" in text else "Both, I think."
        if "[q=8]" in pair:
            return 'A reads better.\n{"question fit": "A"}'
        a, b = quality(match["q"], match["a"]), quality(match["q"], match["b"])
        verdict = "C" if (a >= 9 and b >= 9) or a == b else ("A" if a > b else "B")
        return "```json\n" + json.dumps({"question fit": verdict}) + "\n```"

    return answer


def pass_fail_bodies(server, start: int = 0) -> list[str]:
    """sent() of the pass/fail judge requests only (no system message; partial credit has one)."""

    class _Bodies:
        bodies = [b for b in server.bodies[start:] if b["messages"][0]["role"] == "user"]

    return sent(_Bodies)


@pytest.fixture(scope="module")
def histbench_run(sample_builds, tmp_path_factory):
    """`histbench eval chronologic` --mode generate, anchors (which --mode judge needs) and
    judge on the scripted answers and verdicts; the pass/fail numbers inspect must report."""
    from histbench.cli import main
    from histbench.eval.chronologic.generation import load_questions
    from histbench.eval.chronologic.substantive import SUBSTANTIVE_NAME, aggregate_substantive, judged_dir
    from histbench.eval.inspect_tasks.common import flatten

    from ..servers.loopback import LoopbackChatServer

    build = sample_builds["chronologic"]
    questions = load_questions(BuiltDataset.open(build))
    tmp = tmp_path_factory.mktemp("chronologic-histbench")
    candidate = LoopbackChatServer(scripted_candidate(questions), model="cand").start()
    judge = LoopbackChatServer(scripted_judge(questions), model="judge").start()
    try:
        run, anchors = tmp / "run", tmp / "anchors"
        common = ["--dataset", str(build)]
        assert main(["eval", "chronologic", "--mode", "generate", "--model", candidate.spec(), "--out", str(run), *common]) == 0
        assert main(["eval", "chronologic", "--mode", "anchors", "--judge", judge.spec(), "--out", str(anchors),
                     "--bt-draws", "400", *common]) == 0
        before_judging = len(judge.bodies)
        assert main(["eval", "chronologic", "--mode", "judge", "--run", str(run), "--judge", judge.spec(),
                     "--anchors", str(anchors), *common]) == 0
        ours = json.loads((judged_dir(run, judge.spec()) / SUBSTANTIVE_NAME).read_text(encoding="utf-8"))
        candidate_sent, judge_sent = sent(candidate), pass_fail_bodies(judge, before_judging)
    finally:
        candidate.stop()
        judge.stop()
    ledger = [r for r in ours["ledger"] if r["path"] == "pass_fail"]
    expected = flatten({k: v for k, v in aggregate_substantive(ledger, {}, None, [], n_resamples=1000).items()
                        if k in ("overall", "groups", "reasoning_types")}, skip=("n_pass_fail", "n_partial"))
    counts = ours["counts"]
    expected.update({"pass_fail_questions": counts["pass_fail_questions"],
                     "two_ground_truth_pass_fail": counts["two_ground_truth_pass_fail"],
                     "empty_answers": sum(r["empty_answer"] for r in ledger),
                     "automatic_verdicts_pass_fail": counts["automatic_verdicts"]["pass_fail"],
                     "pass_fail_trials": counts["pass_fail_trials"], "pass_fail_retried": counts["pass_fail_retried"],
                     "pass_fail_unparsed": counts["pass_fail_unparsed"]})
    return {"build": build, "questions": questions, "ours": ours, "ledger": ledger, "expected": expected,
            "candidate_sent": candidate_sent, "judge_sent": judge_sent}


def assert_same_metrics(got: dict, histbench_run, where: str) -> None:
    expected = histbench_run["expected"]
    assert set(got) == set(expected), (where, set(got) ^ set(expected))
    for name, value in expected.items():
        assert close(got[name], float(value)), (where, name, got[name], value)
    # the headline is the pass/fail channel histbench reports
    channel = histbench_run["ours"]["scores"]["channels"]["pass_fail"]
    assert got["overall_estimate"] == pytest.approx(channel["estimate"]) and got["overall_n"] == channel["n"]


def test_chronologic_generate_equals_histbench_on_the_same_answers(histbench_run, chat_server, tmp_path):
    from histbench.eval.inspect_tasks.chronologic import chronologic_generate

    build, questions, ledger = histbench_run["build"], histbench_run["questions"], histbench_run["ledger"]
    counts = histbench_run["ours"]["counts"]
    # the script reaches every branch, and the question scores differ
    assert counts["pass_fail_retried"] > counts["pass_fail_unparsed"] > 0 and counts["automatic_verdicts"]["pass_fail"] > 0
    assert histbench_run["expected"]["empty_answers"] > 0
    assert {0.0, 1.0} < {r["score"] for r in ledger}, sorted({r["score"] for r in ledger})
    scores = {r["question_number"]: r["score"] for r in ledger}

    task = chronologic_generate(dataset=str(build))
    inspect_candidate = chat_server(scripted_candidate(questions), model="cand")
    inspect_judge = chat_server(scripted_judge(questions), model="judge")
    for where, model, grader in (
            ("mock", mock_model(scripted_candidate(questions)), mock_model(scripted_judge(questions))),
            ("loopback", loopback_model(inspect_candidate), loopback_model(inspect_judge))):
        (log,) = inspect_eval([task], model=model, model_roles={"grader": grader}, display="none",
                              log_dir=str(tmp_path / where), max_retries=0, fail_on_error=True)
        assert log.status == "success", str(log.error)[:2000]
        (score,) = log.results.scores
        assert_same_metrics({name: m.value for name, m in score.metrics.items()}, histbench_run, where)
        per_question = {s.id: s.scores["chronologic_pass_fail"].value for s in log.samples}
        assert len(per_question) == len(questions)
        assert {n: v for n, v in per_question.items() if n in scores} == scores
        assert all(v == "N" for n, v in per_question.items() if n not in scores)  # partial credit: histbench's
    # exactly histbench's requests: the candidate's, and the pass/fail judge's (retries included)
    assert sent(inspect_candidate) == histbench_run["candidate_sent"]
    assert pass_fail_bodies(inspect_judge) == histbench_run["judge_sent"]
    assert len(inspect_judge.bodies) == counts["pass_fail_trials"] + counts["pass_fail_retried"]


def test_inspect_command_with_grader_role_or_judge_option(histbench_run, chat_server, tmp_path):
    """`inspect eval histbench/chronologic_generate` (the entry point) against loopback servers,
    the judge given as inspect's grader role or as -T judge=."""
    questions = histbench_run["questions"]
    inspect = Path(sys.executable).with_name("inspect")
    for how in ("role", "option"):
        candidate, judge = chat_server(scripted_candidate(questions)), chat_server(scripted_judge(questions))
        env = {**os.environ, "LOOPBACK_API_KEY": "not-a-secret", "LOOPBACK_BASE_URL": candidate.base_url,
               "JUDGE_API_KEY": "not-a-secret", "JUDGE_BASE_URL": judge.base_url}
        grader = "openai-api/judge/judge-model"
        chosen = ["--model-role", f"grader={grader}"] if how == "role" else ["-T", f"judge={grader}"]
        done = subprocess.run([str(inspect), "eval", "histbench/chronologic_generate", "--model",
                               "openai-api/loopback/loopback-model", *chosen, "-T", f"dataset={histbench_run['build']}",
                               "--log-dir", str(tmp_path / how), "--log-format", "json", "--display", "none"],
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        (log_file,) = (tmp_path / how).glob("*.json")
        log = json.loads(log_file.read_text())
        assert log["eval"]["task"] == "histbench/chronologic_generate" and log["status"] == "success", log.get("error")
        assert_same_metrics({name: m["value"] for name, m in log["results"]["scores"][0]["metrics"].items()},
                            histbench_run, how)
        assert pass_fail_bodies(judge) == histbench_run["judge_sent"]


def test_chronologic_generate_options(sample_builds):
    """-T prompt_style=plain sends histbench's plain prompt as one user message (as histbench's
    api backend does), -T reasoning=true its 25000-token budget, and bad options fail early."""
    from histbench.eval.chronologic.generation import generation_request, load_prompts, load_questions
    from histbench.eval.inspect_tasks.chronologic import chronologic_generate

    build = sample_builds["chronologic"]
    questions = load_questions(BuiltDataset.open(build))
    prompts = load_prompts()
    task = chronologic_generate(dataset=str(build), prompt_style="plain", reasoning=True, temperature=0.7, top_p=0.9,
                                sampling_seed=5, paths="pass_fail")
    pass_fail = [q for q in questions if q.partial_credit == 0]
    assert 0 < len(task.dataset) == len(pass_fail) < len(questions)
    for sample, q in zip(task.dataset, pass_fail, strict=True):
        request = generation_request(q, prompts, prompt_style="plain", reasoning=True, temperature=0.7, top_p=0.9, seed=5)
        (message,) = sample.input
        assert message.role == "user" and message.text == request.prompt
        assert sample.metadata["histbench_generate"] == {"max_tokens": 25000, "temperature": 0.7, "top_p": 0.9, "seed": 5}
    with pytest.raises(ValueError, match="paths"):
        chronologic_generate(dataset=str(build), paths="partial")
    with pytest.raises(Exception, match="effort"):
        chronologic_generate(dataset=str(build), judge_effort="extreme")
    with pytest.raises(Exception, match="prompt style"):
        chronologic_generate(dataset=str(build), prompt_style="raw")
