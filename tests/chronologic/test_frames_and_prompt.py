"""Wrong-context frames (paper 6.3: a seeded derangement within each reasoning type) and
the likelihood prompt template (one file, hashed into results)."""

from __future__ import annotations

import pytest

from histbench.builders.core.errors import EvalError
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


def test_prompt_template_renders_and_hashes(tmp_path):
    template = PromptTemplate.load()
    q = {"metadata_frame": "Frame $1.", "main_question": "Question?"}
    assert template.render_context(q) == "Frame $1.\n\nQuestion?\n\nAnswer:"
    assert template.render_continuation("Lisbon") == " Lisbon"
    other = tmp_path / "t.yaml"
    other.write_text('context: "$metadata_frame $main_question A:"\ncontinuation: " $answer"\n')
    assert PromptTemplate.load(other).sha256 != template.sha256
    bad = tmp_path / "bad.yaml"
    bad.write_text('context: "$main_question"\ncontinuation: " $answer"\n')
    with pytest.raises(EvalError, match=r"'context' must use \$metadata_frame"):
        PromptTemplate.load(bad)
