"""beta and delta (the temporal valence paper, section 3, Eq. 3-4) pinned on hand-computed examples."""

from __future__ import annotations

import math

import pytest

from histbench.eval.valence.metrics import (
    Candidate,
    adequacy,
    attach_sigmas,
    bias,
    classify_piece,
    renormalised_bias,
    resolve_sigmas,
    score_candidates,
    uses_word_start_markers,
)


def ann(sentence_id, token, sigma, annotator="a", skipped=False, method="manual"):
    return {"sentence_id": sentence_id, "token": token, "sigma": None if skipped else sigma, "skipped": skipped,
            "annotator": annotator, "method": method, "comment": None}


def test_bias_is_the_dot_product_of_probabilities_and_valences_eq3():
    """Section 3, Eq. 3 on the paper's s1 'Why wilt [MASK] be offended by that?':
    sigma(thou, s1) = -1, sigma(not, s1) = 0. With p = (0.5, 0.2, 0.1) for thou, not, you
    (you neutral here): beta = 0.5 * -1 + 0.2 * 0 + 0.1 * 0 = -0.5."""
    assert bias([0.5, 0.2, 0.1], [-1, 0, 0]) == pytest.approx(-0.5)
    assert bias([0.25, 0.25, 0.5], [1, -0.5, 0.5]) == pytest.approx(0.25 - 0.125 + 0.25)
    with pytest.raises(ValueError):
        bias([0.5], [1, 0])


def test_adequacy_projects_the_distance_on_the_unit_interval_eq4():
    """Section 3, Eq. 4: delta = 1 - |rho - beta| / 2; rho = -1, beta = -0.5 -> 0.75;
    identical values -> 1; opposite ends of the scale -> 0."""
    assert adequacy(-1, -0.5) == pytest.approx(0.75)
    assert adequacy(0.5, 0.5) == 1.0
    assert adequacy(-1, 1) == 0.0
    assert adequacy(1, -1) == 0.0
    assert adequacy(0, 0.3) == pytest.approx(0.85)
    assert math.isnan(adequacy(1, float("nan")))


def test_renormalised_variant_divides_by_the_scored_mass():
    """thou 0.5 (-1), not 0.2 (0), you 0.1 (0): mass 0.8, beta_renorm = -0.5 / 0.8 = -0.625,
    delta_renorm (rho -1) = 1 - 0.375 / 2 = 0.8125; the raw delta is 0.75."""
    assert renormalised_bias([0.5, 0.2, 0.1], [-1, 0, 0]) == pytest.approx(-0.625)
    candidates = [Candidate(1, "thou", "thou", "word", 0.5, -1, "scored"), Candidate(2, "not", "not", "word", 0.2, 0, "scored"),
                  Candidate(3, "you", "you", "word", 0.1, 0, "scored")]
    result = score_candidates(candidates, -1)
    assert result["beta_raw"] == pytest.approx(-0.5)
    assert result["delta_raw"] == pytest.approx(0.75)
    assert result["beta_renormalised"] == pytest.approx(-0.625)
    assert result["delta_renormalised"] == pytest.approx(0.8125)
    assert result["mass_scored"] == pytest.approx(0.8) and result["status"] == "ok"


def test_fare_you_well_same_token_gets_a_contextual_sigma():
    """Section 4: sigma is per (token, sentence). 'you' is archaic in 'Fare [MASK] well, sir'
    (sigma -1) and neutral in 'Can [MASK] help me?' (sigma 0), so the same prediction moves
    beta only in the first sentence.
    s2 (rho -1): you 0.4, thee 0.3, ye 0.1, all -1 -> beta = -0.8, delta = 1 - 0.2/2 = 0.9.
    s3 (rho +1): you 0.7 (0), u 0.05 (+1)          -> beta = 0.05, delta = 1 - 0.95/2 = 0.525."""
    sigmas = resolve_sigmas([ann("s2", "you", -1), ann("s2", "thee", -1), ann("s2", "ye", -1),
                             ann("s3", "you", 0), ann("s3", "u", 1)])
    fare = attach_sigmas([Candidate(1, "you", "you", "word", 0.4), Candidate(2, "thee", "thee", "word", 0.3),
                          Candidate(3, "ye", "ye", "word", 0.1)], "s2", sigmas)
    can = attach_sigmas([Candidate(1, "you", "you", "word", 0.7), Candidate(2, "u", "u", "word", 0.05)], "s3", sigmas)
    assert [c.sigma for c in fare] == [-1, -1, -1] and [c.sigma for c in can] == [0, 1]
    first, second = score_candidates(fare, -1), score_candidates(can, 1)
    assert first["beta_raw"] == pytest.approx(-0.8) and first["delta_raw"] == pytest.approx(0.9)
    assert second["beta_raw"] == pytest.approx(0.05) and second["delta_raw"] == pytest.approx(0.525)


