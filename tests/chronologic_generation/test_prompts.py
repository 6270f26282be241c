"""The prompts of free generation and of both judges, byte for byte as the authors' code renders
them (paper 5.2, A.2; Appendix E.3's "insufficient information" counsel).

data/authors_prompts.json holds sha256 hashes of the prompts that the authors' own
functions produce on the real 100-question sample (free_generation.build_prompts and
normalize_answer; judge_prompts_nocontext.build_judge_prompt; bt/prompts.build_bt_prompt in
the default "rationales" mode with the bt/design.py anchor and candidate designs and master
seed 20260728), computed by running their code outside the repository.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from histbench.core.errors import EvalError
from histbench.eval.chronologic import generation as G
from histbench.eval.chronologic import judge as J

from .conftest import real_question, reference


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def prompts():
    return G.load_prompts()


@pytest.fixture(scope="module")
def authors():
    return reference("authors_prompts.json")


def test_generation_prompts_are_the_authors(real_rows, prompts, authors):
    system_kinds = Counter()
    for row in real_rows:
        q = real_question(row)
        expected = authors["questions"][str(q.number)]["generation"]
        system, user, budget, spec = G.generation_prompt(q, prompts)
        assert (sha(system), sha(user)) == (expected["system_sha256"], expected["user_sha256"]), q.number
        assert budget == expected["max_tokens"] and spec == expected["length_spec"], q.number
        plain = G.generation_request(q, prompts, prompt_style="plain")
        assert sha(plain.prompt) == expected["hf_prompt_sha256"]
        for answer, normalized in expected["normalized"].items():
            assert G.normalize_answer(answer, q.options) == normalized
        system_kinds[system.startswith("You will be asked")] += 1
    # Appendix E.3: knowledge, inference and abstention questions (27 in the sample) and one
    # constrained-generation question offering "insufficient information" get the counsel
    assert system_kinds[True] == 28


def test_pass_fail_prompts_are_the_authors(real_rows, prompts, authors):
    candidate = authors["candidate_text"]
    for row in real_rows:
        q = real_question(row)
        expected = authors["questions"][str(q.number)]["pass_fail"]
        g = q.ground_truths[0]
        first = J.judge_messages(q, J.Comparison(q.number, J.PASS_FAIL, g, J.CANDIDATE, "candidate"), prompts, candidate)
        second = J.judge_messages(q, J.Comparison(q.number, J.PASS_FAIL, J.CANDIDATE, g, "candidate"), prompts, candidate)
        assert len(first) == 1 and first[0]["role"] == "user"  # no system message, as judge_scoring_nocontext sends it
        assert (sha(first[0]["content"]), sha(second[0]["content"])) == (expected["gt_first"], expected["gt_second"]), q.number
        clause = "'insufficient information' is a valid response" in first[0]["content"]
        assert clause == (q.reasoning_type in ("knowledge", "abstention"))


def test_partial_credit_prompts_are_the_authors(real_rows, prompts, authors):
    candidate = authors["candidate_text"]
    checked = Counter()
    for row in real_rows:
        q = real_question(row)
        expected = authors["questions"][str(q.number)].get("partial")
        if q.partial_credit == 0:
            assert expected is None
            continue
        index = {name: i for i, name in enumerate(q.item_ids)} | {"cand": J.CANDIDATE}
        for key, digest in expected["anchor_sha256"].items():
            a, b = key.split("|")
            system, user = (m["content"] for m in J.judge_messages(q, J.Comparison(q.number, J.PARTIAL, index[a], index[b], "anchor"), prompts))
            assert sha(system + "\x00" + user) == digest, (q.number, key)
            checked["anchor"] += 1
        assert q.item_ids[J.reference_ground_truth(q)] == expected["reference_gt"]
        trials = J.candidate_partial_trials(q)
        assert [q.item_ids[w] for w in trials[0].withdrawn] == expected["withdrawn"]
        names = {f"{'cand' if t.first < 0 else q.item_ids[t.first]}|{'cand' if t.second < 0 else q.item_ids[t.second]}": t for t in trials}
        assert set(names) == set(expected["candidate_sha256"])
        for key, digest in expected["candidate_sha256"].items():
            system, user = (m["content"] for m in J.judge_messages(q, names[key], prompts, candidate))
            assert sha(system + "\x00" + user) == digest, (q.number, key)
            checked["candidate"] += 1
    assert checked == {"anchor": 1174, "candidate": 456}


def test_retry_sentences_and_token_caps(prompts):
    assert prompts.section("pass_fail")["retry_suffix"].startswith("\n\nIMPORTANT: Your previous response was not valid JSON.")
    assert prompts.section("partial")["retry_suffix"].startswith("\n\nYour previous reply could not be parsed.")
    assert J.judge_max_tokens(prompts, J.PASS_FAIL, "medium") == 4096
    assert J.judge_max_tokens(prompts, J.PARTIAL, "none") == 50
    with pytest.raises(EvalError):
        J.judge_max_tokens(prompts, J.PARTIAL, "extreme")


def _question(options, types=None, probabilities=None, category="", reasoning_type="sentence_cloze"):
    types = types or ["ground_truth"] + ["manual"] * (len(options) - 1)
    probabilities = probabilities or [1.0] + [0.0] * (len(options) - 1)
    return G.question_from_row({"question_number": 1, "metadata_frame": "F.", "main_question": "Q?", "answer_strings": options,
                                "answer_probabilities": probabilities, "answer_types": types, "reasoning_type": reasoning_type,
                                "group": "cloze", "partial_credit": 0, "question_category": category})


@pytest.mark.parametrize("options,category,upper,spec", [
    # short answers: median <= 6 words, few sentence-like -> a few words / a short phrase
    (["126 wine gallons", "20 wine gallons", "a dozen", "Burgundy"], "", 3, "a few words"),
    (["the river in the valley below", "a cart on the road to town", "the old mill", "two fat geese"], "", 6,
     "a short phrase of about 3\u20136 words"),
    # one sentence each: steps of 10 words, the lower bound pulled down to the shortest answer
    (["The gun is of great use in the defence of harbours.", "It is not.", "Rifles will win the day for sure.",
      "Smooth bores still have a place on the coast."], "", 10, "one sentence of about 3\u201310 words"),
    # no option at all
    ([""], "", 50, "about 20\u201350 words"),
    # verse of a poetry question
    (["Line one\nline two", "Another line\nand more"], "poetry_form", 75, "lines of verse, as specified in the question"),
])
def test_length_request(options, category, upper, spec, prompts):
    """free_generation.make_length_spec: the request and its upper bound (budget = 2 x upper)."""
    q = _question([o or "x" for o in options], category=category) if options != [""] else None
    got = G.length_request(options if q is None else q.options, category, prompts)
    assert got == (upper, spec)


def test_token_budget_and_reasoning(prompts):
    q = _question(["126 wine gallons", "20 wine gallons", "a dozen", "Burgundy"])
    assert G.generation_prompt(q, prompts)[2] == 16  # max(16, 2 x 3)
    assert G.generation_request(q, prompts, reasoning=True).max_new_tokens == 25000
    assert G.generation_request(q, prompts, max_new_tokens=7).max_new_tokens == 7


def test_mask_overlap(prompts):
    """bt/prompts.mask_self_overlap: a run of 4+ words (2+ inside quotes) with 2 content words."""
    section = prompts.section("partial")
    reason = "adopts a style archaic for 1872, e.g. 'a climate eminently mild and salubrious', and so on"
    assert J.mask_overlap(reason, ["The air of the place: a climate eminently mild and salubrious."], section) == \
        "adopts a style archaic for 1872, e.g. '[masked phrase]', and so on"
    # quoted two-word runs are masked; unquoted three-word runs are not; stopwords do not count
    assert J.mask_overlap("it says 'old oak' twice", ["the old oak stood"], section) == "it says '[masked phrase]' twice"
    assert J.mask_overlap("the old oak stood there", ["x the old oak y"], section) == "the old oak stood there"
    assert J.mask_overlap("of the town and", ["of the town and"], section) == "of the town and"


def test_fill_leaves_other_braces(prompts):
    assert G.fill('{"a": 1} {x}', {"x": "{y}", "y": "no"}) == '{"a": 1} {y}'
    with pytest.raises(EvalError):
        G.fill("{frame} {question}", {"frame": "f"})


def test_prompt_file_errors(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("generation: {user: x}\n", encoding="utf-8")
    with pytest.raises(EvalError, match="lacks generation"):
        G.load_prompts(bad)
