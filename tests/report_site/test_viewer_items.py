"""Each benchmark's items in the viewer agree with what its run scored, the viewer files are
what the page loads, and the site's captions and links are made once for every benchmark
(issue 20). No browser: these run everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from histbench.cli import main
from histbench.core.errors import EvalError, UsageError
from histbench.eval.report import ReportSection, SiteRun, items_link, markdown_to_html
from histbench.eval.viewer import OUTCOMES, ViewerRun, items_url, viewer_run, write_viewer


def _items(run_dir: Path):
    _, run = viewer_run(run_dir)
    return run


def test_chronologic_random_baseline_items(sample_runs):
    run_dir = sample_runs["chronologic"][0]
    run = _items(run_dir)
    results = json.loads((run_dir / "chronologic.json").read_text())
    assert len(run.items) == results["counts"]["questions"] == 24
    assert sum(len(i["options"]) for i in run.items) == results["counts"]["options"]
    # the baseline's expected accuracy 1/n is neither right nor wrong
    assert {i["outcome"] for i in run.items} == {"unscored"}
    first = run.items[0]
    assert first["prompt"].endswith("ANSWER: ") and "QUESTION:" in first["prompt"]
    assert first["gold"] and all(o["text"] for o in first["options"])
    assert {i["group"] for i in run.items} == {"cloze", "generation", "knowledge"}
    # Table 3's column headings name the groups (links from its cells)
    assert run.words("group")["Gen."] == "generation"


def test_the_random_baseline_chooses_no_option_and_says_the_tie_is_not_broken(sample_runs):
    """Issue 43: every option of the random baseline ties; argmax's first option is the ground
    truth in every release, so marking it "chosen" showed the baseline picking the gold."""
    run = _items(sample_runs["chronologic"][0])
    assert all(i["options"][0]["gold"] for i in run.items)   # why breaking by order would favour the gold
    for item in run.items:
        assert not any(o["chosen"] for o in item["options"]), item["id"]
        assert item["parsed"] is None
        n = len(item["options"])
        assert item["details"]["tie"] == (f"all {n} options tie; not broken: no option is chosen, the accuracy is "
                                          f"the expected 1/{n} of a uniform pick")
    assert any("not broken, so no option is shown as chosen" in note for note in run.notes)


def test_a_model_s_tied_top_options_say_how_the_tie_was_broken(sample_runs, tmp_path):
    """A model run whose top options tie (here: the baseline's ledger relabelled as a model's)
    names the rule that chose: release order, as Table 3's argmax."""
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(sample_runs["chronologic"][0], run_dir)
    results = json.loads((run_dir / "chronologic.json").read_text())
    results["model"] = {"spec": "hf:some-model"}
    (run_dir / "chronologic.json").write_text(json.dumps(results))
    from histbench.eval.chronologic import EVALUATOR

    EVALUATOR.finish_run(run_dir)
    item = _items(run_dir).items[0]
    n = len(item["options"])
    assert [o["chosen"] for o in item["options"]] == [True] + [False] * (n - 1)
    assert item["details"]["tie"].startswith(f"{n} top options tie; broken by release order")


def test_italian_items_match_the_scored_accuracy(sample_runs):
    run_dir = sample_runs["italian"][1]   # first-option baseline
    run = _items(run_dir)
    results = json.loads((run_dir / "italian.json").read_text())
    for task in ("wsd", "authorship", "head", "deprel", "intertext"):
        mine = [i for i in run.items if i["config"] == task]
        assert len(mine) == results["tasks"][task]["n"]
        share = sum(i["outcome"] == "correct" for i in mine) / len(mine)
        assert share == pytest.approx(results["tasks"][task]["accuracy"])
        assert all(i["gold"] and i["parsed"].startswith("A") for i in mine)   # the first option, by its letter
    ranking = [i for i in run.items if i["config"] == "chrono_ranking"]
    assert ranking and {i["outcome"] for i in ranking} == {"unscored"} and {i["group"] for i in ranking} >= {"poetry"}


