"""The "identical surface" test (sections 4.2, 8.1): the benchmark's script-aware surface
key, one test per script, and a registry with two different persons whose Arabic and
Persian spellings are visually identical (امير ارغون / امیر ارغون)."""

from __future__ import annotations

import pytest

from histbench.builders.mher import construct as C
from histbench.builders.mher.builder import build_mher
from histbench.builders.mher.registry import read_registry
from histbench.builders.mher.text import fold, normalise, surface_key

from .conftest import add_person, synthetic_registry

# (first, second, identical?) per script
SCRIPT_CASES = {
    "Arabic": [
        ("امير ارغون", "امیر ارغون", True),          # Arabic yeh / Farsi yeh
        ("موسى", "موسی", True),                      # alef maksura / Farsi yeh
        ("كيخاتو", "کیخاتو", True),                  # kaf / keheh (and yeh)
        ("أَرْغُون", "أرغون", True),                  # optional vowel signs (harakat)
        ("ارغون", "أرغون", False),                   # alef / alef with hamza: a different letter
    ],
    "Persian": [
        ("ارغون\u200cآقا", "ارغون آقا", True),       # ZWNJ (half space) / space
        ("ارغـــون", "ارغون", True),                 # tatweel (kashida)
        ("غازان ۲", "غازان ٢", True),                # Persian / Arabic-Indic digits
    ],
    "Mongolian": [
        ("ᠮᠣᠩᠭ\u180bᠣᠯ", "ᠮᠣᠩᠭᠣᠯ", True),         # free variation selector FVS1
        ("ᠬᠠᠰᠠ\u180eᠠ", "ᠬᠠᠰᠠᠠ", True),            # Mongolian vowel separator
    ],
    "Latin": [
        ("Mo\u0308ngke", "Möngke", True),            # decomposed / precomposed ö
        ("ＭＯＮＧＫＥ", "mongke", True),               # fullwidth, case
        ("Möngke", "Mongke", False),                 # o / ö are different letters
    ],
    "Cyrillic": [
        ("Чин\u00adгис", "чингис", True),            # soft hyphen, case
        ("и\u0306", "й", True),                      # decomposed / precomposed й
        ("Бөртэ", "Бортэ", False),                   # ө / о are different letters
    ],
    "Han": [
        ("忽必\u200b烈", "忽必烈", True),              # zero-width space
        ("\uf9dc", "隆", True),                      # compatibility ideograph (NFKC)
        ("脫脫", "脱脱", False),                     # variant characters stay apart (documented)
    ],
    "Syriac": [
        ("ܡܳܪܝ", "ܡܪܝ", True),                      # vowel point
        ("ܡܪܝ\u070f", "ܡܪܝ", True),                 # abbreviation mark
    ],
}


@pytest.mark.parametrize(("script", "first", "second", "identical"),
                         [(script, a, b, same) for script, cases in SCRIPT_CASES.items() for a, b, same in cases])
def test_surface_key_per_script(script, first, second, identical):
    assert (surface_key(first) == surface_key(second)) is identical, script
    if identical:
        assert fold(first) == fold(second)          # so the near-surface similarity is 100


def test_the_old_rule_left_the_arabic_persian_pair_apart():
    """NFKC + casefold alone (the previous rule) tells the two spellings apart."""
    assert normalise("امير ارغون") != normalise("امیر ارغون")
    assert surface_key("امير ارغون") == surface_key("امیر ارغون")


def _amir_arghun_registry(write_registry):
    """24 invented persons plus two different men both written "Amir Arghun" in Arabic
    script: the Oirat governor Arghun Aqa in a Persian chronicle (Farsi yeh) and the Mamluk
    amir Arghun al-Dawadar in an Arabic one (Arabic yeh)."""
    tables = synthetic_registry(24)
    add_person(tables, "AQA", "Arghun Aqa", [
        ("aqa_fa", "امیر ارغون", "fa", "Arab", "Governed Khurasan for the Great Khans in the 1240s and 1250s."),
        ("aqa_en", "Arghun Aqa", "en", "Latn", "An Oirat who ran the census of the western provinces."),
    ])
    add_person(tables, "DAW", "Arghun al-Dawadar", [
        ("daw_ar", "امير ارغون", "ar", "Arab", "Served the Mamluk sultan in Cairo as viceroy around 1320."),
        ("daw_en", "Arghun al-Dawadar", "en", "Latn", "Died in Aleppo in 1331 after a long career in Egypt."),
    ])
    return read_registry(write_registry(tables))


def test_visually_identical_arabic_and_persian_names_are_identical_surface(write_registry, cues):
    registry = _amir_arghun_registry(write_registry)
    persons = C.primary_persons(registry)
    components = C.hard_negative_components(registry, persons)
    assert ["AQA", "DAW"] in components                    # one hard-negative component ...
    configs, summary, _ = build_mher(registry, cues, C.BuildOptions())
    split = "dev" if "AQA" in summary["split"]["dev_entities"] else "test"
    assert ("DAW" in summary["split"]["dev_entities"]) is (split == "dev")   # ... kept in one split
    keys = {r["key"]: r["surface"] for s in ("dev", "test") for r in configs["entities"][s]}
    assert {keys[k] for k in keys} >= {"امیر ارغون", "امير ارغون"}
    pair = [r for r in configs["name_only"][split] if {r["a"]["surface"], r["b"]["surface"]} ==
            {"امیر ارغون", "امير ارغون"}]
    assert len(pair) == 1
    assert pair[0]["label"] == "different"
    assert pair[0]["challenge"]["identical_surface"] and pair[0]["surface_similarity"] == 100.0
    grounded = {r["pair_id"]: r for r in configs["source_grounded"][split]}
    assert grounded[pair[0]["pair_id"]]["selection"] == "identical_surface_obligatory"   # obligatory in 4.3
    assert summary["challenge_slices"]["name_only"][split]["identical_surface"] == 1


def test_exact_normalised_baseline_uses_the_surface_key():
    """Table 2's exact normalized match says `same` exactly on identical surfaces (the 5
    identical-surface different pairs make its 48.42%), so it uses the same key."""
    from histbench.eval.mher import baselines as B

    views = [{"a": {"surface": a}, "b": {"surface": b}} for a, b in
             [("امير ارغون", "امیر ارغون"), ("Möngke", "Mongke"), ("ارغـــون", "ارغون")]]
    assert list(B.EqualityScorer(True).scores(views)) == [1.0, 0.0, 1.0]
