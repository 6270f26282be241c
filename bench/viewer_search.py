"""The viewer's first text search on a large run (issue 28), in headless Chromium.

Baseline, in the same page: what the viewer did before, reading every item chunk
(items/chunk-NNNN.js, one after another) and walking each item for its text. Measured:
reading the search files (items/search-NNNN.js: each item's lower-case text, written with
the chunks), six at a time, as the page does now. Each is timed in a fresh page load, so
neither finds the other's files parsed. Prints both, the ratio, and the write time of the
viewer folder (wall and CPU, since the machine may be shared).

    .venv/bin/python bench/viewer_search.py [--items 50000] [--repeats 3]

Needs Debian's chromium and chromium-driver and selenium (the dev extra).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from histbench.eval.viewer import ViewerRun, write_viewer

FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,900")

BASELINE = """const done = arguments[0]; const t = performance.now();
function textOf(v) { if (v == null) return ""; if (typeof v !== "object") return String(v);
  const parts = []; for (const x of Array.isArray(v) ? v : Object.values(v)) parts.push(textOf(x)); return parts.join(" "); }
(async () => { const texts = [];
  for (let n = 0; n < META.n_chunks; n++) { await loadChunk(n); for (const it of chunks.get(n)) texts.push(textOf(it).toLowerCase()); }
  done(performance.now() - t); })();"""
MEASURED = """const done = arguments[0]; const t = performance.now();
ensureSearchable().then(() => done(performance.now() - t));"""


def synthetic_run(n: int) -> ViewerRun:
    outcomes = ("correct", "wrong", "invalid", "abstained")
    items = [{
        "id": f"q{i:05d}", "config": f"task{i % 4}", "group": f"group{i % 7}", "system": None,
        "outcome": outcomes[i % 4], "score": (i % 100) / 100, "score_label": "acc",
        "messages": [{"role": "system", "content": "You answer questions about the past."},
                     {"role": "user", "content": f"Question {i}: what happened in the year {1800 + i % 200}? " * 3}],
        "response": f"Answer {i}: a long answer " * 5, "parsed": f"answer {i}", "gold": f"gold {i}",
        "details": {"n": i},
    } for i in range(n)]
    return ViewerRun("synthetic", f"a generated {n:,}-item run", Path("generated"), items)


def main() -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="histbench-bench-viewer-"))
    try:
        wall, cpu = time.monotonic(), time.process_time()
        page = write_viewer(synthetic_run(args.items), work / "viewer")
        wall, cpu = time.monotonic() - wall, time.process_time() - cpu
        items_mb = sum(p.stat().st_size for p in (work / "viewer" / "items").glob("chunk-*.js")) / 1e6
        search_mb = sum(p.stat().st_size for p in (work / "viewer" / "items").glob("search-*.js")) / 1e6
        print(f"{args.items:,} items written in {wall:.1f} s wall / {cpu:.1f} s CPU; "
              f"item chunks {items_mb:.1f} MB, search files {search_mb:.1f} MB")
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium")
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={work / 'profile'}")
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        driver.set_script_timeout(300)
        timings: dict[str, list[float]] = {"baseline": [], "measured": []}
        try:
            for _ in range(args.repeats):
                for name, script in (("baseline", BASELINE), ("measured", MEASURED)):
                    driver.get("about:blank")
                    driver.get(page.resolve().as_uri())
                    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
                    timings[name].append(driver.execute_async_script(script))
        finally:
            driver.quit()
        base, new = statistics.median(timings["baseline"]), statistics.median(timings["measured"])
        print(f"baseline (every item chunk, one at a time, walked for its text): median {base:.0f} ms "
              f"of {', '.join(f'{t:.0f}' for t in timings['baseline'])}")
        print(f"measured (search files, six at a time): median {new:.0f} ms "
              f"of {', '.join(f'{t:.0f}' for t in timings['measured'])}")
        print(f"ratio baseline / measured: {base / new:.2f} (load average {os.getloadavg()[0]:.1f})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
