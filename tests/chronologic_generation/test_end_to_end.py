"""Free generation end to end against loopback chat servers with scripted answers:
generate -> anchors -> judge -> report, interruption and resume (paper 5.2.2, A.2)."""

from __future__ import annotations

import json
import math
import time
from collections import Counter

import pytest

from histbench.core.backends import load_backend
from histbench.core.errors import EvalError
from histbench.eval.chronologic import generation as G
from histbench.eval.chronologic.anchors import build_anchors, load_anchors
from histbench.eval.chronologic.generation_report import collect, generation_markdown, ledger_rows
from histbench.eval.chronologic.substantive import judge_run, judged_dir

from .conftest import judge_pair

FAST = {"max_retries": 0, "backoff_base": 0.01, "timeout": 10, "max_concurrency": 4}
DRAWS = 800  # importance draws of each Bradley-Terry posterior in these tests (4000 by default)
KINDS: dict[int, int] = {}  # question_number -> kind of scripted answer (see scripted_candidate)


def scripted_candidate(built):
    """Answers chosen per question: a ground truth copy, a marked answer of known quality,
    a distractor copy, a middling answer, or nothing at all."""
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
            if f"QUESTION: {question}\n" in text:
                return reply
        raise AssertionError("unknown question")

    return answer


@pytest.fixture(scope="module")
def judged(built, tmp_path_factory):
    """One generated, anchored and judged run shared by the tests below."""
    from ..servers.loopback import LoopbackChatServer
    from .conftest import ScriptedJudge

    tmp = tmp_path_factory.mktemp("e2e")
    candidate = LoopbackChatServer(scripted_candidate(built), model="cand").start()
    judge_server = LoopbackChatServer(ScriptedJudge(built), model="judge").start()
    try:
        backend = load_backend(candidate.spec(), FAST)
        run_dir = tmp / "run"
        result = G.generate(built, backend, run_dir)
        again = G.generate(built, backend, run_dir)
        judge = load_backend(judge_server.spec(), FAST)
        anchors = build_anchors(built, judge, judge, tmp / "anchors", draws=DRAWS)
        calls_after_anchors = judge_server.delivered
        loaded = load_anchors(tmp / "anchors", built)
        scored = judge_run(built, run_dir, judge, judge, loaded, n_resamples=200)
        judge_calls = judge_server.delivered - calls_after_anchors
        rescored = judge_run(built, run_dir, judge, judge, loaded, n_resamples=200)
        yield {"result": result, "again": again, "anchors": anchors, "loaded": loaded, "scored": scored, "rescored": rescored,
               "run_dir": run_dir, "candidate": candidate, "judge_server": judge_server, "judge": judge,
               "judge_calls": judge_calls, "calls_after_rescore": judge_server.delivered - calls_after_anchors,
               "anchors_dir": tmp / "anchors"}
    finally:
        candidate.stop()
        judge_server.stop()


def test_generation(built, judged):
    result = judged["result"]
    assert result["mode"] == "generate" and result["benchmark"] == "chronologic"
    assert result["counts"]["questions"] == 24 and judged["candidate"].bodies[0]["messages"][0]["role"] == "system"
    questions = {q.number: q for q in G.load_questions(built)}
    for body in judged["candidate"].bodies:
        system, user = (m["content"] for m in body["messages"])
        q = next(q for q in questions.values() if f"QUESTION: {q.question}\n" in user)
        assert user == f"CONTEXT: {q.frame}\nQUESTION: {q.question}\nANSWER: "
        assert system.startswith("You will be asked") == (q.reasoning_type in ("knowledge", "inference", "abstention"))
    empty = {a["question_number"] for a in result["answers"] if a["empty"]}
    assert empty and all(KINDS[n] == 4 for n in empty)
    assert all(a["max_new_tokens"] >= 16 for a in result["answers"])
    assert judged["again"]["counts"]["reused"] == 24  # a second generate asks nothing


def test_anchors(built, judged):
    anchors = judged["anchors"]
    questions = {q.number: q for q in G.load_questions(built)}
    n_partial = sum(q.partial_credit for q in questions.values())
    pooled = anchors["reliability"]["pooled"]
    # the scripted judge never prefers a distractor; it calls a tie only between ground truths
    assert pooled["alpha_pooled"] == 0.0 and pooled["beta"] == 0.0 and pooled["alpha_over_threshold"] == []
    assert anchors["counts"]["partial_path"] == n_partial  # routing is the released partial_credit field
    expected = sum(len(q.options) * (len(q.options) - 1) for q in questions.values() if q.partial_credit)
    assert anchors["counts"]["anchor_trials"] == expected and anchors["counts"]["anchor_dropped_trials"] == 0
    t131 = anchors["tournaments"]["131"]
    assert t131["theta"][0] > t131["theta"][2] and t131["theta"][4] > t131["theta"][2]  # the 0.5 distractor beats a 0.0 one
    assert abs(sum(t131["theta"])) < 1e-9
    cal = anchors["calibration"]
    assert cal["slope"] > 0 and cal["weighting"] == "class-balance" and cal["target_at_zero"] == 0.9
    assert len(anchors["calibration_draws"]) > 900
    held = [o for o in anchors["calibration_observations"] if "skipped" not in o]
    assert {o["kind"] for o in held} == {"ground_truth", "distractor"}
    assert (judged["anchors_dir"] / "anchors.csv").is_file() and (judged["anchors_dir"] / "calibration.csv").is_file()


