"""Fixtures of the free-generation tests: the bundled sample built once, a scripted judge."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sources" / "chronologic" / "sample" / "chronologic_sample.jsonl"

_PAIR = re.compile(r"Answer A:\n(?P<a>.*?)\n\nAnswer B:\n(?P<b>.*?)\n\n(?:Judge|Which)", re.DOTALL)


@pytest.fixture(scope="session")
def sample_build(tmp_path_factory) -> Path:
    from histbench.builders.chronologic import BUILDER
    from histbench.builders.core.build import run_build

    return run_build(BUILDER, {"questions": SAMPLE}, out_root=tmp_path_factory.mktemp("chronologic-gen-build"))


@pytest.fixture(scope="session")
def built(sample_build):
    from histbench.builders.core.dataset import BuiltDataset

    return BuiltDataset.open(sample_build)


def answers_in(messages) -> tuple[str, str, str]:
    """(answer A, answer B, whole user text) of a judge prompt."""
    text = messages[-1]["content"]
    match = _PAIR.search(text)
    assert match, f"not a judge prompt: {text[:200]!r}"
    return match["a"], match["b"], text


class ScriptedJudge:
    """A deterministic judge: each answer text has a quality (the question's ground truths
    10, its other options 10 * their answer_probability, texts containing a marker such as [q=7] that
    value, anything else 0). Pass/fail prompts: a tie when both are >= 9, else the
    better one (ties of quality -> tie). Partial prompts: the better one; equal -> A."""

    def __init__(self, built):
        from histbench.eval.chronologic.generation import load_questions

        self.questions = load_questions(built)
        self.calls = 0

    def score(self, prompt: str, text: str) -> float:
        marker = re.search(r"\[q=(\d+(?:\.\d+)?)\]", text)
        if marker:
            return float(marker.group(1))
        question = next(q for q in self.questions if f"Question: {q.question}" in prompt)
        return max((10.0 * p for o, p in zip(question.options, question.probabilities, strict=True) if o == text), default=0.0)

    def __call__(self, messages):
        self.calls += 1
        a, b, text = answers_in(messages)
        qa, qb = self.score(text, a), self.score(text, b)
        if "a tie is not allowed" in text:
            return '{"better": "%s"}' % ("A" if qa >= qb else "B")
        if (qa >= 9 and qb >= 9) or qa == qb:
            return 'I weighed both.\n{"better": "tie"}'
        return "```json\n{\"better\": \"%s\"}\n```" % ("A" if qa > qb else "B")


@pytest.fixture
def scripted_judge(built):
    return ScriptedJudge(built)