def test_word_pieces_special_tokens_and_skips_are_reported_not_scored():
    """thou 0.5 (-1), ##st 0.2 (sub-word), [UNK] 0.1 (special), '!' 0.1 (skipped):
    raw beta = -0.5; renormalised over the scored mass 0.5 -> -1.0."""
    sigmas = resolve_sigmas([ann("s", "thou", -1), ann("s", "!", None, skipped=True)])
    cands = [Candidate(1, "thou", "thou", "word", 0.5), Candidate(2, "##st", "st", "subword", 0.2),
             Candidate(3, "[UNK]", "[UNK]", "special", 0.1), Candidate(4, "!", "!", "word", 0.1)]
    result = score_candidates(attach_sigmas(cands, "s", sigmas), -1)
    assert [c.status for c in cands] == ["scored", "subword", "special", "skipped"]
    assert result["beta_raw"] == pytest.approx(-0.5)
    assert result["beta_renormalised"] == pytest.approx(-1.0)
    assert result["mass_subword"] == pytest.approx(0.2) and result["mass_special"] == pytest.approx(0.1)
    assert result["mass_skipped"] == pytest.approx(0.1)


def test_unannotated_word_makes_the_pair_incomplete_unless_allowed():
    sigmas = resolve_sigmas([ann("s", "thou", -1)])
    cands = [Candidate(1, "thou", "thou", "word", 0.5), Candidate(2, "you", "you", "word", 0.3)]
    attach_sigmas(cands, "s", sigmas)
    strict = score_candidates(cands, -1)
    assert strict["status"] == "incomplete" and math.isnan(strict["beta_raw"]) and strict["n_unannotated"] == 1
    lenient = score_candidates(cands, -1, allow_unannotated=True)
    assert lenient["status"] == "ok" and lenient["beta_raw"] == pytest.approx(-0.5)
    assert lenient["mass_unannotated"] == pytest.approx(0.3)


def test_no_scored_word_gives_no_beta():
    cands = [Candidate(1, "##x", "x", "subword", 0.9, None, "subword")]
    result = score_candidates(cands, 0)
    assert result["status"] == "no scored word" and math.isnan(result["beta_raw"]) and math.isnan(result["delta_raw"])


def test_case_folding_lets_cased_and_uncased_predictions_share_an_annotation():
    sigmas = resolve_sigmas([ann("s", "thou", -1)])
    cands = attach_sigmas([Candidate(1, "Thou", "Thou", "word", 0.5)], "s", sigmas)
    assert cands[0].sigma == -1
    exact = resolve_sigmas([ann("s", "thou", -1)], fold_case=False)
    assert attach_sigmas([Candidate(1, "Thou", "Thou", "word", 0.5)], "s", exact, fold_case=False)[0].status == "unannotated"


def test_annotator_conflicts_resolved_by_mean_prefer_or_error():
    rows = [ann("s", "you", -1, "a"), ann("s", "you", 0, "b"), ann("s", "thee", -1, "a"), ann("s", "thee", -1, "b")]
    mean = resolve_sigmas(rows)
    assert mean[("s", "you")].sigma == pytest.approx(-0.5) and mean[("s", "you")].conflict
    assert not mean[("s", "thee")].conflict
    assert resolve_sigmas(rows, policy="prefer:b")[("s", "you")].sigma == 0
    with pytest.raises(ValueError, match="1 sentence x token pairs have conflicting annotations: s/you: a=-1, b=0"):
        resolve_sigmas(rows, policy="error")


def test_skip_versus_value_and_everyone_skipping():
    rows = [ann("s", "!", None, "a", skipped=True), ann("s", "!", 0, "b"), ann("s", ",", None, "a", skipped=True)]
    resolved = resolve_sigmas(rows)
    assert resolved[("s", "!")].sigma == 0 and resolved[("s", "!")].conflict
    assert resolved[("s", ",")].skipped and resolved[("s", ",")].sigma is None


def test_sigma_source_keeps_automatic_values_apart():
    rows = [ann("s", "you", 0, "person"), ann("s", "you", -1, "auto", method="automatic"), ann("s", "thee", -1, "auto", method="automatic")]
    assert set(resolve_sigmas(rows)) == {("s", "you")}
    auto = resolve_sigmas(rows, source="automatic")
    assert auto[("s", "you")].sigma == -1 and auto[("s", "you")].method == "automatic"
    both = resolve_sigmas(rows, source="manual+automatic")
    assert both[("s", "you")].sigma == 0 and both[("s", "thee")].method == "automatic"


@pytest.mark.parametrize(
    ("piece", "markers", "after_space", "word", "kind"),
    [
        ("thou", False, True, "thou", "word"),
        ("##ou", False, True, "ou", "subword"),
        ("[UNK]", False, True, "[UNK]", "special"),
        ("[unused3]", False, True, "[unused3]", "special"),
        ("<s>", True, True, "<s>", "special"),
        ("\u0120thou", True, True, "thou", "word"),       # byte-level BPE word start
        ("ou", True, True, "ou", "subword"),               # BPE piece without the marker after a space
        ("The", True, False, "The", "word"),                # sentence-initial slot: no marker expected
        ("\u2581thou", True, True, "thou", "word"),        # SentencePiece word start
        ("!", False, True, "!", "word"),
    ],
)
def test_classify_piece(piece, markers, after_space, word, kind):
    result = classify_piece(piece, marker_vocabulary=markers, after_space=after_space)
    assert (result.word, result.kind) == (word, kind)


def test_marker_vocabulary_detection():
    assert uses_word_start_markers(["\u0120the", "ing"])
    assert not uses_word_start_markers(["the", "##ing"])
