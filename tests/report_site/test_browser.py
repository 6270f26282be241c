"""The report site and the per-item viewer as a person sees them, in headless Chromium
(issue 20): images load, no console error, contents links land, captions are visible,
table cells lead to the items behind them, filters change the rows, and a run of 20,000
items opens in under 2 s and searches from its search files with visible progress. Screenshots of the index and a benchmark page are written as
test artefacts (their paths are printed)."""

from __future__ import annotations

import time
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from histbench.eval.viewer import ViewerRun, write_viewer

from .conftest import console_errors, file_url
from .conftest import open_page as _open
from .conftest import visible_rows as _visible_rows
from .conftest import wait_ready as _wait_ready

OPEN_BOUND_S = 2.0


def test_index_and_pages(browser, sites, tmp_path):
    site = sites["italian"]
    _open(browser, file_url(site / "index.html"))
    cards = browser.find_elements(By.CSS_SELECTOR, ".card")
    assert len(cards) == 1
    text = cards[0].text
    assert "baseline:random" in text and "baseline:first" in text and "Word sense disambiguation: accuracy" in text
    assert "[" in text   # the headline's interval
    # with its method and n, and never of no width (issue 43: Wilson for an accuracy)
    assert "(Wilson, n=" in text and "[0.000, 0.000]" not in text
    index_png = tmp_path / "index.png"
    browser.save_screenshot(str(index_png))
    cards[0].find_element(By.CSS_SELECTOR, "h2 a").click()
    assert browser.current_url.endswith("/italian.html")
    images = browser.find_elements(By.CSS_SELECTOR, "img")
    assert images, "the italian page has its figure"
    browser.execute_script("document.querySelectorAll('img').forEach(i => i.loading = 'eager')")
    WebDriverWait(browser, 20).until(lambda d: d.execute_script(
        "return [...document.images].every(i => i.complete)"))
    for image in images:
        assert browser.execute_script("return arguments[0].naturalWidth", image) > 0, image.get_attribute("src")
        caption = image.find_element(By.XPATH, "ancestor::figure/figcaption")
        assert caption.is_displayed() and "paper sections 3.1-3.5" in caption.text
    page_png = tmp_path / "italian-page.png"
    browser.save_screenshot(str(page_png))
    assert console_errors(browser) == []
    for png in (index_png, page_png):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        print(f"screenshot: {png}")


def test_contents_links_land(browser, sites):
    _open(browser, file_url(sites["italian"] / "italian.html"))
    links = browser.find_elements(By.CSS_SELECTOR, "nav.toc a")
    assert len(links) >= 8   # the section and its eight tasks
    for link in [link.get_attribute("href") for link in links]:
        browser.get(link)
        anchor = link.split("#", 1)[1]
        target = browser.find_element(By.ID, anchor)
        top, bottom = browser.execute_script(
            "const r = arguments[0].getBoundingClientRect(); return [r.top, "
            "window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2]", target)
        assert abs(top) < 3 or bottom, f"#{anchor} is at {top}px"
    assert console_errors(browser) == []


def test_every_table_and_figure_is_captioned(browser, sites):
    for benchmark, site in sites.items():
        _open(browser, file_url(site / f"{benchmark}.html"))
        tables = browser.find_elements(By.CSS_SELECTOR, "table")
        assert tables
        for table in tables:
            caption = table.find_elements(By.TAG_NAME, "caption")
            label = table.get_attribute("aria-labelledby")
            if caption:
                assert caption[0].is_displayed() and caption[0].text.strip()
            else:
                assert label, table.text[:80]
                assert browser.find_element(By.ID, label).is_displayed()
        for figure in browser.find_elements(By.CSS_SELECTOR, "figure"):
            assert figure.find_element(By.TAG_NAME, "figcaption").is_displayed()


def test_table_cell_links_to_its_items(browser, sites):
    _open(browser, file_url(sites["chronologic"] / "chronologic.html"))
    cell_links = browser.find_elements(By.XPATH, "//td/a[contains(@href, 'viewer/') and contains(@href, 'group=cloze')]")
    assert cell_links, "Table 3's Cloze cell links to the cloze items"
    cell_links[0].click()
    _wait_ready(browser)
    assert Select(browser.find_element(By.ID, "f-group")).first_selected_option.get_attribute("value") == "cloze"
    rows = _visible_rows(browser)
    assert rows and all("Cloze" in row.text for row in rows)
    total = browser.execute_script("return META.n_items")
    assert len(rows) < total
    assert console_errors(browser) == []


