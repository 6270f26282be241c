"""The authors' published instruments and rows (a new model on the paper's scale), and the
paper's further analyses: self-rejection (5.3), memorisation (section 3), human agreement
(section 8, Appendix B)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from histbench.core.backends import load_backend
from histbench.core.errors import EvalError
from histbench.eval.chronologic import analyses as A
from histbench.eval.chronologic import generation as G
from histbench.eval.chronologic.anchors import build_anchors, load_anchors
from histbench.eval.chronologic.published import PublishedInstruments, published_rows, shipped_figures
from histbench.eval.chronologic.substantive import judge_run

from .test_end_to_end import DRAWS, FAST, scripted_candidate

PUBLISHED_SLOPE = 0.9855640812820544  # bt_calibration_anthropic_claude-sonnet-5__0.8__j-medium__pm-rationales.json


def test_published_rows_and_figures():
    rows, source = published_rows()
    assert source == "chronologic/results/freegen/free_gen_results_1.0.csv (paper Tables 4 and 7)"
    by_model = {r["model"]: r for r in rows}
    assert len(rows) == 13 and by_model["GPT-5.6"]["generation"] == "71.7" and by_model["Kimi K3"]["effort"] == "max"
    assert (by_model["Talkie 1930 13B base"]["cloze_lo"], by_model["Talkie 1930 13B base"]["cloze_hi"]) == ("0.8", "3.3")
    figures = shipped_figures()
    assert figures["calibration"]["slope"] == PUBLISHED_SLOPE and figures["calibration"]["prior_scale"] == 3.0
    assert figures["reliability"]["alpha"] == 0.027 and figures["reliability"]["beta"] == 0.042


def _authors_log(tmp_path, anchors: dict, questions) -> tuple:
    """Write a judgment log and a reliability file in the authors' formats from anchors
    histbench built with a scripted judge."""
    by_number = {q.number: q for q in questions}
    lines = []
    for key, t in anchors["tournaments"].items():
        q = by_number[int(key)]
        seen: dict = {}
        for winner, loser in t["wins"]:
            pair = (min(winner, loser), max(winner, loser))
            first, second = pair if seen.setdefault(pair, 0) == 0 else pair[::-1]  # both presentation orders
            seen[pair] += 1
            lines.append({"qid": key, "phase": "anchor", "first": q.item_ids[first], "second": q.item_ids[second], "repeat": 0,
                          "parse_ok": True, "choice": "A" if first == winner else "B", "dropped": False,
                          "judge": "anthropic/claude-sonnet-5"})
            for held in (winner, loser):
                lines.append({**lines[-1], "phase": f"loo:{q.item_ids[held]}"})
    lines.append({**lines[0], "repeat": 1, "choice": "B"})  # a later repeat: not used (--repeats 1)
    judgments = tmp_path / "bt_judgments.jsonl"
    judgments.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    per_question = {str(r["question_number"]): {"question_correct": r["alpha_trials"] - r["alpha_failures"],
                                                 "question_total": r["alpha_trials"], "question_invalid": 0}
                    for r in anchors["reliability"]["questions"]}
    per_question[next(iter(per_question))]["question_correct"] -= 1  # one judge error
    reliability = tmp_path / "llm_reliability.json"
    reliability.write_text(json.dumps({"judge_model": "anthropic/claude-sonnet-4-6", "per_question": per_question}))
    return judgments, reliability


def test_anchors_from_the_published_instruments(built, chat_server, scripted_judge, tmp_path):
    judge_server = chat_server(scripted_judge, model="pub-judge")
    judge = load_backend(judge_server.spec(), FAST)
    own = build_anchors(built, judge, judge, tmp_path / "own", draws=DRAWS)
    questions = G.load_questions(built)
    judgments, reliability = _authors_log(tmp_path, own, questions)
    draws = tmp_path / "bt_calib_draws.npz"
    np.savez(draws, cal_a=np.full(4, 2.197), cal_b=np.array([0.9, 1.0, np.nan, 1.1]), meta=np.array("{}"))
    published = PublishedInstruments.load(reliability, judgments, "shipped", draws)
    calls = judge_server.delivered
    result = build_anchors(built, None, None, tmp_path / "published", draws=DRAWS, published=published)
    assert judge_server.delivered == calls  # no judge was asked
    assert result["options"]["prior_sd"] == 3.0  # the published calibration's prior scale
    assert result["calibration"]["slope"] == PUBLISHED_SLOPE and result["calibration"]["source"] == "published"
    assert result["calibration_draws"] == [0.9, 1.0, 1.1]
    for key, t in result["tournaments"].items():
        assert sorted(map(tuple, t["wins"])) == sorted(map(tuple, own["tournaments"][key]["wins"]))
    pooled = result["reliability"]["pooled"]
    assert pooled["alpha_trials"] == own["reliability"]["pooled"]["alpha_trials"] and pooled["alpha_pooled"] > 0
    assert result["judges"]["partial"]["spec"] == "published:anthropic/claude-sonnet-5"
    held = [o for o in result["calibration_observations"] if "skipped" not in o]
    assert held and all(o["n_trials"] > 0 for o in held)
    # a candidate judged against the published anchors
    candidate = chat_server(scripted_candidate(built), model="pub-cand")
    run_dir = tmp_path / "run"
    G.generate(built, load_backend(candidate.spec(), FAST), run_dir)
    loaded = load_anchors(tmp_path / "published", built)
    scored = judge_run(built, run_dir, judge, judge, loaded, n_resamples=50)
    assert scored["anchors"]["published"]["calibration"]["source"].startswith("chronologic/modelasjudge/bt_artifacts/")
    assert scored["counts"]["unscored_questions"] == 0


def test_published_judgments_of_another_release_are_refused(built, tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"qid": "122", "phase": "anchor", "first": "gt0", "second": "d9", "repeat": 0, "parse_ok": True,
                               "choice": "A", "dropped": False}) + "\n")
    published = PublishedInstruments.load(judgments=log)
    with pytest.raises(EvalError, match="'d9'"):
        published.anchor_wins(next(q for q in G.load_questions(built) if q.number == 122))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "1"}\n')
    with pytest.raises(EvalError, match="lacks 'phase'"):
        PublishedInstruments.load(judgments=bad)


def test_self_rejection(built, chat_server, scripted_judge, tmp_path):
    """5.3: answers scored below 0.5 go back to their author against a ground truth; the
    authors' benchmark_binary_eval prompt; accuracy with a one-sided binomial test."""
    judge_server = chat_server(scripted_judge, model="sr-judge")
    judge = load_backend(judge_server.spec(), FAST)
    candidate_answers = scripted_candidate(built)
    questions = {q.number: q for q in G.load_questions(built)}

    def candidate(messages):
        user = messages[-1]["content"]
        if user.endswith("\nANSWER: ") and "\nA: " in user:  # the forced choice: prefers the ground truth
            a = user.split("\nA: ", 1)[1].split("\nB: ", 1)[0]
            truths = {q.options[q.ground_truths[0]] for q in questions.values()}
            return "A" if a in truths else "B"
        return candidate_answers(messages)

    server = chat_server(candidate, model="sr-cand")
    backend = load_backend(server.spec(), FAST)
    run_dir = tmp_path / "run"
    G.generate(built, backend, run_dir)
    build_anchors(built, judge, judge, tmp_path / "anchors", draws=DRAWS)
    judge_run(built, run_dir, judge, judge, load_anchors(tmp_path / "anchors"), n_resamples=50)
    result = A.self_rejection(built, run_dir, backend)
    assert result["trials"] > 5 and result["accuracy"] == 1.0 and result["p_value"] < 0.05
    body = server.bodies[-1]["messages"]
    assert body[0]["content"].startswith("You will be provided a historical context, a question, and two answers")
    assert body[1]["content"].startswith("CONTEXT: ") and "\nQUESTION: " in body[1]["content"]
    positions = {r["ground_truth_position"] for r in result["rows"]}
    assert positions == {"A", "B"}
    assert A.parse_letter("I choose B.") == "B"
    with pytest.raises(ValueError):
        A.parse_letter("neither")


