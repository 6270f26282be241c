"""The documentation: the site builds with no broken link, every link of the README and the
docs resolves in the tree, the README is a newcomer's two screens, and every paper is cited
the same way everywhere."""

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


def _heading_slugs(markdown_path: Path) -> set[str]:
    """The anchors of a Markdown file's headings, as GitHub and MkDocs' toc make them
    (lower case, punctuation dropped, spaces as hyphens; a repeated heading gets -1, -2...)."""
    slugs: set[str] = set()
    text = re.sub(r"```.*?```", "", markdown_path.read_text(encoding="utf-8"), flags=re.S)
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M):
        heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
        base = re.sub(r"[^\w\- ]", "", heading.lower()).strip().replace(" ", "-")
        slug, k = base, 0
        while slug in slugs:
            k += 1
            slug = f"{base}-{k}"
        slugs.add(slug)
    return slugs


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text) + re.findall(r"<(https?://[^>\s]+)>", text)


def test_every_link_of_the_readme_and_docs_resolves_in_the_tree():
    """Links inside the repository are relative (they work on any host, in a clone and in
    the sdist): each names a file or folder of the tree, and its #anchor a heading there.
    The only absolute links are to other projects' sites; none names a hosting address
    the project does not have (issue 28)."""
    tracked = _tracked()
    folders = {str(parent) for p in tracked for parent in Path(p).parents}
    broken = []
    for page in PAGES:
        for target in _links(page):
            if target.startswith(("http://", "https://", "mailto:")):
                if re.search(r"github\.com/histbench|histbench\.(io|org|dev)", target):
                    broken.append(f"{page.relative_to(REPO)}: {target} (no such address)")
                continue
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath((page.parent / path).relative_to(REPO)) if path else str(page.relative_to(REPO))
            if resolved not in tracked and resolved not in folders:
                broken.append(f"{page.relative_to(REPO)}: {target} (no file {resolved})")
            elif anchor and resolved.endswith(".md") and anchor not in _heading_slugs(REPO / resolved):
                broken.append(f"{page.relative_to(REPO)}: {target} (no heading #{anchor} in {resolved})")
    assert not broken, "\n".join(broken)


def test_no_file_names_the_invented_hosting_address():
    """No repository, organisation or index page is named that the project does not have
    (issue 28: the old links pointed at a GitHub organisation that does not exist)."""
    invented = "github.com/" + "histbench"
    found = [path for path in sorted(_tracked()) if (REPO / path).is_file()
             and invented in (REPO / path).read_bytes().decode("utf-8", "replace")]
    assert not found, found


def test_the_readme_is_two_screens_with_relative_links():
    """Relative links, so it reads the same in a clone, on any host and in the sdist; the
    install lines work from the source folder (histbench is on no package index yet), and
    the index command is kept, marked for when it is published."""
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 80
    absolute = [target for target in re.findall(r"\]\(([^)]+)\)", text) if "://" in target]
    assert not absolute, absolute
    for phrase in ("make demo", "make test", 'pip install ".[eval]"', 'pip install "histbench[eval]"',
                   "not on a package index yet", "download.pytorch.org/whl/cpu",
                   "--model hf:", "--model api:", "--model vllm:", "load_dataset(", "histbench push", "import histbench",
                   "[LICENSE](LICENSE)"):
        assert phrase in text, phrase
    for name in BENCHMARKS:
        assert f"[`{name}`](docs/{name}.md)" in text, name
        assert re.search(rf"^histbench build {name} --\w", text, re.M), f"no build line for {name}"


#: the most words under one heading of a docs page (issue 44: a newcomer finds their way by
#: the table of contents; one section had grown to 9,900 words)
SECTION_WORDS = 1500


def docs_sections(text: str) -> list[tuple[str, int]]:
    """(heading, words) for each section of a Markdown page: the text under one heading of any
    level, up to the next heading; "(top)" is the text before the first. Lines in fenced code
    count as text (the fence lines not at all), never as headings; a word is a run of non-blanks holding a letter or digit
    (a table's pipes and a list's dashes are not words)."""
    sections, heading, words, fence = [], "(top)", 0, None
    for line in text.splitlines():
        marker = re.match(r"\s*(```|~~~)", line)
        if marker:
            fence = None if fence == marker.group(1) else fence or marker.group(1)
        found = None if fence or marker else re.match(r"#{1,6}\s+(.+?)\s*#*\s*$", line)
        if found:
            sections.append((heading, words))
            heading, words = found.group(1), 0
        elif not marker:   # a fence line is markup
            words += sum(1 for token in line.split() if re.search(r"\w", token))
    sections.append((heading, words))
    return sections


def test_docs_sections_counts_words_under_each_heading():
    text = "intro one two\n\n# Page\n\n| a | b |\n| --- | --- |\n\n## Long\n\n```bash\n# not a heading\nx y\n```\n\n### Short\nz\n"
    assert docs_sections(text) == [("(top)", 3), ("Page", 2), ("Long", 5), ("Short", 1)]


