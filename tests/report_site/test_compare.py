"""Runs compared (issue 43 item 4): the leaderboard of a report of several runs, the
side-by-side item view with its filter for disagreements (in headless Chromium), and
`histbench eval a,b` scoring several benchmarks in one call."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selenium.webdriver.common.by import By

from histbench.cli import _per_benchmark, main
from histbench.core.errors import UsageError
from histbench.core.runfolder import RunFolder, format_metric
from histbench.eval.compare import item_key, write_comparison

from .conftest import console_errors, file_url
from .conftest import open_page as _open


def _disagreements(run_dirs) -> int:
    """Counted here from the runs' items.jsonl, independently of the page's own code."""
    answers: dict[str, list] = {}
    for run_dir in run_dirs:
        for line in (Path(run_dir) / "items.jsonl").read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            shown = None if item["parse_error"] else item["parsed"]
            answers.setdefault(f"{item['config']}/{item['id']}", []).append((item["outcome"], json.dumps(shown)))
    return sum(1 for values in answers.values() if len(values) > 1 and len(set(values)) > 1)


def test_a_report_of_two_runs_leads_with_a_leaderboard_of_their_headline_metrics(sites, sample_runs):
    text = (sites["italian"] / "index.md").read_text(encoding="utf-8")
    assert text.index("## Leaderboard") < text.index("## Historical Italian")
    lines = [line for line in text.split("## Leaderboard", 1)[1].split("\n## ", 1)[0].splitlines() if line.startswith("|")]
    heading = [c.strip() for c in lines[0].strip("|").split("|")]
    for run_dir, line in zip(sample_runs["italian"], lines[2:], strict=True):
        folder = RunFolder.open(run_dir)
        cells = dict(zip(heading, (c.strip() for c in line.strip("|").split("|")), strict=True))
        assert cells["run"] == folder.label
        for metric in folder.metrics:
            if metric["headline"]:
                shown = format_metric(metric).replace("[", r"\[").replace("]", r"\]")
                assert cells[metric["label"]] == shown
    assert "[the run comparison](compare/index.html)" in text


def test_the_comparison_filters_the_items_on_which_the_runs_disagree(browser, sites, sample_runs):
    page = sites["italian"] / "compare" / "index.html"
    _open(browser, file_url(page))
    rows = browser.find_elements(By.CSS_SELECTOR, "#items tbody tr")
    total = sum(1 for _ in (sample_runs["italian"][0] / "items.jsonl").open())
    assert len(rows) == total
    headings = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#items thead th")]
    assert headings[3:] == ["baseline:random", "baseline:first"]
    expected = _disagreements(sample_runs["italian"])
    assert 0 < expected < total
    browser.find_element(By.ID, "disagree").click()
    shown = [r for r in rows if r.is_displayed()]
    assert len(shown) == expected
    assert browser.find_element(By.ID, "counts").text.startswith(f"{expected} of {total} items shown")
    for row in shown:   # every row left holds two different answers
        cells = row.find_elements(By.TAG_NAME, "td")[3:]
        assert len({c.text for c in cells}) == 2
    _open(browser, file_url(page, "disagree=1"))   # a link can open the filtered view
    assert len([r for r in browser.find_elements(By.CSS_SELECTOR, "#items tbody tr") if r.is_displayed()]) == expected
    assert console_errors(browser) == []


HOSTILE = '</script><script>document.title="owned"</script><img src=x onerror="document.title=\'owned\'">'


def test_hostile_labels_and_answers_are_shown_as_text(browser, tmp_path):
    from histbench.core.runfolder import Metric, RunSummary, write_run_folder

    folders = []
    for k, label in enumerate((HOSTILE, "plain")):
        run_dir = tmp_path / f"run{k}"
        run_dir.mkdir()
        items = [{"id": "q1", "config": "c", "outcome": "wrong" if k else "correct", "parsed": HOSTILE if k else "A",
                  "gold": HOSTILE, "score": float(not k)}]
        write_run_folder(run_dir, RunSummary("toy", label, None, [Metric("acc", "accuracy", 1.0, "proportion",
                                                                         headline=True, label=HOSTILE)], items))
        folders.append(RunFolder.open(run_dir))
    page = write_comparison(folders, tmp_path / "compare", "toy")
    _open(browser, file_url(page))
    assert browser.title != "owned" and not browser.find_elements(By.CSS_SELECTOR, "#items img")
    cells = browser.find_elements(By.CSS_SELECTOR, "#items tbody td")
    assert cells[2].text == HOSTILE and HOSTILE in cells[4].text
    assert browser.find_elements(By.CSS_SELECTOR, "#items thead th")[3].text == HOSTILE
    assert console_errors(browser) == []


def test_items_are_matched_across_runs_without_their_systems_prefix():
    assert item_key({"id": "early:s1", "system": "early", "config": "sentences"}) == \
        item_key({"id": "modern:s1", "system": "modern", "config": "sentences"})
    assert item_key({"id": "wsd:7", "system": None, "config": "wsd"}) != item_key({"id": "wsd:7", "config": "head"})


def test_eval_of_several_benchmarks_gives_each_its_own_run_folder(tmp_path, built_sample, monkeypatch, capsys):
    (tmp_path / "build").mkdir()
    for name in ("italian", "chronologic"):
        built = built_sample(name)
        os.symlink(built, tmp_path / "build" / built.name)
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "italian,chronologic", "--baseline", "random", "--out", "runs"]) == 0
    out = capsys.readouterr().out
    assert "== histbench eval italian" in out and "== histbench eval chronologic" in out
    for name in ("italian", "chronologic"):
        assert RunFolder.open(tmp_path / "runs" / name, benchmark=name).run["baseline"] == "random"


def test_several_benchmarks_are_checked_before_any_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "italian,valence", "--baseline", "random"]) == 2   # valence has no baselines
    assert "unrecognized arguments: --baseline random" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
    with pytest.raises(UsageError, match="--dataset names one benchmark"):
        _per_benchmark(["eval", "italian,mher", "--dataset", "build/x"])
    with pytest.raises(UsageError, match="each once"):
        _per_benchmark(["eval", "italian,,mher"])
    assert _per_benchmark(["eval", "a,b", "--out=r", "--limit", "3"]) == [
        ["eval", "a", "--out=r/a", "--limit", "3"], ["eval", "b", "--out=r/b", "--limit", "3"]]


def test_the_leaderboard_sets_the_papers_cell_beside_the_runs(tmp_path):
    """MHER Table 2 (6.1): a baselines run whose Levenshtein headline names the table's
    Name-only accuracy cell gets the paper's five values of that cell, Unicode Levenshtein
    (53.16%) marked with the run through the declared alias `levenshtein`, never guessed."""
    from histbench.core.runfolder import Metric, RunSummary, write_run_folder
    from histbench.eval.compare import leaderboard_markdown

    cell = {"table": 2, "column": "accuracy", "row": "name-only"}
    folders = []
    for label, system, value in (("baselines", "levenshtein", 0.55), ("other", "my_matcher", 0.6)):
        run_dir = tmp_path / label
        run_dir.mkdir()
        metric = Metric(f"{system}/name_only/test/accuracy", "accuracy", value, "proportion", (0.5, 0.7), "Wilson",
                        316, True, headline=True, system=system, config="name_only",
                        label="accuracy, Name-only TEST", published=cell)
        write_run_folder(run_dir, RunSummary("mher", label, None, [metric], [
            {"id": "p1", "system": system, "config": "name_only", "outcome": "correct"}], baseline="table2"))
        folders.append(RunFolder.open(run_dir))
    text = leaderboard_markdown("mher", folders)
    # a run of one system is named by the run; its system still matches the paper's model
    assert r"| baselines | 55.0 \[50.0, 70.0\] (Wilson, n=316) |" in text
    assert "Table 2, accuracy, name-only" in text
    assert "| Unicode Levenshtein | 53.16% | baselines |" in text
    assert "| Exact normalized match | 48.42% |  |" in text
    assert "Gemini Embedding 2 | 64.87%" in text and "76.85" not in text   # the Context row is another cell


def test_a_run_of_several_systems_has_a_row_per_system_named_by_its_label(tmp_path):
    from histbench.core.runfolder import Metric, RunSummary, write_run_folder
    from histbench.eval.compare import leaderboard_markdown

    folders = []
    for label, systems in (("baselines", ("exact", "levenshtein")), ("reference: lexical", ("lexical",))):
        run_dir = tmp_path / label.replace(":", "").replace(" ", "-")
        run_dir.mkdir()
        metrics = [Metric(f"{s}/acc", "accuracy", 0.5 + k / 10, "proportion", n=10, headline=True, system=s,
                          label="accuracy") for k, s in enumerate(systems)]
        write_run_folder(run_dir, RunSummary("mher", label, None, metrics, [], labels={"system": {
            "exact": "Exact match", "levenshtein": "Unicode Levenshtein", "lexical": "lexical logistic"}}))
        folders.append(RunFolder.open(run_dir))
    lines = leaderboard_markdown("mher", folders).splitlines()
    assert lines[:2] == ["| run | system | accuracy |", "| --- | --- | ---: |"]
    assert lines[2:5] == ["| baselines | Exact match | 50.0 (n=10) |", "| baselines | Unicode Levenshtein | 60.0 (n=10) |",
                          "| reference: lexical |  | 50.0 (n=10) |"]


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=60))
def test_no_text_can_close_the_comparisons_data_block(text):
    """Whatever a label or answer holds, the page's JSON block has no '<' (so no
    '</script>') and no raw U+2028/U+2029, and reads back as the same text."""
    from histbench.eval.compare import script_json

    out = script_json({"label": text, "rows": [{"parsed": text}]})
    assert "<" not in out and "\u2028" not in out and "\u2029" not in out
    assert json.loads(out) == {"label": text, "rows": [{"parsed": text}]}
