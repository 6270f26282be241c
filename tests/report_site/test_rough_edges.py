"""The report site's and viewer's rough edges a newcomer met (issue 28), each in headless
Chromium (the session's one driver): a caption naming a config inside a hyphenated
compound filters its links; an unknown URL value shows everything and says so; an #item=
link lands below the sticky filter bar; no page is wider than the window; MHER Table 2's
two embedding rows open their own items; the MHER card shows the best systems; no page of
a site or of its viewers holds an absolute local path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from histbench.eval.mher.viewer import CONDITION_LABELS
from histbench.eval.report import SiteRun, _named_in, markdown_to_html
from histbench.eval.viewer import ViewerRun, write_viewer

from .conftest import console_errors, file_url, open_page, visible_rows, wait_ready

#: what eval/mher/report.py titles the expert-unresolved table
UNRESOLVED_TITLE = "Section 7.3: expert-unresolved sanity check"


def _mher_like_run(run_dir: Path, n: int = 40, unresolved: int = 3) -> ViewerRun:
    items = [{"id": f"p{i:03d}", "config": "name_only", "group": "test", "system": None, "outcome": "correct",
              "prompt": f"A: Arghun {i}\nB: Argun {i}"} for i in range(n)]
    items += [{"id": f"u{i}", "config": "unresolved", "group": "test", "system": None, "outcome": "unscored",
               "prompt": f"A: Qaidu {i}\nB: Khaidu {i}"} for i in range(unresolved)]
    return ViewerRun("mher", "reference: lexical logistic", run_dir, items, {"config": CONDITION_LABELS})


def test_the_config_matcher_reads_hyphenated_compounds_as_the_paper_writes_them():
    """No browser: the rule the cell links below rely on."""
    words = {"unresolved": "unresolved", "Expert-unresolved": "unresolved", "name_only": "name_only",
             "Name-only": "name_only", "Name": "name_only", "generative": "generative"}
    assert _named_in(UNRESOLVED_TITLE, words) == "unresolved"   # was None: all 631 items
    assert _named_in("Table 2: non-generative baselines (TEST)", words) is None
    assert _named_in("Table 3: Name-only TEST", words) == "name_only"


def test_an_expert_unresolved_cell_opens_its_three_items(browser, tmp_path):
    run = _mher_like_run(tmp_path / "reference-lexical")
    write_viewer(run, tmp_path / "site" / "viewer" / "lexical")
    site_run = SiteRun(run.label, run.run_dir, "viewer/lexical/index.html", words={"config": run.words("config")})
    text = "\n".join([f"### {UNRESOLVED_TITLE}", "", "| Model | Items | Ambiguous |", "| --- | ---: | ---: |",
                      "| reference: lexical logistic | 3 | 0 |"])
    page = tmp_path / "site" / "mher.html"
    page.write_text(markdown_to_html(text, "MHER", runs=[site_run]), encoding="utf-8")
    open_page(browser, file_url(page))
    browser.find_element(By.LINK_TEXT, "reference: lexical logistic").click()
    wait_ready(browser)
    assert browser.find_element(By.ID, "status").text.startswith("3 of 43 items")
    assert [row.find_elements(By.TAG_NAME, "td")[1].text for row in visible_rows(browser)] == ["u0", "u1", "u2"]
    assert console_errors(browser) == []


def _viewer_of(n: int, tmp_path: Path) -> Path:
    items = [{"id": f"q{i:04d}", "config": f"task{i % 2}", "group": None, "system": None,
              "outcome": ("correct", "wrong")[i % 2], "score": i % 2, "score_label": "acc",
              "prompt": f"Question {i}: what happened in {1800 + i}?", "response": f"answer {i}", "gold": f"gold {i}"}
             for i in range(n)]
    return write_viewer(ViewerRun("synthetic", "a generated run", tmp_path / "run", items), tmp_path / "viewer")


def test_an_unknown_url_value_shows_every_item_and_says_so(browser, tmp_path):
    page = _viewer_of(120, tmp_path)
    open_page(browser, file_url(page, "outcome=nonsense&config=task1"))
    wait_ready(browser)
    status = browser.find_element(By.ID, "status").text
    assert status.startswith("60 of 120 items"), status          # the known filter holds, the unknown one is dropped
    assert Select(browser.find_element(By.ID, "f-outcome")).first_selected_option.get_attribute("value") == ""
    notice = browser.find_element(By.ID, "notice")
    assert notice.is_displayed() and "no outcome \u201cnonsense\u201d in this run" in notice.text
    assert browser.current_url.endswith("#config=task1")         # the address says what is on screen
    Select(browser.find_element(By.ID, "f-config")).select_by_value("")
    WebDriverWait(browser, 10).until(lambda d: not d.find_element(By.ID, "notice").is_displayed())
    open_page(browser, file_url(page, "item=nosuchitem"))
    wait_ready(browser)
    assert browser.find_element(By.ID, "status").text.startswith("120 of 120")
    assert "no item \u201cnosuchitem\u201d" in browser.find_element(By.ID, "notice").text
    assert console_errors(browser) == []


def test_an_item_link_lands_below_the_sticky_filter_bar(browser, tmp_path):
    page = _viewer_of(200, tmp_path)
    for width in (1280, 700):   # at 700 px the filter bar takes two lines
        browser.set_window_size(width, 900)
        try:
            open_page(browser, file_url(page, "item=q0145"))
            wait_ready(browser)
            row = browser.find_element(By.CSS_SELECTOR, "tr.item.open")
            top, bar, head, scrolled, height = browser.execute_script(
                "const r = arguments[0].getBoundingClientRect().top;"
                "return [r, document.getElementById('filters').getBoundingClientRect().bottom,"
                " document.querySelector('table.items th').getBoundingClientRect().bottom, window.scrollY, innerHeight]",
                row)
            assert scrolled > 0 and top >= bar and top >= head - 1 and top < height / 2, (width, top, bar, head)
            assert "q0145" in row.text and browser.find_element(By.CSS_SELECTOR, "td.detail").is_displayed()
        finally:
            browser.set_window_size(1280, 900)
    assert console_errors(browser) == []


def _overflow(driver) -> int:
    return driver.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")


def test_no_page_or_viewer_is_wider_than_the_window(browser, sites, mher_site):
    """A signature in <code> used to push the page 36 px wider than the window."""
    pages = [site / f"{name}.html" for name, site in sites.items()] + [mher_site / "mher.html"]
    pages += [site / "index.html" for site in (*sites.values(), mher_site)]
    pages += sorted((mher_site / "viewer").glob("*/index.html")) + sorted(sites["chronologic"].glob("viewer/*/index.html"))
    for page in pages:
        open_page(browser, file_url(page))
        if "viewer" in page.parts:
            wait_ready(browser)
            visible_rows(browser)[0].click()   # an open item, with its options table
        assert _overflow(browser) <= 0, f"{page}: {_overflow(browser)} px wider than the window"
    assert console_errors(browser) == []


def test_mher_table2_embedding_rows_open_their_own_items(browser, mher_site):
    open_page(browser, file_url(mher_site / "mher.html"))
    links = browser.find_elements(By.XPATH, "//td/a[starts-with(normalize-space(.), 'Sentence embedding')]")
    hrefs = [link.get_attribute("href") for link in links]
    assert len(hrefs) == 2, hrefs
    assert "system=embedding_name" in hrefs[0] and "config=name_only" in hrefs[0]
    assert "system=embedding_context" in hrefs[1] and "config=context_only" in hrefs[1]
    for href, condition in zip(hrefs, ("Name-only", "Context-only"), strict=True):
        open_page(browser, href)
        wait_ready(browser)
        rows = visible_rows(browser)
        assert rows and all(condition in row.text and "Sentence embedding" in row.text for row in rows)
    assert console_errors(browser) == []


def test_the_mher_card_shows_the_best_systems(browser, mher_site):
    from histbench.eval.mher import EVALUATOR

    ranked = sorted(EVALUATOR.headlines(mher_site.parent / "baselines"), key=lambda h: -h.estimate)
    assert len(ranked) == 16
    open_page(browser, file_url(mher_site / "index.html"))
    card = browser.find_element(By.CSS_SELECTOR, "#card-mher")
    shown = [row.text for row in card.find_elements(By.CSS_SELECTOR, "tbody tr")][:3]
    for headline, text in zip(ranked[:3], shown, strict=True):
        assert headline.run in text and headline.value in text, (headline, text)
    assert "the best shown; and 13 more on the page" in card.text
    assert console_errors(browser) == []


ABSOLUTE = re.compile(r"(?<![\w.:/-])/(?:tmp|root|home|work|Users|var|opt|usr|mnt|srv|private)/[^\s\"'<>)]*")


@pytest.mark.parametrize("which", ["chronologic", "italian", "mher"])
def test_no_page_of_a_site_or_its_viewers_holds_an_absolute_local_path(which, sites, mher_site):
    """Pages and files a user shares name folders by name or relative to the report
    (issue 28: viewer subtitles, the demo's build lines, report.json's run folders). The
    demo's site is checked the same way in tests/core/test_demo.py."""
    site = mher_site if which == "mher" else sites[which]
    found = []
    for path in sorted(site.rglob("*")):
        if path.is_file() and path.suffix in (".html", ".md", ".json", ".js", ".jsonl", ".csv"):
            found += [f"{path.relative_to(site)}: {hit}" for hit in ABSOLUTE.findall(path.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found[:20])


def test_the_two_briers_are_named_apart(browser, sites):
    """Chronologic-EN: the card quotes Table 3's calibrated Brier, the viewer scores each
    question by its softmax Brier; one word for both read as one number."""
    site = sites["chronologic"]
    open_page(browser, file_url(site / "index.html"))
    card = browser.find_element(By.CSS_SELECTOR, "#card-chronologic").text
    assert "calibrated Brier (Table 3" in card and "softmax" not in card
    open_page(browser, file_url(next((site / "viewer").glob("*/index.html"))))
    wait_ready(browser)
    assert "softmax Brier" in browser.find_element(By.ID, "notes").text
    scores = [row.find_elements(By.TAG_NAME, "td")[6].text for row in visible_rows(browser)]
    assert scores and all(re.fullmatch(r"softmax Brier \d\.\d{3}", s) for s in scores), scores[:3]
    assert console_errors(browser) == []


def test_the_demo_names_its_model_one_way_on_every_card(monkeypatch, tmp_path):
    """No browser (the real demo scores SmolLM2 for minutes): every benchmark's demo labels
    its SmolLM2 run with the model's name, never the spec (the index said "offline:smollm2"
    on one card and "SmolLM2-135M-Instruct" on the others)."""
    from histbench.core.backends.offline import SMOLLM2_NAME
    from histbench.eval import demo_model
    from histbench.eval.chronoculture import reporting_cli
    from histbench.eval.chronologic import demo as chronologic_demo
    from histbench.eval.italian import report as italian_report

    asked = []
    monkeypatch.setattr(demo_model, "score_with_demo_model",
                        lambda benchmark, label, spec, options, score: asked.append((label, spec)) or "not scored")
    monkeypatch.setattr(chronologic_demo, "accuracy_figure", lambda results, path: path)

    class Built:   # the random baseline needs a build; the model is never asked
        pass

    monkeypatch.setattr("histbench.eval.chronologic.likelihood.evaluate", lambda *a, **k: {"label": "random choice",
                        "metrics": {}, "signature": {"text": ""}})
    monkeypatch.setattr("histbench.eval.chronologic.report.likelihood_markdown",
                        lambda results, published=None: "")
    chronologic_demo.run_demo(Built(), tmp_path, tmp_path)
    labels = [asked[0][0], italian_report.DEMO_LABEL, reporting_cli.DEMO_LABEL]
    assert asked[0][1] == demo_model.DEMO_MODEL == "offline:smollm2"
    assert all(label.startswith(SMOLLM2_NAME) and ":" not in label for label in labels), labels
