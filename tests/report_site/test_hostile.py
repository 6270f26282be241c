"""Text into pages, in a real browser (docs/security.md): a report site and viewers built
from run folders whose labels, folder names, item texts and model answers are hostile run
nothing when opened in headless Chromium.

Every payload, if it ran, would set `window.__pwned` or change `document.title`; each test
asserts neither happened. The last two tests plant script in a written page (as if escaping
had been bypassed) and show that the page's Content-Security-Policy stops it, while the
page's own script still works.

The hostile run is a real `histbench eval chronologic --baseline random --label ...` of
the sample build and its `histbench report`: about 10 s more than the shared site fixture,
since its label and folder name are the point of the test.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from histbench.cli import main
from histbench.eval.viewer import ViewerRun, write_viewer

from .conftest import console_errors, file_url, open_page, visible_rows, wait_ready

LABEL = ('<img src=x onerror="window.__pwned=1;document.title=\'pwned\'"> [click](javascript:window.__pwned=2) '
         "<script>window.__pwned=3</script>\n# injected heading\n| injected | cell | __META__ __TITLE__")
RUN_NAME = "<svg onload=window.__pwned=4> __META__"
ITEM_TEXT = ("</script><script>window.__pwned=5</script><img src=y onerror=window.__pwned=6>"
             "[a](javascript:window.__pwned=7) __META__ <iframe srcdoc='<script>parent.__pwned=8</script>'></iframe>")


def _settle(driver) -> None:
    """Until the page has loaded and a failing image's onerror would have fired."""
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")
    time.sleep(0.5)


def _assert_nothing_ran(driver, title: str | None = None) -> None:
    assert driver.execute_script("return window.__pwned === undefined"), "a hostile payload ran"
    if title is not None:
        assert driver.title == title
    assert driver.title != "pwned"          # what the img payload would set (the label itself holds the word)


def _click_every_link(driver) -> None:
    """Follow no link away from the page: only links a payload could have made (no target,
    or a javascript: one) are clicked; they must do nothing."""
    for link in driver.find_elements(By.CSS_SELECTOR, "a"):
        href = link.get_attribute("href")
        if (href is None or href.lower().startswith("javascript:")) and link.is_displayed():
            link.click()
    _assert_nothing_ran(driver)


@pytest.fixture(scope="module")
def hostile_site(built_sample, tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    run = root / "runs" / RUN_NAME
    assert main(["eval", "chronologic", "--dataset", str(built_sample("chronologic")), "--baseline", "random",
                 "--bootstrap", "200", "--label", LABEL, "--out", str(run)]) == 0
    assert main(["report", "chronologic", str(run), "--out", str(root / "site")]) == 0
    return root / "site"


def test_a_report_with_a_hostile_label_and_run_name_runs_nothing(browser, hostile_site):
    for page in ("index.html", "chronologic.html"):
        open_page(browser, file_url(hostile_site / page))
        _settle(browser)
        _assert_nothing_ran(browser)
        body = browser.find_element(By.TAG_NAME, "body").text
        assert "<img src=x onerror=" in body, "the label is shown as text"
        headings = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "h1, h2, h3, h4, h5, h6")]
        assert not any("injected heading" in h for h in headings), headings
        assert browser.find_elements(By.CSS_SELECTOR, "script, iframe, svg, img[onerror]") == []
        hrefs = [a.get_attribute("href") or "" for a in browser.find_elements(By.CSS_SELECTOR, "a")]
        assert not any(h.lower().startswith(("javascript:", "data:", "vbscript:")) for h in hrefs), hrefs
        _click_every_link(browser)
        assert console_errors(browser) == []
    # the label stays in its own table cell: no "injected" cell of its own
    cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "td")]
    assert "injected" not in cells and "cell" not in cells


def test_the_hostile_runs_viewer_runs_nothing(browser, hostile_site):
    viewers = sorted(hostile_site.rglob("index.html"))
    viewer = next(p for p in viewers if p.parent != hostile_site)
    open_page(browser, file_url(viewer))
    wait_ready(browser)
    _settle(browser)
    _assert_nothing_ran(browser)
    assert "<img src=x onerror=" in browser.title, "the viewer's title is the run's label, as text"
    assert "{" not in browser.title, "the page's data did not land in its title (__META__ in the label)"
    assert console_errors(browser) == []


def test_hostile_item_texts_and_answers_run_nothing_in_the_viewer(browser, tmp_path):
    items = [{"id": f"q{k}-{ITEM_TEXT}", "config": ITEM_TEXT, "group": "g", "system": None,
              "outcome": "wrong", "score": 0, "messages": [{"role": "user", "content": ITEM_TEXT}],
              "response": ITEM_TEXT, "parsed": {"answer": ITEM_TEXT}, "gold": ITEM_TEXT,
              "details": {ITEM_TEXT: ITEM_TEXT}} for k in range(3)]
    run = ViewerRun("chronologic", LABEL, tmp_path / RUN_NAME, items, labels={"config": {ITEM_TEXT: LABEL}},
                    notes=[ITEM_TEXT, LABEL])
    page = write_viewer(run, tmp_path / "viewer")
    open_page(browser, file_url(page, "item=" + quote(items[0]["id"], safe="")))
    wait_ready(browser)
    _settle(browser)
    assert len(visible_rows(browser)) == 3
    _assert_nothing_ran(browser)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "window.__pwned=5" in body, "the open item shows the answer as text"
    _click_every_link(browser)
    open_page(browser, file_url(page, "q=" + quote("__pwned")))   # a search loads every chunk and renders them
    wait_ready(browser)
    _settle(browser)
    _assert_nothing_ran(browser)
    assert console_errors(browser) == []


PLANTED = ('<script>window.__pwned=9</script><img src=nowhere onerror="window.__pwned=10">'
           '<a id="planted" href="javascript:window.__pwned=11">planted</a>'
           '<button id="handler" onclick="window.__pwned=12">handler</button>')


def _csp_violations(driver) -> list[str]:
    return [m for m in console_errors(driver) if "Content Security Policy" in m]


def test_the_policy_stops_script_planted_in_a_report_page(browser, sites, tmp_path):
    """As if a string had reached the page unescaped: the CSP still lets nothing run."""
    page = (Path(sites["italian"]) / "italian.html").read_text(encoding="utf-8")
    planted = Path(sites["italian"]) / f"planted-{tmp_path.name}.html"
    planted.write_text(page.replace("<body>", "<body>" + PLANTED, 1), encoding="utf-8")
    try:
        open_page(browser, file_url(planted))
        _settle(browser)
        browser.find_element(By.ID, "planted").click()
        browser.find_element(By.ID, "handler").click()
        _assert_nothing_ran(browser)
        assert _csp_violations(browser), "the browser reports the policy's refusals"
    finally:
        planted.unlink()


def test_the_policy_stops_planted_script_but_not_the_viewers_own(browser, tmp_path):
    items = [{"id": "q1", "config": "c", "group": "g", "system": None, "outcome": "correct", "score": 1,
              "prompt": "p", "response": "r", "gold": "g"}]
    page = write_viewer(ViewerRun("chronologic", "run", tmp_path / "run", items), tmp_path / "viewer")
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("<main>", "<main>" + PLANTED, 1), encoding="utf-8")
    open_page(browser, file_url(page))
    wait_ready(browser)                        # the page's own script ran and loaded its item files
    _settle(browser)
    assert len(visible_rows(browser)) == 1
    browser.find_element(By.ID, "planted").click()
    browser.find_element(By.ID, "handler").click()
    _assert_nothing_ran(browser)
    assert _csp_violations(browser)