def test_binomial_summary():
    out = A.binomial_summary(71, 100)
    assert out["accuracy"] == 0.71 and out["p_value"] < 1e-4 and out["low"] < 0.71 < out["high"]


def test_memorisation(built, chat_server, tmp_path):
    """Section 3: name cloze (Chang et al. 2023), exact match; skill scores per book and their
    correlation with benchmark scores from the same volumes."""
    items = [{"book": "histbench_sample_gar1907", "passage": "Then [MASK] said so.", "answer": "Gerty"},
             {"book": "histbench_sample_gar1907", "passage": "And [MASK] left.", "answer": "Ponyboy"},
             {"book": "histbench_sample_rail1876", "passage": "Mr. [MASK] spoke.", "answer": "Yealh-neddy",
              "options": ["Yealh-neddy", "Usha", "Sha-hehe", "Kin"]}]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    read = A.read_cloze_items(path)
    assert read[2]["options"] == ["Yealh-neddy", "Usha", "Sha-hehe", "Kin"] and read[0]["options"] is None
    server = chat_server(lambda m: "<name>Gerty</name>" if "Then [MASK]" in m[-1]["content"] else "<name>Usha</name>", model="mem")
    result = A.memorisation(built, read, load_backend(server.spec(), FAST), tmp_path / "mem")
    assert result["correct"] == 1 and result["items"] == 3
    assert result["skill_by_book"] == {"histbench_sample_gar1907": 0.5, "histbench_sample_rail1876": pytest.approx(-1 / 3)}
    # requests run concurrently: take the one that asked about the first passage
    prompt = next(b["messages"][0]["content"] for b in server.bodies if '"Then [MASK] said so."' in b["messages"][0]["content"])
    assert prompt.startswith("You have seen the following passage in your training data.") and '"Then [MASK] said so."' in prompt
    assert A.parse_name("<name> Gerty </name>") == "Gerty" and A.same_name("gerty.", "Gerty")
    assert A.skill_score(True, 4) == 1.0 and A.skill_score(False, 4) == pytest.approx(-1 / 3)
    from scipy.stats import pearsonr

    x, y = [0.1, 0.5, 0.2, 0.9], [0.3, 0.4, 0.1, 0.8]
    assert A.pearson(x, y)["r"] == pytest.approx(pearsonr(x, y).statistic)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"book": "b", "passage": "no mask", "answer": "x"}) + "\n")
    with pytest.raises(EvalError, match="no \\[MASK\\]"):
        A.read_cloze_items(bad)


