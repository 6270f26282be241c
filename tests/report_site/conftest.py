"""Fixtures of the report site and viewer tests: real sample builds and baseline runs
(no model), their `histbench report` sites, and headless Chromium driven with Selenium.

The browser tests skip when Chromium, chromedriver or Selenium are missing here, and fail
instead where HISTBENCH_REQUIRE_BROWSER=1 (.ci/run sets it), so CI never skips them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from histbench.cli import main

REQUIRE = os.environ.get("HISTBENCH_REQUIRE_BROWSER", "") == "1"
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
# On a closed network Chromium stalls at start without the networking flags.
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,900")


def _missing(reason: str):
    if REQUIRE:
        pytest.fail(f"{reason}; HISTBENCH_REQUIRE_BROWSER=1 (CI) needs it: apt-get install chromium chromium-driver, "
                    "pip install selenium")
    pytest.skip(f"{reason} (install chromium and chromium-driver to run the browser tests)")


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (Debian's package) with a fresh profile; console messages kept."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("Selenium is not installed")
    binary = next((shutil.which(name) for name in CHROMIUM if shutil.which(name)), None)
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        _missing("no Chromium or chromedriver on PATH")
    os.environ.setdefault("SE_OFFLINE", "true")   # Selenium Manager must not try to download a driver
    profile = tempfile.mkdtemp(prefix="histbench-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver) -> list[str]:
    """The page's console errors since the last call (the log is drained)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


@pytest.fixture(scope="session")
def sample_runs(run_cache, built_sample):
    """Sample builds of chronologic and italian (`histbench build NAME --sample`) and their
    no-model baseline runs, made once per test run (run_cache)."""

    def make(root: Path) -> None:
        assert main(["eval", "chronologic", "--dataset", str(built_sample("chronologic")), "--baseline", "random",
                     "--bootstrap", "200", "--out", str(root / "runs" / "chronologic-random")]) == 0
        assert main(["eval", "italian", "--dataset", str(built_sample("italian")), "--baseline", "random",
                     "--baseline", "first", "--out", str(root / "runs" / "italian")]) == 0

    root = run_cache("site-runs", make)
    return {"chronologic": [root / "runs" / "chronologic-random"],
            "italian": [root / "runs" / "italian" / "random", root / "runs" / "italian" / "first"],
            "root": root}


@pytest.fixture(scope="session")
def sites(run_cache, sample_runs):
    """`histbench report` sites of both benchmarks: {benchmark: report folder}, made once per
    test run (run_cache)."""

    def make(root: Path) -> None:
        for benchmark in ("chronologic", "italian"):
            assert main(["report", benchmark, *map(str, sample_runs[benchmark]), "--out", str(root / benchmark)]) == 0

    root = run_cache("site-reports", make)
    return {benchmark: root / benchmark for benchmark in ("chronologic", "italian")}


@pytest.fixture(scope="session")
def mher_site(run_cache, built_sample):
    """`histbench report mher` of the sample build's 16 Table 2 baselines, the embedding
    model behind a loopback /embeddings endpoint (so both embedding rows are there): the
    report folder, made once per test run (run_cache; the baselines are beside it). (A
    reference system's run, for Tables 3-7, would double its 15 s.)"""
    from ..servers.loopback import LoopbackChatServer

    def make(root: Path) -> None:
        server = LoopbackChatServer(None).start()
        try:
            assert main(["eval", "mher", "--baseline", "table2", "--dataset", str(built_sample("mher")),
                         "--out", str(root / "baselines"),
                         "--embedding-model", f"api:text-embedding-3-small@{server.base_url}"]) == 0
        finally:
            server.stop()
        assert main(["report", "mher", str(root / "baselines"), "--out", str(root / "report"),
                     "--resamples", "200", "--thinning", "20"]) == 0

    return run_cache("mher-site", make) / "report"


def file_url(path: Path, fragment: str = "") -> str:
    return Path(path).resolve().as_uri() + (f"#{fragment}" if fragment else "")


def open_page(driver, url: str) -> None:
    """A fresh load of `url` (about:blank first, so a fragment-only change reloads), the
    console log drained."""
    driver.get("about:blank")
    console_errors(driver)
    driver.get(url)


def wait_ready(driver, timeout: float = 20.0) -> None:
    """Until the viewer shows its first rows."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))


def visible_rows(driver) -> list:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, "#rows tr.item")
