"""NER mapping and strict/fuzzy scores (paper section 3.2), Spearman (3.3), answer parsing."""

import pytest

from histbench.eval.italian.metrics import (
    ceiling,
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
        {"text": "Volp", "type": "PER"},          # not a word of the text; placed on "Volpi": fuzzy 4/(4+5-4)=0.8 -> TP
        {"text": "Ravenna", "type": "LOC"},       # not in the text: FP
    ]
    mapped = map_predictions(text, preds)
    assert match_letter(gold, mapped, "strict") == [True, False, False, False, False]
    assert match_letter(gold, mapped, "fuzzy") == [True, False, True, True, False]
    scores = ner_scores([(gold, mapped)], ["PER", "LOC", "ORG", "WORK"])
    # strict: PER tp 1 of 4 predicted, 3 gold; LOC tp 0 of 1 predicted, 1 gold
    per = scores["strict"]["per_type"]["PER"]
    assert (per["precision"], per["recall"]) == (pytest.approx(1 / 4), pytest.approx(1 / 3))
    assert scores["strict"]["per_type"]["LOC"]["f1"] == 0.0
    f1_per = 2 * (1 / 4) * (1 / 3) / (1 / 4 + 1 / 3)
    assert scores["strict"]["f1"] == pytest.approx((f1_per + 0.0) / 2)        # ORG and WORK have no gold: not averaged
    assert scores["types_without_gold"] == ["ORG", "WORK"]
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
    assert parse_choice("La risposta corretta è la B, riferita a Renzo.", 4) == 1   # "a", "è" are words, not options
    assert parse_choice('{"answer": "La C"}', 4) == 2
    with pytest.raises(ValueError):
        parse_choice("Risposta: e", 6)                                           # the conjunction, not option E
    with pytest.raises(ValueError):
        parse_choice("A) la prima\nB) la seconda", 4)                           # options listed, none chosen
    assert parse_choice('{"answer": 2}', 4) == 1
    with pytest.raises(ValueError):
        parse_choice('{"answer": "F"}', 4)
    assert parse_order('{"order": ["B", "a", "D", "C"]}', 4) == [1, 0, 3, 2]
    with pytest.raises(ValueError):
        parse_order('{"order": ["A", "A", "B", "C"]}', 4)
    assert parse_entities('{"entities": [{"text": "Faenza", "type": "loc"}]}') == [{"text": "Faenza", "type": "LOC"}]
    assert parse_entities('Sure: {"Faenza": "LOC", "Marozzi": "PER"}') == [
        {"text": "Faenza", "type": "LOC"}, {"text": "Marozzi", "type": "PER"}]


def test_mapping_needs_word_boundaries_3_2():
    text = "ai Bibliotecari della Biblioteca Classense"
    (mapped,) = map_predictions(text, [{"text": "Biblioteca", "type": "ORG"}])
    assert (mapped["start"], mapped["end"]) == (22, 32)          # not inside "Bibliotecari" (3)


def test_mapping_skips_text_an_earlier_prediction_took():
    text = "Lionello d'Este scrive; Lionello risponde"
    mapped = map_predictions(text, [{"text": "Lionello d'Este", "type": "PER"}, {"text": "Lionello", "type": "PER"}])
    assert [m["start"] for m in mapped] == [0, 24]


def test_fuzzy_matching_is_position_aware_3_2():
    text = "Il Marozzi saluta. Scrive il signor Marozzi da Faenza."
    gold = [{"text": "signor Marozzi", "start": 29, "end": 43, "type": "PER"}]
    # the first free "Marozzi" is the unannotated one at 3: it overlaps no gold entity
    mapped = map_predictions(text, [{"text": "Marozzi", "type": "PER"}])
    assert mapped[0]["start"] == 3 and match_letter(gold, mapped, "fuzzy") == [False]
    # a prediction the letter does not contain matches no gold entity elsewhere
    mapped = map_predictions(text, [{"text": "Marozzi da Ravenna", "type": "PER"}])
    assert mapped[0]["start"] is None and match_letter(gold, mapped, "fuzzy") == [False]
    # a misspelt name is placed where the letter matches it and then scored there
    text = "Scrive il signor Marozzi da Faenza."
    gold = [{"text": "Marozzi", "start": 17, "end": 24, "type": "PER"}]
    mapped = map_predictions(text, [{"text": "Marozi", "type": "PER"}])
    assert mapped[0]["start"] is None and 15 <= mapped[0]["aligned_start"] <= 18
    assert match_letter(gold, mapped, "fuzzy") == [True] and match_letter(gold, mapped, "strict") == [False]


