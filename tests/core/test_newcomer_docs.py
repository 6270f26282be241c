"""Issue 44: a newcomer finds where each benchmark's raw files come from. Every benchmark's
docs page begins with "Get the raw files", naming each address its source manifest gives,
followed by a short path on the bundled sample; a missing input file's error gives the
same address."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from histbench import cli

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = ("chronoculture", "chronologic", "mher", "italian", "valence")


def _addresses(benchmark: str) -> list[str]:
    from histbench.builders.machinery.build import get_builder

    found = []
    for spec in get_builder(benchmark).manifest().inputs.values():
        found += re.findall(r"https?://[^\s)]+", spec.obtain or "")
    return found


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_the_page_begins_with_where_to_get_the_raw_files(benchmark):
    text = (REPO / "docs" / f"{benchmark}.md").read_text(encoding="utf-8")
    headings = re.findall(r"^(#{2,3}) (.+)$", text, flags=re.MULTILINE)
    assert headings[0] == ("##", "Get the raw files"), headings[:3]
    assert headings[1] == ("###", "A two-minute path"), headings[:3]
    section = text.split("## Get the raw files", 1)[1].split("\n## ", 1)[0]
    for address in _addresses(benchmark):
        assert address in section, address
    assert re.search(r"\b(public|gated|on request|write your own)\b", section)
    assert f"histbench build {benchmark} --sample" in section


def test_a_missing_input_names_where_to_get_it(tmp_path, capsys):
    code = cli.main(["build", "chronoculture", "--wvs", str(tmp_path / "WVS.sav"), "--issp", str(tmp_path / "ZA1950.sav"),
                     "--out", str(tmp_path / "build")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "input for --wvs does not exist" in err
    assert "get it from: https://www.worldvaluessurvey.org/WVSDocumentationWVL.jsp" in err
    assert not (tmp_path / "build").exists()


def test_make_docs_uses_a_venv_without_torch():
    """`make docs` installed torch (a 1.4 GB venv) to build a static site: it now uses its own
    venv with the `docs` extra only, read from pyproject.toml, which pulls in no torch."""
    import tomllib

    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    docs_rule = re.search(r"^docs: (.+)\n((?:\t.*\n)+)", makefile, flags=re.MULTILINE)
    assert docs_rule and docs_rule.group(1).strip() == "$(DOCS_VENV)/.docs"
    assert "$(DOCS_VENV)/bin/mkdocs build --strict" in docs_rule.group(2)
    stamp = re.search(r"^\$\(DOCS_VENV\)/\.docs: (.+)\n((?:\t.*\n)+)", makefile, flags=re.MULTILINE)
    assert stamp and "$(VENV)" not in stamp.group(1) + stamp.group(2) and "TORCH" not in stamp.group(2)
    assert "['optional-dependencies']['docs']" in stamp.group(2)
    docs = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["docs"]
    assert docs and not any(re.match(r"(torch|histbench|transformers)\b", d) for d in docs)
    assert ".venv-docs/" in (REPO / ".gitignore").read_text().splitlines()
