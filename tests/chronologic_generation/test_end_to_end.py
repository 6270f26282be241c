"""Free generation end to end against loopback chat servers with scripted answers:
generate -> anchors -> judge -> report, interruption and resume (paper 5.2.2, A.2)."""

from __future__ import annotations

import json
import math
import time
from collections import Counter

import pytest

from histbench.builders.core.errors import EvalError
from histbench.eval.backends import load_backend
from histbench.eval.chronologic import generation as G
from histbench.eval.chronologic.anchors import build_anchors, load_anchors
from histbench.eval.chronologic.generation_report import collect, generation_markdown, ledger_rows
from histbench.eval.chronologic.substantive import judge_run, judged_dir

from .conftest import answers_in

FAST = {"max_retries": 0, "backoff_base": 0.01, "timeout": 10, "max_concurrency": 4}
KINDS: dict[int, int] = {}  # question_number -> kind of scripted answer (see scripted_candidate)


def scripted_candidate(built):
    """Answers chosen per question: a ground truth copy, a marked answer of known quality,
    a distractor copy, or nothing at all."""
    questions = G.load_questions(built)
    plan = {}
    for index, q in enumerate(questions):
        kind = KINDS[q.number] = index % 5
        if kind == 0:
            plan[q.question] = q.options[q.ground_truths[0]]
        elif kind == 1:
            plan[q.question] = "[q=9.5] A plausible answer that the judge accepts."
        elif kind == 2:
            plan[q.question] = q.options[q.distractors[0]]
        elif kind == 3:
            plan[q.question] = "[q=4] A middling answer of some merit, written as a period writer might."
        else:
            plan[q.question] = "   " if index % 2 else "[q=1] A weak answer."

    def answer(messages):
        text = messages[-1]["content"]
        for question, reply in plan.items():
            if question in text:
                return reply
        raise AssertionError("unknown question")

    return answer


def test_generate_anchors_judge_and_report(built, chat_server, scripted_judge, tmp_path):
    candidate = chat_server(scripted_candidate(built), model="cand")
    judge_server = chat_server(scripted_judge, model="judge")
    backend = load_backend(candidate.spec(), FAST)
    run_dir = tmp_path / "run"
    result = G.generate(built, backend, run_dir)
    assert result["mode"] == "generate" and result["benchmark"] == "chronologic"
    assert result["counts"]["questions"] == 24 and candidate.delivered == 24
    assert all(b["messages"][-1]["content"].startswith(next(q.frame for q in G.load_questions(built)
                                                            if q.question in b["messages"][-1]["content"]))
               for b in candidate.bodies)
    empty = {a["question_number"] for a in result["answers"] if a["empty"]}
    assert empty and all(KINDS[n] == 4 for n in empty)
    # a second generate asks nothing again
    again = G.generate(built, backend, run_dir)
    assert candidate.delivered == 24 and again["counts"]["reused"] == 24

    judge = load_backend(judge_server.spec(), FAST)
    anchors_dir = tmp_path / "anchors"
    anchors = build_anchors(built, judge, judge, anchors_dir)
    questions = {q.number: q for q in G.load_questions(built)}
    n_partial = sum(q.partial_credit for q in questions.values())
    # the scripted judge always rejects distractors: alpha = 0, nothing moves; beta = 0 (ground truths tie)
    pooled = anchors["reliability"]["pooled"]
    assert pooled["alpha_pooled"] == 0.0 and pooled["beta"] == 0.0 and pooled["moved_to_partial"] == []
    assert anchors["counts"]["partial_path"] == n_partial
    expected_anchor_trials = sum(len(q.options) * (len(q.options) - 1) for q in questions.values() if q.partial_credit)
    assert anchors["counts"]["anchor_requests"]["requests"] == expected_anchor_trials
    t131 = anchors["tournaments"]["131"]
    assert t131["theta"][0] > t131["theta"][2] and t131["theta"][4] > t131["theta"][2]  # the 0.5 distractor beats a 0.0 one
    assert anchors["calibration"]["slope"] > 0
    assert (anchors_dir / "anchors.csv").is_file() and (anchors_dir / "calibration.csv").is_file()
    calls_after_anchors = judge_server.delivered

    loaded = load_anchors(anchors_dir, built)
    scored = judge_run(built, run_dir, judge, judge, loaded, n_resamples=200)
    ledger = {r["question_number"]: r for r in scored["ledger"]}
    for n, row in ledger.items():
        q = questions[n]
        kind = KINDS[n]
        if row["empty_answer"]:
            assert row["score"] == 0.0 and row["trials"] == 0
        elif row["path"] == "pass_fail":
            expected = {0: 1.0, 1: 1.0, 2: 0.0, 3: 0.0}.get(kind, 0.0)
            assert row["score"] == expected, (n, row)
        else:
            assert row["trials"] == 2 * len(q.options) and 0 < row["p_fit"] < 1
            assert row["delta"] == pytest.approx(row["theta"] - sum(loaded.theta(n)[g] for g in q.ground_truths) / len(q.ground_truths))
    # a copied ground truth scores higher than a weak distractor copy on the partial path
    partial_scores = {n: r["score"] for n, r in ledger.items() if r["path"] == "partial" and not r["empty_answer"]}
    assert partial_scores
    groups = scored["scores"]["groups"]
    for g in ("cloze", "generation", "knowledge"):
        cell = groups[g]
        assert cell["n"] == sum(1 for r in ledger.values() if r["group"] == g)
        assert cell["low"] <= cell["high"]
    judge_calls = judge_server.delivered - calls_after_anchors
    # every judge call is stored and a second scoring asks nothing
    judge_run(built, run_dir, judge, judge, loaded, n_resamples=200)
    assert judge_server.delivered - calls_after_anchors == judge_calls
    assert (judged_dir(run_dir, judge.spec) / "ledger.csv").is_file()

    entries = collect(run_dir, G.read_generation(run_dir))
    text = generation_markdown(entries)
    assert "Table 4 layout" in text and "Judge reliability" in text and "cand" in text
    rows = ledger_rows(entries)
    assert len(rows) == 24 and {"score", "path", "answer"} <= set(rows[0])


