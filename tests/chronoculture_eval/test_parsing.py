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


# --- decimal commas (B.1 converts values to floating-point numbers) -----------------------

def test_decimal_comma_in_a_quoted_json_value_b1():
    """'40,5' is 40.5 (it was read as 405, which gave Strongly agree 87% instead of 40.5%)."""
    r = parse_distribution('{"Strongly agree": "40,5", "Agree": "9,5", "Disagree": 30, "Strongly disagree": 20}', OPTIONS)
    assert probs(r) == pytest.approx([0.405, 0.095, 0.30, 0.20]) and r.route == "json"


def test_unquoted_decimal_comma_is_read_by_the_fallback_b1():
    """An unquoted 40,5 makes the object invalid JSON; the regular expression reads 40.5."""
    r = parse_distribution('{"Strongly agree": 40,5, "Agree": 9,5, "Disagree": 30, "Strongly disagree": 20}', OPTIONS)
    assert probs(r) == pytest.approx([0.405, 0.095, 0.30, 0.20]) and r.route == "regex"


def test_percent_number_separators():
    from histbench.eval.chronoculture.parsing import percent_number

    assert percent_number("40,5") == 40.5
    assert percent_number(" 12,25 %") == 12.25
    assert percent_number("1.234,5") == 1234.5 and percent_number("1,234.5") == 1234.5
    assert percent_number("\u22125") == -5.0 and percent_number("45%") == 45.0
    assert percent_number("many") is None and percent_number("4O") is None and percent_number(True) is None


# --- bare scale points on 10-point questions ------------------------------------------------

TEN = ["1 (never justifiable)", *[str(i) for i in range(2, 10)], "10 (always justifiable)"]


def test_bare_scale_point_keys_on_a_ten_point_question_b1():
    """Keys "1" ... "10" name the options of a 1-10 scale whose end labels carry words
    (they were "missing", so every such answer was invalid)."""
    import json

    text = json.dumps({str(i): 2 * i for i in range(1, 11)})
    r = parse_distribution(text, TEN)
    assert probs(r) == pytest.approx([2 * i / 110 for i in range(1, 11)]) and r.route == "json"
    # the full end labels, or the number with the label's words, work too; "10" is not read as "1"
    mixed = {"1 = never justifiable": 10, **{str(i): 10 for i in range(2, 10)}, "10 (Always justifiable)": 10}
    assert probs(parse_distribution(json.dumps(mixed), TEN)) == pytest.approx([0.1] * 10)
    clash = {"1": 5, "1 (never justifiable)": 5, **{str(i): 10 for i in range(2, 11)}}
    r = parse_distribution(json.dumps(clash), TEN)
    assert not r.ok and "twice" in r.error
    wrong_words = {"1 (always)": 10, **{str(i): 10 for i in range(2, 11)}}
    r = parse_distribution(json.dumps(wrong_words), TEN)
    assert not r.ok and "'1 (never justifiable)' is missing" in r.error


def test_bare_scale_points_in_the_regex_fallback_b1():
    text = "Estimates: " + ", ".join(f"{i}: {i}%" for i in range(1, 11))
    r = parse_distribution(text, TEN)
    assert probs(r) == pytest.approx([i / 55 for i in range(1, 11)]) and r.route == "regex"


def test_numbers_never_name_labelled_options():
    """A bare "1" is not the first of labelled options (a position? a code?): still invalid."""
    r = parse_distribution('{"1": 10, "2": 40, "3": 30, "4": 20}', OPTIONS)
    assert not r.ok and "missing" in r.error


# --- modal answers written as a sentence (A.5) -----------------------------------------------

LETTERS = ["A", "B", "C", "D"]


@pytest.mark.parametrize(("text", "index"), [
    ("The answer is B.", 1),
    ("The answer is: D", 3),
    ("I would choose option C because most people disagree.", 2),
    ("B. Agree", 1),
    ('{"answer": "B. Agree"}', 1),
    ('{"answer": "The answer is C."}', 2),
    ("**A**", 0),
    ("C) Disagree, since attitudes changed.", 2),
    ("The most common answer was Strongly disagree.", 3),
])
def test_modal_answer_sentences_a5(text, index):
    r = parse_choice(text, OPTIONS, LETTERS)
    assert r.ok and r.index == index, (text, r)


@pytest.mark.parametrize(("text", "index"), [
    ("Answer: b", 1), ("answer: B", 1), ('{"answer": "b"}', 1), ("the answer is c.", 2), ("b", 1), ("(d)", 3),
    ("b) Agree", 1), ("Answer: a", 0),
])
def test_modal_answer_letter_in_either_case_a5(text, index):
    """The prompt asks for {"answer": "<letter>"}: where the format puts the letter, its case does not matter."""
    r = parse_choice(text, OPTIONS, LETTERS)
    assert r.ok and r.index == index, (text, r)


def test_modal_answer_sentences_that_stay_invalid_a5():
    # in prose a lower-case letter is not a key (the article "a"), and two options named is no answer
    assert not parse_choice("The answer is a good question.", OPTIONS, LETTERS).ok
    assert not parse_choice("I think a majority would say so", OPTIONS, LETTERS).ok
    assert parse_choice("The answer is A or b.", OPTIONS, LETTERS).error == "the answer names more than one option"
    assert parse_choice("The answer is A or B.", OPTIONS, LETTERS).error == "the answer names more than one option"
    assert not parse_choice("I cannot tell.", OPTIONS, LETTERS).ok
    # a key with another option's label names two options
    assert parse_choice("B. Disagree", OPTIONS, LETTERS).error == "the answer names more than one option"
