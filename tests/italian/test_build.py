"""The whole build on the bundled sample and on the real files, checked by hand; the
evaluator on baselines through the CLI."""

import json
import subprocess
import sys

import pytest

from histbench.core.errors import SourceError

from .conftest import SAMPLE, build, manifest, rows, sample_inputs

CONFIGS = ["wsd", "ner_classense", "ner_bellini", "chrono_ranking", "authorship", "head", "deprel", "intertext"]


def test_sample_build_has_every_task(sample_build):
    m = manifest(sample_build)
    assert list(m["rows"]) == CONFIGS
    assert m["summary"]["absent_tasks"] == {}
    assert m["authors_table"]["user"]["file"] == "authors.csv"


def test_sample_letters_offsets_and_exclusions(sample_build):
    for config in ("ner_classense", "ner_bellini"):
        for row in rows(sample_build, config):
            for entity in row["entities"]:
                assert row["text"][entity["start"]:entity["end"]] == entity["text"]
    bellini = rows(sample_build, "ner_bellini")
    assert [r["id"] for r in bellini] == ["SAMPLE_LL1_1"]          # the French letter is excluded
    counts = manifest(sample_build)["summary"]["tasks"]["ner_bellini"]["counts"]
    assert counts["letters in language fr (excluded)"] == 1
    types = {(e["text"], e["type"]) for e in bellini[0]["entities"]}
    assert {("teatro Carcano", "ORG"), ("Sonnambula", "WORK"), ("coristi", "GROUP"), ("cavatina", "MUSIC")} <= types
    assert "impazzire" in bellini[0]["text"] and "Signora Giuditta Turina" in bellini[0]["text"]
    classense = manifest(sample_build)["summary"]["tasks"]["ner_classense"]
    assert classense["letters_in_corpus"] == 3 and classense["subset"]["size"] == 2
    assert classense["counts"]["files that are not XML (README, templates; not read)"] == 1


def test_sample_wsd_rows(sample_build):
    wsd = rows(sample_build, "wsd")
    # 10 notes each; "tirare innanzi" and "vaso di terra cotta" have one commentator; the glosses of
    # "bel bello" and "nesci" share no word ("adagio, senza fretta" / "pian piano, con calma")
    # seven entries pass; two of them find no five distractors once a fallback must agree with the
    # target in part of speech, gender and number (lexicon.py), and are counted, not asked
    assert len(wsd) == 5
    counts = manifest(sample_build)["summary"]["tasks"]["wsd"]["counts"]
    assert counts["entries without five usable distractors (left out; the next entry is taken)"] == 2
    for row in wsd:
        assert len(row["candidates"]) == 6 and row["candidates"][row["gold_index"]] == row["answer"]
        assert row["context"][row["target_start"]:row["target_end"]] == row["target_phrase"]
        assert len(row["commentators"]) >= 2 and row["similarity"] < 0.7
        assert row["phrase_language"] == "it"
    ufizio = next(r for r in wsd if r["target_phrase"] == "ufizio")
    assert ufizio["commentators"] == ["CommentatoreA", "CommentatoreB"]
    assert {r["target_phrase"] for r in wsd}.isdisjoint({"bel bello", "nesci"})


def test_sample_ranking_and_authorship_rules_3_3(sample_build):
    ranking = rows(sample_build, "chrono_ranking")
    assert {r["genre"] for r in ranking} == {"poetry", "narrative"}
    for row in ranking:
        years = row["years"]
        assert all(abs(a - b) >= 100 for i, a in enumerate(years) for b in years[i + 1:])
        assert [years[i] for i in row["gold_order"]] == sorted(years, reverse=True)
        assert all(200 <= len(s["text"]) <= 600 for s in row["snippets"])
    for row in rows(sample_build, "authorship"):
        authors = [s["author"] for s in row["snippets"]]
        other = row["snippets"][row["gold_index"]]
        assert authors.count(other["author"]) == 1 and len(set(authors)) == 2
        anchor = row["snippets"][row["anchor_index"]]
        assert abs(other["birth_year"] - anchor["birth_year"]) < 50
    excluded = manifest(sample_build)["summary"]["tasks"]["chrono_ranking"]["excluded_authors_in_other_tasks"]
    assert "Cecco Campestre" in excluded            # the cited poet of the intertext task


def test_sample_syntax_and_intertext(sample_build):
    heads = rows(sample_build, "head")
    assert len(heads) == 3
    for row in heads:
        assert row["options"][row["gold_index"]]["id"] == row["head"]["id"]
        assert row["text"][row["token"]["start"]:row["token"]["end"]] == row["token"]["form"]
        assert all(o["form"] not in ("in", "il", "a") for o in row["options"])   # words of "nel"/"al" are never shown
    deprel = rows(sample_build, "deprel")
    assert all(r["deprel"] != "root" and r["options"][r["gold_index"]] == r["relation"] for r in deprel)
    assert any(r["relation"] == "possessive determiner" for r in deprel)
    inter = rows(sample_build, "intertext")
    assert len(inter) == 3                          # the generic concordance is left out
    for row in inter:
        positive = row["text_a"] if row["gold"] == "A" else row["text_b"]
        first, last = row["cited_lines"]
        assert row["chunk_a"] != row["chunk_b"] and len(positive.split("\n")) == 4
        assert row["source_author"] == "Cecco Campestre"
    counts = manifest(sample_build)["summary"]["tasks"]["intertext"]["counts"]
    assert counts["citations of type CONCORDANZA GENERICA (left out)"] == 1