def test_mher_items_match_table_accuracy(mher_site):
    out = mher_site.parent / "baselines"   # the 16 Table 2 baselines of the sample build
    evaluator, run = viewer_run(out)
    results = evaluator.results(out)
    assert len(run.items) == len(results.records)
    cells = [m for m in results.metrics.values() if m["metric"] == "accuracy" and "/paired/" not in m["id"]]
    assert len(cells) >= 16
    for cell in cells:
        system, condition, split = cell["id"].rsplit("/", 3)[:3]
        mine = [i for i in run.items if (i["system"], i["config"], i["group"]) == (system, condition, split)]
        correct = sum(i["outcome"] == "correct" for i in mine)
        assert correct / len(mine) == pytest.approx(cell["estimate"]), (system, condition, split)
    assert {i["outcome"] for i in run.items} <= set(OUTCOMES)
    assert len({i["system"] for i in run.items}) > 1 and run.labels["system"]


def test_viewer_files(tmp_path):
    items = [{"id": f"i{k}", "config": "c", "group": "g" if k % 2 else None, "system": None,
              "outcome": "correct" if k % 3 else "invalid", "parse_error": None if k % 3 else "no JSON object found"}
             for k in range(1201)]
    page = write_viewer(ViewerRun("toy", "toy run", tmp_path, items), tmp_path / "v", chunk_size=500)
    folder = page.parent
    assert sorted(p.name for p in (folder / "items").iterdir()) == [
        "chunk-0000.js", "chunk-0001.js", "chunk-0002.js", "index.js", "search-0000.js", "search-0001.js", "search-0002.js"]
    search = (folder / "items" / "search-0002.js").read_text()   # what the search reads of items 1000-1200
    texts = json.loads(search[search.index(", ") + 2:search.rindex(")")])
    assert len(texts) == 201 and texts[0] == "i1000 c correct" and texts[2] == "i1002 c invalid no json object found"
    lines = (folder / "items.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [i["id"] for i in items]
    index = (folder / "items" / "index.js").read_text()
    codes = json.loads(index[index.index("(") + 1:index.rindex("], [") + 1])
    assert codes[0] == [0, -1, -1, 1] and codes[1] == [0, 0, -1, 0]   # config c, group g / none, outcome correct / invalid
    assert "i1200" not in page.read_text()   # the page itself holds no item
    # a folder that is not a viewer is never replaced
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="holds no histbench viewer"):
        write_viewer(ViewerRun("toy", "toy run", tmp_path, items), tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"
    with pytest.raises(EvalError, match="outcome"):
        write_viewer(ViewerRun("toy", "toy", tmp_path, [{**items[0], "outcome": "fine"}]), tmp_path / "v")


def test_no_secret_in_the_viewer(tmp_path, monkeypatch):
    from histbench.core.secrets import register_secret

    secret = "sk-test-5ecret-value-0123456789"
    register_secret(secret)
    items = [{"id": "a", "config": "c", "group": None, "system": None, "outcome": "wrong",
              "response": f"the key is {secret}", "messages": [{"role": "user", "content": secret}]}]
    page = write_viewer(ViewerRun("toy", "toy", tmp_path, items), tmp_path / "v")
    for path in page.parent.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(encoding="utf-8"), path


def test_captions_and_links_are_made_once_for_every_benchmark(tmp_path):
    run_dir = tmp_path / "run"
    run = SiteRun("model A", run_dir, "viewer/run/index.html", words={"group": {"Cloze": "cloze"}})
    text = "\n".join([
        "# Page", "", "## Table 3 (5.1): the numbers", "",
        "| model | Cloze | n |", "| --- | ---: | ---: |", "| model A | 19.4 [17.9, 21.3] | 24 |", "",
        "Some words.", "", "**Panel a**", "",
        "| model | n |", "| --- | ---: |", f"| {items_link('other run', tmp_path / 'none')} | {items_link('3', run_dir, outcome='wrong')} |",
        "", "![Figure 5. Both periods within tau](fig.png)",
    ])
    page = markdown_to_html(text, "Page", runs=[run])
    assert '<figcaption>Figure 5. Both periods within tau</figcaption>' in page
    assert '<table aria-labelledby="table-3-51-the-numbers">' in page      # right under its heading
    assert "<caption>Table 3 (5.1): the numbers: Panel a</caption>" in page  # a panel further down
    assert 'href="viewer/run/index.html"' in page                          # the run's row
    assert 'href="viewer/run/index.html#group=cloze"' in page              # the Cloze cell
    assert 'href="viewer/run/index.html#outcome=wrong"' in page            # an explicit item link
    assert "histbench-items:" not in page and "other run" in page          # no viewer: plain text
    assert '<nav class="toc"' in page and 'href="#table-3-51-the-numbers"' in page
    assert items_url("v.html", config="wsd", outcome=None) == "v.html#config=wsd"


def test_report_site_files(sites):
    site = sites["italian"]
    assert {p.name for p in site.iterdir()} >= {"index.html", "italian.html", "index.md", "report.json", "viewer"}
    viewers = sorted(p.parent.name for p in (site / "viewer").glob("*/index.html"))
    assert viewers == ["first", "random"]
    index = (site / "index.html").read_text()
    assert 'href="italian.html"' in index and "viewer/random/index.html" in index
    assert ReportSection("t", "m").runs == []


def test_view_command(sample_runs, tmp_path, capsys):
    run_dir = sample_runs["italian"][0]
    assert main(["view", str(run_dir), "--out", str(tmp_path / "v")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "v" / "index.html")
    assert main(["view", str(tmp_path)]) == 2
    assert "not a run folder of any benchmark" in capsys.readouterr().err


def test_chronologic_chart_legend_is_clear_of_the_bars(sample_runs, tmp_path, legends_checked):
    """Issue 20: legends never cover data (the chart's legend sat in the axes, over the bars)."""
    from histbench.eval.chronologic.demo import accuracy_figure

    results = json.loads((sample_runs["chronologic"][0] / "chronologic.json").read_text())
    accuracy_figure([results, {**results, "label": "another"}], tmp_path / "chart.png")
    assert legends_checked


def test_a_caption_naming_a_config_or_group_filters_the_table_links(tmp_path):
    run = SiteRun("baseline:first", tmp_path / "first", "viewer/first/index.html",
                  words={"config": {"Word sense disambiguation": "wsd", "wsd": "wsd"}, "group": {"TEST": "test", "DEV": "dev"}})
    text = "\n".join(["#### Word sense disambiguation (paper section 3.1): accuracy", "",
                      "| model | n |", "| --- | ---: |", "| baseline:first | 9 |", "",
                      "#### Table 3: on TEST and DEV", "", "| model | n |", "| --- | ---: |", "| baseline:first | 9 |"])
    page = markdown_to_html(text, "Page", runs=[run])
    assert 'href="viewer/first/index.html#config=wsd"' in page
    assert 'href="viewer/first/index.html"' in page   # a caption naming two groups filters on neither


def test_a_row_naming_a_group_filters_its_links(tmp_path):
    run = SiteRun("toy run", tmp_path / "run", "viewer/run/index.html", systems={"toy-early": "toy-early"},
                  words={"group": {"EME": "EME", "ME": "ME"}, "config": {"sentences": "sentences"}})
    text = "\n".join(["## Bias", "", "| model | group | sentences |", "| --- | --- | ---: |",
                      "| toy-early | EME | 10 |", "| toy-early | all | 30 |"])
    page = markdown_to_html(text, "Page", runs=[run])
    assert 'href="viewer/run/index.html#system=toy-early&amp;group=EME"' in page
    assert 'href="viewer/run/index.html#system=toy-early&amp;config=sentences&amp;group=EME"' in page
    assert 'href="viewer/run/index.html#system=toy-early&amp;config=sentences"' in page   # the "all" row
