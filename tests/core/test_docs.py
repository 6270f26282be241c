"""The documentation: the site builds with no broken link, the README is a newcomer's two
screens that work on PyPI, and every paper is cited the same way everywhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO.parent / "shared" / "seeds"
BENCHMARKS = ("chronoculture", "chronologic", "mher", "italian", "valence")
REPOSITORY = "https://github.com/histbench/histbench"
PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "bench" / "README.md",
         *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "cards").glob("*.md"))]


def _tracked() -> set[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return {path for path in out.split("\0") if path}


def test_the_site_builds_strictly(tmp_path):
    """`make docs`: MkDocs (Material) with --strict, so a link to a missing page or anchor, or
    a page left out of the nav, fails."""
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install 'histbench[docs]')")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    for page in (REPO / "docs").glob("*.md"):
        built = tmp_path / "site" / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.is_file(), page.name


def test_links_into_the_repository_point_to_files_that_exist():
    tracked = _tracked()
    folders = {str(Path(p).parent) for p in tracked} | {str(parent) for p in tracked for parent in Path(p).parents}
    broken = []
    for page in PAGES:
        for kind, path in re.findall(rf"{re.escape(REPOSITORY)}/(blob|tree)/main/([^)\s>#`]+)", page.read_text()):
            path = path.rstrip("/.,;")
            if not (path in tracked if kind == "blob" else path in folders):
                broken.append(f"{page.relative_to(REPO)}: {kind}/main/{path}")
    assert not broken, broken


def test_the_readme_is_two_screens_with_absolute_links_only():
    """It is also the wheel's PyPI description, where relative links break."""
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 80
    relative = [target for target in re.findall(r"\]\(([^)]+)\)", text) if not target.startswith("https://")]
    assert not relative, relative
    for phrase in ("make demo", "make test", 'pip install "histbench[eval]"', "download.pytorch.org/whl/cpu",
                   "--model hf:", "--model api:", "--model vllm:", "load_dataset(", "histbench push", "import histbench"):
        assert phrase in text, phrase
    for name in BENCHMARKS:
        assert f"[`{name}`]({REPOSITORY}/blob/main/docs/{name}.md)" in text, name
        assert re.search(rf"^histbench build {name} --\w", text, re.M), f"no build line for {name}"


def test_the_pyproject_readme_is_this_readme():
    import tomllib

    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["readme"] == "README.md"


def _bibtex(path: Path) -> list[str]:
    return re.findall(r"```bibtex\n(.*?)\n```", path.read_text(), re.S)


def _field(entry: str, name: str) -> str | None:
    match = re.search(rf"^\s*{name}\s*=\s*\{{(.*)\}},?\s*$", entry, re.M)
    return match.group(1) if match else None


@pytest.mark.parametrize("name", BENCHMARKS)
def test_each_paper_is_cited_with_bibtex_on_its_page_and_in_its_card(name):
    (entry,) = _bibtex(REPO / "docs" / f"{name}.md")
    assert _bibtex(REPO / "cards" / f"{name}.md") == [entry], "the card's BibTeX differs from the page's"
    assert "## Citing" in (REPO / "docs" / f"{name}.md").read_text()
    assert _field(entry, "title")
    author = _field(entry, "author")
    if author:
        assert re.fullmatch(r"\d{4}", _field(entry, "year") or "") and _field(entry, "eprint"), entry
        surname = author.split(",")[0]
        row = next(line for line in (REPO / "README.md").read_text().splitlines() if f"[`{name}`]" in line)
        assert surname in row and _field(entry, "year") in row and _field(entry, "eprint") in row, row
    else:  # the paper's text names no authors: the entry says so instead of inventing them
        assert "gives neither its authors" in (_field(entry, "note") or ""), entry


def _plain(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("’", "'").replace("{", "").replace("}", "")
    return re.sub(r"\s+", " ", text).strip().lower()


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the papers' texts are only in the project workspace")
@pytest.mark.parametrize("name", BENCHMARKS)
def test_titles_and_authors_are_the_papers_own(name):
    """Facts from the papers' own text: the title opens the paper; where the text lists its
    authors, the BibTeX lists the same people. (The text held for the valence paper has no
    title or author line: its entry is the paper's arXiv record, checked by hand.)"""
    (entry,) = _bibtex(REPO / "docs" / f"{name}.md")
    title = _plain(_field(entry, "title"))
    texts = {path: path.read_text(encoding="utf-8") for path in SEEDS.glob("*.txt")}
    holding = [path for path, text in texts.items() if title in _plain(text[:3000])]
    if name == "valence":
        assert not holding
        return
    assert len(holding) == 1, f"no paper opens with {title!r}"
    author = _field(entry, "author")
    if author:
        head = texts[holding[0]][:3000]
        for person in author.split(" and "):
            surname, given = (part.strip() for part in person.split(","))
            assert f"{given} {surname}" in head, person


def test_nothing_describes_the_project_s_own_machine_or_its_private_files():
    """Docs, cards, code and messages speak to any user's machine (tests may name the
    workspace's real-data folder, since they skip without it)."""
    forbidden = re.compile(
        r"already on (this|the) disk|this project's shared|shared 2-core|2-core machine|no GPU was available"
        r"|on this machine|this (2-core )?machine|paper 00\d|\.\./shared|shared/seeds|MODELS\.md", re.I)
    found = []
    for path in sorted(_tracked()):
        if path.startswith("tests/") or not path.endswith((".py", ".md", ".yaml", ".yml", ".toml", "Makefile", "run")):
            continue
        for number, line in enumerate((REPO / path).read_text(encoding="utf-8").splitlines(), 1):
            if forbidden.search(line):
                found.append(f"{path}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
