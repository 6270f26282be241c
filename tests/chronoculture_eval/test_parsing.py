"""Parsing messy model outputs into distributions (B.1 'Output parsing and normalization')."""

from __future__ import annotations

import pytest

from histbench.eval.chronoculture.parsing import parse_choice, parse_distribution

OPTIONS = ["Strongly agree", "Agree", "Disagree", "Strongly disagree"]


def probs(result):
    assert result.ok, result.error
    return list(result.probabilities)


def test_plain_json_is_normalised_b1():
    r = parse_distribution('{"Strongly agree": 10, "Agree": 40, "Disagree": 30, "Strongly disagree": 20}', OPTIONS)
    assert probs(r) == pytest.approx([0.1, 0.4, 0.3, 0.2]) and r.route == "json"


def test_totals_not_100_are_rescaled_b1():
    """B.1: normalised to sum to one, including when the percentages do not sum to 100."""
    r = parse_distribution('{"Strongly agree": 10, "Agree": 10, "Disagree": 10, "Strongly disagree": 20}', OPTIONS)
    assert probs(r) == pytest.approx([0.2, 0.2, 0.2, 0.4])


def test_markdown_fence_and_extra_text():
    text = ('Here is my estimate:\n```json\n{"Strongly agree": "25%", "agree": 25, "DISAGREE ": 25.0,'
            ' "Strongly disagree": "25"}\n```\nThese are rough figures.')
    r = parse_distribution(text, OPTIONS)
    assert probs(r) == pytest.approx([0.25] * 4) and r.route == "fenced"


def test_embedded_object_in_prose_and_trailing_comma():
    text = 'Sure! {"Strongly agree": 5, "Agree": 15, "Disagree": 30, "Strongly disagree": 50,} Done.'
    r = parse_distribution(text, OPTIONS)
    assert probs(r) == pytest.approx([0.05, 0.15, 0.3, 0.5]) and r.route == "repaired"


def test_nested_object_is_unwrapped():
    text = '{"distribution": {"Strongly agree": 1, "Agree": 1, "Disagree": 1, "Strongly disagree": 1}}'
    assert probs(parse_distribution(text, OPTIONS)) == pytest.approx([0.25] * 4)


def test_negative_values_are_clipped_to_zero_b1():
    r = parse_distribution('{"Strongly agree": -10, "Agree": 50, "Disagree": 30, "Strongly disagree": 20}', OPTIONS)
    assert probs(r) == pytest.approx([0.0, 0.5, 0.3, 0.2])


def test_missing_option_is_invalid_b1():
    r = parse_distribution('{"Strongly agree": 10, "Agree": 40, "Disagree": 50}', OPTIONS)
    assert not r.ok and "Strongly disagree" in r.error


def test_non_numeric_value_is_invalid_b1():
    r = parse_distribution('{"Strongly agree": "many", "Agree": 40, "Disagree": 30, "Strongly disagree": 20}', OPTIONS)
    assert not r.ok and "not a number" in r.error


def test_nan_and_infinite_values_are_invalid_b1():
    r = parse_distribution('{"Strongly agree": NaN, "Agree": 40, "Disagree": 30, "Strongly disagree": 20}', OPTIONS)
    assert not r.ok and "not finite" in r.error
    r = parse_distribution('{"Strongly agree": Infinity, "Agree": 40, "Disagree": 30, "Strongly disagree": 20}', OPTIONS)
    assert not r.ok


def test_non_positive_total_is_invalid_b1():
    r = parse_distribution('{"Strongly agree": 0, "Agree": -5, "Disagree": 0, "Strongly disagree": 0}', OPTIONS)
    assert not r.ok and "positive total" in r.error


def test_regex_fallback_when_json_fails_b1():
    """B.1: if JSON parsing fails, percentages are extracted with regular expressions.
    'Agree' must not be read out of 'Strongly agree' or 'Disagree'."""
    text = "Strongly agree: 12%\nAgree - 38%\nDisagree = 30 %\nStrongly disagree: 20%"
    r = parse_distribution(text, OPTIONS)
    assert probs(r) == pytest.approx([0.12, 0.38, 0.30, 0.20]) and r.route == "regex"
    broken = '{"Strongly agree": 12, "Agree": 38, "Disagree": 30, "Strongly disagree": 20'
    r = parse_distribution(broken, OPTIONS)
    assert probs(r) == pytest.approx([0.12, 0.38, 0.30, 0.20]) and r.route == "regex"


def test_regex_fallback_with_missing_option_is_invalid_b1():
    r = parse_distribution("Strongly agree: 12%, Agree: 38%, Disagree 50%", OPTIONS)
    assert not r.ok and "missing" in r.error


def test_empty_output_is_invalid():
    assert parse_distribution("", OPTIONS).error == "empty output"
    assert parse_distribution(None, OPTIONS).error == "empty output"


def test_extra_keys_are_ignored_and_duplicates_rejected():
    r = parse_distribution('{"Agree": 1, "Strongly agree": 1, "Disagree": 1, "Strongly disagree": 1, "total": 4}', OPTIONS)
    assert probs(r) == pytest.approx([0.25] * 4)
    r = parse_distribution('{"Agree": 1, "agree": 2, "Strongly agree": 1, "Disagree": 1, "Strongly disagree": 1}', OPTIONS)
    assert not r.ok and "twice" in r.error


def test_three_option_question():
    r = parse_distribution('{"Yes": 70, "No": 20, "Not sure": 10}', ["Yes", "Not sure", "No"])
    assert probs(r) == pytest.approx([0.7, 0.1, 0.2])


def test_parse_choice_forms_a5():
    assert parse_choice('{"answer": "Agree"}', OPTIONS).index == 1
    assert parse_choice("Strongly disagree.", OPTIONS).index == 3
    assert parse_choice("The answer is: Strongly agree", OPTIONS).index == 0
    assert parse_choice("B", OPTIONS, keys=["A", "B", "C", "D"]).index == 1
    assert parse_choice("(3)", OPTIONS, keys=["1", "2", "3", "4"]).index == 2
    assert not parse_choice("Agree or Disagree", OPTIONS).ok
    assert not parse_choice("", OPTIONS).ok
