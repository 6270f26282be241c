"""Verdicts, trials, automatic verdicts and reliability (paper A.2.1, A.2.2), following the
authors' judge_prompts_nocontext.py, judge_scoring_nocontext.py, bt/prompts.py, bt/design.py,
bt/collect.py and substantive/verdicts.py."""

from __future__ import annotations

import random

import pytest

from histbench.eval.chronologic import judge as J
from histbench.eval.chronologic.anchors import wins_from
from histbench.eval.chronologic.generation import question_from_row


def make_question(types, probabilities=None, number=7, reasoning_type="knowledge", partial_credit=0):
    n = len(types)
    probabilities = probabilities or [1.0 if t == "ground_truth" else 0.0 for t in types]
    return question_from_row({"question_number": number, "metadata_frame": "An 1897 encyclopedia.", "main_question": "Q?",
                              "answer_strings": [f"Option {i}." for i in range(n)], "answer_probabilities": probabilities,
                              "answer_types": types, "reasoning_type": reasoning_type, "group": "knowledge",
                              "partial_credit": partial_credit})


@pytest.mark.parametrize("text,verdict", [
    ('{"question fit": "A"}', "A"),
    ('```json\n{"question fit": "b"}\n```', "B"),
    ('Both are right.\n{"question_fit": "C"}', J.TIE),
    ('<think>hmm {"question fit": "A"}</think>{"question fit": "B"}', "B"),
])
def test_parse_pass_fail(text, verdict):
    assert J.parse_pass_fail(text) == verdict


@pytest.mark.parametrize("text", ["A", "Answer B is better", '{"question fit": "D"}', '{"better": "A"}', "{bad json}", ""])
def test_parse_pass_fail_rejects(text):
    """judge_prompts_nocontext.parse_judge_response accepts only the JSON object."""
    with pytest.raises(ValueError):
        J.parse_pass_fail(text)


@pytest.mark.parametrize("text,verdict", [
    ('{"context fit": "A"}', "A"), ("b", "B"), ('```\n{"Context_Fit": "B"}\n```', "B"), ('I think {"context fit": " a "}', "A"),
])
def test_parse_partial(text, verdict):
    assert J.parse_partial(text) == verdict


@pytest.mark.parametrize("text", ['{"context fit": "tie"}', '{"context fit": "C"}', "Neither", '{"question fit": "A"}', ""])
def test_parse_partial_rejects(text):
    """bt/prompts.parse_bt_response: ties, C and refusals are unparsed."""
    with pytest.raises(ValueError):
        J.parse_partial(text)


def test_two_ground_truths_always_run_three_pass_fail_trials():
    """judge_scoring_nocontext._build_comparison_plan: an even number of ground truths gets one
    of them (seeded) in both orders, so a split cannot be 50/50."""
    q = make_question(["ground_truth", "ground_truth", "manual", "negation"])
    doubled = set()
    for seed in range(20):
        trials = J.candidate_pass_fail_trials(q, seed)
        assert len(trials) == 3
        counts = {g: sum(1 for t in trials if g in (t.first, t.second)) for g in (0, 1)}
        both = next(g for g, c in counts.items() if c == 2)
        pair = [t for t in trials if both in (t.first, t.second)]
        assert {pair[0].first, pair[1].first} == {both, J.CANDIDATE}
        doubled.add(both)
    assert doubled == {0, 1}
    one = make_question(["ground_truth", "manual", "manual"])
    assert len(J.candidate_pass_fail_trials(one, 0)) == 1
    assert J.pass_fail_score([True, False, True]) == pytest.approx(2 / 3)
    assert J.pass_fail_score([False, False, True]) == pytest.approx(1 / 3)


def test_unparsed_pass_fail_verdict_fails():
    trial = J.Comparison(7, J.PASS_FAIL, J.CANDIDATE, 0, "candidate")
    assert J.candidate_passes(trial, None) is False
    assert J.candidate_passes(trial, J.TIE) and J.candidate_passes(trial, "A") and not J.candidate_passes(trial, "B")


def test_reference_ground_truth_is_the_authors_seeded_choice():
    """bt/design.select_reference_gt: random.Random(derive_seed(20260728, qid, 'refgt')).choice(sorted ids)."""
    import hashlib

    q = make_question(["ground_truth", "manual", "ground_truth", "manual"], number=888)
    digest = hashlib.sha256(b"20260728|888|refgt").digest()
    expected = random.Random(int.from_bytes(digest[:8], "big") >> 1).choice(["gt0", "gt1"])
    assert q.item_ids == ["gt0", "d0", "gt1", "d1"]
    assert q.item_ids[J.reference_ground_truth(q)] == expected
    trials = J.candidate_partial_trials(q)
    reference = J.reference_ground_truth(q)
    other = 2 if reference == 0 else 0
    assert all(other not in (t.first, t.second) and t.withdrawn == (other,) for t in trials)
    assert len(trials) == 2 * 3  # the reference and two distractors, both orders
    # leave-one-out of a ground truth faces the other ground truth
    loo = J.loo_trials(q, reference)
    assert {t.second for t in loo if t.first == reference} == {other, 1, 3} and loo[0].withdrawn == ()