def test_filters_and_search_change_the_rows(browser, sites):
    viewer = next((sites["italian"] / "viewer").glob("*/index.html"))
    _open(browser, file_url(viewer))
    _wait_ready(browser)
    total = browser.execute_script("return META.n_items")
    status = browser.find_element(By.ID, "status")
    assert status.text.startswith(f"{total} of {total} items")
    # deprel: the task whose sample rows both baselines get partly right and partly wrong
    Select(browser.find_element(By.ID, "f-config")).select_by_value("deprel")
    WebDriverWait(browser, 10).until(lambda d: "of" in status.text and not status.text.startswith(f"{total} of"))
    rows = _visible_rows(browser)
    assert rows and all("Dependency relation prediction" in row.text for row in rows)
    assert "config=deprel" in browser.current_url
    Select(browser.find_element(By.ID, "f-outcome")).select_by_value("wrong")
    WebDriverWait(browser, 10).until(lambda d: all("wrong" in r.text for r in _visible_rows(d)))
    wrong = len(_visible_rows(browser))
    assert 0 < wrong < len(rows)
    rows = _visible_rows(browser)
    rows[0].click()
    detail = browser.find_element(By.CSS_SELECTOR, "td.detail")
    assert "GOLD" in detail.text.upper() and "SCORE" in detail.text.upper()
    Select(browser.find_element(By.ID, "f-outcome")).select_by_value("")
    Select(browser.find_element(By.ID, "f-config")).select_by_value("")
    search = browser.find_element(By.ID, "f-q")
    search.send_keys("ranking-poetry-000")
    WebDriverWait(browser, 10).until(lambda d: len(_visible_rows(d)) == 1)
    assert "ranking-poetry-000" in _visible_rows(browser)[0].text
    assert console_errors(browser) == []


def _synthetic_run(n: int) -> ViewerRun:
    outcomes = ("correct", "wrong", "invalid", "abstained")
    items = [{
        "id": f"q{i:05d}", "config": f"task{i % 4}", "group": f"group{i % 7}", "system": None,
        "outcome": outcomes[i % 4], "score": (i % 100) / 100, "score_label": "acc",
        "messages": [{"role": "system", "content": "You answer questions about the past."},
                     {"role": "user", "content": f"Question {i}: what happened in the year {1800 + i % 200}? " * 3}],
        "response": f"Answer {i}: a long answer " * 5, "parsed": f"answer {i}", "gold": f"gold {i}",
        "details": {"n": i},
    } for i in range(n)]
    return ViewerRun("synthetic", "a generated 20,000-item run", Path("generated"), items)


def test_a_large_run_opens_fast(browser, tmp_path):
    page = write_viewer(_synthetic_run(20_000), tmp_path / "large")
    assert page.stat().st_size < 100_000, "the page itself holds no item"
    assert sum(1 for _ in (tmp_path / "large" / "items").glob("chunk-*.js")) == 40
    assert sum(1 for _ in (tmp_path / "large" / "items").glob("search-*.js")) == 40
    best = None
    for _ in range(2):   # the second opening is the one a person gets after the first
        _open(browser, file_url(page))
        _wait_ready(browser, timeout=60)
        opened_ms = browser.execute_script("return window.histbenchReadyAt")
        best = opened_ms if best is None else min(best, opened_ms)
    assert best < OPEN_BOUND_S * 1000, f"opened in {best:.0f} ms"
    print(f"a 20,000-item run opened in {best:.0f} ms (performance.now() at the first rows)")
    loaded = browser.execute_script("return [...document.querySelectorAll('script[src]')].map(s => s.getAttribute('src'))")
    assert loaded == ["items/index.js", "items/chunk-0000.js"], loaded   # the index and the first page's chunk
    assert len(_visible_rows(browser)) == 50
    Select(browser.find_element(By.ID, "f-outcome")).select_by_value("abstained")
    WebDriverWait(browser, 20).until(lambda d: "5,000 of 20,000" in d.find_element(By.ID, "status").text)
    # The first search (issue 28): it reads the search files (each item's text, written with
    # the chunks), six at a time, never the item chunks themselves, and shows its progress.
    browser.execute_script("""window.statusSeen = [];
        new MutationObserver(() => window.statusSeen.push(document.getElementById('status').textContent))
          .observe(document.getElementById('status'), {childList: true, characterData: true, subtree: true});""")
    started = time.monotonic()
    browser.find_element(By.ID, "f-q").send_keys("q19999")
    WebDriverWait(browser, 60).until(lambda d: d.find_element(By.ID, "status").text.startswith("1 of"))
    assert time.monotonic() - started < 30
    seen = browser.execute_script("return window.statusSeen")
    assert any(s.startswith("preparing the search: ") and s.endswith("%)") for s in seen), seen
    loaded = browser.execute_script("return [...document.querySelectorAll('script[src]')].map(s => s.getAttribute('src'))")
    assert sorted(s for s in loaded if "/search-" in s) == [f"items/search-{n:04d}.js" for n in range(40)]
    assert sorted(s for s in loaded if "/chunk-" in s) == ["items/chunk-0000.js", "items/chunk-0039.js"]   # shown rows only
    assert "q19999" in _visible_rows(browser)[0].text
    print(f"first search over 20,000 items: {time.monotonic() - started:.2f} s (bench/viewer_search.py measures it)")
    assert console_errors(browser) == []
