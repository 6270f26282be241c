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
def sample_runs(tmp_path_factory, built_sample):
    """Sample builds of chronologic and italian (`histbench build NAME --sample`) and their
    no-model baseline runs."""
    root = tmp_path_factory.mktemp("site-runs")
    out = {}
    chronologic = built_sample("chronologic")
    italian = built_sample("italian")
    assert main(["eval", "chronologic", "--dataset", str(chronologic), "--baseline", "random", "--bootstrap", "200",
                 "--out", str(root / "runs" / "chronologic-random")]) == 0
    assert main(["eval", "italian", "--dataset", str(italian), "--baseline", "random", "--baseline", "first",
                 "--out", str(root / "runs" / "italian")]) == 0
    out["chronologic"] = [root / "runs" / "chronologic-random"]
    out["italian"] = [root / "runs" / "italian" / "random", root / "runs" / "italian" / "first"]
    out["root"] = root
    return out


@pytest.fixture(scope="session")
def sites(sample_runs):
    """`histbench report` sites of both benchmarks: {benchmark: report folder}."""
    root = sample_runs["root"]
    folders = {}
    for benchmark in ("chronologic", "italian"):
        out = root / "reports" / benchmark
        assert main(["report", benchmark, *map(str, sample_runs[benchmark]), "--out", str(out)]) == 0
        folders[benchmark] = out
    return folders


def file_url(path: Path, fragment: str = "") -> str:
    return Path(path).resolve().as_uri() + (f"#{fragment}" if fragment else "")
