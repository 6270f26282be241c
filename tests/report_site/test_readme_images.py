"""The README shows the report index and the viewer (issue 20): small PNGs in docs/images,
linked relatively (they show in a clone, on any host and in the sdist; issue 28)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
IMAGES = ("report-index.png", "viewer.png")
LIMIT = 150 * 1024


def test_the_readme_shows_the_index_and_the_viewer():
    text = (REPO / "README.md").read_text()
    for name in IMAGES:
        url = f"docs/images/{name}"
        assert re.search(rf"!\[[^\]]+\]\({re.escape(url)}\)", text), name
        data = (REPO / "docs" / "images" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < LIMIT, (name, len(data))
        width, height = struct.unpack(">II", data[16:24])
        assert 600 <= width <= 1600 and height >= 300, (name, width, height)
    assert "histbench view" in text
