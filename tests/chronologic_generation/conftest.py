"""Fixtures of the free-generation tests: the bundled sample built once, a scripted judge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sources" / "chronologic" / "sample" / "chronologic_sample.jsonl"
DATA = Path(__file__).resolve().parent / "data"
REAL_SAMPLE = REPO.parent / "shared" / "realdata" / "chronologic" / "chronologic_en_1.0_sample.jsonl"

# the two judge prompts of sources/chronologic/generation_prompts.yaml
_PASS_FAIL = re.compile(r"Question: (?P<q>.*?)\n\nAnswer A: (?P<a>.*?)\n\nAnswer B: (?P<b>.*?)\n\n- Choose A or B", re.DOTALL)
_PARTIAL = re.compile(r"QUESTION: (?P<q>.*?)\n\nRUBRIC.*ANSWER A:\n\"(?P<a>.*?)\"\n\nANSWER B:\n\"(?P<b>.*?)\"\n\nRespond with JSON",
                      re.DOTALL)


def reference(name: str) -> dict:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def sample_build(built_sample) -> Path:
    """The bundled sample, built once for the test run (read-only)."""
    return built_sample("chronologic")


@pytest.fixture(scope="session")
def built(sample_build):
    from histbench.core.dataset import BuiltDataset

    return BuiltDataset.open(sample_build)


@pytest.fixture(scope="session")
def real_rows():
    if not REAL_SAMPLE.is_file():
        pytest.skip("the authors' real 100-question sample is not in ../shared/realdata/chronologic")
    return [json.loads(line) for line in REAL_SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]


def real_question(row):
    from histbench.eval.chronologic.generation import question_from_row

    return question_from_row({**row, "group": "-"})


def judge_pair(messages) -> tuple[str, str, str, str]:
    """(kind, question, answer A, answer B) of a judge prompt."""
    text = messages[-1]["content"]
    match = _PARTIAL.search(text)
    if match:
        return "partial", match["q"], match["a"], match["b"]
    match = _PASS_FAIL.search(text)
    assert match, f"not a judge prompt: {text[:200]!r}"
    return "pass_fail", match["q"], match["a"], match["b"]


class ScriptedJudge:
    """A deterministic judge: each answer text has a quality (the question's ground truths
    10, its other options 10 * their answer_probability, texts containing a marker such as
    [q=7] that value, anything else 0). Pass/fail prompts: "C" (both acceptable) when both
    are >= 9 or of equal quality, else the better one. Partial prompts: the better one;
    equal -> A."""

    def __init__(self, built):
        from histbench.eval.chronologic.generation import load_questions

        self.questions = load_questions(built)
        self.calls = 0

    def score(self, question: str, text: str) -> float:
        marker = re.search(r"\[q=(\d+(?:\.\d+)?)\]", text)
        if marker:
            return float(marker.group(1))
        q = next(q for q in self.questions if q.question == question)
        return max((10.0 * p for o, p in zip(q.options, q.probabilities, strict=True) if o == text), default=0.0)

    def __call__(self, messages):
        self.calls += 1
        kind, question, a, b = judge_pair(messages)
        qa, qb = self.score(question, a), self.score(question, b)
        if kind == "partial":
            return '{"context fit": "%s"}' % ("A" if qa >= qb else "B")
        if (qa >= 9 and qb >= 9) or qa == qb:
            return 'Both are sound.\n{"question fit": "C"}'
        return "```json\n{\"question fit\": \"%s\"}\n```" % ("A" if qa > qb else "B")


@pytest.fixture
def scripted_judge(built):
    return ScriptedJudge(built)
