"""The papers' results tables shipped under sources/<benchmark>/published/ (issue 43, item 3).

Every value of every table is read back from the paper's text when the papers are present
(ChronoCulture: Saha, Khurana, Huang and Huang, Table 5 in Appendix A.5 and Tables 8-20 in
Appendices C-E; MHER: "When Names Cross Scripts", Tables 2-6 in Sections 6-7); the shape of
each file, the declared aliases and the report rendering are checked everywhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from histbench.core.errors import SchemaError
from histbench.core.published import (
    Aliases,
    load_aliases,
    load_table,
    load_tables,
    published_dir,
    published_markdown,
)

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO.parent / "shared" / "seeds"
TITLES = {"chronoculture": "ChronoCulture: Evaluating Cultural Awareness Across Time",
          "mher": "When Names Cross Scripts"}
EXPECTED = {"chronoculture": [5, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20], "mher": [2, 3, 4, 5, 6]}
NUMBER = re.compile(r"[+-]?(?:\d+\.\d+|\.\d+|\d+)")
CASES = [(b, n) for b, numbers in EXPECTED.items() for n in numbers]


def _paper_lines(benchmark: str) -> list[str]:
    if not SEEDS.is_dir():
        pytest.skip("the papers' text is not in this workspace (../shared/seeds); the values are checked where it is")
    for path in sorted(SEEDS.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        if TITLES[benchmark] in text[:2000]:
            return text.splitlines()
    pytest.skip(f"the {benchmark} paper's text is not among the papers in this workspace")


def _groups(table) -> list[tuple[str, str, list[dict]]]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in table.rows:
        groups.setdefault((row["model"], row.get("row", "")), []).append(row)
    return [(model, label, rows) for (model, label), rows in groups.items()]


def test_every_expected_table_ships():
    for benchmark, numbers in EXPECTED.items():
        assert sorted(load_tables(benchmark)) == numbers


@pytest.mark.parametrize("benchmark,number", CASES, ids=[f"{b}-table{n}" for b, n in CASES])
def test_values_read_back_from_the_paper(benchmark, number):
    """Each (model, row) group is one text line of the table, in the paper's order, just above
    the caption "Table N:"; the numbers on that line (the model's own name removed) end with the
    group's values in column order, and any number before them (a tolerance) is in the row label."""
    lines = _paper_lines(benchmark)
    table = load_tables(benchmark)[number]
    caption = next(i for i, line in enumerate(lines) if line.startswith(f"Table {number}:"))
    groups = _groups(table)
    body = [line for line in lines[:caption] if line.strip()][-len(groups):]
    for (model, label, rows), line in zip(groups, body, strict=True):
        text = line.replace(model, " ", 1) if model in line else line
        found = [float(x) for x in NUMBER.findall(text.replace("%", " ").replace("–", " "))]
        values = [float(r["value"]) for r in rows]
        assert found[len(found) - len(values):] == values, f"Table {number}, {model} {label}: {line!r}"
        for leading in found[:len(found) - len(values)]:
            assert f"{leading:.2f}" in label, f"Table {number}: unexplained number {leading} in {line!r}"
        assert table.section.split()[0] in "\n".join(lines), f"section {table.section} not in the paper"


@pytest.mark.parametrize("benchmark,number", CASES, ids=[f"{b}-table{n}" for b, n in CASES])
def test_file_shape(benchmark, number):
    path = published_dir(benchmark) / f"table{number}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert set(data) <= {"paper", "table", "section", "caption", "models", "notes", "rows"}
    assert data["table"] == number and data["paper"] and data["section"] and data["caption"]
    table = load_table(path, benchmark)
    assert set(table.models) == {r["model"] for r in table.rows}
    # a full grid: every (model, row) group has every column once, in the same order
    columns = table.columns()
    for model, label, rows in _groups(table):
        assert [r["column"] for r in rows] == columns, (model, label)
    percents = [r["value"] for r in table.rows if r["unit"] == "percent"]
    assert all(0 <= v <= 100 for v in percents)
    assert all(0 <= r["value"] <= 1 for r in table.rows if r["unit"] in ("fraction", "cosine"))


def test_a_malformed_table_is_refused_naming_the_file(tmp_path):
    good = yaml.safe_load((published_dir("mher") / "table3.yaml").read_text(encoding="utf-8"))
    good["rows"][0]["value"] = "35.13%"
    bad = tmp_path / "table3.yaml"
    bad.write_text(yaml.safe_dump(good), encoding="utf-8")
    with pytest.raises(SchemaError, match="row 1: value '35.13%' is not a number") as info:
        load_table(bad, "mher")
    assert "table3.yaml" in str(info.value)
    del good["rows"][0]["unit"]
    bad.write_text(yaml.safe_dump(good), encoding="utf-8")
    with pytest.raises(SchemaError, match="row 1 must have"):
        load_table(bad, "mher")


@pytest.mark.parametrize("benchmark", sorted(EXPECTED))
def test_aliases_cover_every_paper_model_and_are_declared_not_guessed(benchmark):
    aliases = load_aliases(benchmark)
    data = yaml.safe_load((published_dir(benchmark) / "aliases.yaml").read_text(encoding="utf-8"))
    reference_only = set(data.get("reference_only") or [])
    for table in load_tables(benchmark).values():
        for model in table.models:
            canonical = aliases.canonical(model)
            assert canonical in aliases.models or model in reference_only, (table.number, model)
    # every run name is the paper's own label, a deployment the paper names, or a histbench baseline key
    from histbench.eval.mher.baselines import LABELS

    if SEEDS.is_dir():
        paper = "\n".join(_paper_lines(benchmark))
        for paper_model, names in data["models"].items():
            for name in names:
                assert name in paper, f"{name!r} (for {paper_model}) is not a name the paper uses"
    for names in (data.get("baselines") or {}).values():
        assert set(names) <= set(LABELS)


def test_matching_only_through_declared_names():
    aliases = load_aliases("chronoculture")
    assert aliases.match("Qwen3.5-35B-A3B-FP8") == "Qwen3.5-35B"
    assert aliases.match("local/models/Qwen3.5-35B-A3B-FP8/") == "Qwen3.5-35B"   # a folder named as the deployment
    assert aliases.match("DeepSeek-V3-0324-AWQ") == "DeepSeek-V3"
    for other in ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b", "Qwen3.5", "GPT-4o-mini", "", None):
        assert aliases.match(other) is None, other
    mher = load_aliases("mher")
    assert mher.match("Qwen/Qwen3-8B") == "Qwen3-8B"
    assert mher.canonical("Terra") == "GPT-5.6 Terra"
    assert mher.match("levenshtein") == "Unicode Levenshtein"


def test_markdown_puts_the_matched_model_first_and_the_rest_as_reference():
    md = published_markdown("mher", 4, ["Qwen/Qwen3-8B", "some-other-model"])
    body = [line for line in md.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert body[0].startswith("| paper; your run Qwen/Qwen3-8B | Qwen3-8B | 75.0 | 87.96 | +12.96 | 2.78 | 23.15 | 23 | 9 |")
    assert [line.split(" | ")[0] for line in body[1:]] == ["| paper (reference)"] * 4
    assert "some-other-model" not in md
    reference = published_markdown("chronoculture", 13, [])
    assert "No run names one of the paper's models" in reference
    assert "| paper (reference) | Llama-3.3-70B | 64.5 | 26.2 | 9.2 |" in reference
    assert published_markdown("chronoculture", 7, []) == ""   # Table 7 has no published model figures shipped


def test_a_run_name_with_markdown_is_escaped():
    aliases = Aliases({"Qwen3-8B": ["Qwen3-8B", "a|b/Qwen3-8B"]})
    md = published_markdown("mher", 3, ["a|b/Qwen3-8B"], aliases=aliases)
    assert "your run a\\|b/Qwen3-8B" in md


def test_a_hostile_run_name_matched_by_its_last_part_renders_as_text():
    """A run's model name is untrusted (issue 39): matched through its last path part, it still
    enters the page as text, not as HTML or a link."""
    from histbench.core.pages import render_markdown

    name = "hf:<img src=x onerror=alert(1)>[go](javascript:alert(1))/Qwen3-8B"
    html, _ = render_markdown(published_markdown("mher", 3, [name]))
    assert "<img" not in html and "<a " not in html
    assert "&lt;img src=x onerror=alert(1)&gt;[go](javascript:alert(1))/Qwen3-8B" in html


def test_on_a_report_page_the_papers_table_is_captioned_as_the_papers():
    from histbench.eval.report import markdown_to_html

    ours = "### Table 13. Behaviour on stable pairs (%)\n\n| Model | preserves |\n| --- | ---: |\n| Llama-3.3-70B | 50.0 |\n\n"
    html = markdown_to_html(ours + published_markdown("chronoculture", 13, ["Llama-3.3-70B"]), "ChronoCulture")
    assert ("<caption>Table 13. Behaviour on stable pairs (%): The paper's Table 13 (D.3 Stability Preservation "
            "and False Drift)</caption>") in html
    assert html.count("<caption>") == 1   # ours is labelled by its heading, the paper's by the caption
    assert "<td>paper; your run Llama-3.3-70B</td>" in html


@pytest.mark.parametrize("benchmark", sorted(EXPECTED))
def test_captions_and_notes_are_our_words(benchmark):
    """The numbers carry over, the prose does not: no seven words in a row of a caption or note
    are the paper's (digits aside: a note may quote how a row of numbers is printed)."""
    def shingles(text: str) -> set[tuple[str, ...]]:
        words = [w for w in re.findall(r"[a-z]+", text.lower())]
        return {tuple(words[i:i + 7]) for i in range(len(words) - 6)}

    paper = shingles("\n".join(_paper_lines(benchmark)))
    for table in load_tables(benchmark).values():
        for text in (table.caption, table.notes or ""):
            assert not shingles(text) & paper, (table.number, text)