@pytest.mark.parametrize("page", sorted((REPO / "docs").glob("*.md")), ids=lambda p: p.name)
def test_no_docs_section_is_longer_than_a_newcomer_reads_at_once(page):
    """Every section of a docs page stays under SECTION_WORDS: a long one is split under
    headings that say what each part holds, so that the page's table of contents finds it."""
    long = [f"{heading!r}: {words:,} words" for heading, words in docs_sections(page.read_text(encoding="utf-8"))
            if words > SECTION_WORDS]
    assert not long, f"docs/{page.name}: sections over {SECTION_WORDS:,} words (split them under sub-headings): {long}"


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


# The benchmark pages whose decisions are one table (issue 28; chronoculture: issue 25).
DECISION_PAGES = ("chronologic", "mher", "valence", "italian", "chronoculture")
DECISION_HEADER = ["decision", "paper", "authors' code", "histbench", "option"]
PAPER_FILES = {"chronologic": "000_", "chronoculture": "001_", "mher": "002_", "italian": "003_", "valence": "004_"}


def _decision_rows(name: str) -> list[list[str]]:
    text = (REPO / "docs" / f"{name}.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## Decisions\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert len(sections) == 1, f"docs/{name}.md: one '## Decisions' section"
    # one table, or (a long one, issue 44) one table under each of the section's sub-headings,
    # every one with the same columns
    tables = re.findall(r"((?:^\|.*\|\n)+)", sections[0], re.M)
    subheadings = re.findall(r"^### .+$", sections[0], re.M)
    assert len(tables) == max(1, len(subheadings)), f"docs/{name}.md: one table under '## Decisions' or under each sub-heading"
    found = []
    for table in tables:
        lines = table.strip().splitlines()
        rows = [[cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip()[1:-1])] for line in lines]
        assert rows[0] == DECISION_HEADER, rows[0]
        assert all(set(cell) <= set("-: ") for cell in rows[1])
        found += rows[2:]
    return found


def _words(text: str) -> list[str]:
    return re.findall(r"[\w']+", unicodedata.normalize("NFKC", text).replace("’", "'").lower())


def _shingles(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


@pytest.mark.parametrize("name", DECISION_PAGES)
def test_each_benchmark_page_has_one_decision_table(name):
    """A reviewer checks fidelity in one place: a row per decision, each with the paper's rule,
    the authors' code (or that none is known), what histbench does and the option that changes
    it ("none" when fixed)."""
    rows = _decision_rows(name)
    assert len(rows) >= 10, len(rows)
    decisions = [row[0] for row in rows]
    assert len(set(decisions)) == len(decisions), "a decision named twice"
    for row in rows:
        assert len(row) == len(DECISION_HEADER) and all(row), row
        assert row[4] == "none" or row[4].startswith("none") or "`" in row[4], f"option of {row[0]!r}: {row[4]}"
        options = re.findall(r"--[a-z][a-z0-9-]+", row[4])
        for option in options:   # every option named is one histbench has
            assert _option_exists(option), f"{name}: {row[0]}: no option {option}"
    if name in ("mher", "valence", "italian"):   # the authors published no code
        assert {row[2] for row in rows} == {"none known"}
    if name == "chronoculture":   # the paper announces its scripts; no copy is public
        assert {row[2] for row in rows} == {"not public"}


def _option_exists(option: str) -> bool:
    """An option some parser declares, or a raw-input role of a source manifest (`build
    BENCHMARK --ROLE FILE`)."""
    import yaml

    pattern = re.compile(rf"[\"']{re.escape(option)}[\"'=]")
    if any(pattern.search(path.read_text(encoding="utf-8"))
           for folder in ("histbench", "builders", "eval") for path in (REPO / folder).rglob("*.py")):
        return True
    roles = {role for manifest in (REPO / "sources").glob("*/manifest.yaml")
             for role in yaml.safe_load(manifest.read_text(encoding="utf-8")).get("inputs", {})}
    return option[2:].replace("-", "_") in roles


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the papers' texts are only in the project workspace")
@pytest.mark.parametrize("name", DECISION_PAGES)
def test_the_decision_pages_paraphrase_and_never_quote_their_paper(name):
    """The paper column says the paper's rule in our words: no six words in a row of it are the
    paper's, and no eight in a row anywhere on the page outside its title, citation and code."""
    (paper,) = SEEDS.glob(f"{PAPER_FILES[name]}*.txt")
    source = _words(paper.read_text(encoding="utf-8"))
    six, eight = _shingles(source, 6), _shingles(source, 8)
    quoted = [" ".join(s) for row in _decision_rows(name) for s in _shingles(_words(row[1]), 6) & six]
    assert not quoted, quoted
    text = (REPO / "docs" / f"{name}.md").read_text(encoding="utf-8").split("\n## Citing", 1)[0]
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    (entry,) = _bibtex(REPO / "docs" / f"{name}.md")
    title = " ".join(_words(_field(entry, "title").replace("{", "").replace("}", "")))
    text = " ".join(_words(text)).replace(title, " ")
    quoted = [" ".join(s) for s in _shingles(text.split(), 8) & eight]
    assert not quoted, quoted