def test_judging(built, judged):
    questions = {q.number: q for q in G.load_questions(built)}
    scored = judged["scored"]
    ledger = {r["question_number"]: r for r in scored["ledger"]}
    for n, row in ledger.items():
        q, kind = questions[n], KINDS[n]
        if row["empty_answer"]:
            assert row["score"] == 0.0 and row["trials"] == 0
        elif kind == 0:  # a ground truth copy: automatic pass, no judge call
            assert row["auto_verdict"] == "pass" and row["score"] == 1.0 and row["trials"] == 0
        elif kind == 2 and row["path"] == "partial":  # a probability-0 distractor copy fails on this path
            assert row["auto_verdict"] == "fail" and row["score"] == 0.0
        elif row["auto_verdict"] is not None:  # a pass/fail distractor copy of class question or both
            assert kind == 2 and row["auto_verdict"] == "fail" and row["score"] == 0.0 and row["trials"] == 0
            assert q.types[q.distractors[0]] in ("negation", "manual")
        elif row["path"] == "pass_fail":
            assert row["trials"] == (3 if len(q.ground_truths) == 2 else 1)
            expected = {1: 1.0, 2: 0.0, 3: 0.0, 4: 0.0}[kind]
            assert row["score"] == expected, (n, row)
        else:
            assert row["trials"] == 2 * (len(q.distractors) + 1)
            assert 0 < row["score"] < 1 and row["delta"] is not None
    # a distractor copy of class "context" (anachronistic) is judged; of class question/both it fails at once
    autos = [r for r in ledger.values() if r["path"] == "pass_fail" and KINDS[r["question_number"]] == 2]
    assert autos and all((r["auto_verdict"] == "fail") or r["trials"] > 0 for r in autos)
    groups = scored["scores"]["groups"]
    for g in ("cloze", "generation", "knowledge"):
        cell = groups[g]
        assert cell["n"] == sum(1 for r in ledger.values() if r["group"] == g)
        assert cell["low"] <= cell["high"]
    assert scored["scores"]["bootstrap"]["layers"] == ["judgment", "instrument", "item"]
    assert scored["counts"]["unscored_questions"] == 0
    # every judge call is stored and a second scoring asks nothing
    assert judged["calls_after_rescore"] == judged["judge_calls"]
    assert judged["rescored"]["scores"] == scored["scores"]
    out = judged_dir(judged["run_dir"], judged["judge"].spec)
    assert (out / "ledger.csv").is_file() and (out / "delta_draws.npz").is_file()


def test_report(judged):
    entries = collect(judged["run_dir"], G.read_generation(judged["run_dir"]))
    text = generation_markdown(entries)
    assert "Table 4 layout" in text and "Judge reliability" in text and "cand" in text
    rows = ledger_rows(entries)
    assert len(rows) == 24 and {"score", "path", "answer"} <= set(rows[0])
    published = generation_markdown(entries, published=True)
    assert "GPT-5.6 (published)" in published and "71.7 [64.7, 75.2]" in published
    assert "free_gen_results_1.0.csv" in published


def test_bootstrap_layers(judged, built):
    """Dropping the judgment and instrument layers narrows the partial-credit interval (or
    leaves it), and the plug-in point does not move."""
    import numpy as np

    from histbench.eval.chronologic.substantive import aggregate_substantive

    loaded = judged["loaded"]
    ledger = judged["scored"]["ledger"]
    out = judged_dir(judged["run_dir"], judged["judge"].spec)
    draws = dict(np.load(out / "delta_draws.npz"))
    draws = {int(k.split("__")[1]): v for k, v in draws.items()}
    full = aggregate_substantive(ledger, draws, loaded.calibration, loaded.calibration_draws, n_resamples=400, seed=1)
    item = aggregate_substantive(ledger, draws, loaded.calibration, loaded.calibration_draws, n_resamples=400, seed=1,
                                 layers=("item",))
    a, b = full["channels"]["partial"], item["channels"]["partial"]
    assert a["estimate"] == b["estimate"]
    assert (a["high"] - a["low"]) >= 0.8 * (b["high"] - b["low"])
    with pytest.raises(EvalError, match="bootstrap layer"):
        aggregate_substantive(ledger, draws, loaded.calibration, [], layers=("nope",))


