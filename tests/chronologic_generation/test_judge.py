"""Judge prompts, verdict parsing, pass/fail scoring and judge reliability (paper A.2.1, A.2.2)."""

from __future__ import annotations

import math

import pytest

from histbench.eval.chronologic import judge as J
from histbench.eval.chronologic.generation import (
    clean_answer,
    load_prompts,
    load_questions,
    question_from_row,
)


@pytest.fixture(scope="module")
def questions(built):
    return {q.number: q for q in load_questions(built)}


@pytest.mark.parametrize(("text", "verdict", "route"), [
    ('{"better": "A"}', "A", "json"),
    ('{"better": "tie"}', "tie", "json"),
    ('Both are fine.\n```json\n{"better": "B"}\n```', "B", "fenced"),
    ('My reasoning... {"Better": "Answer A"} done', "A", "embedded"),
    ("{'better': 'b',}", "B", "repaired"),
    ('{"winner": 2}', "B", "json"),
    ('{"verdict": "both"}', "tie", "json"),
    ("<think>A looks better? no</think>\nVerdict: B", "B", "text"),
    ("After careful thought.\n**Answer B**", "B", "text"),
    ("Tie", "tie", "text"),
])
def test_parse_verdict(text, verdict, route):
    assert J.parse_verdict(text) == {"verdict": verdict, "route": route}


@pytest.mark.parametrize("text", ["", "I cannot decide.", '{"better": "neither"}', '{"score": 3}',
                                  "A is longer but B is older."])
def test_unparsable_verdicts_fail_clearly(text):
    with pytest.raises(ValueError):
        J.parse_verdict(text)


def test_pass_fail_score_one_ground_truth():
    assert J.pass_fail_score([True]) == 1.0
    assert J.pass_fail_score([False]) == 0.0
    assert math.isnan(J.pass_fail_score([None]))


def test_pass_fail_score_two_ground_truths_gives_thirds():
    """A.2.1: both tested; a split result is re-asked once in the other order: 0, 1/3, 2/3, 1."""
    assert J.pass_fail_score([True, True]) == 1.0
    assert J.pass_fail_score([False, False]) == 0.0
    assert not J.needs_tiebreak([True, True]) and not J.needs_tiebreak([False, False])
    assert J.needs_tiebreak([True, False]) and J.needs_tiebreak([False, True])
    assert J.pass_fail_score([True, False], tiebreak=True) == pytest.approx(2 / 3)
    assert J.pass_fail_score([False, True], tiebreak=False) == pytest.approx(1 / 3)
    assert math.isnan(J.pass_fail_score([True, False]))


def test_a_tie_or_a_preference_for_the_candidate_passes():
    trial = J.Comparison(1, J.PASS_FAIL, J.CANDIDATE, 0, "candidate")
    assert J.candidate_passes(trial, "A") is True
    assert J.candidate_passes(trial, "tie") is True
    assert J.candidate_passes(trial, "B") is False
    assert J.candidate_passes(trial.reversed(), "B") is True
    assert J.candidate_passes(trial, None) is None


def test_candidate_order_is_seeded_and_the_tiebreak_reverses_it(questions):
    q = questions[153]  # two ground truths
    first = J.candidate_pass_fail_trials(q, seed=0)
    assert first == J.candidate_pass_fail_trials(q, seed=0)
    assert [t.second if t.first == J.CANDIDATE else t.first for t in first] == [0, 1]
    tb = J.tiebreak_trial(first[1])
    assert (tb.first, tb.second) == (first[1].second, first[1].first) and tb.purpose == "tiebreak"
    # across many questions and seeds both orders occur, about half each
    flips = [J.seeded_flip(s, "pass_fail", n, 0) for s in range(20) for n in range(50)]
    assert 0.4 < sum(flips) / len(flips) < 0.6


def test_alpha_uses_substantive_distractors_only(questions):
    """A.2.1: purely stylistic distractors are not used for alpha."""
    q101 = questions[101]  # negation, anachronistic_gpt-4o-mini, same_book, anachronistic_metadataless_llama
    assert J.eligible_distractors(q101) == [1, 3]
    q163 = questions[163]  # manual x4 and one anachronistic_manual (knowledge the period lacked): all substantive
    assert J.eligible_distractors(q163) == [1, 2, 3, 4, 5]
    q172 = questions[172]  # anachronistic_1915 and anachronistic_wikipedia are stylistic
    assert J.eligible_distractors(q172) == [2, 4]
    trials = J.reliability_trials(questions[153])  # 2 ground truths x 3 distractors x 2 orders + 2 beta
    assert sum(t.purpose == "alpha" for t in trials) == 12
    assert [(t.first, t.second) for t in trials if t.purpose == "beta"] == [(0, 1), (1, 0)]


