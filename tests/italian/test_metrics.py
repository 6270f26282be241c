"""NER mapping and strict/fuzzy scores (paper 3.2), Spearman (3.3), answer parsing."""

import pytest

from histbench.eval.italian.metrics import (
    longest_common_substring,
    map_predictions,
    match_letter,
    ner_scores,
    overlap_ratio,
    spearman,
)
from histbench.eval.italian.tasks import parse_choice, parse_entities, parse_order


def test_lcs_is_the_longest_common_substring_not_subsequence():
    assert longest_common_substring("Marozzi", "Marozi") == 5          # "Maroz"
    assert longest_common_substring("abcxdef", "abcdef") == 3          # "abc"/"def", not the subsequence 6
    assert longest_common_substring("", "abc") == 0


def test_overlap_ratio_3_2_formula_hand_computed():
    # |LCS| / (|pred| + |gt| - |LCS|)
    assert overlap_ratio("Marozi", "Marozzi") == pytest.approx(5 / (6 + 7 - 5))      # 0.625 > 0.5
    assert overlap_ratio("Amici", "Padre Amici") == pytest.approx(5 / (5 + 11 - 5))  # 0.4545 <= 0.5
    assert overlap_ratio("Faenza", "Faenza") == 1.0


def test_mapping_takes_the_first_occurrence_not_already_assigned():
    text = "Roma e Roma, poi Roma"
    mapped = map_predictions(text, [{"text": "Roma", "type": "LOC"}] * 4 + [{"text": "Milano", "type": "LOC"}])
    assert [m["start"] for m in mapped] == [0, 7, 17, None, None]
    assert all(text[m["start"]:m["end"]] == "Roma" for m in mapped[:3])


def test_strict_and_fuzzy_scores_hand_computed():
    text = "Il Padre Amici scrive da Faenza al Marozzi e al Volpi."
    gold = [
        {"text": "Padre Amici", "start": 3, "end": 14, "type": "PER"},
        {"text": "Faenza", "start": 25, "end": 31, "type": "LOC"},
        {"text": "Marozzi", "start": 35, "end": 42, "type": "PER"},
        {"text": "Volpi", "start": 48, "end": 53, "type": "PER"},
    ]
    preds = [
        {"text": "Padre Amici", "type": "PER"},   # strict TP
        {"text": "Faenza", "type": "PER"},        # wrong type: FP for PER in both modes
        {"text": "Marozzi e", "type": "PER"},     # strict FP; fuzzy: 7/(9+7-7)=0.778 -> TP
        {"text": "Volp", "type": "PER"},          # strict FP; fuzzy: 4/(4+5-4)=0.8 -> TP
        {"text": "Ravenna", "type": "LOC"},       # not in the text: FP
    ]
    mapped = map_predictions(text, preds)
    assert match_letter(gold, mapped, "strict") == [True, False, False, False, False]
    assert match_letter(gold, mapped, "fuzzy") == [True, False, True, True, False]
    scores = ner_scores([(gold, mapped)])
    # strict: PER tp 1 of 4 predicted, 3 gold; LOC tp 0 of 1 predicted, 1 gold
    per = scores["strict"]["per_type"]["PER"]
    assert (per["precision"], per["recall"]) == (pytest.approx(1 / 4), pytest.approx(1 / 3))
    assert scores["strict"]["per_type"]["LOC"]["f1"] == 0.0
    f1_per = 2 * (1 / 4) * (1 / 3) / (1 / 4 + 1 / 3)
    assert scores["strict"]["f1"] == pytest.approx((f1_per + 0.0) / 2)
    # fuzzy: PER tp 3 of 4 predicted, 3 gold
    per = scores["fuzzy"]["per_type"]["PER"]
    assert (per["precision"], per["recall"]) == (pytest.approx(3 / 4), pytest.approx(1.0))
    assert scores["fuzzy"]["precision"] == pytest.approx((3 / 4 + 0) / 2)
    assert scores["fuzzy"]["micro"]["recall"] == pytest.approx(3 / 4)


def test_a_gold_entity_matches_at_most_one_prediction():
    gold = [{"text": "Faenza", "start": 0, "end": 6, "type": "LOC"}]
    mapped = map_predictions("Faenza", [{"text": "Faenza", "type": "LOC"}, {"text": "Faenz", "type": "LOC"}])
    assert match_letter(gold, mapped, "fuzzy") == [True, False]


def test_spearman_3_3():
    assert spearman([0, 1, 2, 3], [0, 1, 2, 3]) == 1.0
    assert spearman([3, 2, 1, 0], [0, 1, 2, 3]) == -1.0
    assert spearman([0, 1, 3, 2], [0, 1, 2, 3]) == pytest.approx(1 - 6 * 2 / (4 * 15))   # 0.8
    with pytest.raises(ValueError):
        spearman([0, 1, 1, 2], [0, 1, 2, 3])


def test_answer_parsing():
    assert parse_choice('```json\n{"answer": "C"}\n```', 6) == 2
    assert parse_choice("The answer is B.", 4) == 1
    assert parse_choice('{"answer": 2}', 4) == 1
    with pytest.raises(ValueError):
        parse_choice('{"answer": "F"}', 4)
    assert parse_order('{"order": ["B", "a", "D", "C"]}', 4) == [1, 0, 3, 2]
    with pytest.raises(ValueError):
        parse_order('{"order": ["A", "A", "B", "C"]}', 4)
    assert parse_entities('{"entities": [{"text": "Faenza", "type": "loc"}]}') == [{"text": "Faenza", "type": "LOC"}]
    assert parse_entities('Sure: {"Faenza": "LOC", "Marozzi": "PER"}') == [
        {"text": "Faenza", "type": "LOC"}, {"text": "Marozzi", "type": "PER"}]