def test_unparsed_replies_fail_and_retry(built, chat_server, scripted_judge, tmp_path):
    """An unparsable pass/fail reply is asked once more; still unparsable, the trial fails
    (the question is scored, not dropped)."""
    questions = {q.number: q for q in G.load_questions(built)}
    q = questions[151]
    candidate = chat_server(lambda m: "[q=9.5] A fine answer." if f"QUESTION: {q.question}\n" in m[-1]["content"] else "", model="c2")

    def judge(messages):
        kind, question, a, b = judge_pair(messages)
        if kind == "pass_fail" and "A fine answer" in (a + b):
            return "I cannot decide."
        return scripted_judge(messages)

    judge_server = chat_server(judge, model="j2")
    backend = load_backend(candidate.spec(), FAST)
    run_dir = tmp_path / "run"
    G.generate(built, backend, run_dir)
    jb = load_backend(judge_server.spec(), FAST)
    build_anchors(built, jb, jb, tmp_path / "anchors", draws=DRAWS)
    loaded = load_anchors(tmp_path / "anchors")
    result = judge_run(built, run_dir, jb, jb, loaded, n_resamples=50)
    row = next(r for r in result["ledger"] if r["question_number"] == 151)
    assert row["score"] == 0.0 and row["retried"] == 1 and row["status"] == "scored"
    assert result["counts"]["pass_fail_unparsed"] == 1 and result["counts"]["pass_fail_retried"] == 1
    n_knowledge = sum(1 for x in questions.values() if x.group == "knowledge")
    assert result["scores"]["groups"]["knowledge"]["n"] == n_knowledge  # no question is dropped


def test_two_ground_truths_score_thirds(built, chat_server, scripted_judge, tmp_path):
    """Question 153 has two ground truths: three trials, the score is the share passed."""
    questions = {q.number: q for q in G.load_questions(built)}
    q = questions[153]
    candidate = chat_server(lambda m: "Candidate answer" if f"QUESTION: {q.question}\n" in m[-1]["content"] else "", model="c3")

    def judge(messages):
        kind, question, a, b = judge_pair(messages)
        if "Candidate answer" not in (a, b):
            return scripted_judge(messages)
        other = b if a == "Candidate answer" else a
        if other == q.options[0]:
            return '{"question fit": "C"}'  # both acceptable: passes against the first ground truth
        return '{"question fit": "B"}'  # an order-biased judge against the second

    judge_server = chat_server(judge, model="j3")
    backend = load_backend(candidate.spec(), FAST)
    run_dir = tmp_path / "run"
    G.generate(built, backend, run_dir)
    jb = load_backend(judge_server.spec(), FAST)
    build_anchors(built, jb, jb, tmp_path / "anchors", draws=DRAWS)
    loaded = load_anchors(tmp_path / "anchors")
    from histbench.eval.chronologic.judge import CANDIDATE, candidate_pass_fail_trials

    seen = set()
    for seed in range(6):
        result = judge_run(built, run_dir, jb, jb, loaded, seed=seed, n_resamples=50)
        row = next(r for r in result["ledger"] if r["question_number"] == 153)
        trials = candidate_pass_fail_trials(q, seed)
        # passes against gt0 (a tie); against gt1 only when the candidate is shown as B
        expected = sum(1 for t in trials if 0 in (t.first, t.second) or (t.first == 1 and t.second == CANDIDATE)) / 3
        assert row["trials"] == 3 and row["score"] == pytest.approx(expected)
        seen.add(round(row["score"], 3))
    assert seen <= {round(1 / 3, 3), round(2 / 3, 3), 1.0} and len(seen) >= 2


def test_interrupted_judging_resumes_without_repeating_a_call(built, chat_server, scripted_judge, tmp_path):
    candidate = chat_server(scripted_candidate(built), model="cand3")
    backend = load_backend(candidate.spec(), FAST)
    run_dir = tmp_path / "run"
    G.generate(built, backend, run_dir)
    first = chat_server(scripted_judge, model="judge3")
    judge = load_backend(first.spec(), FAST)
    build_anchors(built, judge, judge, tmp_path / "anchors", draws=DRAWS)
    loaded = load_anchors(tmp_path / "anchors", built)
    before = Counter(first.delivered_keys)
    first.die_after = first.delivered + 7  # the judge endpoint goes away after 7 more answers
    with pytest.raises(EvalError):
        judge_run(built, run_dir, judge, judge, loaded, n_resamples=50)
    asked_first = Counter(first.delivered_keys) - before
    assert sum(asked_first.values()) == 7
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
    assert all(not math.isnan(r["score"]) for r in result["ledger"])
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
    assert chat["counts"]["answered"] == 3 and chat["signature"]["text"] != plain["signature"]["text"]