def test_invented_types_do_not_lower_the_macro_average_3_2():
    text = "Da Faenza scrive il Marozzi al Padre Amici."
    gold = [{"text": "Faenza", "start": 3, "end": 9, "type": "LOC"}, {"text": "Marozzi", "start": 20, "end": 27, "type": "PER"},
            {"text": "Padre Amici", "start": 31, "end": 42, "type": "PER"}]
    preds = [{"text": "Faenza", "type": "LOC"}, {"text": "Marozzi", "type": "PER"}]
    labels = ["PER", "LOC", "ORG", "WORK"]
    plain = ner_scores([(gold, map_predictions(text, preds))], labels)
    stray = ner_scores([(gold, map_predictions(text, preds + [{"text": "Padre", "type": "MISC"}]))], labels)
    assert stray["fuzzy"]["f1"] == plain["fuzzy"]["f1"] == pytest.approx((1.0 + 2 * 1 * 0.5 / 1.5) / 2)
    assert stray["invented_types"] == {"MISC": 1} and stray["invented_predictions"] == 1
    # a scheme type predicted where the letters have none is reported, not averaged with recall 0
    org = ner_scores([(gold, map_predictions(text, preds + [{"text": "Padre Amici", "type": "ORG"}]))], labels)
    assert org["strict"]["per_type"]["ORG"]["n_pred"] == 1 and org["types_without_gold"] == ["ORG", "WORK"]
    assert org["strict"]["f1"] == plain["strict"]["f1"]
    low, high = plain["strict"]["f1_ci"]
    assert low <= plain["strict"]["f1"] <= high


def test_ceiling_of_a_perfect_answer_and_why_it_is_below_one_3_2():
    # "Classe" first occurs unannotated (in "Badia di Classe" the whole name is the entity
    # only later): the perfect answer's "Classe" takes the first free occurrence
    text = "Scrivo da Classe. La Badia di Classe ringrazia Classe."
    gold = [{"text": "Badia di Classe", "start": 21, "end": 36, "type": "ORG"},
            {"text": "Classe", "start": 47, "end": 53, "type": "LOC"}]
    result = ceiling([(text, gold)], ["PER", "LOC", "ORG", "WORK"])
    assert result["mapped_to_another_occurrence"] == 1 and result["gold_entities"] == 2
    assert result["strict_f1"] == pytest.approx((1.0 + 0.0) / 2)


def test_a_zero_width_interval_that_is_not_constant_is_written_with_its_note(tmp_path):
    """Run format (issue 43): a bootstrap interval of no width whose resamples were not all
    equal says so in a note, rather than stopping the run's results from being written."""
    from histbench.core.runfolder import RunFolder, RunSummary, write_run_folder
    from histbench.eval.italian.run_summary import task_metrics

    scores = {"f1": 0.5, "precision": 0.5, "recall": 0.5, "f1_ci": [0.5, 0.5], "precision_ci": [0.4, 0.6],
              "recall_ci": [0.5, 0.5], "recall_ci_constant": True}
    metrics = {m.id: m for m in task_metrics("ner_bellini", {"letters": 3, "strict": scores, "fuzzy": scores})}
    f1, recall = metrics["ner_bellini/strict_f1"], metrics["ner_bellini/strict_recall"]
    assert f1.interval == (0.5, 0.5) and f1.constant is None and "95% of the resamples" in f1.note
    assert recall.constant is True and recall.note is None
    write_run_folder(tmp_path, RunSummary("italian", "x", None, list(metrics.values()), []))
    assert len(RunFolder.open(tmp_path).metrics) == 6   # strict and fuzzy: F1, precision, recall
