"""The generative protocol (section 5.4): JSON contract, action rule, condition-specific
instructions, and nothing hidden in any prompt."""

from __future__ import annotations

import copy
import json

import pytest

from histbench.eval.mher import protocol as P

from .conftest import SAMPLE


@pytest.mark.parametrize(("text", "probs", "action"), [
    ('{"same": 0.7, "different": 0.2, "ambiguous": 0.1, "rationale": "Same kinship."}', (0.7, 0.2, 0.1), "same"),
    ('Here you go:\n```json\n{"same": "10%", "different": "85%", "ambiguous": "5%", "rationale": "x"}\n```',
     (0.10, 0.85, 0.05), "different"),
    ('{"Same": 2, "Different": 1, "Ambiguous": 1}', (0.5, 0.25, 0.25), "same"),
    ('{"same": 0.4, "different": 0.4, "ambiguous": 0.2, "rationale": "tie"}', (0.4, 0.4, 0.2), "ambiguous"),
    ('{"same": 0.5, "different": 0.0, "ambiguous": 0.5}', (0.5, 0.0, 0.5), "ambiguous"),
    ('{"same": 0.1, "different": 0.1, "ambiguous": 0.8}', (0.1, 0.1, 0.8), "ambiguous"),
])
def test_reply_parsing_normalisation_and_action(text, probs, action):
    """Values normalised to sum to one; action = argmax; an exact tie -> ambiguous (5.4)."""
    judgement = P.parse_reply(text)
    assert judgement.probabilities == pytest.approx(probs)
    assert sum(judgement.probabilities) == pytest.approx(1.0)
    assert judgement.action == action


def test_tie_is_exact_not_approximate():
    assert P.action_of([0.4000001, 0.4, 0.2]) == "same"
    assert P.action_of([1, 1, 1]) == "ambiguous"
    assert P.action_of([0.2, 0.3, 0.3]) == "ambiguous"


@pytest.mark.parametrize("text", [
    "I think they are the same person.",
    '{"same": 0.7, "different": 0.3}',
    '{"same": "likely", "different": 0.3, "ambiguous": 0.1}',
    '{"same": -0.2, "different": 0.9, "ambiguous": 0.3}',
    '{"same": 0, "different": 0, "ambiguous": 0}',
    "",
])
def test_contract_violations_are_format_failures(text):
    with pytest.raises(P.ContractError):
        P.parse_reply(text)


def test_condition_instructions_disclose_the_controls(sample_bench):
    shuffled = P.render_messages("shuffled_b", sample_bench.items("shuffled_b", "test")[0])[1]["content"]
    assert "reassigned" in shuffled and "other historical persons" in shuffled
    unresolved = P.render_messages("unresolved", sample_bench.items("unresolved", "test")[0])[1]["content"]
    assert "unresolved in historical scholarship" in unresolved and "not required" in unresolved
    for condition in P.CONDITIONS:
        config = condition
        record = sample_bench.items(config, "test")[0]
        messages = P.render_messages(condition, record)
        assert messages[0] == {"role": "system", "content": P.SYSTEM_INSTRUCTION}
        assert '"ambiguous"' in messages[0]["content"] and "rationale" in messages[0]["content"]


def test_context_only_prompts_show_no_names_languages_or_scripts(sample_bench):
    grounded = {r["pair_id"]: r for r in sample_bench.items("source_grounded", "test")}
    for record in sample_bench.items("context_only", "test"):
        text = P.render_messages("context_only", record)[1]["content"]
        twin = grounded[record["pair_id"]]
        for s in ("a", "b"):
            assert twin[s]["surface"] not in text
        assert "language:" not in text and "script:" not in text


HIDDEN_TOP = ("pair_id", "question_id", "label", "person_a", "person_b", "prominence_a", "prominence_b",
              "challenge", "surface_similarity", "context_similarity", "selection", "in_source_grounded",
              "masked_names", "derangement", "scholarly_note")
HIDDEN_SIDE = ("key", "transcription", "evidence", "donor")


def _scramble(record: dict) -> dict:
    """Every hidden field replaced by a different value."""
    out = copy.deepcopy(record)
    for field in HIDDEN_TOP:
        if field in out:
            value = out[field]
            if isinstance(value, dict):
                out[field] = {k: not v for k, v in value.items()}
            elif isinstance(value, bool):
                out[field] = not value
            elif isinstance(value, int | float):
                out[field] = -1
            else:
                out[field] = "LEAK-" + str(value)[::-1]
    for s in ("a", "b"):
        if isinstance(out.get(s), dict):
            for field in HIDDEN_SIDE:
                if field in out[s]:
                    out[s][field] = "LEAK-HIDDEN-SIDE"
    return out


def test_nothing_hidden_reaches_a_prompt(sample_bench):
    """Prompts are identical when every hidden field (ids, labels, persons, strata,
    challenge labels, citations, donors, notes) changes, and contain none of them."""
    from histbench.builders.mher.registry import read_registry

    registry = read_registry(SAMPLE)
    curator = [p.curator_notes for p in registry.persons.values()]
    preferred = {p.preferred_name for p in registry.persons.values()}
    mention_ids = set(registry.mentions)
    for condition in P.CONDITIONS:
        for split in (("test",) if condition == "unresolved" else ("dev", "test")):
            for record in sample_bench.items(condition, split):
                messages = P.render_messages(condition, record)
                assert messages == P.render_messages(condition, _scramble(record))
                text = json.dumps(messages, ensure_ascii=False)
                assert "LEAK" not in text
                for value in (record.get("pair_id"), record.get("question_id"), record.get("person_a"),
                              record.get("person_b"), record.get("scholarly_note")):
                    if value:
                        assert value not in text
                for s in ("a", "b"):
                    assert record[s]["key"] not in text if s in record else True
                assert not any(note in text for note in curator)
                assert not any(mid in text for mid in mention_ids)
                for word in ("prominence", "long-tail", "stratum", "identical_surface", "near_surface", "label"):
                    assert word not in text
                # preferred (curator) names never appear outside the shown surfaces and the evidence
                header = "\n".join(line for line in messages[1]["content"].splitlines()
                                    if not line.strip().startswith("evidence:"))
                for s in ("a", "b"):
                    if s in record and "surface" in record[s]:
                        header = header.replace(record[s]["surface"], "")
                assert not any(name in header for name in preferred)