def test_pass_fail_tiebreak_with_two_ground_truths(built, chat_server, scripted_judge, tmp_path):
    """Question 153 has two ground truths: a split first stage gets one reversed re-trial."""
    questions = {q.number: q for q in G.load_questions(built)}
    q = questions[153]
    candidate = chat_server(lambda m: "Candidate answer" if q.question in m[-1]["content"] else "", model="c2")
    seen = Counter()

    def judge(messages):
        a, b, _ = answers_in(messages)
        if "Candidate answer" not in (a, b):
            return scripted_judge(messages)
        seen[(a, b)] += 1
        other = b if a == "Candidate answer" else a
        if other == q.options[0]:
            return '{"better": "tie"}'  # passes against the first ground truth
        # against the second: an order-biased judge that always prefers Answer B, so the
        # candidate fails when shown first and passes when shown second
        return '{"better": "B"}'

    judge_server = chat_server(judge, model="j2")
    backend = load_backend(candidate.spec(), FAST)
    run_dir = tmp_path / "run"
    G.generate(built, backend, run_dir)
    jb = load_backend(judge_server.spec(), FAST)
    anchors = build_anchors(built, jb, jb, tmp_path / "anchors")
    loaded = load_anchors(tmp_path / "anchors")
    from histbench.eval.chronologic.judge import CANDIDATE, candidate_pass_fail_trials

    branches = set()
    for seed in range(6):  # the seeded order decides whether the second comparison fails first
        result = judge_run(built, run_dir, jb, jb, loaded, seed=seed, n_resamples=50)
        row = next(r for r in result["ledger"] if r["question_number"] == 153)
        assert row["path"] == "pass_fail"
        assert result["counts"]["empty_answers"] == 23
        against_second = candidate_pass_fail_trials(q, seed)[1]
        if against_second.first == CANDIDATE:  # fails, then passes in the reversed tie-break: 2/3
            assert row["trials"] == 3 and row["tiebreak"] is True and row["score"] == pytest.approx(2 / 3)
        else:  # passes at once: 1
            assert row["trials"] == 2 and row["tiebreak"] is None and row["score"] == 1.0
        branches.add(against_second.first == CANDIDATE)
    assert branches == {True, False}
    assert anchors["reliability"]["pooled"]["beta"] is not None


def test_interrupted_judging_resumes_without_repeating_a_call(built, chat_server, scripted_judge, tmp_path):
    candidate = chat_server(scripted_candidate(built), model="cand3")
    backend = load_backend(candidate.spec(), FAST)
    run_dir = tmp_path / "run"
    G.generate(built, backend, run_dir)
    first = chat_server(scripted_judge, model="judge3")
    judge = load_backend(first.spec(), FAST)
    build_anchors(built, judge, judge, tmp_path / "anchors")
    loaded = load_anchors(tmp_path / "anchors", built)
    before = Counter(first.delivered_keys)
    first.die_after = first.delivered + 7  # the judge endpoint goes away after 7 more answers
    with pytest.raises(EvalError):
        judge_run(built, run_dir, judge, judge, loaded, n_resamples=50)
    asked_first = Counter(first.delivered_keys) - before
    assert sum(asked_first.values()) == 7
    # the same endpoint comes back; the rerun asks only what was not answered yet
    first.stop()
    second = None
    for _ in range(50):  # the dead server's port may take a moment to be released
        try:
            second = chat_server(scripted_judge, model="judge3", port=first.port)
            break
        except OSError:
            time.sleep(0.1)
    assert second is not None
    judge2 = load_backend(second.spec(), FAST)
    assert judge2.spec == judge.spec
    result = judge_run(built, run_dir, judge2, judge2, loaded, n_resamples=50)
    assert not set(asked_first) & set(second.delivered_keys)
    stored = []
    for store in ("judge-pass-fail", "judge-partial"):
        path = judged_dir(run_dir, judge.spec) / store / "records.jsonl"
        stored += [json.loads(line)["key"] for line in path.read_text().splitlines() if line.strip()]
    assert len(stored) == len(set(stored)) == 7 + second.delivered
    reused = result["counts"]["pass_fail_requests"]["reused"] + result["counts"]["partial_requests"]["reused"]
    assert reused >= 7
    assert all(not math.isnan(r["score"]) for r in result["ledger"])
    # and once complete, scoring again asks nothing
    judge_run(built, run_dir, judge2, judge2, loaded, n_resamples=50)
    assert second.delivered == len(stored) - 7


def test_generate_with_a_local_model(built, tiny_causal_lm, tmp_path):
    """The hf backend answers the same requests (chat template, then a plain prompt)."""
    backend = load_backend(f"hf:{tiny_causal_lm}", {"dtype": "float32"})
    try:
        chat = G.generate(built, backend, tmp_path / "chat", max_new_tokens=6, limit=3)
        plain = G.generate(built, backend, tmp_path / "plain", max_new_tokens=6, limit=3, prompt_style="plain")
    finally:
        backend.close()
    assert [a["question_number"] for a in chat["answers"]] == [101, 102, 103]
    assert all(a["raw"] is not None for a in chat["answers"] + plain["answers"])
    assert chat["counts"]["answered"] == 3 and chat["counts"]["reused"] == 0 and chat["signature"]["text"] != plain["signature"]["text"]