@pytest.mark.parametrize("fmt,suffix", [("xml", "rdf"), ("nt", "nt")])
def test_intertext_reads_rdf_xml_and_ntriples(tmp_path, fmt, suffix):
    import rdflib

    graph = rdflib.Graph().parse(str(SAMPLE / "dantesources.ttl"), format="turtle")
    path = tmp_path / f"dantesources.{suffix}"
    graph.serialize(str(path), format=fmt)
    out = build(tmp_path, {"dantesources": str(path), "bibit": str(SAMPLE / "bibit"), "authors": str(SAMPLE / "authors.csv")},
                questions_per_genre=1)
    assert len(rows(out, "intertext")) == 3
    absent = manifest(out)["summary"]["absent_tasks"]
    assert set(absent) == {"wsd", "ner_classense", "ner_bellini", "head", "deprel"}


def test_malformed_letter_fails_the_build_naming_file_and_line(tmp_path):
    folder = tmp_path / "letters"
    folder.mkdir()
    (folder / "bad.xml").write_text('<TEI xmlns="http://www.tei-c.org/ns/1.0"><correspDesc/>\n<text><body>\n<p>x</body></text></TEI>')
    with pytest.raises(SourceError, match=r"bad\.xml.*line 3"):
        build(tmp_path, {"classense": str(folder)})
    assert not (tmp_path / "italian-1.0.0").exists()


def test_eval_baseline_and_report_cli(sample_build, tmp_path):
    run = tmp_path / "runs" / "random"
    cmd = [sys.executable, "-m", "histbench.cli"]
    done = subprocess.run(cmd + ["eval", "italian", "--baseline", "random", "--dataset", str(sample_build), "--out", str(run)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    own = json.loads((run / "italian.json").read_text())
    assert set(own["tasks"]) == set(CONFIGS)
    # the run format: every task's measure in results.json, equal to the task's own number
    from histbench.core.runfolder import RunFolder

    folder = RunFolder.open(run, benchmark="italian")
    metrics = {m["id"]: m for m in folder.metrics}
    assert {m["config"] for m in metrics.values()} == set(CONFIGS)
    wsd = metrics["wsd/accuracy"]
    assert wsd["estimate"] == own["tasks"]["wsd"]["accuracy"] and wsd["method"] == "Wilson" and wsd["headline"]
    assert wsd["n"] == own["tasks"]["wsd"]["n"] and wsd["unit"] == "proportion"
    assert metrics["ner_classense/strict_f1"]["estimate"] == own["tasks"]["ner_classense"]["strict"]["f1"]
    assert folder.run["baseline"] == "random" and folder.run["model"] is None
    assert set(folder.run["files"]["extras"]) == {"italian.json", "italian-items"}
    assert len(folder.items) == sum(1 for task in CONFIGS for _ in (run / "italian-items" / f"{task}.jsonl").open())
    report = subprocess.run(cmd + ["report", "italian", str(run), "--out", str(tmp_path / "report")],
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    assert "Word sense disambiguation" in report.stdout and "strict F1" in report.stdout


def test_sample_inputs_cover_every_role():
    assert set(sample_inputs()) == {"leggomanzoni", "wiktionary", "classense", "bellini", "bibit", "cavalcanti", "dantesources",
                                    "authors"}


def test_a_run_folder_from_before_the_run_format_is_refused_then_converted(sample_build, tmp_path):
    """Issue 43: an italian run folder as histbench wrote it before the run format (its own
    results.json and items/) is refused by the viewer and the report with the command that
    converts it; `histbench convert-run` converts it keeping every number."""
    import shutil

    from histbench.core.runfolder import RunFolder

    run = tmp_path / "old"
    cmd = [sys.executable, "-m", "histbench.cli"]
    done = subprocess.run(cmd + ["eval", "italian", "--baseline", "first", "--dataset", str(sample_build), "--out", str(run)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    before = {m["id"]: m for m in RunFolder.open(run).metrics}
    for name in ("run.json", "results.json", "items.jsonl"):
        (run / name).unlink()
    (run / "italian.json").rename(run / "results.json")
    (run / "italian-items").rename(run / "items")
    old = (run / "results.json").read_text()
    for command in (["view", str(run)], ["report", "italian", str(run), "--out", str(tmp_path / "report")]):
        refused = subprocess.run(cmd + command, capture_output=True, text=True, timeout=300)
        assert refused.returncode == 2 and f"histbench convert-run {run}" in refused.stderr, refused.stderr
    converted = subprocess.run(cmd + ["convert-run", str(run)], capture_output=True, text=True, timeout=300)
    assert converted.returncode == 0 and "converted (italian)" in converted.stdout, converted.stderr
    assert (run / "italian.json").read_text() == old and (run / "italian-items" / "wsd.jsonl").is_file()
    after = {m["id"]: m for m in RunFolder.open(run).metrics}
    assert after == before
    again = subprocess.run(cmd + ["convert-run", str(run)], capture_output=True, text=True, timeout=300)
    assert "already in the run format" in again.stdout
    shutil.rmtree(run / "italian-items")
    assert subprocess.run(cmd + ["view", str(run)], capture_output=True, text=True, timeout=300).returncode == 0