def test_wrong_context_frames_follow_the_authors_groups(built, chat_server, tmp_path):
    """Paper 6.3; the authors' plan: frames permuted within frame types, character modelling apart."""
    from histbench.eval.chronologic.data import frame_group

    server = chat_server(lambda m: "An answer.", model="wf")
    backend = load_backend(server.spec(), FAST)
    result = G.generate(built, backend, tmp_path / "wrong", permute_frames=True, seed=3)
    questions = {q.number: q for q in G.load_questions(built)}
    donor = {int(k): v for k, v in result["frame_permutation"]["donor"].items()}
    assert result["frame_permutation"]["groups"] == "authors"

    def group(n):
        q = questions[n]
        return frame_group({"reasoning_type": q.reasoning_type, "frame_type": q.frame_type}, "authors")

    assert all(group(n) == group(d) for n, d in donor.items())
    assert sum(n != d for n, d in donor.items()) >= 20
    moved = [n for n, d in donor.items() if n != d and questions[n].reasoning_type != questions[d].reasoning_type]
    assert moved  # unlike the per-type permutation, types mix within a group


def test_run_folders_in_the_run_format(judged, tmp_path):
    """Issue 43: a judged generation run and an anchors folder get run.json, results.json and
    items.jsonl (as `histbench eval` writes them after every run); the judges' scores are
    metrics of the judged folder's system, the answer count the headline."""
    import shutil

    from histbench.core.runfolder import RunFolder, validate
    from histbench.eval.chronologic import EVALUATOR

    run = tmp_path / "run"
    shutil.copytree(judged["run_dir"], run)
    assert EVALUATOR.is_own_folder(run)
    EVALUATOR.finish_run(run)
    folder = RunFolder.open(run, benchmark="chronologic")
    for number, line in enumerate((run / "records.jsonl").read_text().splitlines(), 1):
        validate("record", json.loads(line), run / "records.jsonl", row=number)
    assert folder.run["model"] == judged["result"]["model"]["spec"] and folder.run["baseline"] is None
    assert folder.results["signature"] == judged["result"]["signature"]["text"]
    judged_folder = judged_dir(run, judged["judge"].spec).name
    assert set(folder.run["files"]["extras"]) == {"chronologic.json", judged_folder}
    assert folder.run["viewer"]["labels"]["system"] == {judged_folder: f"judge {judged['judge'].spec}"}
    metrics = {m["id"]: m for m in folder.metrics}
    empty = judged["result"]["counts"]["empty_answers"]
    assert metrics["answers"]["estimate"] == 24 - empty and metrics["answers"]["headline"]
    assert [m["id"] for m in folder.metrics if m["headline"]] == ["answers"]
    scores = judged["scored"]["scores"]
    for g in ("cloze", "generation", "knowledge"):
        metric = metrics[f"substantive/{judged_folder}/group:{g}"]
        cell = scores["groups"][g]
        assert metric["estimate"] == cell["estimate"] and metric["interval"] == [cell["low"], cell["high"]]
        assert metric["system"] == judged_folder and metric["unit"] == "points" and metric["n"] == cell["n"]
    assert metrics[f"substantive/{judged_folder}/channel:pass_fail"]["estimate"] == scores["channels"]["pass_fail"]["estimate"]
    assert metrics[f"substantive/{judged_folder}/overall"]["estimate"] == scores["overall"]["estimate"]
    assert len(folder.items) == 24 and {i["outcome"] for i in folder.items} <= {"unscored", "invalid"}
    assert sum(i["outcome"] == "invalid" for i in folder.items) == empty
    assert all(i["messages"][0]["role"] == "system" for i in folder.items if i["outcome"] == "unscored")
    # the judge mode's run folder is the generation run: `histbench eval` finishes it after judging
    from argparse import Namespace

    assert EVALUATOR.run_folder(Namespace(mode="judge", run=run, out=None)) == run
    assert EVALUATOR.run_folder(Namespace(mode="self-rejection", run=run, out=None)) == run
    assert EVALUATOR.run_folder(Namespace(mode="generate", run=None, out=run)) == run

    anchors = tmp_path / "anchors"
    shutil.copytree(judged["anchors_dir"], anchors)
    EVALUATOR.finish_run(anchors)
    folder = EVALUATOR.open_run(anchors)
    metrics = {m["id"]: m for m in folder.metrics}
    pooled = judged["anchors"]["reliability"]["pooled"]
    assert metrics["reliability/alpha"]["estimate"] == pooled["alpha_pooled"] == 0.0
    assert metrics["calibration/slope"]["estimate"] == judged["anchors"]["calibration"]["slope"]
    assert {"anchors.json", "anchors.csv", "calibration.csv"} <= set(folder.run["files"]["extras"])
    assert folder.items == [] and folder.label == "anchors"
