"""Distractor families parsed from answer_types (issue 10: 'a distractor family parsed from
answer_types'), on every type spelling seen in the authors' public sample."""

import pytest

from histbench.builders.chronologic.taxonomy import GROUP_OF, PAPER_TABLE1, PAPER_TOTAL, parse_answer_type


@pytest.mark.parametrize(
    ("raw", "family", "generator", "year", "variants"),
    [
        ("ground_truth", "ground_truth", None, None, ()),
        ("manual", "manual", None, None, ()),
        ("same_book", "same_book", None, None, ()),
        ("same_character", "same_character", None, None, ()),
        ("negation", "negation", None, None, ()),
        ("manual_negation", "negation", None, None, ("manual",)),
        ("other_book_1911", "other_book", None, 1911, ()),
        ("anachronistic_1825", "anachronistic_year", None, 1825, ()),
        ("anachronistic_manual", "anachronistic_manual", None, None, ()),
        ("anachronistic_wikipedia", "anachronistic_source", "wikipedia", None, ()),
        ("anachronistic_older", "anachronistic_source", "older", None, ()),
        ("anachronistic_gpt-5.4", "anachronistic_model", "gpt-5.4", None, ()),
        ("anachronistic_gpt-oss:20b", "anachronistic_model", "gpt-oss:20b", None, ()),
        ("anachronistic_metadataless_mistral-small:24b", "anachronistic_model", "mistral-small:24b", None, ("metadataless",)),
        ("anachronistic_distort2_qwen3-30b-a3b-instruct-2507", "anachronistic_model", "qwen3-30b-a3b-instruct-2507", None, ("distort2",)),
        ("manual_anachronistic_mistral-small:24b", "anachronistic_model", "mistral-small:24b", None, ("manual",)),
        ("something_new", "other", None, None, ()),
    ],
)
def test_parse_answer_type(raw, family, generator, year, variants):
    parsed = parse_answer_type(raw)
    assert (parsed.family, parsed.generator, parsed.year, parsed.variants) == (family, generator, year, variants)
    assert parsed.stylistic == family.startswith("anachronistic")


def test_table1_constants_are_the_papers():
    """Section 4, Table 1: 866 questions over eight types in three groups."""
    assert sum(PAPER_TABLE1.values()) == PAPER_TOTAL == 866
    groups = {}
    for rtype, n in PAPER_TABLE1.items():
        groups[GROUP_OF[rtype]] = groups.get(GROUP_OF[rtype], 0) + n
    assert groups == {"cloze": 359, "generation": 273, "knowledge": 234}