def test_human_agreement_mapping():
    """Section 8: 10 points of score gap ~ 5 points above a coin flip; the gap beyond which the
    95% interval excludes 0.5. Pairs built with P(agree) = sigmoid(0.02 * gap)."""
    gaps, agree = [], []
    for gap in range(1, 61):
        p = 1 / (1 + np.exp(-0.02 * gap))
        n = 400
        k = round(n * p)
        gaps += [gap] * n
        agree += [1.0] * k + [0.0] * (n - k)
    out = A.human_agreement(gaps, agree)
    assert out["intercept"] == pytest.approx(0.0, abs=0.02) and out["slope"] == pytest.approx(0.02, abs=0.002)
    assert out["gain_per_step"] == pytest.approx(1 / (1 + np.exp(-0.2)) - 0.5, abs=0.005)
    assert 0 < out["significant_gap"] < 10

def test_human_pairs_file(tmp_path):
    file = tmp_path / "h.csv"
    file.write_text("score_a,score_b,preferred\n70,50,a\n40,60,a\n55,55,b\n10,90,b\n")
    gap, agreed = A.read_human_pairs(file)
    assert gap.tolist() == [20.0, 20.0, 80.0] and agreed.tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(EvalError):
        A.human_agreement([1, 2, 3], [1.0, 1.0, 1.0])
