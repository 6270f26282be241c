"""Fixtures of the chronologic tests: release questions written here in the release schema."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sources" / "chronologic" / "sample" / "chronologic_sample.jsonl"
REALDATA = REPO.parent / "shared" / "realdata" / "chronologic"


def make_question(number: int = 1, **changes) -> dict:
    """A valid release record (pass/fail knowledge question, five options) with changes."""
    record = {
        "metadata_frame": "The following question asks for information from a British encyclopedia published in 1880.",
        "substantive_metadata_frame": "The following question asks for information from a British encyclopedia published in 1880.",
        "main_question": "What is the capital of Portugal?",
        "source_title": "An Illustrative Cyclopaedia",
        "source_author": "Anonymous",
        "source_date": 1880,
        "author_nationality": "British",
        "source_genre": "encyclopedia",
        "author_birth": None,
        "source_htid": "test.vol1",
        "question_category": "knowledge",
        "question_process": "automatic",
        "answer_types": ["ground_truth", "manual", "manual", "anachronistic_gpt-4o", "manual"],
        "answer_strings": ["Lisbon", "Oporto", "Madrid", "Lisboa Metropolitan Area", "insufficient information"],
        "answer_probabilities": [1.0, 0.0, 0.0, 0.0, 0.0],
        "author_profession": "",
        "frame_type": "world_context",
        "answer_length": "short_answer",
        "reasoning_type": "knowledge",
        "question_number": number,
        "partial_credit": 0,
    }
    record.update(copy.deepcopy(changes))
    return record


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def sample_path() -> Path:
    return SAMPLE


@pytest.fixture(scope="session")
def sample_build(built_sample) -> Path:
    """The bundled sample, built once for the test run (read-only)."""
    return built_sample("chronologic")


@pytest.fixture
def question():
    """make_question(number, **changes): a valid release record."""
    return make_question


@pytest.fixture
def jsonl():
    """jsonl(path, records): write records as a release JSONL file."""
    return write_jsonl
