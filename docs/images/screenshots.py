"""Remake the README's two screenshots from a demo report (`make demo` first).

    .venv/bin/python docs/images/screenshots.py [build/report]

Opens the report index and the viewer of the demo's Chronologic-EN SmolLM2 run in Debian's headless
Chromium (apt-get install chromium chromium-driver; Selenium from the dev extra), and writes
docs/images/report-index.png and docs/images/viewer.png as 8-bit palette PNGs, small enough
for the README (tests/report_site/test_readme_images.py checks their size and shape).
"""

from __future__ import annotations

import io
import shutil
import sys
import tempfile
from pathlib import Path

from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

HERE = Path(__file__).resolve().parent
WIDTH, HEIGHT = 1280, 820
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", f"--window-size={WIDTH},{HEIGHT}")


def _driver(profile: str):
    binary = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        sys.exit("needs Chromium and chromedriver on PATH (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(driver_path), options=options)


def _save(driver, url: str, out: Path, ready: str, open_first_item: bool = False) -> None:
    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(ready))
    if open_first_item:   # the viewer with one item unfolded: prompt, options, answer, gold
        driver.execute_script("document.querySelector('#rows tr.item').click()")
        WebDriverWait(driver, 30).until(lambda d: d.execute_script("return !!document.querySelector('td.detail')"))
        driver.execute_script("window.scrollTo(0, 0)")
    image = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")
    image = image.resize((image.width * 3 // 4, image.height * 3 // 4), Image.LANCZOS)
    image.quantize(colors=96).save(out, optimize=True)
    print(f"{out}: {image.width}x{image.height}, {out.stat().st_size // 1024} KiB")


def main(report: Path) -> None:
    index = report / "index.html"
    # the model's run rather than a baseline's, where the demo scored one
    viewers = sorted((report / "viewer" / "chronologic").glob("*/index.html"), key=lambda p: "smollm2" not in p.parent.name)
    if not index.is_file() or not viewers:
        sys.exit(f"{report} holds no demo report with a Chronologic-EN viewer: run `make demo` first")
    profile = tempfile.mkdtemp(prefix="histbench-screenshots-")
    driver = _driver(profile)
    try:
        _save(driver, index.resolve().as_uri(), HERE / "report-index.png", "return document.readyState === 'complete'")
        _save(driver, viewers[0].resolve().as_uri(), HERE / "viewer.png", "return document.body.dataset.ready === '1'",
              open_first_item=True)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("build/report"))
