"""Wrong-context frames (paper 6.3: a seeded derangement within each reasoning type) and
the likelihood prompt (the authors' own, one file, hashed into results)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from histbench.builders.chronologic.taxonomy import REASONING_TYPES
from histbench.core.errors import EvalError
from histbench.eval.chronologic.data import PromptTemplate, apply_frames, frame_permutation


def _questions():
    out = []
    for n in range(1, 13):
        rtype = "knowledge" if n <= 5 else ("character_modeling" if n <= 11 else "abstention")
        out.append({"question_number": n, "reasoning_type": rtype, "metadata_frame": f"frame {n}",
                    "main_question": f"q{n}"})
    out[1]["metadata_frame"] = out[0]["metadata_frame"]  # questions 1 and 2 share a frame text
    return out


def test_derangement_within_type():
    questions = _questions()
    perm = frame_permutation(questions, seed=0)
    types = {q["question_number"]: q["reasoning_type"] for q in questions}
    for number, donor in perm.donor.items():
        if number == 12:
            continue
        assert donor != number and types[donor] == types[number]
    assert sorted(perm.donor[n] for n in range(1, 6)) == [1, 2, 3, 4, 5]  # a permutation
    assert perm.kept_own == (12,)  # the only abstention question has no other frame to take
    assert frame_permutation(questions, seed=0) == perm
    assert any(frame_permutation(questions, seed=s).donor != perm.donor for s in range(1, 5))


def test_apply_frames_keeps_the_original():
    questions = _questions()
    perm = frame_permutation(questions, seed=1)
    applied = apply_frames(questions, perm)
    for q, a in zip(questions, applied, strict=True):
        assert a["frame_donor"] == perm.donor[q["question_number"]]
        assert a["metadata_frame"] == questions[a["frame_donor"] - 1]["metadata_frame"]
        assert a["original_metadata_frame"] == q["metadata_frame"] and a["main_question"] == q["main_question"]
    same = apply_frames(questions, None)
    assert all(a["metadata_frame"] == q["metadata_frame"] for q, a in zip(questions, same, strict=True))
    # questions 1 and 2 share their frame text: if one donates to the other it is reported
    assert set(perm.same_text) <= {1, 2}


HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parents[1] / "sources" / "chronologic" / "sample" / "chronologic_sample.jsonl"
PUBLIC_SAMPLE = HERE.parents[2] / "shared" / "realdata" / "chronologic" / "chronologic_en_1.0_sample.jsonl"
AUTHORS = json.loads((HERE / "data" / "authors_likelihood_prompts.json").read_text(encoding="utf-8"))
REMINDER = "If the author(s) of this text would not have been able to answer the question, reply 'insufficient information'."


def _records(path: Path) -> dict[int, dict]:
    return {r["question_number"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_likelihood_prompt_is_the_authors_byte_for_byte_per_reasoning_type():
    """Paper 5.1; the authors' prompt builder (benchmark_evaluation.py _build_question_text):
    the expected strings come from running their code on the bundled sample (see the data
    file's `how`). One full string per reasoning type, and every record by sha256."""
    template = PromptTemplate.load()
    records = _records(SAMPLE)
    expected = AUTHORS["bundled_sample"]["prompts_one_per_type"]
    assert set(expected) == set(REASONING_TYPES)
    for rtype, item in expected.items():
        prompt = template.render_context(records[item["question_number"]])
        assert prompt == item["prompt"], rtype
        assert (REMINDER in prompt) == (rtype in ("knowledge", "inference", "abstention")), rtype
        assert prompt.endswith("\nANSWER: ") and "\nQUESTION: " in prompt
    for number, sha in AUTHORS["bundled_sample"]["sha256"].items():
        assert _sha(template.render_context(records[int(number)])) == sha, number
    assert template.render_continuation("Lisbon") == "Lisbon"  # the option exactly as released


def test_likelihood_prompt_equals_the_authors_on_the_public_sample():
    """Every prompt of the public 100-question sample has the sha256 of the authors' own
    prompt for it (their _build_question_text run outside the repository); question 507, a
    constrained-generation question, gets the reminder through its answer options."""
    path = PUBLIC_SAMPLE
    if not path.is_file():
        pytest.skip("the public Chronologic-EN sample is not in ../shared/realdata/chronologic")
    template = PromptTemplate.load()
    records = _records(path)
    expected = AUTHORS["public_sample"]["sha256"]
    assert len(expected) == len(records) == 100
    wrong = [n for n, sha in expected.items() if _sha(template.render_context(records[int(n)])) != sha]
    assert wrong == []
    assert sorted(n for n, r in records.items() if template.gets_reminder(r)) == AUTHORS["public_sample"]["reminder"]
    assert records[507]["reasoning_type"] == "constrained_generation" and 507 in AUTHORS["public_sample"]["reminder"]


FRAME = "The following passage comes from a novel published in 1871."


@pytest.mark.parametrize(("rtype", "answers", "expected"), [
    # expected strings: the authors' _build_question_text on these records (run outside the repo)
    ("sentence_cloze", ["yes", "I DON'T KNOW"],
     f"{FRAME}\n{REMINDER}\nQUESTION: She said [missing word].\nANSWER: "),
    ("sentence_cloze", ["yes", "I don\u2019t know"],  # a curly apostrophe does not match their test
     f"{FRAME}\nQUESTION: She said [missing word].\nANSWER: "),
    ("character_modeling", ["Insufficient Information, sir.", "no"],
     f"{FRAME}\n{REMINDER}\nQUESTION: She said [missing word].\nANSWER: "),
    ("topic_sentence", ["yes", "no"], f"{FRAME}\nQUESTION: She said [missing word].\nANSWER: "),
])
def test_reminder_for_other_types_follows_the_answer_options(rtype, answers, expected):
    question = {"metadata_frame": FRAME, "main_question": "She said [missing word].", "reasoning_type": rtype,
                "answer_strings": answers}
    assert PromptTemplate.load().render_context(question) == expected


def test_prompt_template_files_are_checked_and_hashed(tmp_path):
    template = PromptTemplate.load()
    other = tmp_path / "t.yaml"
    other.write_text('lines: ["$metadata_frame", "", "$main_question", "", "Answer:"]\ncontinuation: " $answer"\n')
    plain = PromptTemplate.load(other)
    assert plain.sha256 != template.sha256 and plain.reminder is None
    q = {"metadata_frame": "Frame $1.", "main_question": "Question?", "reasoning_type": "knowledge", "answer_strings": ["a"]}
    assert plain.render_context(q) == "Frame $1.\n\nQuestion?\n\nAnswer:" and plain.render_continuation("a") == " a"
    for body, message in [
        ('lines: ["$main_question"]\ncontinuation: "$answer"\n', r"'lines' must use \$metadata_frame"),
        ('lines: ["$metadata_frame $main_question"]\ncontinuation: "x"\n', r"'continuation' must use \$answer"),
        ('lines: ["$metadata_frame", "$abstention_reminder", "$main_question"]\ncontinuation: "$answer"\n',
         "needs abstention_reminder.text"),
        ('lines: ["$metadata_frame $abstention_reminder", "$main_question"]\ncontinuation: "$answer"\n'
         'abstention_reminder: {text: "r"}\n', "must be a line of its own"),
        ('lines: ["$metadata_frame", "$question"]\ncontinuation: "$answer"\n', "must use"),
        ('context: "$metadata_frame $main_question"\ncontinuation: "$answer"\n', "'lines' must be a non-empty list"),
    ]:
        bad = tmp_path / "bad.yaml"
        bad.write_text(body)
        with pytest.raises(EvalError, match=message):
            PromptTemplate.load(bad)
