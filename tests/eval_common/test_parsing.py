"""histbench/core/parsing.py on the kinds of output models really produce."""

from __future__ import annotations

from histbench.core.parsing import extract_json_object, parse_number


def test_plain_fenced_embedded_repaired():
    assert extract_json_object('{"a": 1}').route == "json"
    fenced = extract_json_object('Sure!\n```json\n{"a": 40, "b": 60}\n```\nHope this helps.')
    assert fenced.route == "fenced" and fenced.value == {"a": 40, "b": 60}
    embedded = extract_json_object('The answer is {"x": {"y": "}"}} and that is all.')
    assert embedded.route == "embedded" and embedded.value == {"x": {"y": "}"}}
    repaired = extract_json_object("Answer: {'Agree': 30, 'Disagree': 70,}")
    assert repaired.route == "repaired" and repaired.value == {"Agree": 30, "Disagree": 70}


def test_failures_are_reported_not_guessed():
    assert extract_json_object("").route == "none"
    broken = extract_json_object('{"a": 1, "b": }')
    assert not broken.ok and broken.error == "JSON object does not parse"
    assert extract_json_object("no braces at all").error == "no JSON object found"
    assert extract_json_object("[1, 2]").value is None


def test_parse_number():
    assert parse_number("45%") == 45.0 and parse_number(" 1,234.5 ") == 1234.5 and parse_number(3) == 3.0
    assert parse_number("about half") is None and parse_number(True) is None and parse_number(None) is None
