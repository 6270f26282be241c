"""The shortcut audit of every Italian task with options (builders/italian/audit.py): shown in
the build summary and the card, enforced (the build refuses, naming the rule, unless
--allow-shortcuts), and the constructions that keep length from giving the answer: authorship
and ranking snippets (3.3), relation distractors (3.4)."""

from collections import Counter

import numpy as np
import pytest

from histbench.builders.italian.bibit import Snippet
from histbench.builders.italian.chrono import Pool, authorship_questions, length_spearman, ranking_questions
from histbench.core.errors import BuildError

from .conftest import build, manifest

MC_CONFIGS = ("wsd", "chrono_ranking", "authorship", "head", "deprel", "intertext")


def test_every_multiple_choice_task_shows_its_audit_in_summary_and_card(sample_build):
    m = manifest(sample_build)
    card = (sample_build / "README.md").read_text(encoding="utf-8")
    for config in MC_CONFIGS:
        audit = m["summary"]["tasks"][config]["shortcut_audit"]
        assert audit["enforced"] and audit["items"] == m["rows"][config]["test"]
        assert f"Shortcut audit of {config} (" in card
    # the intertext chunk holding the cited lines echoes Dante's words: reported, never a failure
    inter = {r["rule"]: r for r in m["summary"]["tasks"]["intertext"]["shortcut_audit"]["rules"]}
    assert inter["most_context_overlap"]["exempt"]
    assert all(m["summary"]["tasks"][c]["shortcut_audit"]["failing_rules"] == [] for c in MC_CONFIGS)
    assert "**beats chance**" not in card


def test_a_build_whose_items_a_trivial_rule_answers_is_refused_unless_allowed(realdata, tmp_path):
    # the paper's literal relation distractors (the three most frequent for the part of speech) have
    # shorter names than the rare relations asked about: on the real treebank the longest name wins 41%
    given = {"cavalcanti": str(realdata / "cavalcanti")}
    with pytest.raises(BuildError) as refused:
        build(tmp_path / "a", given, deprel_distractors="most-frequent")
    assert "--allow-shortcuts" in str(refused.value)
    assert any(line.startswith("deprel: longest option: accuracy 0.41") for line in refused.value.details)
    assert not (tmp_path / "a" / "italian-1.0.0").exists()
    out = build(tmp_path / "b", given, deprel_distractors="most-frequent", allow_shortcuts=True)
    audit = manifest(out)["summary"]["tasks"]["deprel"]["shortcut_audit"]
    assert audit["allowed_by_user"] and audit["failing_rules"] == ["longest"]
    assert "(allowed by --allow-shortcuts)" in (out / "README.md").read_text(encoding="utf-8")
    balanced = manifest(build(tmp_path / "c", given))["summary"]["tasks"]["deprel"]["shortcut_audit"]
    assert balanced["failing_rules"] == []


def _pool(seed: int = 0, authors: int = 8, per_author: int = 12) -> Pool:
    """Snippets whose similarity to one another grows with their length (as on real books):
    each vector has a length-driven component."""
    rng = np.random.default_rng(seed)
    snippets, births, names, vectors = [], [], [], []
    for a in range(authors):
        for k in range(per_author):
            length = int(rng.integers(200, 600))
            snippets.append(Snippet(f"b{a}-{k}", f"b{a}", f"Autore {a}", "x" * length))
            births.append(1300 + 40 * a)
            names.append(f"Autore {a}")
            vector = np.concatenate([[length / 100.0], rng.normal(size=8)])
            vectors.append(vector / np.linalg.norm(vector))
    return Pool("poetry", snippets, np.array(births), names, np.vstack(vectors))


def _odd_length_rank(question: dict) -> int:
    odd = question["snippets"][question["gold_index"]]
    return sum(len(s["text"]) < len(odd["text"]) for s in question["snippets"] if s is not odd)


def test_authorship_snippets_make_every_length_rank_of_the_odd_one_equally_common_3_3():
    pool = _pool()
    paper = authorship_questions(pool, 40, 50, 0, Counter(), "paper")
    balanced = authorship_questions(pool, 40, 50, 0, Counter(), "length-balanced")
    assert Counter(_odd_length_rank(q) for q in paper)[3] > 20          # the paper's choice: the odd one is the longest
    ranks = Counter(_odd_length_rank(q) for q in balanced)
    assert len(balanced) == 40 and ranks == {0: 10, 1: 10, 2: 10, 3: 10}
    for q in balanced:
        other, same = q["snippets"][q["gold_index"]], [s for s in q["snippets"] if s["author"] == q["same_author"]]
        assert len(same) == 3 and abs(other["birth_year"] - same[0]["birth_year"]) < 50


def test_ranking_snippets_have_lengths_nearly_unrelated_to_the_years_3_3():
    pool = _pool(authors=10)
    questions = ranking_questions(pool, 30, 100, 0, Counter(), "length-balanced", 0.2)
    assert len(questions) == 30
    for q in questions:
        years = q["years"]
        assert all(abs(a - b) >= 100 for i, a in enumerate(years) for b in years[i + 1:])
        assert abs(length_spearman([len(s["text"]) for s in q["snippets"]], years)) <= 0.2 + 1e-9
    paper = ranking_questions(pool, 30, 100, 0, Counter(), "paper")
    mean_abs = np.mean([abs(length_spearman([len(s["text"]) for s in q["snippets"]], q["years"])) for q in paper])
    assert mean_abs > 0.3