def test_automatic_verdicts():
    """substantive/verdicts.py: lower-case, ASCII punctuation dropped, trimmed; ground truth wins."""
    q = make_question(["ground_truth", "negation", "anachronistic_gpt-4o", "manual"], probabilities=[1.0, 0.0, 0.0, 0.5])
    assert J.auto_verdict(q, "  option 0 ", J.PASS_FAIL) == "pass"
    assert J.auto_verdict(q, "Option 1!", J.PASS_FAIL) == "fail"  # negation: class question
    assert J.auto_verdict(q, "Option 2.", J.PASS_FAIL) is None  # anachronistic: class context, judged
    assert J.auto_verdict(q, "Option 2.", J.PARTIAL) == "fail"  # every probability-0 distractor on this path
    assert J.auto_verdict(q, "Option 3.", J.PARTIAL) is None  # partly acceptable: judged
    assert J.auto_verdict(q, "...", J.PARTIAL) is None
    assert J.normalize_for_identity("Duke Of Anjou.") == "duke of anjou"


def test_penalty_classes_from_the_authors():
    """tests/test_verdicts.py of the authors: negation and same_book are "question",
    anachronistic_manual is "context"."""
    penalties = J.load_penalties()
    assert penalties["negation"] == penalties["same_book"] == "question"
    assert penalties["anachronistic_manual"] == "context" and penalties["manual"] == "both"
    q = make_question(["ground_truth", "other_book_1911", "anachronistic_2020", "same_character", "weird_type"])
    assert [J.penalty_class(q, i) for i in range(5)] == [None, "context", "context", "question", None]


def test_alpha_counts_a_tie_with_a_context_distractor_as_correct():
    """judge_alpha_reliability_nocontext.compute_reliability: every classed distractor, both
    orders; a tie is correct only against a "context" distractor; unknown types are skipped."""
    q = make_question(["ground_truth", "anachronistic_gpt-4o", "negation", "weird_type"])
    trials = J.reliability_trials(q)
    assert [(t.first, t.second) for t in trials] == [(0, 1), (1, 0), (0, 2), (2, 0)]
    verdicts = [J.TIE, J.TIE, J.TIE, "B"]  # ties with the context distractor; a tie and a win with the negation
    r = J.tally_reliability(q, trials, verdicts)
    assert (r.alpha_trials, r.alpha_failures) == (4, 1)
    r = J.tally_reliability(q, trials, [None, "A", "A", "A"])  # an unparsed reply and distractor wins fail
    assert (r.alpha_failures, r.unparsed) == (3, 1) and r.over_threshold
    two = make_question(["ground_truth", "ground_truth", "manual"])
    beta = [t for t in J.reliability_trials(two) if t.purpose == "beta"]
    assert len(beta) == 2
    r = J.tally_reliability(two, beta, [J.TIE, "A"])
    pooled = J.pooled_reliability([r])
    assert pooled["beta_raw"] == 0.5 and pooled["beta"] == 0.25


def test_unparsed_pair_is_dropped_with_its_partner():
    """bt/collect.py: an unparseable call drops its AB/BA group."""
    trials = [J.Comparison(1, J.PARTIAL, 0, 1, "anchor"), J.Comparison(1, J.PARTIAL, 1, 0, "anchor"),
              J.Comparison(1, J.PARTIAL, 0, 2, "anchor"), J.Comparison(1, J.PARTIAL, 2, 0, "anchor")]
    wins, dropped = wins_from(trials, ["A", None, "B", "A"])
    assert wins == [(2, 0), (2, 0)] and dropped == 2


def test_ask_retries_once_with_the_retry_sentence(built, chat_server, tmp_path):
    """judge_prompts_nocontext.score_one_comparison: a malformed reply is asked again with
    the retry sentence; still malformed, the trial fails (verdict None)."""
    from histbench.core.backends import load_backend
    from histbench.core.runstore import RunStore
    from histbench.eval.chronologic.generation import load_prompts, load_questions

    prompts = load_prompts()
    suffix = prompts.section("pass_fail")["retry_suffix"]
    q = load_questions(built)[0]

    def reply(messages):
        text = messages[-1]["content"]
        if "STUBBORN" in text:
            return "I refuse."
        return '{"question fit": "C"}' if text.endswith(suffix) else "no JSON here"

    server = chat_server(reply, model="retry-judge")
    backend = load_backend(server.spec(), {"max_retries": 0, "timeout": 10})
    store = RunStore.open(tmp_path / "store", backend=backend, options={})
    trials = [(q, J.Comparison(q.number, J.PASS_FAIL, J.CANDIDATE, q.ground_truths[0], "candidate"), "fine"),
              (q, J.Comparison(q.number, J.PASS_FAIL, J.CANDIDATE, q.ground_truths[0], "candidate"), "STUBBORN")]
    answers = J.ask(store, trials, prompts, max_new_tokens=50, desc="t")
    assert answers == [{"verdict": J.TIE, "retried": True}, {"verdict": None, "retried": True}]
    assert server.delivered == 4