def test_reliability_counts_ties_as_failures_and_halves_beta(questions):
    q = questions[153]
    trials = J.reliability_trials(q)
    verdicts = []
    for t in trials:
        if t.purpose == "beta":
            verdicts.append("A" if t.first == 0 else "tie")  # one of two beta trials is an error
        elif (t.first, t.second) in ((0, 2), (3, 1)):
            verdicts.append("tie")  # a tie with a distractor is a failure
        elif (t.first, t.second) == (4, 0):
            verdicts.append("A")  # preferring the distractor is a failure
        elif (t.first, t.second) == (1, 4):
            verdicts.append(None)  # unparsed: not counted as a trial
        else:
            verdicts.append("A" if t.first in q.ground_truths else "B")
    r = J.tally_reliability(q, trials, verdicts)
    assert (r.alpha_trials, r.alpha_failures, r.unparsed) == (11, 3, 1)
    assert r.alpha == pytest.approx(3 / 11)
    assert r.moves_to_partial  # 0.273 > 0.25
    assert (r.beta_trials, r.beta_errors) == (2, 1)
    other = J.QuestionReliability(999, alpha_trials=20, alpha_failures=1, beta_trials=4, beta_errors=1)
    pooled = J.pooled_reliability([r, other])
    assert pooled["moved_to_partial"] == [153]
    assert pooled["alpha_pooled"] == pytest.approx(1 / 20)  # over the questions that stay
    assert pooled["alpha_pooled_all"] == pytest.approx(4 / 31)
    assert pooled["beta_raw"] == pytest.approx(0.25) and pooled["beta"] == pytest.approx(0.125)


def test_exactly_a_quarter_stays_on_the_pass_fail_path():
    assert not J.QuestionReliability(1, alpha_trials=8, alpha_failures=2).moves_to_partial
    assert J.QuestionReliability(1, alpha_trials=8, alpha_failures=3).moves_to_partial


def test_prompts_show_the_substantive_frame_rubric_and_guide(questions):
    prompts = load_prompts()
    q = questions[131]  # partial credit, two ground truths
    pf = questions[151]
    _, text = J.judge_text(pf, J.Comparison(151, J.PASS_FAIL, J.CANDIDATE, 0, "candidate"), prompts, candidate="An answer")
    assert pf.judge_frame in text and pf.question in text
    assert "Answer A:\nAn answer\n\nAnswer B:\n" + pf.options[0] in text
    assert '{"better": "tie"}' in text
    _, with_gt = J.judge_text(q, J.Comparison(131, J.PARTIAL, 0, 2, "anchor"), prompts)
    _, without_gt = J.judge_text(q, J.Comparison(131, J.PARTIAL, 3, 2, "anchor"), prompts)
    assert q.frame in with_gt
    for reason in q.rubric:
        assert reason in with_gt and reason in without_gt
    assert "known to fit this context" not in with_gt
    assert "known to fit this context" in without_gt and q.options[0] in without_gt
    assert "tie is not allowed" in with_gt
    no_rubric = questions[133]
    _, text = J.judge_text(no_rubric, J.Comparison(133, J.PARTIAL, J.CANDIDATE, 0, "candidate"), prompts, candidate="x")
    assert "may be rejected" not in text
    request = J.judge_request(q, J.Comparison(131, J.PARTIAL, 0, 2, "anchor"), prompts)
    assert request.temperature == 0.0 and request.messages[0]["role"] == "system"


def test_prompt_hashes_cover_each_section():
    prompts = load_prompts()
    assert set(prompts.hashes) >= {"candidate", "pass_fail", "partial"}
    assert len(set(prompts.hashes.values())) == len(prompts.hashes)


def test_clean_answer():
    assert clean_answer("<think>hmm</think>\n  Answer: Lisbon ") == "Lisbon"
    assert clean_answer("**Answer:** 126 wine gallons") == "126 wine gallons"
    assert clean_answer(None) == "" and clean_answer("   ") == ""


def test_question_rows_are_checked():
    from histbench.builders.core.errors import EvalError

    row = {"question_number": 1, "metadata_frame": "f", "main_question": "q", "answer_strings": ["a", "b"],
           "answer_probabilities": [0.0, 0.0], "answer_types": ["manual", "manual"], "reasoning_type": "knowledge",
           "group": "knowledge", "partial_credit": 0}
    with pytest.raises(EvalError, match="no ground truth"):
        question_from_row(row, "q.parquet", 4)
    with pytest.raises(EvalError, match="main_question"):
        question_from_row({**row, "main_question": None}, "q.parquet", 4)
